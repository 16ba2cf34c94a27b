/* error.h — how rlc reports failure.
 *
 * Functions that can fail return 0 on success and -1 on failure, and fill an rl_err with one
 * line that names the file, the item and the problem. Callers add context on the way up with
 * rl_err_prefix ("model.safetensors: " + "tensor 'x': ends at byte ..."). `main` prints the
 * message and exits non-zero. abort() is only for broken invariants (bugs), never bad input. */
#ifndef RL_CORE_ERROR_H
#define RL_CORE_ERROR_H

#include <stddef.h>

typedef struct rl_err {
    char msg[1024];
} rl_err;

/* Sets the message (printf-style) and returns -1, so `return rl_err_set(err, ...);` reads well. */
int rl_err_set(rl_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Puts context in front of an existing message; returns -1. */
int rl_err_prefix(rl_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Sets "<what>: out of memory (<bytes> bytes)" and returns -1. */
int rl_err_oom(rl_err *err, const char *what, size_t bytes);

/* Bug check: prints file:line and the expression, then aborts. Not for input validation. */
#define RL_ASSERT(cond)                                                                      \
    do {                                                                                     \
        if (!(cond)) rl_assert_fail(#cond, __FILE__, __LINE__);                              \
    } while (0)
void rl_assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));

#endif
