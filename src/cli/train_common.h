/* train_common.h — what `rlc sft` and `rlc grpo` share: the backend from --device, the
 * output layout, and resuming (a checkpoint's saved options become the defaults).
 *
 * Output layout of --out DIR: DIR/model (the latest checkpoint: an HF model directory with the
 * tokenizer, plus optimizer and trainer state; --resume DIR/model continues from it) and
 * DIR/metrics.jsonl (one line per step, appended on resume). */
#ifndef RL_CLI_TRAIN_COMMON_H
#define RL_CLI_TRAIN_COMMON_H

#include "backend/ctx.h"
#include "cli/options.h"

/* The value of --resume in argv, or NULL. */
const char *rl_cli_resume_arg(int argc, char **argv);
/* Applies the options saved in dir/trainer_state.json (so the command line only needs what
 * changes). Returns 0 or -1 (message printed). */
int rl_cli_resume_options(const char *cmd, rl_opt *opts, const char *dir);
/* "auto" (CUDA when available), "cpu" or "cuda". Prints the error. */
int rl_cli_ctx(const char *cmd, rl_ctx *ctx, const char *device, int threads);
/* dir/name into out (size 4096); exits the command with a message when too long. */
int rl_cli_path(const char *cmd, char *out, const char *dir, const char *name);

#endif
