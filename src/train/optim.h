/* optim.h — the AdamW driver: moments, parameter groups, gradient clipping, one update.
 *
 * Works on the model's flat buffers (model.h): master weights, gradients and the moments m, v
 * share one layout, so the update is a few rl_adamw_step calls over contiguous runs of
 * parameters. Two groups, as in common practice: matrices and embeddings (rl_param
 * weight_decay = 1) get weight decay, norms and biases do not.
 *
 * One update: grad_norm = sqrt(rl_sumsq(grads)) * grad_scale (grad_scale: what the trainer's
 * loss still needs, e.g. 1 / accumulation steps); when max_grad_norm > 0 and grad_norm exceeds
 * it, the gradients are further scaled by max_grad_norm / (grad_norm + 1e-6) (as torch's
 * clip_grad_norm_). A non-finite norm fails the step without touching the weights. The
 * gradients are zeroed after the update.
 *
 * Data parallelism: with cfg.dp (train/dp.h) the optimizer belongs to one rank of a run. It
 * then holds moments for the elements [lo, hi) that rank updates (its shard under ZeRO 1 and
 * 2, everything under ZeRO 0), and rl_optim_step hands over to rl_dp_step, which reduces the
 * gradients across ranks and shares the updated weights; the pieces of the update below
 * (rl_optim_clip, rl_optim_apply) are the same in both. */
#ifndef RL_TRAIN_OPTIM_H
#define RL_TRAIN_OPTIM_H

#include <stddef.h>

#include "backend/ctx.h"
#include "core/error.h"
#include "model/model.h"
#include "train/schedule.h"

typedef struct rl_dp rl_dp;

typedef struct rl_optim_config {
    rl_lr_schedule schedule;
    double beta1, beta2, eps, weight_decay;
    double max_grad_norm; /* 0 = no clipping */
    rl_dp *dp;            /* the trained model's data-parallel group (not owned); NULL: one rank */
} rl_optim_config;

/* A contiguous run of parameters with one weight-decay setting. */
typedef struct rl_optim_run {
    size_t offset, count;
    int decay;
} rl_optim_run;

typedef struct rl_optim {
    rl_ctx *ctx;             /* not owned */
    rl_optim_config cfg;
    size_t n_elems;
    size_t lo, hi;           /* the elements it holds moments for: [0, n_elems) or a shard */
    float *m, *v;            /* backend, [hi - lo] each, one allocation */
    rl_optim_run *runs;
    int n_runs;
    int step;                /* updates taken so far */
    int begun;               /* updates that started changing the weights: step, or step + 1
                                while (or after) one fails half-way. A trainer whose step failed
                                compares it with step taken before (rescue, train/loop.h) */
} rl_optim;

typedef struct rl_optim_stats {
    double lr, grad_norm; /* grad_norm before clipping */
    int clipped;
} rl_optim_stats;

/* Zeroed moments for n_elems elements laid out as params (the model's table). */
int rl_optim_create(rl_optim *o, rl_ctx *ctx, const rl_param *params, int n_params, size_t n_elems,
                    const rl_optim_config *cfg, rl_err *err);
void rl_optim_free(rl_optim *o);

/* One update of master (and the working copy when not NULL) from grads; zeroes grads. With
 * cfg.dp the model's own buffers are used (the arguments other than o, grad_scale, stats are
 * ignored). */
int rl_optim_step(rl_optim *o, float *master, void *working, float *grads, double grad_scale,
                  rl_optim_stats *stats, rl_err *err);

/* The update's pieces. rl_optim_clip: from the sum of squared gradients, the norm and learning
 * rate for stats and the factor the gradients get (grad_scale and clipping); fails, changing
 * nothing, on a non-finite norm. rl_optim_apply: AdamW on elements [o->lo, o->hi) with that
 * factor; master and grads point at element o->lo, working (NULL: none) at element 0. Neither
 * advances o->step. */
int rl_optim_clip(const rl_optim *o, double sumsq, double grad_scale, rl_optim_stats *stats, double *scale,
                  rl_err *err);
int rl_optim_apply(rl_optim *o, float *master, void *working, const float *grads, double scale, double lr,
                   rl_err *err);

/* The usual defaults: constant lr 1e-5, betas (0.9, 0.999), eps 1e-8, decay 0.01, clip 1. */
rl_optim_config rl_optim_defaults(void);

#endif
