/* log.h — leveled messages to stderr. Library code logs sparingly (warnings, one-line info);
 * progress lines belong to src/cli. The level is process-wide and set once by main. */
#ifndef RL_CORE_LOG_H
#define RL_CORE_LOG_H

typedef enum { RL_LOG_ERROR = 0, RL_LOG_WARN = 1, RL_LOG_INFO = 2, RL_LOG_DEBUG = 3 } rl_log_level;

void rl_log_set_level(rl_log_level level);
rl_log_level rl_log_get_level(void);
void rl_log(rl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define rl_log_error(...) rl_log(RL_LOG_ERROR, __VA_ARGS__)
#define rl_log_warn(...) rl_log(RL_LOG_WARN, __VA_ARGS__)
#define rl_log_info(...) rl_log(RL_LOG_INFO, __VA_ARGS__)
#define rl_log_debug(...) rl_log(RL_LOG_DEBUG, __VA_ARGS__)

#endif
