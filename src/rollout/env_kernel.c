/* env_kernel.c — the built-in kernel environment (`--env kernel`, docs/episodes.md): over
 * several turns the model writes a kernel for its line's "task" and calls tools on it, in the
 * Qwen tool-call format (toolcall.h):
 *
 *   compile   the compiler's output (or "compiled")
 *   check     correct, or the first mismatch / the failure the evaluator found
 *   profile   the reference's and the kernel's median times, the speedup, and each kernel
 *             launched on either side with its GPU time (one call each under the profiler)
 *   submit    ends the episode; its reward is the kernel reward (kreward.h)
 *
 * A tool works on {"code": "..."} when given, else on the latest code of the episode: the last
 * code block the model wrote (```cuda defining rl_kernel, or ```python defining ModelNew for a
 * KernelBench task). Every tool runs the whole evaluation once per distinct code of an episode
 * (cached by hash), all of a turn's evaluations together through the GPU pool; each is recorded
 * in the attempt database. On the last turn an episode that did not submit is submitted as it
 * stands (its latest code), or gets the failure reward when it wrote none. The evaluations run
 * with the evaluator's per-kernel profile on (kenv.h), which only the profile tool shows. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reward/kernel_env/attempts.h"
#include "reward/kernel_env/extract.h"
#include "reward/kernel_env/kenv.h"
#include "rollout/env.h"
#include "rollout/toolcall.h"

#define CACHE 8

const char rl_env_kernel_tools_text[] =
    "\n## Tools\n\nYou work in turns. In each turn you may write code and call tools, each call as\n"
    "<tool_call>\n{\"name\": TOOL, \"arguments\": {}}\n</tool_call>\n"
    "Tools act on your latest code block, or on {\"code\": \"...\"} when you pass it:\n"
    "- compile: the compiler's output\n"
    "- check: whether the result is correct on the task's inputs, or the first mismatch\n"
    "- profile: the reference's time, your kernel's time, the speedup, and each GPU kernel launched with its time\n"
    "- submit: ends the task; your kernel is scored (correct and faster is better)\n";

typedef struct cached {
    char hash[17];
    rl_kreward_eval ev;
} cached;

typedef struct episode {
    char *code; /* latest code (malloc'd) */
    size_t len;
    cached cache[CACHE];
    int n_cache;
} episode;

typedef struct kernel_env {
    rl_kreward *k;
    episode *eps;
    int n;
} kernel_env;

/* One tool call to answer. */
typedef struct action {
    int turn;           /* index into the step's turns */
    char tool[64];
    char error[160];    /* a bad call: why ("" for a good one) */
    char *code;         /* snapshot (malloc'd) or NULL */
    size_t len;
    char hash[17];
    rl_kreward_eval *ev; /* the evaluation it reads (in the episode's cache) */
} action;

static void clear_episode(episode *e)
{
    free(e->code);
    for (int i = 0; i < e->n_cache; i++) rl_kreward_eval_free(&e->cache[i].ev);
    memset(e, 0, sizeof *e);
}

static int kernel_begin(void *self, int64_t step, int n, rl_err *err)
{
    kernel_env *k = self;
    for (int i = 0; i < k->n; i++) clear_episode(&k->eps[i]);
    free(k->eps);
    k->n = 0;
    if (!(k->eps = calloc((size_t)(n > 0 ? n : 1), sizeof *k->eps))) return rl_err_oom(err, "kernel episodes", 0);
    k->n = n;
    rl_kreward_set_step(k->k, step);
    return 0;
}

static const char *task_of(const rl_env_turn *t)
{
    const cJSON *v = cJSON_IsObject(t->fields) ? cJSON_GetObjectItemCaseSensitive(t->fields, "task") : NULL;
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* The last code block of the turn (outside tool calls' JSON it is what the model wrote). */
static void take_code(episode *e, const char *task, const char *text)
{
    size_t len = strlen(text);
    rl_err err;
    if (rl_kenv_is_kernelbench(task)) {
        const char *code;
        size_t n;
        if (rl_kreward_extract_python(text, len, &code, &n, &err)) return;
        char *c = malloc(n + 1);
        if (!c) return;
        memcpy(c, code, n);
        c[n] = '\0';
        free(e->code);
        e->code = c, e->len = n;
        return;
    }
    rl_kextract x;
    if (rl_kextract_code(text, len, "rl_kernel", &x, &err)) return;
    free(e->code);
    e->code = x.code, e->len = x.len;
    x.code = NULL;
    rl_kextract_free(&x);
}

static rl_kreward_eval *lookup(episode *e, const char *hash)
{
    for (int i = 0; i < e->n_cache; i++)
        if (!strcmp(e->cache[i].hash, hash)) return &e->cache[i].ev;
    return NULL;
}

static char *append(char *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *append(char *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    size_t had = s ? strlen(s) : 0;
    char *g = realloc(s, had + (size_t)need + 1);
    if (!g) return s;
    va_start(ap, fmt);
    vsnprintf(g + had, (size_t)need + 1, fmt, ap);
    va_end(ap);
    return g;
}

/* What one tool shows of an evaluation. */
static char *answer(char *obs, const action *a)
{
    const rl_kreward_eval *ev = a->ev;
    if (a->error[0]) return append(obs, "%s%s: bad tool call: %s", obs ? "\n\n" : "", a->tool[0] ? a->tool : "tool", a->error);
    if (!a->code) return append(obs, "%s%s: there is no code yet: write the kernel in a code block first", obs ? "\n\n" : "", a->tool);
    obs = append(obs, "%s%s: ", obs ? "\n\n" : "", a->tool);
    if (!strcmp(a->tool, "compile")) {
        if (!strcmp(ev->status, "compile_error")) return append(obs, "compile error\n%s", ev->compile_log ? ev->compile_log : "");
        if (!strcmp(ev->status, "bad_task") || !strcmp(ev->status, "error")) return append(obs, "%s: %s", ev->status, ev->reason ? ev->reason : "");
        return append(obs, "compiled");
    }
    if (!strcmp(ev->status, "ok")) {
        if (!strcmp(a->tool, "check")) return append(obs, "correct");
        obs = append(obs, "correct; reference %.4f ms, yours %.4f ms, speedup %.2fx", ev->ref_ms, ev->cand_ms, ev->speedup);
        return ev->profile ? append(obs, "\n%s", ev->profile) : obs;
    }
    if (!strcmp(ev->status, "compile_error")) return append(obs, "compile error\n%s", ev->compile_log ? ev->compile_log : "");
    return append(obs, "%s: %s", ev->status, ev->reason ? ev->reason : "");
}

/* The code the call works on: the episode's latest, as it is now. */
static int snapshot(action *a, const episode *e)
{
    if (!e->code) return 0;
    if (!(a->code = malloc(e->len + 1))) return -1;
    memcpy(a->code, e->code, e->len + 1);
    a->len = e->len;
    rl_kattempt_hash(a->code, a->len, a->hash);
    return 0;
}

static int kernel_step(void *self, rl_env_turn *turns, int n, rl_err *err)
{
    kernel_env *k = self;
    action *acts = calloc((size_t)n * (RL_TOOLCALL_MAX + 1), sizeof *acts);
    if (!acts) return rl_err_oom(err, "kernel tool calls", 0);
    int n_acts = 0, rc = 0;
    for (int i = 0; i < n; i++) {
        rl_env_turn *t = &turns[i];
        if (t->episode < 0 || t->episode >= k->n) {
            t->failure = strdup("episode outside the step");
            continue;
        }
        episode *e = &k->eps[t->episode];
        take_code(e, task_of(t), t->text ? t->text : "");
        rl_toolcalls calls;
        rl_toolcalls_parse(t->text ? t->text : "", t->text ? strlen(t->text) : 0, &calls);
        int submitted = 0;
        for (int j = 0; j < calls.n && !submitted; j++) {
            action *a = &acts[n_acts++];
            a->turn = i;
            snprintf(a->tool, sizeof a->tool, "%s", calls.calls[j].name);
            if (calls.calls[j].error[0]) {
                snprintf(a->error, sizeof a->error, "%s", calls.calls[j].error);
                continue;
            }
            const cJSON *code = cJSON_GetObjectItemCaseSensitive(calls.calls[j].arguments, "code");
            if (cJSON_IsString(code) && code->valuestring[0]) {
                free(e->code);
                e->code = strdup(code->valuestring);
                e->len = e->code ? strlen(e->code) : 0;
            }
            if (strcmp(a->tool, "compile") && strcmp(a->tool, "check") && strcmp(a->tool, "profile") &&
                strcmp(a->tool, "submit")) {
                snprintf(a->error, sizeof a->error, "unknown tool (the tools are compile, check, profile, submit)");
                continue;
            }
            submitted = !strcmp(a->tool, "submit");
            if (snapshot(a, e)) rc = rl_err_oom(err, "kernel code", e->len);
        }
        rl_toolcalls_free(&calls);
        if (!submitted && t->last && e->code) { /* the last turn submits what stands */
            action *a = &acts[n_acts++];
            a->turn = i;
            snprintf(a->tool, sizeof a->tool, "submit");
            if (snapshot(a, e)) rc = rl_err_oom(err, "kernel code", e->len);
        }
        if (rc) goto done;
    }
    /* the evaluations this turn needs, one per distinct (episode, code), all at once */
    const char **tasks = calloc((size_t)n_acts + 1, sizeof *tasks), **codes = calloc((size_t)n_acts + 1, sizeof *codes);
    size_t *lens = calloc((size_t)n_acts + 1, sizeof *lens);
    int *owner = calloc((size_t)n_acts + 1, sizeof *owner), n_ev = 0;
    rl_kreward_eval *evs = calloc((size_t)n_acts + 1, sizeof *evs);
    if (!tasks || !codes || !lens || !owner || !evs) rc = rl_err_oom(err, "kernel evaluations", 0);
    for (int j = 0; rc == 0 && j < n_acts; j++) {
        action *a = &acts[j];
        episode *e = &k->eps[turns[a->turn].episode];
        if (!a->code || lookup(e, a->hash)) continue;
        int dup = 0;
        for (int q = 0; q < n_ev && !dup; q++)
            dup = turns[acts[owner[q]].turn].episode == turns[a->turn].episode && !strcmp(acts[owner[q]].hash, a->hash);
        if (dup) continue;
        tasks[n_ev] = task_of(&turns[a->turn]), codes[n_ev] = a->code, lens[n_ev] = a->len, owner[n_ev++] = j;
    }
    if (rc == 0 && n_ev) rc = rl_kreward_eval_many(k->k, tasks, codes, lens, n_ev, evs, err);
    for (int q = 0; rc == 0 && q < n_ev; q++) { /* into the episodes' caches (the oldest makes room) */
        action *a = &acts[owner[q]];
        episode *e = &k->eps[turns[a->turn].episode];
        if (e->n_cache == CACHE) {
            rl_kreward_eval_free(&e->cache[0].ev);
            memmove(e->cache, e->cache + 1, (CACHE - 1) * sizeof *e->cache);
            e->n_cache--;
        }
        snprintf(e->cache[e->n_cache].hash, 17, "%s", a->hash);
        e->cache[e->n_cache++].ev = evs[q];
        memset(&evs[q], 0, sizeof evs[q]);
    }
    for (int j = 0; rc == 0 && j < n_acts; j++) {
        action *a = &acts[j];
        rl_env_turn *t = &turns[a->turn];
        if (a->code) a->ev = lookup(&k->eps[t->episode], a->hash);
        if (a->code && !a->ev) { /* evicted before use: not expected with CACHE > calls per turn */
            snprintf(a->error, sizeof a->error, "internal: evaluation lost");
        }
        if (!strcmp(a->tool, "submit") && !a->error[0] && a->ev) {
            t->done = 1;
            t->reward = (float)a->ev->reward;
            free(t->observation);
            t->observation = NULL;
            continue;
        }
        if (!t->done) t->observation = answer(t->observation, a);
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        rl_env_turn *t = &turns[i];
        if (t->done || t->failure) continue;
        if (t->last) { /* no code to submit */
            t->done = 1;
            t->reward = (float)RL_KREWARD_FAIL;
            free(t->observation);
            t->observation = NULL;
        } else if (!t->observation) {
            t->observation = strdup("No tool call found. Write your kernel in a code block and call a tool as "
                                    "<tool_call>{\"name\": \"compile\", \"arguments\": {}}</tool_call> (tools: compile, "
                                    "check, profile, submit).");
        }
    }
    for (int q = 0; q < n_ev; q++) rl_kreward_eval_free(&evs[q]);
    free(tasks), free(codes), free(lens), free(owner), free(evs);
done:
    for (int j = 0; j < n_acts; j++) free(acts[j].code);
    free(acts);
    return rc;
}

static void kernel_free(void *self)
{
    kernel_env *k = self;
    if (!k) return;
    for (int i = 0; i < k->n; i++) clear_episode(&k->eps[i]);
    free(k->eps);
    rl_kreward_free(k->k);
    free(k);
}

static const rl_env_ops kernel_ops = {kernel_begin, kernel_step, kernel_free};

int rl_env_kernel_create(void **self, const rl_env_ops **ops, const rl_kreward_opts *o, rl_err *err)
{
    kernel_env *k = calloc(1, sizeof *k);
    if (!k) return rl_err_oom(err, "kernel environment", 0);
    rl_kreward_opts ko = *o;
    ko.profile = 1; /* the profile tool's per-kernel times */
    if (rl_kreward_create(&k->k, &ko, err)) {
        free(k);
        return rl_err_prefix(err, "environment kernel: ");
    }
    *self = k;
    *ops = &kernel_ops;
    return 0;
}
