/* safetensors.c — the .safetensors reader: mmap, validate every header field, index shards.
 *
 * A file is: u64 little-endian header length N, N bytes of JSON, the data section. Nothing in
 * the header is trusted: N must fit in the file and below RL_ST_MAX_HEADER, the JSON must be an
 * object whose entries are {"dtype", "shape", "data_offsets"} (or the string map
 * "__metadata__"), the byte range must equal numel x dtype size, lie inside the data section and
 * overlap no other tensor. Tensors of all opened files are kept in one array sorted by name, so
 * that a name in two shards is found as two equal neighbours. Names live in one pool per file.
 *
 * Sharded directories: model.safetensors.index.json's weight_map names, for every tensor, the
 * shard file that holds it; each shard is opened once and must hold exactly the tensors the
 * index gives it. */
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "io/json.h"

/* The python library refuses headers above 100 MB; so do we. */
#define RL_ST_MAX_HEADER 100000000ull

typedef struct st_file {
    char *path;      /* as given (shown in messages) */
    const unsigned char *base;
    size_t len;
    int mapped;      /* munmap on close */
    char *names;     /* pool of this file's tensor names */
} st_file;

struct rl_safetensors {
    st_file *files;
    int n_files;
    rl_st_tensor *tensors; /* sorted by name */
    int n_tensors;
};

static const char *const unsupported_dtypes[] = {
    "F64", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL",
    "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64",
};

static int check_dtype(const char *name, rl_dtype *out, const char *what, const char *tensor,
                       rl_err *err)
{
    if (rl_dtype_parse(name, out) == 0) return 0;
    for (size_t i = 0; i < sizeof unsupported_dtypes / sizeof unsupported_dtypes[0]; i++)
        if (!strcmp(name, unsupported_dtypes[i]))
            return rl_err_set(err, "%s: tensor '%s': dtype %s is not supported (rlc reads F32, F16, BF16)",
                              what, tensor, name);
    return rl_err_set(err, "%s: tensor '%s': unknown dtype '%.32s'", what, tensor, name);
}

/* A JSON number that is an integer in [0, 2^53]. */
static int json_u64(const cJSON *item, uint64_t *out)
{
    if (!rl_json_is_integer(item) || item->valuedouble < 0) return -1;
    *out = (uint64_t)item->valuedouble;
    return 0;
}

static void format_shape(char *buf, size_t size, const int64_t *shape, int n_dims)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < n_dims && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

/* One header entry -> t (name set by the caller). begin/end are data-section offsets. */
static int parse_entry(const cJSON *entry, rl_st_tensor *t, uint64_t *begin, uint64_t *end,
                       uint64_t data_len, uint64_t data_start, const char *what, rl_err *err)
{
    const char *name = t->name;
    if (!cJSON_IsObject(entry)) return rl_err_set(err, "%s: tensor '%s': entry is not an object", what, name);
    const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL;
    for (const cJSON *f = entry->child; f; f = f->next) {
        const cJSON **slot = !strcmp(f->string, "dtype") ? &dtype
                           : !strcmp(f->string, "shape") ? &shape
                           : !strcmp(f->string, "data_offsets") ? &offsets : NULL;
        if (!slot) return rl_err_set(err, "%s: tensor '%s': unexpected field '%.64s'", what, name, f->string);
        if (*slot) return rl_err_set(err, "%s: tensor '%s': field '%s' given twice", what, name, f->string);
        *slot = f;
    }
    if (!dtype || !cJSON_IsString(dtype))
        return rl_err_set(err, "%s: tensor '%s': %s 'dtype'", what, name, dtype ? "non-string" : "missing");
    if (check_dtype(dtype->valuestring, &t->dtype, what, name, err)) return -1;
    if (!shape || !cJSON_IsArray(shape))
        return rl_err_set(err, "%s: tensor '%s': %s 'shape'", what, name, shape ? "non-array" : "missing");
    int n_dims = cJSON_GetArraySize(shape);
    if (n_dims > RL_ST_MAX_DIMS)
        return rl_err_set(err, "%s: tensor '%s': %d dimensions, at most %d supported", what, name, n_dims, RL_ST_MAX_DIMS);
    t->n_dims = n_dims;
    uint64_t numel = 1;
    int overflow = 0, d = 0;
    for (const cJSON *s = shape->child; s; s = s->next, d++) {
        uint64_t v;
        if (json_u64(s, &v)) return rl_err_set(err, "%s: tensor '%s': shape[%d] is not a non-negative integer", what, name, d);
        t->shape[d] = (int64_t)v;
        if (v && numel > UINT64_MAX / 8 / v) overflow = 1;
        else numel *= v;
    }
    if (numel == 0) overflow = 0; /* a zero dimension makes the product 0 whatever the others are */
    if (!offsets || !cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
        return rl_err_set(err, "%s: tensor '%s': 'data_offsets' must be [begin, end]", what, name);
    if (json_u64(offsets->child, begin) || json_u64(offsets->child->next, end))
        return rl_err_set(err, "%s: tensor '%s': data_offsets are not non-negative integers", what, name);
    if (*end < *begin)
        return rl_err_set(err, "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin", what, name,
                          (unsigned long long)*begin, (unsigned long long)*end);
    char shape_text[160];
    format_shape(shape_text, sizeof shape_text, t->shape, n_dims);
    uint64_t need = numel * rl_dtype_size(t->dtype);
    if (overflow || need != *end - *begin)
        return rl_err_set(err, "%s: tensor '%s': shape %s of %s needs %s%llu bytes, data_offsets give %llu", what, name,
                          shape_text, rl_dtype_name(t->dtype), overflow ? "more than " : "",
                          (unsigned long long)(overflow ? UINT64_MAX / 8 : need), (unsigned long long)(*end - *begin));
    if (*end > data_len)
        return rl_err_set(err, "%s: tensor '%s' ends at byte %llu, file has %llu", what, name,
                          (unsigned long long)(data_start + *end), (unsigned long long)(data_start + data_len));
    t->n_bytes = (size_t)need;
    return 0;
}

typedef struct span { uint64_t begin, end; int index; } span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_tensor(const void *a, const void *b)
{
    return strcmp(((const rl_st_tensor *)a)->name, ((const rl_st_tensor *)b)->name);
}

static int check_metadata(const cJSON *meta, const char *what, rl_err *err)
{
    if (!cJSON_IsObject(meta)) return rl_err_set(err, "%s: '__metadata__' must be an object of strings", what);
    for (const cJSON *m = meta->child; m; m = m->next)
        if (!cJSON_IsString(m))
            return rl_err_set(err, "%s: '__metadata__' field '%.64s' is not a string", what, m->string);
    return 0;
}

/* Appends the tensors of one file image (already stored as st->files[fi]) to st->tensors. */
static int parse_file(rl_safetensors *st, int fi, rl_err *err)
{
    st_file *f = &st->files[fi];
    const char *what = f->path;
    if (f->len < 8)
        return rl_err_set(err, "%s: file is %zu bytes, too short for a safetensors header", what, f->len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->base[i];
    if (n > RL_ST_MAX_HEADER)
        return rl_err_set(err, "%s: header length %llu is larger than the %llu bytes allowed", what,
                          (unsigned long long)n, RL_ST_MAX_HEADER);
    if (n > f->len - 8)
        return rl_err_set(err, "%s: header length %llu runs past the end of the file (%zu bytes)", what,
                          (unsigned long long)n, f->len);
    if (n < 2 || f->base[8] != '{')
        return rl_err_set(err, "%s: header does not start with '{' (not a safetensors file?)", what);
    const char *text = (const char *)f->base + 8;
    if (memchr(text, '\0', n)) return rl_err_set(err, "%s: header contains a NUL byte", what);
    char header[300];
    snprintf(header, sizeof header, "%s: header", what);
    cJSON *root = rl_json_parse(text, n, header, err);
    if (!root) return -1;
    int rc = -1;
    span *spans = NULL;
    if (!cJSON_IsObject(root)) {
        rl_err_set(err, "%s: header is not a JSON object", what);
        goto done;
    }
    size_t names_bytes = 1;
    int n_entries = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            if (check_metadata(e, what, err)) goto done;
            continue;
        }
        names_bytes += strlen(e->string) + 1;
        n_entries++;
    }
    f->names = malloc(names_bytes);
    rl_st_tensor *grown = realloc(st->tensors, (size_t)(st->n_tensors + n_entries + 1) * sizeof *grown);
    spans = malloc((size_t)(n_entries + 1) * sizeof *spans);
    if (grown) st->tensors = grown;
    if (!f->names || !grown || !spans) {
        rl_err_oom(err, what, names_bytes + (size_t)n_entries * (sizeof *grown + sizeof *spans));
        goto done;
    }
    const uint64_t data_start = 8 + n, data_len = f->len - data_start;
    char *pool = f->names;
    int k = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) continue;
        rl_st_tensor *t = &st->tensors[st->n_tensors + k];
        memset(t, 0, sizeof *t);
        size_t name_len = strlen(e->string);
        memcpy(pool, e->string, name_len + 1);
        t->name = pool;
        pool += name_len + 1;
        t->file = f->path;
        if (parse_entry(e, t, &spans[k].begin, &spans[k].end, data_len, data_start, what, err)) goto done;
        t->data = f->base + data_start + spans[k].begin;
        spans[k].index = k;
        k++;
    }
    qsort(spans, (size_t)k, sizeof *spans, cmp_span);
    for (int i = 1; i < k; i++) {
        if (spans[i].begin < spans[i - 1].end) {
            rl_err_set(err, "%s: tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap", what,
                       st->tensors[st->n_tensors + spans[i - 1].index].name, (unsigned long long)spans[i - 1].begin,
                       (unsigned long long)spans[i - 1].end, st->tensors[st->n_tensors + spans[i].index].name,
                       (unsigned long long)spans[i].begin, (unsigned long long)spans[i].end);
            goto done;
        }
    }
    st->n_tensors += k;
    rc = 0;
done:
    free(spans);
    cJSON_Delete(root);
    return rc;
}

static rl_safetensors *st_alloc(int n_files, rl_err *err)
{
    rl_safetensors *st = calloc(1, sizeof *st);
    if (st) st->files = calloc((size_t)n_files, sizeof *st->files);
    if (!st || !st->files) {
        free(st);
        rl_err_oom(err, "safetensors", sizeof *st);
        return NULL;
    }
    return st;
}

/* Maps path into st->files[fi] (an empty file is kept unmapped, and refused by parse_file). */
static int map_file(rl_safetensors *st, int fi, const char *path, rl_err *err)
{
    st_file *f = &st->files[fi];
    f->path = strdup(path);
    if (!f->path) return rl_err_oom(err, path, strlen(path));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return rl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return rl_err_set(err, "%s: not a regular file", path);
    }
    f->len = (size_t)sb.st_size;
    if (f->len >= 8) {
        void *p = mmap(NULL, f->len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return rl_err_set(err, "%s: mmap failed: %s", path, strerror(e));
        }
        f->base = p;
        f->mapped = 1;
    }
    close(fd);
    return 0;
}

/* Sorts all tensors by name; a name seen twice is an error naming both files. */
static int finish(rl_safetensors *st, rl_err *err)
{
    qsort(st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, cmp_tensor);
    for (int i = 1; i < st->n_tensors; i++) {
        const rl_st_tensor *a = &st->tensors[i - 1], *b = &st->tensors[i];
        if (strcmp(a->name, b->name)) continue;
        if (a->file == b->file) return rl_err_set(err, "%s: tensor '%s' appears twice in the header", a->file, a->name);
        return rl_err_set(err, "tensor '%s' is in two shards: %s and %s", a->name, a->file, b->file);
    }
    return 0;
}

int rl_safetensors_open(rl_safetensors **out, const char *path, rl_err *err)
{
    *out = NULL;
    rl_safetensors *st = st_alloc(1, err);
    if (!st) return -1;
    st->n_files = 1;
    if (map_file(st, 0, path, err) || parse_file(st, 0, err) || finish(st, err)) {
        rl_safetensors_close(st);
        return -1;
    }
    *out = st;
    return 0;
}

int rl_safetensors_open_mem(rl_safetensors **out, const void *data, size_t len, const char *what,
                            rl_err *err)
{
    *out = NULL;
    rl_safetensors *st = st_alloc(1, err);
    if (!st) return -1;
    st->n_files = 1;
    st->files[0].path = strdup(what);
    st->files[0].base = data;
    st->files[0].len = len;
    if (!st->files[0].path) {
        rl_safetensors_close(st);
        return rl_err_oom(err, what, strlen(what));
    }
    if (parse_file(st, 0, err) || finish(st, err)) {
        rl_safetensors_close(st);
        return -1;
    }
    *out = st;
    return 0;
}

/* A shard name from the index must be a plain file name inside the model directory. */
static int check_shard_name(const char *name, const char *what, rl_err *err)
{
    if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return rl_err_set(err, "%s: shard file name '%.200s' is not a plain file name", what, name);
    return 0;
}

static int open_sharded(rl_safetensors **out, const char *dir, const char *index_path, rl_err *err)
{
    cJSON *root = rl_json_parse_file(index_path, err);
    if (!root) return -1;
    rl_safetensors *st = NULL;
    const char **shards = NULL;
    int rc = -1, n_shards = 0, n_listed = 0;
    const cJSON *map = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (!cJSON_IsObject(map)) {
        rl_err_set(err, "%s: missing object 'weight_map'", index_path);
        goto done;
    }
    for (const cJSON *e = map->child; e; e = e->next) {
        if (!cJSON_IsString(e)) {
            rl_err_set(err, "%s: weight_map entry '%.200s' is not a file name", index_path, e->string);
            goto done;
        }
        if (check_shard_name(e->valuestring, index_path, err)) goto done;
        n_listed++;
    }
    if (n_listed == 0) {
        rl_err_set(err, "%s: weight_map is empty", index_path);
        goto done;
    }
    shards = malloc((size_t)n_listed * sizeof *shards);
    if (!shards) {
        rl_err_oom(err, index_path, (size_t)n_listed * sizeof *shards);
        goto done;
    }
    for (const cJSON *e = map->child; e; e = e->next) {
        int seen = 0;
        for (int i = 0; i < n_shards && !seen; i++) seen = !strcmp(shards[i], e->valuestring);
        if (!seen) shards[n_shards++] = e->valuestring;
    }
    st = st_alloc(n_shards, err);
    if (!st) goto done;
    for (int i = 0; i < n_shards; i++) {
        char path[4096];
        st->n_files = i + 1;
        if (rl_path_join(path, sizeof path, dir, shards[i])) {
            rl_err_set(err, "%s: path too long", dir);
            goto done;
        }
        if (!rl_file_exists(path)) {
            rl_err_set(err, "%s: shard '%s' named in the index does not exist", index_path, shards[i]);
            goto done;
        }
        if (map_file(st, i, path, err) || parse_file(st, i, err)) goto done;
    }
    if (finish(st, err)) goto done;
    for (const cJSON *e = map->child; e; e = e->next) {
        const rl_st_tensor *t = rl_safetensors_find(st, e->string);
        const char *base = t ? strrchr(t->file, '/') : NULL;
        base = base ? base + 1 : t ? t->file : NULL;
        if (!t) {
            rl_err_set(err, "%s: tensor '%.200s' is listed in the index but missing from shard %s", index_path,
                       e->string, e->valuestring);
            goto done;
        }
        if (strcmp(base, e->valuestring)) {
            rl_err_set(err, "%s: tensor '%.200s' is listed in shard %s but stored in %s", index_path, e->string,
                       e->valuestring, base);
            goto done;
        }
    }
    if (st->n_tensors != n_listed) {
        for (int i = 0; i < st->n_tensors; i++) {
            if (cJSON_GetObjectItemCaseSensitive(map, st->tensors[i].name)) continue;
            rl_err_set(err, "%s: tensor '%s' is not listed in %s", st->tensors[i].file, st->tensors[i].name, index_path);
            goto done;
        }
        rl_err_set(err, "%s: weight_map lists a tensor twice", index_path);
        goto done;
    }
    *out = st;
    st = NULL;
    rc = 0;
done:
    rl_safetensors_close(st);
    free(shards);
    cJSON_Delete(root);
    return rc;
}

/* model.safetensors wins over an index when both exist, as in transformers. */
int rl_safetensors_open_dir(rl_safetensors **out, const char *model_dir, rl_err *err)
{
    *out = NULL;
    char single[4096], index[4096];
    if (rl_path_join(single, sizeof single, model_dir, "model.safetensors") ||
        rl_path_join(index, sizeof index, model_dir, "model.safetensors.index.json"))
        return rl_err_set(err, "%s: path too long", model_dir);
    if (rl_file_exists(single)) return rl_safetensors_open(out, single, err);
    if (rl_file_exists(index)) return open_sharded(out, model_dir, index, err);
    return rl_err_set(err, "%s: no model.safetensors or model.safetensors.index.json", model_dir);
}

int rl_safetensors_count(const rl_safetensors *st) { return st->n_tensors; }

const rl_st_tensor *rl_safetensors_at(const rl_safetensors *st, int i)
{
    RL_ASSERT(i >= 0 && i < st->n_tensors);
    return &st->tensors[i];
}

const rl_st_tensor *rl_safetensors_find(const rl_safetensors *st, const char *name)
{
    int lo = 0, hi = st->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(st->tensors[mid].name, name);
        if (c == 0) return &st->tensors[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

int rl_safetensors_n_files(const rl_safetensors *st) { return st->n_files; }

const char *rl_safetensors_file(const rl_safetensors *st, int i)
{
    RL_ASSERT(i >= 0 && i < st->n_files);
    return st->files[i].path;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int rl_safetensors_check_specs(const rl_safetensors *st, const rl_tensor_spec *specs, int n,
                               rl_err *err)
{
    for (int i = 0; i < n; i++) {
        const rl_st_tensor *t = rl_safetensors_find(st, specs[i].name);
        char want[160], got[160];
        format_shape(want, sizeof want, specs[i].shape, specs[i].n_dims);
        if (!t) return rl_err_set(err, "missing tensor '%s' (shape %s)", specs[i].name, want);
        int same = t->n_dims == specs[i].n_dims;
        for (int d = 0; same && d < t->n_dims; d++) same = t->shape[d] == specs[i].shape[d];
        if (!same) {
            format_shape(got, sizeof got, t->shape, t->n_dims);
            return rl_err_set(err, "%s: tensor '%s' has shape %s, config.json gives %s", t->file, t->name, got, want);
        }
    }
    if (st->n_tensors == n) return 0;
    const char **names = malloc((size_t)(n + 1) * sizeof *names);
    if (!names) return rl_err_oom(err, "check_specs", (size_t)n * sizeof *names);
    for (int i = 0; i < n; i++) names[i] = specs[i].name;
    qsort(names, (size_t)n, sizeof *names, cmp_str_ptr);
    int rc = rl_err_set(err, "the tensor list names a tensor twice");
    for (int i = 0; i < st->n_tensors; i++) {
        const char *key = st->tensors[i].name;
        if (bsearch(&key, names, (size_t)n, sizeof *names, cmp_str_ptr)) continue;
        rc = rl_err_set(err, "%s: unexpected tensor '%s' (not part of the model config.json describes)",
                        st->tensors[i].file, key);
        break;
    }
    free(names);
    return rc;
}

int64_t rl_st_tensor_numel(const rl_st_tensor *t)
{
    int64_t numel = 1;
    for (int d = 0; d < t->n_dims; d++) numel *= t->shape[d];
    return numel;
}

void rl_safetensors_to_f32(const rl_st_tensor *t, float *dst)
{
    size_t numel = (size_t)rl_st_tensor_numel(t);
    const unsigned char *src = t->data;
    if (t->dtype == RL_F32) {
        memcpy(dst, src, numel * sizeof(float));
        return;
    }
    for (size_t i = 0; i < numel; i++) {
        uint16_t h = (uint16_t)(src[2 * i] | src[2 * i + 1] << 8);
        dst[i] = t->dtype == RL_BF16 ? rl_bf16_to_f32(h) : rl_f16_to_f32(h);
    }
}

void rl_safetensors_close(rl_safetensors *st)
{
    if (!st) return;
    for (int i = 0; i < st->n_files; i++) {
        if (st->files[i].mapped) munmap((void *)st->files[i].base, st->files[i].len);
        free(st->files[i].path);
        free(st->files[i].names);
    }
    free(st->files);
    free(st->tensors);
    free(st);
}
