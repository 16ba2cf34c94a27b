/* env_proc.c — an environment program speaking JSON lines (docs/episodes.md). For each model
 * turn rlc writes {"episode", "turn", "last", "text", "fields"} and reads one line:
 * {"observation": "..."} or {"done": true, "reward": r}. The program is started at the first turn
 * through the external reward's line protocol (reward/external.h: own process group, a time
 * limit per answer); when it crashes, hangs or prints garbage, that turn's episode fails with
 * the reason, the program is stopped, and the next turn starts it again. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "reward/external.h"
#include "rollout/env.h"

typedef struct proc_env {
    char *command;
    double timeout_s;
    rl_reward_proc *proc;
    int64_t step;
} proc_env;

static char *request(const proc_env *p, const rl_env_turn *t, size_t *len)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "episode", t->episode);
    cJSON_AddNumberToObject(o, "step", (double)p->step);
    cJSON_AddNumberToObject(o, "turn", t->turn);
    cJSON_AddBoolToObject(o, "last", t->last);
    cJSON_AddStringToObject(o, "text", t->text ? t->text : "");
    cJSON_AddItemToObject(o, "fields", t->fields ? cJSON_Duplicate(t->fields, 1) : cJSON_CreateObject());
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return NULL;
    size_t n = strlen(s);
    char *line = realloc(s, n + 2);
    if (!line) {
        free(s);
        return NULL;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    *len = n + 1;
    return line;
}

static char *dup_printf(const char *fmt, const char *a, const char *b)
{
    size_t n = strlen(fmt) + strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, fmt, a, b);
    return s;
}

/* The answer line into t (observation or done + reward), or t->failure. */
static void read_answer(const char *line, rl_env_turn *t)
{
    char shown[160];
    snprintf(shown, sizeof shown, "%.120s%s", line, strlen(line) > 120 ? "..." : "");
    cJSON *o = rl_json_parse(line, strlen(line), "answer", NULL);
    const cJSON *obs = cJSON_GetObjectItemCaseSensitive(o, "observation");
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(o, "done"), *r = cJSON_GetObjectItemCaseSensitive(o, "reward");
    const char *wrong = NULL;
    if (!cJSON_IsObject(o)) wrong = "printed a line that is not one JSON object";
    else if (cJSON_IsTrue(done)) {
        if (!cJSON_IsNumber(r) || !isfinite(r->valuedouble) || fabs(r->valuedouble) > FLT_MAX)
            wrong = "answered done without a finite number \"reward\"";
        else t->done = 1, t->reward = (float)r->valuedouble;
    } else if (cJSON_IsString(obs)) {
        if (!(t->observation = strdup(obs->valuestring))) wrong = "out of memory";
    } else {
        wrong = "answered neither {\"observation\": string} nor {\"done\": true, \"reward\": number}";
    }
    cJSON_Delete(o);
    if (wrong) t->failure = dup_printf("%s: '%s'", wrong, shown);
}

static int proc_begin(void *self, int64_t step, int n, rl_err *err)
{
    ((proc_env *)self)->step = step;
    return 0;
}

static int proc_step(void *self, rl_env_turn *turns, int n, rl_err *err)
{
    proc_env *p = self;
    for (int i = 0; i < n; i++) {
        rl_env_turn *t = &turns[i];
        rl_err e;
        if (p->proc && rl_line_proc_dead(p->proc)) { /* stopped after a failure: start afresh */
            rl_reward_proc_close(p->proc);
            p->proc = NULL;
        }
        if (!p->proc && rl_line_proc_start(&p->proc, p->command, p->timeout_s, "environment program", "episode", &e)) {
            t->failure = strdup(e.msg);
            continue;
        }
        size_t len = 0;
        char *req = request(p, t, &len), *answer = NULL;
        if (!req) return rl_err_oom(err, "environment request", 0);
        int rc = rl_line_proc_exchange(p->proc, req, len, t->episode, &answer, &e);
        free(req);
        if (rc) t->failure = strdup(e.msg);
        else read_answer(answer, t);
        free(answer);
        if (t->failure && !rl_line_proc_dead(p->proc)) { /* garbage: the program is out of step */
            rl_reward_proc_close(p->proc);
            p->proc = NULL;
        }
    }
    return 0;
}

static void proc_free(void *self)
{
    proc_env *p = self;
    if (!p) return;
    rl_reward_proc_close(p->proc);
    free(p->command);
    free(p);
}

static const rl_env_ops proc_ops = {proc_begin, proc_step, proc_free};

int rl_env_proc_create(void **self, const rl_env_ops **ops, const char *command, double timeout_s, rl_err *err)
{
    proc_env *p = calloc(1, sizeof *p);
    if (!p || !(p->command = strdup(command))) {
        free(p);
        return rl_err_oom(err, "environment", 0);
    }
    p->timeout_s = timeout_s > 0 ? timeout_s : 60;
    *self = p;
    *ops = &proc_ops;
    return 0;
}
