/* device.c — see device.h. */
#include "cli/device.h"

#include <stdio.h>

#include "cli/commands.h"

const char *const rl_device_names[] = {"cpu", "cuda", "auto", NULL};

int rl_device_ctx(const char *cmd, rl_ctx *ctx, int device, int precision, int n_threads, int ordinal)
{
    rl_backend_kind kind = device == RL_DEVICE_CPU    ? RL_BACKEND_CPU
                           : device == RL_DEVICE_CUDA ? RL_BACKEND_CUDA
                           : rl_cuda_available()      ? RL_BACKEND_CUDA
                                                      : RL_BACKEND_CPU;
    rl_err err;
    if (rl_ctx_create(ctx, kind, ordinal, &err)) {
        fprintf(stderr, "rlc %s: --device %s: %s\n", cmd, rl_device_names[device], err.msg);
        return RL_EXIT_FAILURE;
    }
    if (rl_ctx_set_precision(ctx, (rl_precision)precision, &err)) {
        fprintf(stderr, "rlc %s: --%s\n", cmd, err.msg);
        rl_ctx_free(ctx);
        return RL_EXIT_USAGE;
    }
    ctx->n_threads = n_threads;
    return 0;
}
