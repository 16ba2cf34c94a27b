/* bench_model_step.c — one training step of a whole model on the CUDA backend: forward to
 * log-probs, backward of a weighted log-prob loss, AdamW over every parameter.
 *
 * usage: bench_model_step CONFIG_JSON BATCH SEQLEN [REPEATS] [--checkpoint]
 * The model is randomly initialised from CONFIG_JSON (bench/configs/qwen3-0.6b.json is
 * Qwen3-0.6B's shape); the batch is BATCH sequences of SEQLEN random tokens packed end to end.
 * --checkpoint plans the activations in RL_ACTS_TRAIN_CHECKPOINT mode (each layer recomputed in
 * the backward). Two warm-up steps, then REPEATS timed steps (default 5), each between rl_sync
 * calls on a monotonic host clock; prints the median, the rate, the model FLOP utilisation
 * (6 * parameters * tokens per second over the H100's 989 TFLOP/s dense bf16) and the peak
 * device memory: rlc allocates everything with cudaMalloc and frees nothing during a step, so
 * the device memory in use after the steps minus that in use right after the context was
 * created (CUDA's own context; the cuBLASLt workspace is counted) is the high-water mark:
 *   "rlc step mode=<train|checkpoint> b=<B> s=<S> ms=<median> tokens_per_s=<rate> mfu=<x>
 *    peak_gib=<GiB> acts_gib=<activation memory> params=<N>"
 * bench/bench_model_step.py runs the same step in PyTorch + transformers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "backend/ctx.h"
#include "backend/ops.h"
#include "core/rng.h"
#include "core/timer.h"
#include "io/config.h"
#include "model/model.h"

#define PEAK_BF16_FLOPS 989e12

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "bench_model_step: %s: %s\n", what, msg);
    return 1;
}

static size_t device_used(void)
{
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return 0;
    return total_b - free_b;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_model_step CONFIG_JSON BATCH SEQLEN [REPEATS] [--checkpoint]\n");
        return 2;
    }
    int checkpoint = strcmp(argv[argc - 1], "--checkpoint") == 0;
    int n_args = argc - checkpoint;
    int batch = atoi(argv[2]), seqlen = atoi(argv[3]), repeats = n_args > 4 ? atoi(argv[4]) : 5;
    if (batch < 1 || seqlen < 2 || repeats < 1 || repeats > 100) return fail("arguments", "out of range");
    rl_err err = {{0}};
    rl_model_config cfg;
    rl_ctx ctx;
    rl_model m;
    rl_acts *acts;
    if (rl_config_load(&cfg, argv[1], &err)) return fail("config", err.msg);
    if (rl_ctx_create(&ctx, RL_BACKEND_CUDA, 0, &err)) return fail("context", err.msg);
    size_t base = device_used();
    if (rl_model_init_random(&m, &ctx, &cfg, 1, &err) || rl_model_enable_grads(&m, &err)) return fail("model", err.msg);
    int n_tokens = batch * seqlen;
    if (rl_acts_create(&acts, &m, n_tokens, checkpoint ? RL_ACTS_TRAIN_CHECKPOINT : RL_ACTS_TRAIN, &err))
        return fail("activations", err.msg);

    int32_t *tokens = malloc(n_tokens * sizeof *tokens), *cu = malloc((batch + 1) * sizeof *cu);
    float *weights = malloc(n_tokens * sizeof *weights);
    rl_rng rng;
    rl_rng_init(&rng, 7);
    for (int t = 0; t < n_tokens; t++) {
        tokens[t] = (int32_t)rl_rng_below(&rng, (uint32_t)cfg.vocab_size);
        weights[t] = -1.0f / n_tokens; /* minimise the mean negative log-likelihood */
    }
    for (int b = 0; b <= batch; b++) cu[b] = b * seqlen;
    size_t n = m.n_elems;
    float *logp = rl_alloc(&ctx, n_tokens * sizeof(float)), *dlogp = rl_alloc(&ctx, n_tokens * sizeof(float));
    float *mom = rl_alloc(&ctx, n * sizeof(float)), *vel = rl_alloc(&ctx, n * sizeof(float));
    if (!logp || !dlogp || !mom || !vel || rl_memcpy(&ctx, dlogp, weights, n_tokens * sizeof(float), RL_H2D) ||
        rl_memzero(&ctx, mom, n * sizeof(float)) || rl_memzero(&ctx, vel, n * sizeof(float)))
        return fail("buffers", ctx.err.msg);

    double *ms = malloc(repeats * sizeof *ms);
    for (int it = -2; it < repeats; it++) {
        if (rl_sync(&ctx)) return fail("sync", ctx.err.msg);
        double t0 = rl_time_now();
        rl_adamw_params ap = {.lr = 1e-5f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.0f,
                              .step = it + 3, .grad_scale = 1.0f};
        if (rl_model_zero_grads(&m, &err) ||
            rl_model_forward(&m, acts, tokens, cu, batch, 1.0f, logp, NULL, &err) ||
            rl_model_backward(&m, acts, dlogp, &err))
            return fail("step", err.msg);
        if (rl_adamw_step(&ctx, m.master, rl_model_working_copy(&m), m.grads, mom, vel, n, &ap) || rl_sync(&ctx))
            return fail("adamw", ctx.err.msg);
        if (it >= 0) ms[it] = (rl_time_now() - t0) * 1e3;
    }
    size_t peak = device_used() - base;
    qsort(ms, repeats, sizeof *ms, cmp_double);
    double med = ms[repeats / 2];
    double rate = n_tokens / (med * 1e-3);
    printf("rlc step mode=%s b=%d s=%d ms=%.2f tokens_per_s=%.0f mfu=%.3f peak_gib=%.2f acts_gib=%.2f params=%zu\n",
           checkpoint ? "checkpoint" : "train", batch, seqlen, med, rate, 6.0 * (double)n * rate / PEAK_BF16_FLOPS,
           peak / 1073741824.0, rl_acts_bytes(acts) / 1073741824.0, n);
    free(ms);
    free(tokens);
    free(cu);
    free(weights);
    rl_free(&ctx, logp);
    rl_free(&ctx, dlogp);
    rl_free(&ctx, mom);
    rl_free(&ctx, vel);
    rl_acts_free(acts);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
    return 0;
}
