/* schedule.c — see schedule.h. */
#include "train/schedule.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

double rl_lr_at(const rl_lr_schedule *s, int step)
{
    if (step < s->warmup_steps) return s->peak * (double)step / (double)s->warmup_steps;
    if (s->kind == RL_LR_CONSTANT) return s->peak;
    int span = s->total_steps - s->warmup_steps;
    double progress = (double)(step - s->warmup_steps) / (double)(span > 1 ? span : 1);
    if (progress > 1) progress = 1;
    if (s->kind == RL_LR_LINEAR) return s->peak * (1.0 - progress);
    double factor = 0.5 * (1.0 + cos(M_PI * progress));
    return s->peak * (s->min_ratio + (1.0 - s->min_ratio) * factor);
}

const char *const rl_lr_kind_names[] = {"constant", "linear", "cosine", NULL};

int rl_lr_kind_parse(const char *name, rl_lr_kind *out, rl_err *err)
{
    for (int k = 0; k < 3; k++)
        if (!strcmp(name, rl_lr_kind_names[k])) {
            *out = (rl_lr_kind)k;
            return 0;
        }
    return rl_err_set(err, "unknown learning-rate schedule '%s' (expected constant, linear or cosine)", name);
}

const char *rl_lr_kind_name(rl_lr_kind kind) { return rl_lr_kind_names[kind]; }
