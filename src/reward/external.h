/* external.h — a reward computed by any program that speaks JSON lines.
 *
 * Protocol: rlc starts `/bin/sh -c COMMAND` once and keeps it alive across batches. For each
 * completion it writes one line to the program's stdin: a JSON object with the dataset line's
 * fields plus "prompt", "completion" and "answer" (null when absent), and waits for one line on
 * its stdout: {"reward": <finite number>} (other keys are ignored). Blank lines are skipped.
 * The program's stderr is rlc's stderr. PYTHONUNBUFFERED=1 is set for it; other programs must
 * flush after each line.
 * Failure is never a silent zero: a crash, an exit, a hang past the time limit, a line that is
 * not one JSON object, or a missing, non-numeric, non-finite or beyond-float "reward" fails the call with a message
 * naming the completion index and what the program did. After a failure the program is
 * stopped and every later call fails, unless the caller handles failures itself (on_failure:
 * `--reward-errors zero`): then a broken answer line scores 0 and the program goes on, and a
 * program that crashed, exited or hung is started again for the next completion; one that
 * still fails after 3 restarts in a row without answering (a command that cannot work) fails
 * the call. The program runs in its own process group (a Ctrl-C at
 * the terminal reaches rlc only, which finishes its step), and that group is killed on
 * timeout or close. */
#ifndef RL_REWARD_EXTERNAL_H
#define RL_REWARD_EXTERNAL_H

#include "core/error.h"
#include "reward/reward.h"

typedef struct rl_reward_proc rl_reward_proc;

/* Starts the program. timeout_s: limit per completion (> 0). */
int rl_reward_proc_start(rl_reward_proc **out, const char *command, double timeout_s, rl_err *err);
/* Called for each completion whose answer was broken (why: the message naming the program and
 * the completion); its reward is set to 0. Non-zero stops the call (err filled). */
typedef int (*rl_reward_on_failure)(void *user, int index, const char *why, rl_err *err);
/* Sends the n items and reads the n rewards. on_failure NULL: the first broken answer fails the
 * call. */
int rl_reward_proc_score(rl_reward_proc *p, const rl_reward_item *items, int n, float *rewards,
                         rl_reward_on_failure on_failure, void *user, rl_err *err);
/* Closes its stdin, waits up to 2 s for it to exit, then kills its process group. */
void rl_reward_proc_close(rl_reward_proc *p);

/* The line protocol underneath, for other programs that speak JSON lines (rollout/env_proc.c):
 * started as above, messages naming it `kind` ("environment program") and an item `unit`
 * ("episode"). exchange sends one request line (ending in a newline) and reads one answer line
 * (malloc'd, without the newline) within the time limit; on any failure the program is stopped
 * (rl_line_proc_dead) and err says what it did. Close with rl_reward_proc_close. */
int rl_line_proc_start(rl_reward_proc **out, const char *command, double timeout_s, const char *kind,
                       const char *unit, rl_err *err);
int rl_line_proc_exchange(rl_reward_proc *p, const char *request, size_t len, int index, char **answer, rl_err *err);
int rl_line_proc_dead(const rl_reward_proc *p);

/* Reads one answer line: a single JSON object whose "reward" is a number that fits a float
 * (other keys ignored). 0 and *reward set, or -1 with what is wrong, the line quoted (cut at 120
 * bytes), in why. */
int rl_reward_parse_answer(const char *line, float *reward, char *why, size_t size);

#endif
