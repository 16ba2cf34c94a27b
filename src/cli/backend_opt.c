/* backend_opt.c — "--device cpu|cuda|auto" to a created rl_ctx (see backend_opt.h). */
#include "cli/backend_opt.h"

#include <string.h>

int rl_backend_opt_ctx(rl_ctx *ctx, const char *value, rl_err *err)
{
    rl_backend_kind kind;
    if (!value || !strcmp(value, "auto"))
        kind = rl_cuda_available() ? RL_BACKEND_CUDA : RL_BACKEND_CPU;
    else if (!strcmp(value, "cpu"))
        kind = RL_BACKEND_CPU;
    else if (!strcmp(value, "cuda"))
        kind = RL_BACKEND_CUDA;
    else
        return rl_err_set(err, "--device must be cpu, cuda or auto, got '%s'", value);
    if (rl_ctx_create(ctx, kind, 0, err)) return rl_err_prefix(err, "--device %s: ", value ? value : "auto");
    return 0;
}
