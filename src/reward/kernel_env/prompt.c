/* prompt.c — see prompt.h. The store is read whole, filtered to this task's correct entries,
 * de-duplicated by source (the best speedup kept), sorted by speedup; the first n_best are
 * shown, then n_diverse more chosen greedily: each time the remaining variant whose smallest
 * distance to those already chosen is largest (ties to the faster one). With buckets > 0 the
 * variants are drawn across speed buckets instead (choose_buckets). Distances use sorted
 * arrays of 64-bit token hashes (FNV-1a), so a pair costs one merge. */
#include "reward/kernel_env/prompt.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "io/json.h"
#include "reward/kernel_env/kenv.h"

typedef struct variant {
    const char *source; /* points into the parsed store */
    size_t len;
    double speedup;
    uint64_t *tokens;
    size_t n_tokens;
} variant;

typedef struct strbuf {
    char *data;
    size_t len, cap;
    int oom;
} strbuf;

void rl_kprompt_opts_default(rl_kprompt_opts *o)
{
    o->n_best = 1;
    o->n_diverse = 2;
    o->max_source = 16384;
    o->show_reference = 1;
    o->buckets = 0;
    o->seed = 0;
}

static void put(strbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) {
            b->oom = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

static void puts_(strbuf *b, const char *s) { put(b, s, strlen(s)); }

static void putf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(strbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A fenced block; the fence is longer than any run of backticks inside the code. */
static void put_code(strbuf *b, const char *code, size_t len, const char *lang)
{
    size_t run = 0, longest = 0;
    for (size_t i = 0; i < len; i++) {
        run = code[i] == '`' ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    size_t fence = longest >= 3 ? longest + 1 : 3;
    char ticks[64];
    if (fence >= sizeof ticks) fence = sizeof ticks - 1;
    memset(ticks, '`', fence);
    ticks[fence] = 0;
    putf(b, "%s%s\n", ticks, lang);
    put(b, code, len);
    if (len && code[len - 1] != '\n') puts_(b, "\n");
    putf(b, "%s\n", ticks);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorted distinct hashes of the identifier/number tokens of s; NULL with *n 0 when none. */
static uint64_t *token_set(const char *s, size_t len, size_t *n, int *oom)
{
    size_t cap = 0, count = 0;
    uint64_t *t = NULL;
    *oom = 0;
    for (size_t i = 0; i < len;) {
        if (!isalnum((unsigned char)s[i]) && s[i] != '_') {
            i++;
            continue;
        }
        uint64_t h = 1469598103934665603ull;
        while (i < len && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.')) {
            h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
            i++;
        }
        if (count == cap) {
            cap = cap ? 2 * cap : 256;
            uint64_t *nt = realloc(t, cap * sizeof *t);
            if (!nt) {
                free(t);
                *oom = 1;
                *n = 0;
                return NULL;
            }
            t = nt;
        }
        t[count++] = h;
    }
    if (count) qsort(t, count, sizeof *t, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < count; i++)
        if (!u || t[u - 1] != t[i]) t[u++] = t[i];
    *n = u;
    return t;
}

static double set_distance(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    if (!na && !nb) return 0.0;
    size_t i = 0, j = 0, common = 0;
    while (i < na && j < nb) {
        if (a[i] == b[j]) common++, i++, j++;
        else if (a[i] < b[j]) i++;
        else j++;
    }
    return 1.0 - (double)common / (double)(na + nb - common);
}

double rl_kprompt_distance(const char *a, size_t a_len, const char *b, size_t b_len)
{
    size_t na, nb;
    int oom_a, oom_b;
    uint64_t *ta = token_set(a, a_len, &na, &oom_a), *tb = token_set(b, b_len, &nb, &oom_b);
    double d = (oom_a || oom_b) ? 1.0 : set_distance(ta, na, tb, nb);
    free(ta);
    free(tb);
    return d;
}

static const char *base_name(const char *path, size_t *len)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t s = n;
    while (s > 0 && path[s - 1] != '/') s--;
    *len = n - s;
    return path + s;
}

static int same_task(const char *entry, const char *task_dir)
{
    if (!strcmp(entry, task_dir)) return 1;
    size_t la, lb;
    const char *a = base_name(entry, &la), *b = base_name(task_dir, &lb);
    return la == lb && la > 0 && !memcmp(a, b, la);
}

static int cmp_speedup(const void *x, const void *y)
{
    double a = ((const variant *)x)->speedup, b = ((const variant *)y)->speedup;
    return a > b ? -1 : a < b;
}

/* Reads the store into *lines (cJSON objects, kept for the source strings) and the variants
 * of this task. */
static int load_store(const char *path, const char *task_dir, const rl_kprompt_opts *o, cJSON **items,
                      variant **out, size_t *n_out, rl_err *err)
{
    char *text = NULL;
    size_t len = 0;
    *items = cJSON_CreateArray();
    *out = NULL;
    *n_out = 0;
    if (!*items) return rl_err_oom(err, "prompt store", sizeof(cJSON));
    if (rl_file_read_all(path, &text, &len, err)) return -1;
    size_t cap = 0, n = 0;
    variant *v = NULL;
    int line_no = 0, rc = -1;
    for (size_t pos = 0; pos < len;) {
        size_t eol = pos;
        while (eol < len && text[eol] != '\n') eol++;
        line_no++;
        size_t a = pos;
        while (a < eol && isspace((unsigned char)text[a])) a++;
        size_t line_start = pos;
        pos = eol + 1;
        if (a == eol) continue;
        char what[1200];
        snprintf(what, sizeof what, "%s:%d", path, line_no);
        cJSON *obj = rl_json_parse(text + line_start, eol - line_start, what, err);
        if (!obj) goto done;
        cJSON_AddItemToArray(*items, obj);
        const char *task, *source;
        if (!cJSON_IsObject(obj)) {
            rl_err_set(err, "%s: each line must be an object {\"task\", \"source\", \"result\"}", what);
            goto done;
        }
        if (rl_json_string(obj, "task", &task, 1, what, err) || rl_json_string(obj, "source", &source, 1, what, err))
            goto done;
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(obj, "result");
        double speedup = 0;
        int correct = 0;
        const char *status = NULL;
        if (res) {
            if (!cJSON_IsObject(res)) {
                rl_err_set(err, "%s: field 'result' must be an object with 'speedup' and 'correct' or 'status'", what);
                goto done;
            }
            if (rl_json_double(res, "speedup", &speedup, 0, what, err) || rl_json_bool(res, "correct", &correct, 0, what, err) ||
                rl_json_string(res, "status", &status, 0, what, err))
                goto done;
        } else { /* an attempt database line (attempts.h): status and speedup (null unless timed) at the top */
            const cJSON *sp = cJSON_GetObjectItemCaseSensitive(obj, "speedup");
            if (rl_json_string(obj, "status", &status, 1, what, err)) goto done;
            if (sp && !cJSON_IsNumber(sp) && !cJSON_IsNull(sp)) {
                rl_err_set(err, "%s: field 'speedup' must be a number or null", what);
                goto done;
            }
            speedup = cJSON_IsNumber(sp) ? sp->valuedouble : 0;
        }
        if (status && !strcmp(status, "ok")) correct = 1;
        if (!same_task(task, task_dir) || !correct || !(speedup > 0) || !isfinite(speedup)) continue;
        size_t slen = strlen(source);
        if (slen == 0 || slen > o->max_source) continue;
        size_t k = 0;
        while (k < n && !(v[k].len == slen && !memcmp(v[k].source, source, slen))) k++;
        if (k < n) {
            if (speedup > v[k].speedup) v[k].speedup = speedup;
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            variant *nv = realloc(v, cap * sizeof *v);
            if (!nv) {
                rl_err_oom(err, "prompt store variants", cap * sizeof *v);
                goto done;
            }
            v = nv;
        }
        v[n++] = (variant){source, slen, speedup, NULL, 0};
    }
    rc = 0;
done:
    free(text);
    if (rc) {
        free(v);
        v = NULL;
        n = 0;
    }
    *out = v;
    *n_out = n;
    return rc;
}

/* Indices of the variants to show, best first then the diverse picks; returns the count. */
static size_t choose(variant *v, size_t n, const rl_kprompt_opts *o, size_t *pick, const char **why, rl_err *err)
{
    qsort(v, n, sizeof *v, cmp_speedup);
    size_t k = 0;
    for (; k < n && k < (size_t)(o->n_best > 0 ? o->n_best : 0); k++) {
        pick[k] = k;
        why[k] = k == 0 ? "the fastest so far" : "among the fastest";
    }
    if (o->n_diverse <= 0 || k >= n) return k;
    for (size_t i = 0; i < n; i++) {
        int oom;
        v[i].tokens = token_set(v[i].source, v[i].len, &v[i].n_tokens, &oom);
        if (oom) {
            rl_err_oom(err, "prompt token sets", v[i].len * sizeof(uint64_t));
            return (size_t)-1;
        }
    }
    size_t limit = k + (size_t)o->n_diverse;
    while (k < limit && k < n) {
        size_t best = n;
        double best_d = -1;
        for (size_t i = 0; i < n; i++) {
            int taken = 0;
            for (size_t j = 0; j < k; j++) taken |= pick[j] == i;
            if (taken) continue;
            double d = 1.0;
            for (size_t j = 0; j < k; j++) {
                double dj = set_distance(v[i].tokens, v[i].n_tokens, v[pick[j]].tokens, v[pick[j]].n_tokens);
                if (dj < d) d = dj;
            }
            if (d > best_d) best_d = d, best = i;
        }
        if (best == n) break;
        pick[k] = best;
        why[k++] = "a different approach";
    }
    return k;
}

/* The contrastive choice (buckets > 0): one variant drawn at random from each speed bucket,
 * fastest bucket first. Buckets split [log2 min, log2 max] of the speedups into equal parts. */
static size_t choose_buckets(variant *v, size_t n, const rl_kprompt_opts *o, size_t *pick, const char **why)
{
    qsort(v, n, sizeof *v, cmp_speedup);
    size_t want = (size_t)(o->n_best > 0 ? o->n_best : 0) + (size_t)(o->n_diverse > 0 ? o->n_diverse : 0), k = 0;
    double hi = log2(v[0].speedup), lo = log2(v[n - 1].speedup), width = (hi - lo) / o->buckets;
    uint64_t state = o->seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    size_t first = 0; /* v[first..] not yet in a bucket (sorted fastest first) */
    for (int b = 0; b < o->buckets && k < want && first < n; b++) {
        double floor_ = b == o->buckets - 1 || width <= 0 ? -INFINITY : hi - (b + 1) * width;
        size_t end = first;
        while (end < n && log2(v[end].speedup) >= floor_) end++;
        if (end == first) continue;
        state ^= state >> 12, state ^= state << 25, state ^= state >> 27; /* xorshift64* */
        size_t i = first + (size_t)((state * 2685821657736338717ull) % (end - first));
        pick[k] = i;
        why[k++] = b == 0 ? "from the fastest group" : "from a slower group";
        first = end;
    }
    return k;
}

int rl_kprompt_build(const char *task_dir, const char *store_path, const rl_kprompt_opts *o, char **out,
                     size_t *len, rl_err *err)
{
    rl_kprompt_opts def;
    if (!o) {
        rl_kprompt_opts_default(&def);
        o = &def;
    }
    *out = NULL;
    *len = 0;
    char path[4200];
    char *task_text = NULL, *ref_text = NULL;
    size_t task_len = 0, ref_len = 0;
    int kb = rl_kenv_is_kernelbench(task_dir);
    if (kb) {
        if (rl_file_read_all(task_dir, &task_text, &task_len, err)) return -1;
    } else {
        if (rl_path_join(path, sizeof path, task_dir, "prompt.md"))
            return rl_err_set(err, "%s: task directory path too long", task_dir);
        if (rl_file_read_all(path, &task_text, &task_len, err)) return -1;
    }
    const char *lang = kb ? "python" : "cuda";
    if (o->show_reference && !kb) {
        rl_path_join(path, sizeof path, task_dir, "reference.cu"); /* fits: prompt.md's path did */
        if (rl_file_read_all(path, &ref_text, &ref_len, err)) {
            free(task_text);
            return -1;
        }
    }
    cJSON *items = NULL;
    variant *v = NULL;
    size_t n = 0, n_pick = 0, *pick = NULL;
    const char **why = NULL;
    int rc = -1;
    if (store_path && load_store(store_path, task_dir, o, &items, &v, &n, err)) goto done;
    size_t room = (size_t)(o->n_best > 0 ? o->n_best : 0) + (size_t)(o->n_diverse > 0 ? o->n_diverse : 0);
    if (n && room) {
        pick = malloc(room * sizeof *pick);
        why = malloc(room * sizeof *why);
        if (!pick || !why) {
            rl_err_oom(err, "prompt choice", room * sizeof *pick);
            goto done;
        }
        n_pick = o->buckets > 0 ? choose_buckets(v, n, o, pick, why) : choose(v, n, o, pick, why, err);
        if (n_pick == (size_t)-1) goto done;
    }
    strbuf b = {0};
    if (kb) {
        puts_(&b, "You are an expert CUDA performance engineer. Write a faster implementation of the PyTorch model "
                  "below for an NVIDIA Hopper GPU (sm_90a): a class ModelNew, constructed with the same arguments as "
                  "Model, whose forward gives the same outputs, with the work done by your own CUDA kernels "
                  "(torch.utils.cpp_extension.load_inline). It must stay correct on every input get_inputs() can "
                  "give.\n\n## Reference (speedup 1.00x)\n\n");
        put_code(&b, task_text, task_len, "python");
    } else {
        puts_(&b, "You are an expert CUDA performance engineer. Write a faster CUDA implementation of the task below "
                  "for an NVIDIA Hopper GPU (sm_90a). It must stay correct on every input size listed.\n\n");
        put(&b, task_text, task_len);
        if (task_len && task_text[task_len - 1] != '\n') puts_(&b, "\n");
    }
    if (ref_text) {
        puts_(&b, "\n## Reference implementation\n\nThe baseline your kernel is timed against (speedup 1.00x):\n\n");
        put_code(&b, ref_text, ref_len, lang);
    }
    if (n_pick) {
        puts_(&b, "\n## Earlier attempts\n\nWritten for this task before and measured by the same evaluator; all were "
                  "correct. Speedup = reference time / attempt time.\n");
        for (size_t i = 0; i < n_pick; i++) {
            const variant *x = &v[pick[i]];
            putf(&b, "\n### Attempt %zu: speedup %.2fx (%s)\n\n", i + 1, x->speedup, why[i]);
            put_code(&b, x->source, x->len, lang);
        }
    }
    puts_(&b, "\n## Your answer\n\nFirst, a short performance analysis: what bounds the reference");
    puts_(&b, n_pick ? " and the attempts above" : "");
    puts_(&b, " (memory traffic, arithmetic, kernel launches, occupancy, synchronization), and what your kernel "
              "changes to be faster");
    puts_(&b, n_pick ? " than the fastest of them" : "");
    if (kb)
        puts_(&b, ".\nThen the complete new implementation in exactly one ```python code block: the whole file, "
                  "defining class ModelNew (and the CUDA it loads). Only the last ```python block of your answer is "
                  "run.\n");
    else
        puts_(&b, ".\nThen the complete new implementation in exactly one ```cuda code block: the whole .cu file, "
                  "defining extern \"C\" int rl_kernel(const rl_kernel_args *args). Only the last ```cuda block of "
                  "your answer is compiled.\n");
    if (b.oom) {
        free(b.data);
        rl_err_oom(err, "prompt text", b.len);
        goto done;
    }
    *out = b.data;
    *len = b.len;
    rc = 0;
done:
    for (size_t i = 0; i < n; i++) free(v[i].tokens);
    free(v);
    free(pick);
    free(why);
    cJSON_Delete(items);
    free(task_text);
    free(ref_text);
    return rc;
}
