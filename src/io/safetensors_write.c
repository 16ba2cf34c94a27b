/* safetensors_write.c — writes .safetensors files and sharded checkpoint directories.
 *
 * The header is byte-for-byte what the python library (safetensors.torch.save_file with
 * metadata {"format": "pt"}) writes: compact JSON, "__metadata__" first, tensors ordered by
 * dtype (F32, then BF16, then F16) and then by name, data in that order with no gaps, header
 * padded with spaces to a multiple of 8 so the data section stays aligned. Tensor data come
 * as fp32 host arrays and are converted to the stored dtype in fixed-size chunks, so writing
 * needs no second copy of the model. Files are written atomically (core/file.h).
 *
 * Sharding follows transformers' save_pretrained: tensors are taken in the caller's order and
 * a new shard starts when the next tensor would push the current one past max_shard_bytes;
 * shards are named model-00001-of-00003.safetensors and model.safetensors.index.json maps
 * every tensor name to its shard. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "io/safetensors.h"

#define CHUNK_ELEMS (1 << 18)

typedef struct strbuf {
    char *p;
    size_t len, cap;
    int failed;
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap : 4096);
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(strbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_fmt(strbuf *b, const char *fmt, long long v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, fmt, v);
    sb_put(b, tmp, n < (int)sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A JSON string as serde_json writes it: short escapes for the usual five, \u00XX for other
 * control characters, everything else (UTF-8 included) as is. */
static void sb_json_string(strbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        const char *esc = *p == '"' ? "\\\"" : *p == '\\' ? "\\\\" : *p == '\n' ? "\\n" : *p == '\r' ? "\\r"
                        : *p == '\t' ? "\\t" : *p == '\b' ? "\\b" : *p == '\f' ? "\\f" : NULL;
        if (esc) sb_str(b, esc);
        else if (*p < 0x20) sb_fmt(b, "\\u%04llx", *p);
        else sb_put(b, (const char *)p, 1);
    }
    sb_put(b, "\"", 1);
}

static int64_t numel_of(const rl_st_write_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->n_dims; d++) n *= t->shape[d];
    return n;
}

static size_t bytes_of(const rl_st_write_tensor *t) { return (size_t)numel_of(t) * rl_dtype_size(t->dtype); }

/* F32 sorts before BF16 before F16: the python library orders by its dtype enum, descending. */
static int dtype_rank(rl_dtype d) { return d == RL_F32 ? 0 : d == RL_BF16 ? 1 : 2; }

static int cmp_write_order(const void *a, const void *b)
{
    const rl_st_write_tensor *x = *(const rl_st_write_tensor *const *)a, *y = *(const rl_st_write_tensor *const *)b;
    int rx = dtype_rank(x->dtype), ry = dtype_rank(y->dtype);
    if (rx != ry) return rx - ry;
    return strcmp(x->name, y->name);
}

static int check_tensor(const char *path, const rl_st_write_tensor *t, rl_err *err)
{
    if (!t->name || !*t->name) return rl_err_set(err, "%s: a tensor has no name", path);
    if (!strcmp(t->name, "__metadata__")) return rl_err_set(err, "%s: '__metadata__' is not a tensor name", path);
    if (t->n_dims < 0 || t->n_dims > RL_ST_MAX_DIMS)
        return rl_err_set(err, "%s: tensor '%s': %d dimensions", path, t->name, t->n_dims);
    for (int d = 0; d < t->n_dims; d++)
        if (t->shape[d] < 0) return rl_err_set(err, "%s: tensor '%s': negative shape", path, t->name);
    if (t->dtype != RL_F32 && t->dtype != RL_BF16 && t->dtype != RL_F16)
        return rl_err_set(err, "%s: tensor '%s': bad dtype", path, t->name);
    if (!t->data && numel_of(t) > 0) return rl_err_set(err, "%s: tensor '%s': no data", path, t->name);
    return 0;
}

/* Writes the tensors listed in order[0..n) to path. */
static int write_file(const char *path, const rl_st_write_tensor *const *order, int n, rl_err *err)
{
    for (int i = 0; i < n; i++)
        if (check_tensor(path, order[i], err)) return -1;
    strbuf h = {0};
    sb_str(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
    long long offset = 0;
    for (int i = 0; i < n; i++) {
        const rl_st_write_tensor *t = order[i];
        sb_put(&h, ",", 1);
        sb_json_string(&h, t->name);
        sb_str(&h, ":{\"dtype\":\"");
        sb_str(&h, rl_dtype_name(t->dtype));
        sb_str(&h, "\",\"shape\":[");
        for (int d = 0; d < t->n_dims; d++) sb_fmt(&h, d ? ",%lld" : "%lld", (long long)t->shape[d]);
        sb_fmt(&h, "],\"data_offsets\":[%lld,", offset);
        offset += (long long)bytes_of(t);
        sb_fmt(&h, "%lld]}", offset);
    }
    sb_put(&h, "}", 1);
    while (!h.failed && h.len % 8) sb_put(&h, " ", 1);
    if (h.failed) {
        free(h.p);
        return rl_err_oom(err, path, h.cap * 2);
    }
    unsigned char len_le[8];
    for (int i = 0; i < 8; i++) len_le[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    void *chunk = malloc((size_t)CHUNK_ELEMS * sizeof(float));
    if (!chunk) {
        free(h.p);
        return rl_err_oom(err, path, (size_t)CHUNK_ELEMS * sizeof(float));
    }
    rl_atomic_file f;
    int rc = rl_atomic_open(&f, path, err);
    int opened = rc == 0;
    if (rc == 0) rc = rl_atomic_write(&f, len_le, 8, err);
    if (rc == 0) rc = rl_atomic_write(&f, h.p, h.len, err);
    for (int i = 0; rc == 0 && i < n; i++) {
        const rl_st_write_tensor *t = order[i];
        size_t numel = (size_t)numel_of(t), esize = rl_dtype_size(t->dtype);
        for (size_t at = 0; rc == 0 && at < numel; at += CHUNK_ELEMS) {
            size_t k = numel - at < CHUNK_ELEMS ? numel - at : CHUNK_ELEMS;
            rl_convert_from_f32(chunk, t->dtype, t->data + at, k);
            rc = rl_atomic_write(&f, chunk, k * esize, err);
        }
    }
    if (rc == 0) rc = rl_atomic_commit(&f, err);
    else if (opened) rl_atomic_abort(&f);
    free(chunk);
    free(h.p);
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    const rl_st_write_tensor *x = *(const rl_st_write_tensor *const *)a, *y = *(const rl_st_write_tensor *const *)b;
    return strcmp(x->name, y->name);
}

/* Pointers to tensors[0..n) sorted by name (malloc'd); a name given twice is an error. */
static const rl_st_write_tensor **sorted_by_name(const char *path, const rl_st_write_tensor *tensors, int n,
                                                  rl_err *err)
{
    const rl_st_write_tensor **order = malloc((size_t)(n + 1) * sizeof *order);
    if (!order) {
        rl_err_oom(err, path, (size_t)n * sizeof *order);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        order[i] = &tensors[i];
        if (!tensors[i].name) {
            free(order);
            rl_err_set(err, "%s: a tensor has no name", path);
            return NULL;
        }
    }
    qsort(order, (size_t)n, sizeof *order, cmp_name);
    for (int i = 1; i < n; i++) {
        if (strcmp(order[i - 1]->name, order[i]->name)) continue;
        rl_err_set(err, "%s: tensor '%s' given twice", path, order[i]->name);
        free(order);
        return NULL;
    }
    return order;
}

static int write_sorted(const char *path, const rl_st_write_tensor *tensors, int n, rl_err *err)
{
    const rl_st_write_tensor **order = sorted_by_name(path, tensors, n, err);
    if (!order) return -1;
    qsort(order, (size_t)n, sizeof *order, cmp_write_order);
    int rc = write_file(path, order, n, err);
    free(order);
    return rc;
}

int rl_safetensors_write(const char *path, const rl_st_write_tensor *tensors, int n, rl_err *err)
{
    return write_sorted(path, tensors, n, err);
}

/* model.safetensors.index.json as transformers writes it: metadata.total_size (bytes of
 * tensor data) and weight_map sorted by tensor name. */
static int write_index(const char *dir, const rl_st_write_tensor *tensors, int n, const int *shard_of,
                       int n_shards, rl_err *err)
{
    char path[4096];
    if (rl_path_join(path, sizeof path, dir, "model.safetensors.index.json"))
        return rl_err_set(err, "%s: path too long", dir);
    const rl_st_write_tensor **byname = sorted_by_name(path, tensors, n, err);
    if (!byname) return -1;
    long long total = 0;
    for (int i = 0; i < n; i++) total += (long long)bytes_of(&tensors[i]);
    strbuf b = {0};
    sb_str(&b, "{\n  \"metadata\": {\n    \"total_size\": ");
    sb_fmt(&b, "%lld", total);
    sb_str(&b, "\n  },\n  \"weight_map\": {\n");
    for (int i = 0; i < n; i++) {
        int s = shard_of[byname[i] - tensors];
        char shard[64];
        snprintf(shard, sizeof shard, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
        sb_str(&b, "    ");
        sb_json_string(&b, byname[i]->name);
        sb_str(&b, ": ");
        sb_json_string(&b, shard);
        sb_str(&b, i + 1 < n ? ",\n" : "\n");
    }
    sb_str(&b, "  }\n}\n");
    free(byname);
    int rc = b.failed ? rl_err_oom(err, path, b.cap * 2) : rl_file_write_atomic(path, b.p, b.len, err);
    free(b.p);
    return rc;
}

int rl_safetensors_write_dir(const char *dir, const rl_st_write_tensor *tensors, int n,
                             size_t max_shard_bytes, rl_err *err)
{
    if (rl_mkdir_p(dir, err)) return -1;
    const rl_st_write_tensor **check = sorted_by_name(dir, tensors, n, err);
    if (!check) return -1;
    free(check);
    int *shard_of = malloc((size_t)(n + 1) * sizeof *shard_of);
    if (!shard_of) return rl_err_oom(err, dir, (size_t)n * sizeof *shard_of);
    int n_shards = n > 0 ? 1 : 0;
    size_t in_shard = 0;
    for (int i = 0; i < n; i++) {
        size_t bytes = bytes_of(&tensors[i]);
        if (max_shard_bytes && in_shard > 0 && in_shard + bytes > max_shard_bytes) {
            n_shards++;
            in_shard = 0;
        }
        in_shard += bytes;
        shard_of[i] = n_shards - 1;
    }
    char path[4096];
    int rc = 0;
    char stale[4096];
    if (n_shards <= 1) {
        if (rl_path_join(path, sizeof path, dir, "model.safetensors")) rc = rl_err_set(err, "%s: path too long", dir);
        if (rc == 0) rc = rl_safetensors_write(path, tensors, n, err);
        /* A single file replaces an older sharded checkpoint (readers prefer the single file,
         * so a crash between the two steps leaves the new checkpoint readable). */
        if (rc == 0 && rl_path_join(stale, sizeof stale, dir, "model.safetensors.index.json") == 0) remove(stale);
        free(shard_of);
        return rc;
    }
    rl_st_write_tensor *part = malloc((size_t)n * sizeof *part);
    if (!part) {
        free(shard_of);
        return rl_err_oom(err, dir, (size_t)n * sizeof *part);
    }
    for (int s = 0; s < n_shards && rc == 0; s++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (shard_of[i] == s) part[k++] = tensors[i];
        char name[64];
        snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
        if (rl_path_join(path, sizeof path, dir, name)) rc = rl_err_set(err, "%s: path too long", dir);
        if (rc == 0) rc = write_sorted(path, part, k, err);
    }
    if (rc == 0) rc = write_index(dir, tensors, n, shard_of, n_shards, err);
    if (rc == 0 && rl_path_join(stale, sizeof stale, dir, "model.safetensors") == 0) remove(stale);
    free(part);
    free(shard_of);
    return rc;
}
