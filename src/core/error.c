/* error.c — rl_err formatting; see error.h. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rl_err_set(rl_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int rl_err_prefix(rl_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t pl = strlen(prefix), cap = sizeof err->msg - 1;
    if (pl > cap) pl = cap;
    size_t ml = strnlen(err->msg, cap);
    if (pl + ml > cap) ml = cap - pl;
    memmove(err->msg + pl, err->msg, ml);
    memcpy(err->msg, prefix, pl);
    err->msg[pl + ml] = '\0';
    return -1;
}

int rl_err_oom(rl_err *err, const char *what, size_t bytes)
{
    return rl_err_set(err, "%s: out of memory (%zu bytes)", what, bytes);
}

void rl_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "rlc: internal error at %s:%d: assertion '%s' failed\n", file, line, expr);
    abort();
}
