/* bench_grpo_update.c — one GRPO policy update on the CUDA backend, given the rollouts and
 * their old log-probs (no generation): per micro-batch forward to log-probs, rl_policy_loss
 * (clipped objective, DAPO clip-higher), backward; then one AdamW step over every parameter.
 *
 * usage: bench_grpo_update CONFIG_JSON N_SEQS SEQLEN [MICRO_SEQS] [REPEATS]
 * A randomly initialised model from CONFIG_JSON; N_SEQS random sequences of SEQLEN tokens,
 * each a prompt of SEQLEN / 3 tokens and a completion (the loss mask) of the rest; advantages
 * one per sequence, uniform in [-1.5, 1.5]; loss weights 1 / (completion length * N_SEQS) (the
 * GRPO per-sequence mean); old log-probs = this model's log-probs before the update plus
 * uniform noise in [-0.1, 0.1] (so ratios differ from 1 and some tokens clip). Micro-batches
 * of MICRO_SEQS sequences (default 16) accumulate gradients. Two warm-up updates, then REPEATS
 * timed ones (default 5) between rl_sync calls on a host clock; prints the median:
 *   "rlc grpo n=<N> s=<S> micro=<M> ms=<median> tokens_per_s=<rate>"
 * bench/bench_grpo_update.py runs the same update in PyTorch + transformers. */
#include <stdio.h>
#include <stdlib.h>

#include "backend/ctx.h"
#include "backend/ops.h"
#include "core/rng.h"
#include "core/timer.h"
#include "io/config.h"
#include "model/model.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "bench_grpo_update: %s: %s\n", what, msg);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_grpo_update CONFIG_JSON N_SEQS SEQLEN [MICRO_SEQS] [REPEATS]\n");
        return 2;
    }
    int n_seqs = atoi(argv[2]), seqlen = atoi(argv[3]);
    int micro = argc > 4 ? atoi(argv[4]) : 16, repeats = argc > 5 ? atoi(argv[5]) : 5;
    if (n_seqs < 1 || seqlen < 4 || micro < 1 || n_seqs % micro || repeats < 1 || repeats > 100)
        return fail("arguments", "out of range (N_SEQS must be a multiple of MICRO_SEQS)");
    rl_err err = {{0}};
    rl_model_config cfg;
    rl_ctx ctx;
    rl_model m;
    rl_acts *acts;
    if (rl_config_load(&cfg, argv[1], &err)) return fail("config", err.msg);
    if (rl_ctx_create(&ctx, RL_BACKEND_CUDA, 0, &err)) return fail("context", err.msg);
    if (rl_model_init_random(&m, &ctx, &cfg, 1, &err) || rl_model_enable_grads(&m, &err)) return fail("model", err.msg);
    int n_tokens = n_seqs * seqlen, mb_tokens = micro * seqlen, prompt = seqlen / 3;
    if (rl_acts_create(&acts, &m, mb_tokens, RL_ACTS_TRAIN, &err)) return fail("activations", err.msg);

    int32_t *tokens = malloc(n_tokens * sizeof *tokens), *cu = malloc((micro + 1) * sizeof *cu);
    float *adv = malloc(n_tokens * sizeof *adv), *weight = malloc(n_tokens * sizeof *weight);
    float *old = malloc(n_tokens * sizeof *old);
    rl_rng rng;
    rl_rng_init(&rng, 11);
    for (int s = 0; s < n_seqs; s++) {
        float a = 3.0f * rl_rng_uniform(&rng) - 1.5f;
        for (int t = 0; t < seqlen; t++) {
            int i = s * seqlen + t;
            tokens[i] = (int32_t)rl_rng_below(&rng, (uint32_t)cfg.vocab_size);
            adv[i] = a;
            weight[i] = t >= prompt ? 1.0f / ((float)(seqlen - prompt) * (float)n_seqs) : 0.0f;
        }
    }
    for (int b = 0; b <= micro; b++) cu[b] = b * seqlen;
    size_t n = m.n_elems, tb = (size_t)n_tokens * sizeof(float);
    float *d_logp = rl_alloc(&ctx, tb), *d_dlogp = rl_alloc(&ctx, tb), *d_old = rl_alloc(&ctx, tb);
    float *d_adv = rl_alloc(&ctx, tb), *d_w = rl_alloc(&ctx, tb);
    float *mom = rl_alloc(&ctx, n * sizeof(float)), *vel = rl_alloc(&ctx, n * sizeof(float));
    if (!d_logp || !d_dlogp || !d_old || !d_adv || !d_w || !mom || !vel || rl_memcpy(&ctx, d_adv, adv, tb, RL_H2D) ||
        rl_memcpy(&ctx, d_w, weight, tb, RL_H2D) || rl_memzero(&ctx, mom, n * sizeof(float)) ||
        rl_memzero(&ctx, vel, n * sizeof(float)))
        return fail("buffers", ctx.err.msg);
    /* Old log-probs: the model before any update, plus noise. */
    for (int mb = 0; mb < n_seqs / micro; mb++)
        if (rl_model_forward(&m, acts, tokens + mb * mb_tokens, cu, micro, 1.0f, d_logp + mb * mb_tokens, NULL, &err))
            return fail("old log-probs", err.msg);
    if (rl_memcpy(&ctx, old, d_logp, tb, RL_D2H)) return fail("old log-probs", ctx.err.msg);
    for (int i = 0; i < n_tokens; i++) old[i] += 0.2f * rl_rng_uniform(&rng) - 0.1f;
    if (rl_memcpy(&ctx, d_old, old, tb, RL_H2D)) return fail("old log-probs", ctx.err.msg);

    rl_policy_loss_params lp = {.clip_low = 0.2f, .clip_high = 0.28f, .kl_beta = 0.0f};
    double *ms = malloc(repeats * sizeof *ms), stats[RL_LOSS_N_STATS] = {0};
    for (int it = -2; it < repeats; it++) {
        if (rl_sync(&ctx)) return fail("sync", ctx.err.msg);
        double t0 = rl_time_now();
        if (rl_model_zero_grads(&m, &err)) return fail("zero", err.msg);
        for (int mb = 0; mb < n_seqs / micro; mb++) {
            size_t o = (size_t)mb * mb_tokens;
            if (rl_model_forward(&m, acts, tokens + o, cu, micro, 1.0f, d_logp + o, NULL, &err))
                return fail("forward", err.msg);
            if (rl_policy_loss(&ctx, d_dlogp + o, stats, d_logp + o, d_old + o, NULL, d_adv + o, d_w + o, mb_tokens, &lp))
                return fail("policy loss", ctx.err.msg);
            if (rl_model_backward(&m, acts, d_dlogp + o, &err)) return fail("backward", err.msg);
        }
        rl_adamw_params ap = {.lr = 1e-6f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f,
                              .step = it + 3, .grad_scale = 1.0f};
        if (rl_adamw_step(&ctx, m.master, rl_model_working_copy(&m), m.grads, mom, vel, n, &ap) || rl_sync(&ctx))
            return fail("adamw", ctx.err.msg);
        if (it >= 0) ms[it] = (rl_time_now() - t0) * 1e3;
    }
    qsort(ms, repeats, sizeof *ms, cmp_double);
    double med = ms[repeats / 2];
    printf("rlc grpo n=%d s=%d micro=%d ms=%.2f tokens_per_s=%.0f last_clipped=%.3f\n", n_seqs, seqlen, micro, med,
           n_tokens / (med * 1e-3), stats[RL_LOSS_STAT_CLIPPED]);
    free(ms);
    free(tokens);
    free(cu);
    free(adv);
    free(weight);
    free(old);
    rl_free(&ctx, d_logp);
    rl_free(&ctx, d_dlogp);
    rl_free(&ctx, d_old);
    rl_free(&ctx, d_adv);
    rl_free(&ctx, d_w);
    rl_free(&ctx, mom);
    rl_free(&ctx, vel);
    rl_acts_free(acts);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
    return 0;
}
