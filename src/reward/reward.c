/* reward.c — the reward spec parser and dispatch (see reward.h). */
#include "reward/reward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reward/external.h"
#include "reward/match.h"
#include "reward/math.h"

typedef enum { R_MATH, R_EXACT, R_EXACT_STRICT, R_REGEX, R_FORMAT_THINK, R_FORMAT_BOXED, R_CMD, R_KERNEL } kind;

const char *const rl_reward_errors_names[] = {"stop", "zero", NULL};

struct rl_reward {
    kind kind;
    char *spec;
    rl_regex *regex;
    rl_reward_proc *proc;
    rl_reward_errors on_error;
    rl_reward_failure *failures; /* of the last call */
    int n_failures, cap_failures;
    rl_kreward *kernel;
};

/* Keeps a failure of completion `index` (zero mode): grows the list as needed. */
static int add_failure(rl_reward *r, int index, const char *why, rl_err *err)
{
    if (r->n_failures == r->cap_failures) {
        int cap = r->cap_failures ? 2 * r->cap_failures : 16;
        rl_reward_failure *grown = realloc(r->failures, (size_t)cap * sizeof *grown);
        if (!grown) return rl_err_oom(err, "reward failures", (size_t)cap * sizeof *grown);
        r->failures = grown;
        r->cap_failures = cap;
    }
    rl_reward_failure *f = &r->failures[r->n_failures++];
    f->index = index;
    snprintf(f->why, sizeof f->why, "%s", why);
    return 0;
}

static int on_failure(void *r, int index, const char *why, rl_err *err) { return add_failure(r, index, why, err); }

int rl_reward_create(rl_reward **out, const char *spec, const rl_reward_options *opt, rl_err *err)
{
    *out = NULL;
    rl_reward *r = calloc(1, sizeof *r);
    if (!r || !(r->spec = strdup(spec))) {
        free(r);
        return rl_err_oom(err, "reward", sizeof *r);
    }
    double timeout = opt && opt->timeout_s > 0 ? opt->timeout_s : 60.0;
    r->on_error = opt ? opt->on_error : RL_REWARD_ERRORS_STOP;
    int rc = 0;
    if (!strcmp(spec, "math")) r->kind = R_MATH;
    else if (!strcmp(spec, "exact")) r->kind = R_EXACT;
    else if (!strcmp(spec, "exact:strict")) r->kind = R_EXACT_STRICT;
    else if (!strcmp(spec, "format")) r->kind = R_FORMAT_THINK;
    else if (!strcmp(spec, "format:boxed")) r->kind = R_FORMAT_BOXED;
    else if (!strncmp(spec, "regex:", 6)) {
        r->kind = R_REGEX;
        rc = rl_regex_compile(&r->regex, spec + 6, err);
    } else if (!strncmp(spec, "cmd:", 4)) {
        r->kind = R_CMD;
        rc = rl_reward_proc_start(&r->proc, spec + 4, timeout, err);
    } else if (!strcmp(spec, "kernel")) {
        r->kind = R_KERNEL;
        rl_kreward_opts ko = {.keep_upto = -1};
        rc = rl_kreward_create(&r->kernel, opt ? &opt->kernel : &ko, err);
    } else {
        rc = rl_err_set(err, "unknown reward '%s' (expected math, exact, exact:strict, regex:PATTERN, "
                             "format, format:boxed, cmd:COMMAND or kernel)", spec);
    }
    if (rc != 0) {
        rl_reward_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

static int score_kernel(rl_reward *r, const rl_reward_item *items, int n, float *rewards, rl_err *err)
{
    const cJSON **fields = malloc((size_t)(n > 0 ? n : 1) * sizeof *fields);
    const char **texts = malloc((size_t)(n > 0 ? n : 1) * sizeof *texts);
    int rc = fields && texts ? 0 : rl_err_oom(err, "kernel reward items", (size_t)n * 16);
    for (int i = 0; rc == 0 && i < n; i++) fields[i] = items[i].fields, texts[i] = items[i].completion;
    if (rc == 0) rc = rl_kreward_score(r->kernel, fields, texts, n, rewards, err);
    free(fields);
    free(texts);
    return rc;
}

void rl_reward_set_step(rl_reward *r, int64_t step)
{
    if (r->kernel) rl_kreward_set_step(r->kernel, step);
}

int rl_reward_score(rl_reward *r, const rl_reward_item *items, int n, float *rewards, rl_err *err)
{
    r->n_failures = 0;
    if (r->kind == R_CMD)
        return rl_reward_proc_score(r->proc, items, n, rewards, r->on_error == RL_REWARD_ERRORS_ZERO ? on_failure : NULL,
                                    r, err);
    if (r->kind == R_KERNEL) return score_kernel(r, items, n, rewards, err);
    for (int i = 0; i < n; i++) {
        const char *c = items[i].completion ? items[i].completion : "";
        const char *a = items[i].answer;
        int needs_answer = r->kind == R_MATH || r->kind == R_EXACT || r->kind == R_EXACT_STRICT;
        if (needs_answer && !a)
            return rl_err_set(err, "reward %s: completion %d: the dataset line has no \"answer\"", r->spec, i);
        int hit = 0;
        switch (r->kind) {
        case R_MATH: hit = rl_math_check(c, a); break;
        case R_EXACT: hit = rl_match_exact(c, a, 1); break;
        case R_EXACT_STRICT: hit = rl_match_exact(c, a, 0); break;
        case R_FORMAT_THINK: hit = rl_match_think_format(c); break;
        case R_FORMAT_BOXED: {
            char box[8];
            hit = rl_math_boxed(c, box, sizeof box);
            break;
        }
        case R_REGEX:
            hit = rl_regex_match(r->regex, c, err);
            if (hit < 0 && r->on_error == RL_REWARD_ERRORS_ZERO) {
                rl_err_prefix(err, "reward %s: completion %d: ", r->spec, i);
                if (add_failure(r, i, err->msg, err)) return -1;
                hit = 0;
            } else if (hit < 0) {
                return rl_err_prefix(err, "reward %s: completion %d: ", r->spec, i);
            }
            break;
        case R_CMD:
        case R_KERNEL: break;
        }
        rewards[i] = hit ? 1.0f : 0.0f;
    }
    return 0;
}

int rl_reward_failures(const rl_reward *r, const rl_reward_failure **list)
{
    *list = r->failures;
    return r->n_failures;
}

const char *rl_reward_spec(const rl_reward *r) { return r->spec; }

void rl_reward_free(rl_reward *r)
{
    if (!r) return;
    rl_regex_free(r->regex);
    rl_reward_proc_close(r->proc);
    free(r->failures);
    rl_kreward_free(r->kernel);
    free(r->spec);
    free(r);
}
