/* kspec.c — see kspec.h. */
#include "reward/kernel_env/kspec.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "io/json.h"

const char *const rl_kspec_adversarial_names[6] = {"signed_zero", "inf", "nan", "denormal", "huge", "tiny"};

static int copy_str(char *dst, size_t size, const cJSON *obj, const char *key, int required,
                    const char *what, rl_err *err)
{
    const char *s = NULL;
    if (rl_json_string(obj, key, &s, required, what, err)) return -1;
    if (!s) return 0;
    if (strlen(s) >= size) return rl_err_set(err, "%s: field '%s' is longer than %zu bytes", what, key, size - 1);
    strcpy(dst, s);
    return 0;
}

const char *const rl_kdtype_names[4] = {"f32", "f16", "bf16", "i32"};

static int parse_dtype(const cJSON *obj, rl_kdtype *out, const char *what, rl_err *err)
{
    const char *s = NULL;
    if (rl_json_string(obj, "dtype", &s, 1, what, err)) return -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, rl_kdtype_names[i])) {
            *out = (rl_kdtype)i;
            return 0;
        }
    return rl_err_set(err, "%s: dtype '%s' is not one of f32, f16, bf16, i32", what, s);
}

static int find_dim(const rl_kspec *spec, const char *name)
{
    for (int d = 0; d < spec->n_dims; d++)
        if (!strcmp(spec->dim_names[d], name)) return d;
    return -1;
}

static int parse_shape(rl_kspec *spec, const cJSON *obj, rl_ktensor *t, const char *what, rl_err *err)
{
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(obj, "shape");
    if (!cJSON_IsArray(shape)) return rl_err_set(err, "%s: field 'shape' must be an array", what);
    t->rank = cJSON_GetArraySize(shape);
    if (t->rank > RL_KSPEC_MAX) return rl_err_set(err, "%s: shape has %d entries, at most %d", what, t->rank, RL_KSPEC_MAX);
    int i = 0;
    for (const cJSON *e = shape->child; e; e = e->next, i++) {
        if (cJSON_IsString(e)) {
            int d = find_dim(spec, e->valuestring);
            if (d < 0) return rl_err_set(err, "%s: shape entry %d names dim '%s', which 'dims' does not define", what, i, e->valuestring);
            t->shape[i] = -(d + 1);
        } else if (rl_json_is_integer(e) && e->valuedouble >= 1 && e->valuedouble <= 1 << 30) {
            t->shape[i] = (int)e->valuedouble;
        } else {
            return rl_err_set(err, "%s: shape entry %d must be a dim name or a positive integer", what, i);
        }
    }
    return 0;
}

static int parse_dist(const cJSON *obj, rl_ktensor *t, const char *what, rl_err *err)
{
    t->dist_uniform = 0;
    t->p0 = 0;
    t->p1 = 1;
    const cJSON *dist = cJSON_GetObjectItemCaseSensitive(obj, "dist");
    if (!dist) return 0;
    if (!cJSON_IsObject(dist)) return rl_err_set(err, "%s: field 'dist' must be an object", what);
    const char *kind = NULL;
    if (rl_json_string(dist, "kind", &kind, 1, what, err)) return -1;
    if (!strcmp(kind, "normal")) {
        if (rl_json_double(dist, "mean", &t->p0, 0, what, err) || rl_json_double(dist, "std", &t->p1, 0, what, err)) return -1;
        if (!(t->p1 > 0)) return rl_err_set(err, "%s: dist 'std' must be positive, got %g", what, t->p1);
    } else if (!strcmp(kind, "uniform")) {
        t->dist_uniform = 1;
        if (rl_json_double(dist, "low", &t->p0, 1, what, err) || rl_json_double(dist, "high", &t->p1, 1, what, err)) return -1;
        if (!(t->p1 > t->p0)) return rl_err_set(err, "%s: dist 'high' (%g) must be above 'low' (%g)", what, t->p1, t->p0);
    } else {
        return rl_err_set(err, "%s: dist kind '%s' is not normal or uniform", what, kind);
    }
    return 0;
}

static int parse_tensor(rl_kspec *spec, const cJSON *obj, rl_ktensor *t, int is_input, const char *what,
                        rl_err *err)
{
    memset(t, 0, sizeof *t);
    if (!cJSON_IsObject(obj)) return rl_err_set(err, "%s: must be an object", what);
    if (copy_str(t->name, sizeof t->name, obj, "name", 1, what, err) || parse_dtype(obj, &t->dtype, what, err) ||
        parse_shape(spec, obj, t, what, err))
        return -1;
    if (!is_input) return 0;
    if (parse_dist(obj, t, what, err) || rl_json_bool(obj, "mutable", &t->mutable_, 0, what, err)) return -1;
    const cJSON *adv = cJSON_GetObjectItemCaseSensitive(obj, "adversarial");
    if (!adv) return 0;
    if (!cJSON_IsArray(adv)) return rl_err_set(err, "%s: field 'adversarial' must be an array of strings", what);
    for (const cJSON *e = adv->child; e; e = e->next) {
        int k = -1;
        for (int i = 0; i < 6 && cJSON_IsString(e); i++)
            if (!strcmp(e->valuestring, rl_kspec_adversarial_names[i])) k = i;
        if (k < 0)
            return rl_err_set(err, "%s: adversarial entry %s%s%s is not one of signed_zero, inf, nan, denormal, huge, tiny",
                              what, cJSON_IsString(e) ? "'" : "", cJSON_IsString(e) ? e->valuestring : "(not a string)",
                              cJSON_IsString(e) ? "'" : "");
        t->adversarial |= 1 << k;
    }
    return 0;
}

static int parse_dims(rl_kspec *spec, const cJSON *root, const char *what, rl_err *err)
{
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(root, "dims");
    if (!cJSON_IsArray(dims) || cJSON_GetArraySize(dims) < 1 || cJSON_GetArraySize(dims) > RL_KSPEC_MAX)
        return rl_err_set(err, "%s: field 'dims' must be an array of 1 to %d {\"name\", \"value\"} objects", what, RL_KSPEC_MAX);
    for (const cJSON *e = dims->child; e; e = e->next) {
        int d = spec->n_dims++;
        char w[300];
        snprintf(w, sizeof w, "%s: dims[%d]", what, d);
        int64_t v = 0;
        if (!cJSON_IsObject(e)) return rl_err_set(err, "%s: must be an object", w);
        if (copy_str(spec->dim_names[d], sizeof spec->dim_names[d], e, "name", 1, w, err) ||
            rl_json_int(e, "value", &v, 1, w, err))
            return -1;
        if (v < 1) return rl_err_set(err, "%s: value must be positive, got %lld", w, (long long)v);
        if (find_dim(spec, spec->dim_names[d]) != d) return rl_err_set(err, "%s: dim '%s' appears twice", w, spec->dim_names[d]);
        spec->dims[d] = v;
    }
    const cJSON *trials = cJSON_GetObjectItemCaseSensitive(root, "trial_dims");
    if (!trials) return 0;
    if (!cJSON_IsArray(trials) || cJSON_GetArraySize(trials) > RL_KSPEC_MAX_TRIALS)
        return rl_err_set(err, "%s: field 'trial_dims' must be an array of at most %d arrays", what, RL_KSPEC_MAX_TRIALS);
    for (const cJSON *t = trials->child; t; t = t->next) {
        int k = spec->n_trials++;
        if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) != spec->n_dims)
            return rl_err_set(err, "%s: trial_dims[%d] must be an array of %d values (one per dim)", what, k, spec->n_dims);
        int d = 0;
        for (const cJSON *v = t->child; v; v = v->next, d++) {
            if (!rl_json_is_integer(v) || v->valuedouble < 1)
                return rl_err_set(err, "%s: trial_dims[%d][%d] must be a positive integer", what, k, d);
            spec->trial_dims[k][d] = (int64_t)v->valuedouble;
        }
    }
    return 0;
}

static int parse_flags(const cJSON *root, const char *key, const char *const *names, int n_names, int *out,
                       const char *what, rl_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!arr) return 1;
    if (!cJSON_IsArray(arr)) return rl_err_set(err, "%s: field '%s' must be an array of strings", what, key);
    *out = 0;
    for (const cJSON *e = arr->child; e; e = e->next) {
        int k = -1;
        for (int i = 0; i < n_names && cJSON_IsString(e); i++)
            if (!strcmp(e->valuestring, names[i])) k = i;
        if (k < 0) {
            char list[200] = "";
            for (int i = 0; i < n_names; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
            return rl_err_set(err, "%s: entry %s of '%s' is not one of %s", what,
                              cJSON_IsString(e) ? e->valuestring : "(not a string)", key, list);
        }
        *out |= 1 << k;
    }
    return 0;
}

static int parse_tensor_list(rl_kspec *spec, const cJSON *root, const char *key, int is_input, const char *what,
                             rl_err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
    if (n < (is_input ? 0 : 1) || n > RL_KSPEC_MAX)
        return rl_err_set(err, "%s: field '%s' must be an array of %d to %d tensors", what, key, is_input ? 0 : 1, RL_KSPEC_MAX);
    int i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        char w[300];
        snprintf(w, sizeof w, "%s: %s[%d]", what, key, i);
        if (parse_tensor(spec, e, is_input ? &spec->inputs[i] : &spec->outputs[i], is_input, w, err)) return -1;
    }
    if (is_input) spec->n_inputs = n;
    else spec->n_outputs = n;
    return 0;
}

int rl_kspec_parse(rl_kspec *spec, const char *text, size_t len, const char *what, rl_err *err)
{
    memset(spec, 0, sizeof *spec);
    spec->atol = spec->rtol = -1;
    cJSON *root = rl_json_parse(text, len, what, err);
    if (!root) return -1;
    int rc = -1;
    static const char *forbid_names[] = {"streams", "graphs", "library", "threads"};
    static const char *lib_names[] = {"cublas", "cudnn"};
    if (!cJSON_IsObject(root)) {
        rl_err_set(err, "%s: the top level must be an object", what);
        goto done;
    }
    if (copy_str(spec->name, sizeof spec->name, root, "name", 1, what, err) ||
        copy_str(spec->category, sizeof spec->category, root, "category", 0, what, err) ||
        copy_str(spec->kernelbench, sizeof spec->kernelbench, root, "kernelbench", 0, what, err) ||
        parse_dims(spec, root, what, err) || parse_tensor_list(spec, root, "inputs", 1, what, err) ||
        parse_tensor_list(spec, root, "outputs", 0, what, err))
        goto done;
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(root, "tolerance");
    if (tol) {
        if (!cJSON_IsObject(tol)) {
            rl_err_set(err, "%s: field 'tolerance' must be an object {\"atol\", \"rtol\"}", what);
            goto done;
        }
        if (rl_json_double(tol, "atol", &spec->atol, 1, what, err) || rl_json_double(tol, "rtol", &spec->rtol, 1, what, err))
            goto done;
        if (!(spec->atol >= 0 && spec->rtol >= 0)) {
            rl_err_set(err, "%s: tolerance atol and rtol must be >= 0", what);
            goto done;
        }
    }
    spec->forbid = RL_KFORBID_STREAMS | RL_KFORBID_GRAPHS | RL_KFORBID_LIBRARY | RL_KFORBID_THREADS;
    if (parse_flags(root, "forbid", forbid_names, 4, &spec->forbid, what, err) < 0 ||
        parse_flags(root, "library", lib_names, 2, &spec->library, what, err) < 0)
        goto done;
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

int rl_kspec_load(rl_kspec *spec, const char *dir, rl_err *err)
{
    char path[1200];
    char *text = NULL;
    size_t len = 0;
    if (snprintf(path, sizeof path, "%s/spec.json", dir) >= (int)sizeof path)
        return rl_err_set(err, "%s: task directory path too long", dir);
    if (rl_file_read_all(path, &text, &len, err)) return -1;
    int rc = rl_kspec_parse(spec, text, len, path, err);
    free(text);
    if (rc) return -1;
    snprintf(spec->dir, sizeof spec->dir, "%s", dir);
    snprintf(path, sizeof path, "%s/reference.cu", dir);
    if (!rl_file_exists(path)) return rl_err_set(err, "%s: missing (every task needs its reference)", path);
    return 0;
}

void rl_kspec_tolerance(const rl_kspec *spec, const rl_ktol *def, rl_kdtype dtype, double *atol, double *rtol)
{
    *atol = spec->atol >= 0 ? spec->atol : def->atol[dtype];
    *rtol = spec->rtol >= 0 ? spec->rtol : def->rtol[dtype];
}

typedef struct plan_buf {
    char *p;
    size_t size, used;
    int overflow;
} plan_buf;

static void put(plan_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(plan_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->used, b->size - b->used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->size - b->used) b->overflow = 1;
    else b->used += (size_t)n;
}

static void put_shape(plan_buf *b, const rl_ktensor *t)
{
    put(b, " %d", t->rank);
    for (int i = 0; i < t->rank; i++) put(b, " %d", t->shape[i]);
    put(b, "\n");
}

int rl_kspec_write_plan(const rl_kspec *spec, const rl_ktol *def, char *buf, size_t size, rl_err *err)
{
    plan_buf b = {buf, size, 0, 0};
    buf[0] = 0;
    put(&b, "rlplan 1\ndims %d dimsets %d\n", spec->n_dims, spec->n_trials + 1);
    for (int t = 0; t <= spec->n_trials; t++) {
        const int64_t *d = t < spec->n_trials ? spec->trial_dims[t] : spec->dims;
        for (int k = 0; k < spec->n_dims; k++) put(&b, "%s%lld", k ? " " : "", (long long)d[k]);
        put(&b, "\n");
    }
    put(&b, "inputs %d\n", spec->n_inputs);
    for (int i = 0; i < spec->n_inputs; i++) {
        const rl_ktensor *t = &spec->inputs[i];
        put(&b, "%d %d %d %.17g %.17g %d", (int)t->dtype, t->mutable_, t->dist_uniform, t->p0, t->p1, t->adversarial);
        put_shape(&b, t);
    }
    put(&b, "outputs %d\n", spec->n_outputs);
    for (int i = 0; i < spec->n_outputs; i++) {
        const rl_ktensor *t = &spec->outputs[i];
        double atol, rtol;
        rl_kspec_tolerance(spec, def, t->dtype, &atol, &rtol);
        put(&b, "%d %.17g %.17g", (int)t->dtype, atol, rtol);
        put_shape(&b, t);
    }
    if (b.overflow) return rl_err_set(err, "%s: plan does not fit in %zu bytes", spec->name, size);
    return 0;
}
