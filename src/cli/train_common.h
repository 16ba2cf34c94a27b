/* train_common.h — what `rlc sft` and `rlc grpo` share: the output layout and resuming (a
 * checkpoint's saved options become the defaults).
 *
 * Output layout of --out DIR: DIR/model (the latest checkpoint: an HF model directory with the
 * tokenizer, plus optimizer and trainer state; --resume DIR/model continues from it) and
 * DIR/metrics.jsonl (one line per step, appended on resume). */
#ifndef RL_CLI_TRAIN_COMMON_H
#define RL_CLI_TRAIN_COMMON_H

#include "cli/options.h"

/* rl_opts_parse, after applying the options saved in the checkpoint that --resume names (so the
 * command line only needs what changes). */
int rl_cli_parse_resumable(rl_opts *o, int argc, char **argv);
/* dir/name into out (size 4096); -1 with a message when too long. */
int rl_cli_path(const char *cmd, char *out, const char *dir, const char *name);

#endif
