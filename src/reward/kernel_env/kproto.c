/* kproto.c — see kproto.h. Ranges are those the workers accept (input copies up to the native
 * worker's 8 buffer sets, at least 3 timed runs so that p10 and p90 differ from the median). */
#include "reward/kernel_env/kproto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/number.h"
#include "io/json.h"

typedef struct field {
    const char *key;
    int is_int;
    double lo, hi;
    size_t offset;
} field;

#define F_INT(k, lo, hi) {#k, 1, lo, hi, offsetof(rl_kproto, k)}
#define F_NUM(k, lo, hi) {#k, 0, lo, hi, offsetof(rl_kproto, k)}

static const field fields[] = {
    F_INT(random_trials, 1, 100),
    F_INT(warmup, 0, 1000),
    F_INT(timed, 3, 10000),
    F_INT(input_copies, 1, RL_KPROTO_MAX_COPIES),
    F_NUM(l2_flush_factor, 1, 16),
    F_NUM(max_spread, 0.001, 10),
    F_INT(spread_repeats, 0, 10),
    F_NUM(ref_slowdown_limit, 1, 100),
    F_NUM(ref_slowdown_min_ms, 0, 1000),
    F_INT(watchdog_ms, 10, 600000),
    F_INT(mem_cap_mb, 1, 1 << 20),
    F_NUM(timeout_s, 1, 86400),
    F_NUM(compile_timeout_s, 1, 86400),
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

static int in_range(const field *f, double x)
{
    return isfinite(x) && (!f->is_int || x == floor(x)) && x >= f->lo && x <= f->hi;
}

static void store(rl_kproto *p, const field *f, double x)
{
    char *dst = (char *)p + f->offset;
    if (f->is_int) *(int *)dst = (int)x;
    else *(double *)dst = x;
}

static int range_error(const field *f, const char *what, const char *got, rl_err *err)
{
    return rl_err_set(err, "%s: field '%s' must be %s in [%g, %g], got %s", what, f->key,
                      f->is_int ? "an integer" : "a number", f->lo, f->hi, got);
}

static int parse_field(rl_kproto *p, const cJSON *root, const field *f, const char *what, rl_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, f->key);
    if (!v) return rl_err_set(err, "%s: missing field '%s'", what, f->key);
    if (!cJSON_IsNumber(v) || !in_range(f, v->valuedouble)) {
        char got[64] = "not a number";
        if (cJSON_IsNumber(v)) snprintf(got, sizeof got, "%g", v->valuedouble);
        else if (cJSON_IsString(v)) snprintf(got, sizeof got, "a string");
        return range_error(f, what, got, err);
    }
    store(p, f, v->valuedouble);
    return 0;
}

int rl_kproto_set(rl_kproto *p, const char *key, const char *text, const char *what, rl_err *err)
{
    for (size_t i = 0; i < N_FIELDS; i++) {
        if (strcmp(fields[i].key, key)) continue;
        rl_number_range r = {fields[i].lo, fields[i].hi, fields[i].is_int, 0, 0};
        char field_what[200];
        snprintf(field_what, sizeof field_what, "%s: field '%s'", what, key);
        double x;
        if (rl_number_parse(text, &r, field_what, &x, err)) return -1;
        store(p, &fields[i], x);
        return 0;
    }
    return rl_err_set(err, "%s: '%s' is not a protocol parameter", what, key);
}

static int parse_tolerance(rl_kproto *p, const cJSON *root, const char *what, rl_err *err)
{
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(root, "tolerance");
    if (!cJSON_IsObject(tol))
        return rl_err_set(err, "%s: field 'tolerance' must be an object {\"f32\": {\"atol\", \"rtol\"}, \"f16\", \"bf16\", \"i32\"}", what);
    for (const cJSON *e = tol->child; e; e = e->next) {
        int k = -1;
        for (int d = 0; d < 4; d++)
            if (!strcmp(e->string, rl_kdtype_names[d])) k = d;
        if (k < 0) return rl_err_set(err, "%s: tolerance.%s is not a dtype (f32, f16, bf16, i32)", what, e->string);
    }
    for (int d = 0; d < 4; d++) {
        char w[300];
        snprintf(w, sizeof w, "%s: tolerance.%s", what, rl_kdtype_names[d]);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(tol, rl_kdtype_names[d]);
        if (!cJSON_IsObject(t)) return rl_err_set(err, "%s: missing, or not an object {\"atol\", \"rtol\"}", w);
        double *dst[2] = {&p->tol.atol[d], &p->tol.rtol[d]};
        const char *keys[2] = {"atol", "rtol"};
        for (int i = 0; i < 2; i++) {
            if (rl_json_double(t, keys[i], dst[i], 1, w, err)) return -1;
            if (!(*dst[i] >= 0 && *dst[i] <= 1)) return rl_err_set(err, "%s: field '%s' must be in [0, 1], got %g", w, keys[i], *dst[i]);
        }
    }
    return 0;
}

static int parse_root(rl_kproto *p, cJSON *root, const char *what, rl_err *err)
{
    memset(p, 0, sizeof *p);
    if (!root) return -1;
    int rc = -1;
    if (!cJSON_IsObject(root)) {
        rl_err_set(err, "%s: the top level must be an object", what);
        goto done;
    }
    for (const cJSON *e = root->child; e; e = e->next) {
        int known = !strcmp(e->string, "tolerance") || !strcmp(e->string, "comment");
        for (size_t i = 0; i < N_FIELDS && !known; i++) known = !strcmp(e->string, fields[i].key);
        if (!known) {
            rl_err_set(err, "%s: field '%s' is not a protocol parameter", what, e->string);
            goto done;
        }
    }
    const char *comment = NULL;
    if (rl_json_string(root, "comment", &comment, 0, what, err)) goto done;
    for (size_t i = 0; i < N_FIELDS; i++)
        if (parse_field(p, root, &fields[i], what, err)) goto done;
    if (parse_tolerance(p, root, what, err)) goto done;
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

int rl_kproto_parse(rl_kproto *p, const char *text, size_t len, const char *what, rl_err *err)
{
    return parse_root(p, rl_json_parse(text, len, what, err), what, err);
}

int rl_kproto_load(rl_kproto *p, const char *path, rl_err *err)
{
    return parse_root(p, rl_json_parse_file(path, err), path, err);
}
