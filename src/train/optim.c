/* optim.c — see optim.h. */
#include "train/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ops.h"
#include "train/dp.h"

rl_optim_config rl_optim_defaults(void)
{
    rl_optim_config c = {0};
    c.schedule = (rl_lr_schedule){RL_LR_CONSTANT, 1e-5, 0, 0, 0.0};
    c.beta1 = 0.9;
    c.beta2 = 0.999;
    c.eps = 1e-8;
    c.weight_decay = 0.01;
    c.max_grad_norm = 1.0;
    return c;
}

static int by_offset(const void *a, const void *b)
{
    const rl_optim_run *x = a, *y = b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

int rl_optim_create(rl_optim *o, rl_ctx *ctx, const rl_param *params, int n_params, size_t n_elems,
                    const rl_optim_config *cfg, rl_err *err)
{
    memset(o, 0, sizeof *o);
    o->ctx = ctx;
    o->cfg = *cfg;
    o->n_elems = n_elems;
    o->hi = n_elems;
    if (cfg->dp && rl_dp_moment_range(cfg->dp, n_elems, &o->lo, &o->hi, err)) return -1;
    o->runs = malloc((size_t)(n_params > 0 ? n_params : 1) * sizeof *o->runs);
    if (!o->runs) return rl_err_oom(err, "optimizer groups", (size_t)n_params * sizeof *o->runs);
    for (int i = 0; i < n_params; i++) {
        if (params[i].offset + params[i].count > n_elems) {
            rl_optim_free(o);
            return rl_err_set(err, "optimizer: parameter '%s' ends at element %zu, buffer has %zu",
                              params[i].name, params[i].offset + params[i].count, n_elems);
        }
        o->runs[i] = (rl_optim_run){params[i].offset, params[i].count, params[i].weight_decay != 0};
    }
    qsort(o->runs, (size_t)n_params, sizeof *o->runs, by_offset);
    int n = 0; /* merge neighbours with the same decay setting */
    for (int i = 0; i < n_params; i++) {
        if (n > 0 && o->runs[n - 1].decay == o->runs[i].decay &&
            o->runs[n - 1].offset + o->runs[n - 1].count == o->runs[i].offset)
            o->runs[n - 1].count += o->runs[i].count;
        else
            o->runs[n++] = o->runs[i];
    }
    o->n_runs = n;
    size_t held = o->hi - o->lo, bytes = 2 * (held ? held : 1) * sizeof(float);
    o->m = rl_alloc(ctx, bytes);
    if (o->m) o->v = o->m + held;
    if (!o->m || rl_memzero(ctx, o->m, bytes) != 0) {
        rl_ctx_error(ctx, err);
        rl_optim_free(o);
        return rl_err_prefix(err, "optimizer moments: ");
    }
    return 0;
}

void rl_optim_free(rl_optim *o)
{
    if (o->m) rl_free(o->ctx, o->m);
    free(o->runs);
    o->m = o->v = NULL;
    o->runs = NULL;
}

int rl_optim_clip(const rl_optim *o, double sumsq, double grad_scale, rl_optim_stats *stats, double *scale,
                  rl_err *err)
{
    double norm = sqrt(sumsq) * grad_scale;
    if (!isfinite(norm))
        return rl_err_set(err, "optimizer step %d: gradient norm is %g; weights left unchanged", o->step + 1, norm);
    *scale = grad_scale;
    int clipped = 0;
    if (o->cfg.max_grad_norm > 0 && norm > o->cfg.max_grad_norm) {
        *scale *= o->cfg.max_grad_norm / (norm + 1e-6);
        clipped = 1;
    }
    *stats = (rl_optim_stats){rl_lr_at(&o->cfg.schedule, o->step), norm, clipped};
    return 0;
}

int rl_optim_apply(rl_optim *o, float *master, void *working, const float *grads, double scale, double lr,
                   rl_err *err)
{
    rl_ctx *ctx = o->ctx;
    size_t wsize = rl_dtype_size(ctx->act_dtype);
    o->begun = o->step + 1;
    for (int r = 0; r < o->n_runs; r++) {
        const rl_optim_run *run = &o->runs[r];
        size_t a = run->offset > o->lo ? run->offset : o->lo;
        size_t b = run->offset + run->count < o->hi ? run->offset + run->count : o->hi;
        if (a >= b) continue;
        rl_adamw_params p = {(float)lr, (float)o->cfg.beta1, (float)o->cfg.beta2, (float)o->cfg.eps,
                             run->decay ? (float)o->cfg.weight_decay : 0.0f, o->step + 1, (float)scale};
        size_t k = a - o->lo;
        void *w = working ? (char *)working + a * wsize : NULL;
        if (rl_adamw_step(ctx, master + k, w, grads + k, o->m + k, o->v + k, b - a, &p) != 0) {
            rl_ctx_error(ctx, err);
            return rl_err_prefix(err, "optimizer step %d: ", o->step + 1);
        }
    }
    return 0;
}

int rl_optim_step(rl_optim *o, float *master, void *working, float *grads, double grad_scale,
                  rl_optim_stats *stats, rl_err *err)
{
    if (o->cfg.dp) return rl_dp_step(o->cfg.dp, o, grad_scale, stats, err);
    rl_ctx *ctx = o->ctx;
    double sumsq = 0, scale = 1;
    rl_optim_stats st = {0};
    if (rl_sumsq(ctx, &sumsq, grads, o->n_elems) != 0) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "gradient norm: ");
    }
    if (rl_optim_clip(o, sumsq, grad_scale, &st, &scale, err) || rl_optim_apply(o, master, working, grads, scale, st.lr, err))
        return -1;
    if (rl_memzero(ctx, grads, o->n_elems * sizeof(float)) != 0) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "zeroing gradients: ");
    }
    o->step++;
    if (stats) *stats = st;
    return 0;
}
