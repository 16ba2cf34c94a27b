/* schedule.h — learning-rate schedules with linear warmup, as transformers' get_*_schedule_with
 * _warmup compute them, so a run here and a PyTorch run follow the same curve.
 *
 * step counts optimizer steps already taken (0 for the first update). During warmup
 * lr = peak * step / warmup (the very first update uses lr 0 when warmup > 0, as in
 * transformers). After it, with progress = (step - warmup) / (total - warmup) in [0, 1]:
 *   constant: peak
 *   linear:   peak * (1 - progress)
 *   cosine:   peak * (min_ratio + (1 - min_ratio) * 0.5 * (1 + cos(pi * progress))) */
#ifndef RL_TRAIN_SCHEDULE_H
#define RL_TRAIN_SCHEDULE_H

#include "core/error.h"

typedef enum { RL_LR_CONSTANT, RL_LR_LINEAR, RL_LR_COSINE } rl_lr_kind;

typedef struct rl_lr_schedule {
    rl_lr_kind kind;
    double peak;
    int warmup_steps;
    int total_steps;     /* optimizer steps in the whole run (linear, cosine) */
    double min_ratio;    /* cosine floor as a fraction of peak */
} rl_lr_schedule;

double rl_lr_at(const rl_lr_schedule *s, int step);

/* "constant", "linear", "cosine" (by rl_lr_kind), then NULL. */
extern const char *const rl_lr_kind_names[];
int rl_lr_kind_parse(const char *name, rl_lr_kind *out, rl_err *err);
const char *rl_lr_kind_name(rl_lr_kind kind);

#endif
