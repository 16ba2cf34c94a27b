/* attempts.c — see attempts.h. */
#include "reward/kernel_env/attempts.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "io/json.h"

void rl_kattempt_hash(const char *src, size_t len, char hex[17])
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)src[i]) * 1099511628211ull;
    snprintf(hex, 17, "%016" PRIx64, h);
}

int rl_kattempts_load(const char *path, cJSON **lines, int *n_torn, rl_err *err)
{
    char *text = NULL;
    size_t len = 0;
    *lines = NULL;
    if (n_torn) *n_torn = 0;
    if (rl_file_read_all(path, &text, &len, err)) return -1;
    cJSON *arr = cJSON_CreateArray();
    if (!arr) {
        free(text);
        return rl_err_oom(err, "attempts", 0);
    }
    int line_no = 0;
    for (size_t pos = 0; pos < len;) {
        size_t eol = pos;
        while (eol < len && text[eol] != '\n') eol++;
        int last_unterminated = eol == len;
        line_no++;
        size_t a = pos, b = eol;
        pos = eol + 1;
        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
        if (a == b) continue;
        char what[4200];
        snprintf(what, sizeof what, "%s:%d", path, line_no);
        rl_err e;
        cJSON *obj = rl_json_parse(text + a, b - a, what, &e);
        const cJSON *step = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, "step") : NULL;
        const cJSON *task = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, "task") : NULL;
        if (!cJSON_IsNumber(step) || !cJSON_IsString(task)) {
            cJSON_Delete(obj);
            if (last_unterminated) { /* a run killed mid-write */
                if (n_torn) (*n_torn)++;
                continue;
            }
            if (obj) rl_err_set(err, "%s: an attempt needs \"step\" (a number) and \"task\" (a string)", what);
            else *err = e;
            cJSON_Delete(arr);
            free(text);
            return -1;
        }
        cJSON_AddItemToArray(arr, obj);
    }
    free(text);
    *lines = arr;
    return 0;
}

/* The kept lines as text (one compact object a line). */
static char *join_lines(const cJSON *arr, size_t *len)
{
    size_t cap = 1024, n = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (const cJSON *o = arr->child; o; o = o->next) {
        char *s = cJSON_PrintUnformatted(o);
        if (!s) {
            free(out);
            return NULL;
        }
        size_t k = strlen(s);
        if (n + k + 2 > cap) {
            while (n + k + 2 > cap) cap *= 2;
            char *g = realloc(out, cap);
            if (!g) {
                free(s);
                free(out);
                return NULL;
            }
            out = g;
        }
        memcpy(out + n, s, k);
        n += k;
        out[n++] = '\n';
        free(s);
    }
    *len = n;
    return out;
}

int rl_kattempts_open(rl_kattempts *db, const char *path, int64_t keep_upto, rl_err *err)
{
    memset(db, 0, sizeof *db);
    if (!(db->path = strdup(path))) return rl_err_oom(err, "attempts path", 0);
    if (keep_upto >= 0 && rl_file_exists(path)) {
        cJSON *arr;
        int torn;
        if (rl_kattempts_load(path, &arr, &torn, err)) {
            rl_kattempts_close(db);
            return rl_err_prefix(err, "resume: ");
        }
        int64_t dropped = torn;
        for (cJSON *o = arr->child, *next; o; o = next) {
            next = o->next;
            if (cJSON_GetObjectItemCaseSensitive(o, "step")->valuedouble > (double)keep_upto) {
                cJSON_Delete(cJSON_DetachItemViaPointer(arr, o));
                dropped++;
            } else {
                db->n++;
            }
        }
        int rc = 0;
        if (dropped) {
            size_t len = 0;
            char *text = join_lines(arr, &len);
            rc = text ? rl_file_write_atomic(path, text, len, err) : rl_err_oom(err, "attempts", 0);
            free(text);
        }
        cJSON_Delete(arr);
        db->n_dropped = dropped;
        if (rc) {
            rl_kattempts_close(db);
            return -1;
        }
        db->fp = fopen(path, "a");
    } else {
        db->fp = fopen(path, "w");
    }
    if (!db->fp) {
        int code = errno;
        rl_kattempts_close(db);
        return rl_err_set(err, "%s: cannot open the attempt database: %s", path, strerror(code));
    }
    return 0;
}

int rl_kattempts_append(rl_kattempts *db, const rl_kattempt *a, rl_err *err)
{
    cJSON *o = cJSON_CreateObject();
    char hash[17];
    rl_kattempt_hash(a->source ? a->source : "", a->source ? a->source_len : 0, hash);
    char *src = malloc(a->source_len + 1);
    if (!o || !src) {
        cJSON_Delete(o);
        free(src);
        return rl_err_oom(err, "attempt", a->source_len);
    }
    if (a->source) memcpy(src, a->source, a->source_len);
    src[a->source ? a->source_len : 0] = '\0';
    cJSON_AddNumberToObject(o, "step", (double)a->step);
    cJSON_AddStringToObject(o, "task", a->task);
    cJSON_AddStringToObject(o, "hash", hash);
    cJSON_AddStringToObject(o, "status", a->status);
    if (a->timed && isfinite(a->speedup)) cJSON_AddNumberToObject(o, "speedup", a->speedup);
    else cJSON_AddNullToObject(o, "speedup");
    if (a->has_reward) cJSON_AddNumberToObject(o, "reward", a->reward);
    else cJSON_AddNullToObject(o, "reward");
    if (a->reason) cJSON_AddStringToObject(o, "reason", a->reason);
    else cJSON_AddNullToObject(o, "reason");
    if (a->memo) cJSON_AddTrueToObject(o, "memo");
    cJSON_AddStringToObject(o, "source", src);
    free(src);
    char *line = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!line) return rl_err_oom(err, "attempt line", a->source_len);
    int ok = fprintf(db->fp, "%s\n", line) > 0 && fflush(db->fp) == 0;
    free(line);
    if (!ok) return rl_err_set(err, "%s: cannot append an attempt: %s", db->path, strerror(errno));
    db->n++;
    return 0;
}

void rl_kattempts_close(rl_kattempts *db)
{
    if (db->fp) fclose(db->fp);
    free(db->path);
    memset(db, 0, sizeof *db);
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

void rl_kattempts_summary_free(rl_kattempts_summary *s)
{
    for (int i = 0; i < s->n_tasks; i++) free(s->tasks[i].task), free(s->tasks[i].source);
    free(s->tasks);
    free(s->steps);
    memset(s, 0, sizeof *s);
}

int rl_kattempts_summarize(const char *path, rl_kattempts_summary *s, rl_err *err)
{
    memset(s, 0, sizeof *s);
    cJSON *arr;
    if (rl_kattempts_load(path, &arr, &s->n_torn, err)) return -1;
    int n = cJSON_GetArraySize(arr), rc = 0;
    s->tasks = calloc((size_t)(n ? n : 1), sizeof *s->tasks);
    s->steps = calloc((size_t)(n ? n : 1), sizeof *s->steps);
    if (!s->tasks || !s->steps) rc = rl_err_oom(err, "attempt summary", (size_t)n * 64);
    for (const cJSON *o = arr->child; rc == 0 && o; o = o->next) {
        const char *task = str_of(o, "task"), *status = str_of(o, "status"), *src = str_of(o, "source");
        int64_t step = (int64_t)cJSON_GetObjectItemCaseSensitive(o, "step")->valuedouble;
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(o, "speedup"), *rw = cJSON_GetObjectItemCaseSensitive(o, "reward");
        int ok = status && !strcmp(status, "ok") && cJSON_IsNumber(sp);
        int t = 0;
        while (t < s->n_tasks && strcmp(s->tasks[t].task, task)) t++;
        if (t == s->n_tasks && !(s->tasks[s->n_tasks++].task = strdup(task))) rc = rl_err_oom(err, "task", 0);
        int k = 0;
        while (k < s->n_steps && s->steps[k].step != step) k++;
        if (k == s->n_steps) s->steps[s->n_steps++].step = step;
        rl_ktask_best *b = &s->tasks[t];
        rl_kstep_stat *st = &s->steps[k];
        b->n++, st->n++;
        if (cJSON_IsNumber(rw)) st->reward_sum += rw->valuedouble, st->n_reward++;
        if (!ok) continue;
        b->n_ok++, st->n_ok++;
        if (sp->valuedouble > st->best_speedup) st->best_speedup = sp->valuedouble;
        if (!b->has_best || sp->valuedouble > b->best_speedup) {
            b->has_best = 1;
            b->best_speedup = sp->valuedouble;
            b->best_step = step;
            free(b->source);
            b->source = strdup(src ? src : "");
            rl_kattempt_hash(b->source ? b->source : "", b->source ? strlen(b->source) : 0, b->hash);
        }
    }
    cJSON_Delete(arr);
    for (int i = 1; i < s->n_steps; i++) /* insertion sort: steps are nearly in order already */
        for (int j = i; j > 0 && s->steps[j - 1].step > s->steps[j].step; j--) {
            rl_kstep_stat x = s->steps[j];
            s->steps[j] = s->steps[j - 1];
            s->steps[j - 1] = x;
        }
    if (rc) rl_kattempts_summary_free(s);
    return rc;
}
