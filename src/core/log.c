/* log.c — see log.h. */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>

static rl_log_level current_level = RL_LOG_INFO;

void rl_log_set_level(rl_log_level level) { current_level = level; }
rl_log_level rl_log_get_level(void) { return current_level; }

void rl_log(rl_log_level level, const char *fmt, ...)
{
    static const char *tags[] = {"error", "warning", "info", "debug"};
    if (level > current_level) return;
    fprintf(stderr, "rlc %s: ", tags[level]);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}
