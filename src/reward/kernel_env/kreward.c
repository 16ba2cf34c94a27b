/* kreward.c — see kreward.h. A step's candidates are prepared (task check, code extraction) on
 * the calling thread, evaluated through the pool's feed (rl_kenv_pool_run), then appended to
 * the database in their order, so the file reads the same whatever finished first. */
#include "reward/kernel_env/kreward.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "core/log.h"
#include "reward/kernel_env/attempts.h"
#include "reward/kernel_env/extract.h"
#include "reward/kernel_env/kbpch.h"
#include "reward/kernel_env/kenv.h"
#include "reward/kernel_env/kpool.h"

/* A finished evaluation kept for the memo. */
typedef struct memo_entry {
    char *task;
    char hash[17];
    char status[24];
    char *reason, *compile_log;
    int timed, has_reward;
    double speedup, reward, ref_ms, cand_ms;
} memo_entry;

struct rl_kreward {
    rl_kenv_paths paths;
    rl_kenv_opts opts;
    rl_kenv_pool *pool;
    int jobs;
    rl_kattempts db;
    int have_db;
    int64_t step;
    int memo;
    memo_entry *memos;
    int n_memos, cap_memos;
    char *owned[5];    /* copies of the option strings the evaluator's options point to */
};

/* One candidate of a step. */
typedef struct cand {
    const char *task;
    char *code;      /* malloc'd: what is evaluated, or NULL when there is nothing to evaluate */
    size_t code_len;
    char status[24];
    char *reason;    /* malloc'd or NULL */
    int timed, has_reward;
    double speedup, reward, ref_ms, cand_ms;
    char *compile_log; /* malloc'd or NULL */
    char *profile;     /* malloc'd or NULL (rl_kreward_profile_text) */
    char hash[17];
    int memo;          /* the verdict came from the memo */
} cand;

typedef struct feed {
    cand *c;
    int n, next;
} feed;

int rl_kreward_create(rl_kreward **out, const rl_kreward_opts *o, rl_err *err)
{
    *out = NULL;
    rl_kreward *k = calloc(1, sizeof *k);
    if (!k) return rl_err_oom(err, "kernel reward", sizeof *k);
    rl_kenv_opts_default(&k->opts, &k->paths);
    const char *given[5] = {o->nvcc, o->worker, o->python, o->cache_dir, o->protocol};
    const char **into[5] = {&k->opts.nvcc, &k->opts.worker, &k->opts.python, &k->opts.cache_dir, &k->opts.protocol_path};
    for (int i = 0; i < 5; i++) {
        if (!given[i]) continue;
        if (!(k->owned[i] = strdup(given[i]))) {
            rl_kreward_free(k);
            return rl_err_oom(err, "kernel reward options", 0);
        }
        *into[i] = k->owned[i];
    }
    k->opts.no_sandbox = o->no_sandbox;
    k->opts.profile = o->profile;
    /* the trainer's model and optimizer state share the GPU: no extra worker contexts at the end
     * of a batch (kpool.h's idle slots), which a large model might not leave room for */
    k->opts.gpu_workers_idle = -1;
    k->jobs = o->jobs;
    k->memo = o->memo;
    if (o->rank_gpu > 0 && o->gpus > 1) {
        rl_kreward_free(k);
        return rl_err_set(err, "reward kernel: --kernel-gpus %d with several training ranks: each rank evaluates "
                               "on its own GPU alone", o->gpus);
    }
    if (rl_kenv_load_protocol(&k->opts, err) ||
        (o->rank_gpu > 0 ? rl_kenv_pool_create_on(&k->pool, &k->opts, o->rank_gpu - 1, o->rank_gpus, err)
                         : rl_kenv_pool_create(&k->pool, &k->opts, o->gpus, err))) {
        rl_kreward_free(k);
        return rl_err_prefix(err, "reward kernel: ");
    }
    if (o->kb_tasks) { /* starts kb_pch.py unless its directory is ready; the answer is not needed yet */
        char cxx[PATH_MAX + 16], pch[PATH_MAX + 16], real[PATH_MAX + 16];
        rl_kbpch_env(&k->opts, cxx, sizeof cxx, pch, sizeof pch, real, sizeof real);
    }
    if (o->attempts) {
        if (rl_kattempts_open(&k->db, o->attempts, o->keep_upto, err)) {
            rl_kreward_free(k);
            return -1;
        }
        k->have_db = 1;
        if (k->db.n_dropped)
            rl_log_info("%s: %lld attempts after step %lld (or torn) dropped on resume", o->attempts,
                        (long long)k->db.n_dropped, (long long)o->keep_upto);
    }
    *out = k;
    return 0;
}

void rl_kreward_free(rl_kreward *k)
{
    if (!k) return;
    for (int i = 0; i < k->n_memos; i++) free(k->memos[i].task), free(k->memos[i].reason), free(k->memos[i].compile_log);
    free(k->memos);
    for (int i = 0; i < 5; i++) free(k->owned[i]);
    rl_kenv_pool_free(k->pool);
    if (k->have_db) rl_kattempts_close(&k->db);
    free(k);
}

void rl_kreward_set_step(rl_kreward *k, int64_t step) { k->step = step; }

int rl_kreward_check_task(const char *task, rl_err *err)
{
    char path[4200];
    if (!rl_kenv_is_kernelbench(task)) {
        if (rl_path_join(path, sizeof path, task, "spec.json")) return rl_err_set(err, "%s: path too long", task);
        if (!rl_file_exists(path))
            return rl_err_set(err, "task '%s' does not exist (no %s; a task is a directory with spec.json, "
                                   "reference.cu and prompt.md, or a KernelBench problem file *.py)", task, path);
        return 0;
    }
    char *text = NULL;
    size_t len = 0;
    rl_err e;
    if (rl_file_read_all(task, &text, &len, &e))
        return rl_err_set(err, "KernelBench task '%s' cannot be read: %s", task, e.msg);
    int has_model = strstr(text, "class Model") != NULL, has_inputs = strstr(text, "def get_inputs") != NULL;
    free(text);
    if (!has_model || !has_inputs)
        return rl_err_set(err, "KernelBench task '%s' defines no %s", task,
                          !has_model && !has_inputs ? "Model class and no get_inputs()" : !has_model ? "Model class" : "get_inputs()");
    return 0;
}

static int line_starts_fence(const char *s, size_t at, size_t len)
{
    while (at < len && (s[at] == ' ' || s[at] == '\t')) at++;
    return at + 3 <= len && !memcmp(s + at, "```", 3);
}

int rl_kreward_extract_python(const char *s, size_t len, const char **code, size_t *code_len, rl_err *err)
{
    const char *best = NULL;
    size_t best_len = 0;
    int in = 0, py = 0;
    size_t start = 0;
    for (size_t pos = 0; pos <= len;) {
        size_t eol = pos;
        while (eol < len && s[eol] != '\n') eol++;
        int fence = pos < len && line_starts_fence(s, pos, len);
        if (fence && !in) {
            size_t w = pos;
            while (s[w] != '`') w++;
            w += 3;
            while (w < eol && s[w] == '`') w++;
            size_t wl = 0;
            while (w + wl < eol && s[w + wl] != ' ' && s[w + wl] != '\r') wl++;
            py = wl == 0 || (wl == 6 && !strncasecmp(s + w, "python", 6)) || (wl == 2 && !strncasecmp(s + w, "py", 2));
            in = 1;
            start = eol < len ? eol + 1 : len;
        } else if ((fence || eol >= len) && in) { /* a closing fence, or the end of an unclosed block */
            size_t end = fence ? pos : len;
            if (py && end > start && memmem(s + start, end - start, "class ModelNew", 14))
                best = s + start, best_len = end - start;
            in = 0;
        }
        if (eol >= len) break;
        pos = eol + 1;
    }
    if (!best && memmem(s, len, "class ModelNew", 14)) best = s, best_len = len;
    if (!best) return rl_err_set(err, "no python code block defines class ModelNew");
    *code = best;
    *code_len = best_len;
    return 0;
}

/* The task and code of one completion; on a problem, status and reason say what. */
static int prepare(cand *c, const cJSON *fields, const char *completion)
{
    const cJSON *task = cJSON_IsObject(fields) ? cJSON_GetObjectItemCaseSensitive(fields, "task") : NULL;
    rl_err e;
    c->task = cJSON_IsString(task) ? task->valuestring : "";
    if (!cJSON_IsString(task)) {
        snprintf(c->status, sizeof c->status, "bad_task");
        c->reason = strdup("the dataset line has no \"task\" string");
        return -1;
    }
    if (rl_kreward_check_task(c->task, &e)) {
        snprintf(c->status, sizeof c->status, "bad_task");
        c->reason = strdup(e.msg);
        return -1;
    }
    size_t len = strlen(completion);
    if (rl_kenv_is_kernelbench(c->task)) {
        const char *code;
        size_t n;
        if (rl_kreward_extract_python(completion, len, &code, &n, &e) == 0 && (c->code = malloc(n + 1))) {
            memcpy(c->code, code, n);
            c->code[n] = '\0';
            c->code_len = n;
        }
    } else {
        rl_kextract x;
        if (rl_kextract_code(completion, len, "rl_kernel", &x, &e) == 0) {
            c->code = x.code, c->code_len = x.len;
            x.code = NULL;
            rl_kextract_free(&x);
        }
    }
    if (!c->code) {
        snprintf(c->status, sizeof c->status, "no_code");
        c->reason = strdup(e.msg);
        return -1;
    }
    return 0;
}

/* The pool calls this from one thread at a time. */
static void *next_cand(void *user)
{
    feed *f = user;
    while (f->next < f->n && (!f->c[f->next].code || f->c[f->next].memo)) f->next++;
    return f->next < f->n ? &f->c[f->next++] : NULL;
}

static void run_cand(void *user, rl_kenv_pool *pool, void *work)
{
    (void)user;
    cand *c = work;
    rl_kenv_result r;
    rl_err e;
    if (rl_kenv_pool_eval(pool, c->task, c->code, c->code_len, &r, &e)) {
        snprintf(c->status, sizeof c->status, "error");
        c->reason = strdup(e.msg);
        return;
    }
    snprintf(c->status, sizeof c->status, "%s", rl_kenv_status_names[r.status]);
    c->reason = r.failure ? strdup(r.failure) : NULL;
    c->timed = r.timed;
    c->speedup = r.speedup;
    c->ref_ms = r.ref_ms;
    c->cand_ms = r.cand_ms;
    c->compile_log = r.compile_log ? strdup(r.compile_log) : NULL;
    c->profile = rl_kreward_profile_text(cJSON_GetObjectItemCaseSensitive(r.json, "profile"));
    c->has_reward = r.has_reward;
    c->reward = r.reward;
    rl_kenv_result_free(&r);
}

static memo_entry *memo_find(rl_kreward *k, const char *task, const char *hash)
{
    for (int i = 0; i < k->n_memos; i++)
        if (!strcmp(k->memos[i].hash, hash) && !strcmp(k->memos[i].task, task)) return &k->memos[i];
    return NULL;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* With the memo: candidates whose code was evaluated before get that verdict (their code is
 * then not evaluated again); after the evaluation, new verdicts are kept. */
static void memo_apply(rl_kreward *k, cand *c, int n)
{
    for (int i = 0; i < n; i++) {
        if (!c[i].code) continue;
        rl_kattempt_hash(c[i].code, c[i].code_len, c[i].hash);
        const memo_entry *m = k->memo ? memo_find(k, c[i].task, c[i].hash) : NULL;
        if (!m) continue;
        snprintf(c[i].status, sizeof c[i].status, "%s", m->status);
        c[i].reason = dup_or_null(m->reason), c[i].compile_log = dup_or_null(m->compile_log);
        c[i].timed = m->timed, c[i].has_reward = m->has_reward;
        c[i].speedup = m->speedup, c[i].reward = m->reward, c[i].ref_ms = m->ref_ms, c[i].cand_ms = m->cand_ms;
        c[i].memo = 1;
    }
}

static void memo_keep(rl_kreward *k, const cand *c)
{
    if (!k->memo || !c->code || c->memo || !strcmp(c->status, "error") || memo_find(k, c->task, c->hash)) return;
    if (k->n_memos == k->cap_memos) {
        int cap = k->cap_memos ? 2 * k->cap_memos : 64;
        memo_entry *g = realloc(k->memos, (size_t)cap * sizeof *g);
        if (!g) return; /* the memo only saves time */
        k->memos = g, k->cap_memos = cap;
    }
    memo_entry *m = &k->memos[k->n_memos];
    *m = (memo_entry){.task = strdup(c->task), .reason = dup_or_null(c->reason), .compile_log = dup_or_null(c->compile_log),
                      .timed = c->timed, .has_reward = c->has_reward, .speedup = c->speedup, .reward = c->reward,
                      .ref_ms = c->ref_ms, .cand_ms = c->cand_ms};
    snprintf(m->hash, sizeof m->hash, "%s", c->hash);
    snprintf(m->status, sizeof m->status, "%s", c->status);
    if (m->task) k->n_memos++;
}

/* Evaluates the candidates that have code, then records all of them in order; rewards set. */
static int evaluate(rl_kreward *k, cand *c, int n, rl_err *err)
{
    memo_apply(k, c, n);
    feed f = {c, n, 0};
    rl_kenv_feed kf = {&f, next_cand, run_cand};
    rl_kenv_pool_run(k->pool, k->jobs, &kf);
    for (int i = 0; i < n; i++) memo_keep(k, &c[i]);
    int rc = 0, n_logged = 0, n_no_code = 0;
    for (int i = 0; i < n; i++) {
        if (!c[i].has_reward) c[i].reward = RL_KREWARD_FAIL;
        n_no_code += !strcmp(c[i].status, "no_code");
        /* a bad task or an evaluator error is the run's problem, not the policy's: said each
         * time (a few a step); answers without code are counted */
        if (!c[i].has_reward && strcmp(c[i].status, "no_code") && n_logged++ < 4)
            rl_log_warn("reward kernel: step %lld, completion %d (%s): %s: %s; reward %g", (long long)k->step, i,
                        c[i].task, c[i].status, c[i].reason ? c[i].reason : "", RL_KREWARD_FAIL);
        rl_kattempt a = {k->step, c[i].task, c[i].status, c[i].timed, c[i].speedup, 1, c[i].reward, c[i].reason,
                         c[i].code, c[i].code_len, c[i].memo};
        if (rc == 0 && k->have_db && rl_kattempts_append(&k->db, &a, err)) rc = -1;
    }
    if (n_no_code)
        rl_log_info("reward kernel: step %lld: %d of %d answers hold no code to evaluate (reward %g)", (long long)k->step,
                    n_no_code, n, RL_KREWARD_FAIL);
    return rc;
}

static void free_cands(cand *c, int n)
{
    for (int i = 0; i < n; i++) free(c[i].code), free(c[i].reason), free(c[i].compile_log), free(c[i].profile);
    free(c);
}

int rl_kreward_score(rl_kreward *k, const cJSON *const *fields, const char *const *completions, int n,
                     float *rewards, rl_err *err)
{
    cand *c = calloc((size_t)(n > 0 ? n : 1), sizeof *c);
    if (!c) return rl_err_oom(err, "kernel candidates", (size_t)n * sizeof *c);
    for (int i = 0; i < n; i++) prepare(&c[i], fields[i], completions[i] ? completions[i] : "");
    int rc = evaluate(k, c, n, err);
    for (int i = 0; i < n; i++) rewards[i] = (float)c[i].reward;
    free_cands(c, n);
    return rc;
}

int rl_kreward_eval_many(rl_kreward *k, const char *const *tasks, const char *const *codes, const size_t *lens, int n,
                         rl_kreward_eval *out, rl_err *err)
{
    cand *c = calloc((size_t)(n > 0 ? n : 1), sizeof *c);
    if (!c) return rl_err_oom(err, "kernel candidates", (size_t)n * sizeof *c);
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        rl_err e;
        c[i].task = tasks[i];
        if (rl_kreward_check_task(tasks[i], &e)) {
            snprintf(c[i].status, sizeof c[i].status, "bad_task");
            c[i].reason = strdup(e.msg);
        } else if (!(c[i].code = malloc(lens[i] + 1))) {
            rc = rl_err_oom(err, "kernel candidate", lens[i]);
        } else {
            memcpy(c[i].code, codes[i], lens[i]);
            c[i].code[lens[i]] = '\0';
            c[i].code_len = lens[i];
        }
    }
    if (rc == 0) rc = evaluate(k, c, n, err);
    for (int i = 0; rc == 0 && i < n; i++) {
        rl_kreward_eval *o = &out[i];
        memset(o, 0, sizeof *o);
        snprintf(o->status, sizeof o->status, "%s", c[i].status);
        o->reason = c[i].reason, c[i].reason = NULL;
        o->compile_log = c[i].compile_log, c[i].compile_log = NULL;
        o->profile = c[i].profile, c[i].profile = NULL;
        o->timed = c[i].timed;
        o->speedup = c[i].speedup, o->ref_ms = c[i].ref_ms, o->cand_ms = c[i].cand_ms;
        o->reward = c[i].reward;
    }
    free_cands(c, n);
    return rc;
}

void rl_kreward_eval_free(rl_kreward_eval *e)
{
    free(e->reason);
    free(e->compile_log);
    free(e->profile);
    memset(e, 0, sizeof *e);
}

/* One side's kernels, the slowest first. */
static char *profile_side(char *s, size_t *len, size_t cap, const char *who, const cJSON *list)
{
    int n = cJSON_GetArraySize(list);
    if (!cJSON_IsArray(list)) return s;
    const cJSON *k[64];
    int m = 0;
    double total = 0;
    for (const cJSON *e = list->child; e && m < 64; e = e->next) {
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(e, "ms");
        if (!cJSON_IsNumber(ms)) continue;
        total += ms->valuedouble;
        int at = m++;
        while (at > 0 && cJSON_GetObjectItemCaseSensitive(k[at - 1], "ms")->valuedouble < ms->valuedouble) k[at] = k[at - 1], at--;
        k[at] = e;
    }
    *len += (size_t)snprintf(s + *len, cap - *len, "%s%s: %d kernel%s, %.4f ms on the GPU", *len ? "\n" : "", who, n,
                             n == 1 ? "" : "s", total);
    for (int i = 0; i < m && i < 8 && *len < cap; i++) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(k[i], "name");
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(k[i], "calls");
        *len += (size_t)snprintf(s + *len, cap - *len, "\n  %.4f ms  x%d  %.160s",
                                 cJSON_GetObjectItemCaseSensitive(k[i], "ms")->valuedouble,
                                 cJSON_IsNumber(calls) ? (int)calls->valuedouble : 1, cJSON_IsString(name) ? name->valuestring : "?");
    }
    if (m > 8 && *len < cap) *len += (size_t)snprintf(s + *len, cap - *len, "\n  (%d more)", m - 8);
    if (*len >= cap) *len = cap - 1;
    return s;
}

char *rl_kreward_profile_text(const cJSON *profile)
{
    if (!cJSON_IsObject(profile)) return NULL;
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = 0;
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(profile, "error");
    if (cJSON_IsString(why)) len = (size_t)snprintf(s, cap, "per-kernel times unavailable: %.300s", why->valuestring);
    profile_side(s, &len, cap, "yours", cJSON_GetObjectItemCaseSensitive(profile, "candidate"));
    profile_side(s, &len, cap, "reference", cJSON_GetObjectItemCaseSensitive(profile, "reference"));
    if (!len) {
        free(s);
        return NULL;
    }
    return s;
}
