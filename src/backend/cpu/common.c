/* common.c — argument checks shared by the CPU ops; each fills ctx->err with the op's name. */
#include "backend/cpu/cpu_internal.h"

int cpu_need(rl_ctx *ctx, const char *op, const void *p, const char *what)
{
    if (p) return 0;
    return rl_err_set(&ctx->err, "%s: %s is NULL", op, what);
}

int cpu_min(rl_ctx *ctx, const char *op, long long value, long long min, const char *what)
{
    if (value >= min) return 0;
    return rl_err_set(&ctx->err, "%s: %s = %lld, must be >= %lld", op, what, value, min);
}
