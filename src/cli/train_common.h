/* train_common.h — what the training commands share between parsing their options and the
 * library's rl_train_run (train/run.h, which also describes a run directory's layout): a
 * checkpoint's saved options as the defaults of a resumed run, and progress lines with Ctrl-C. */
#ifndef RL_CLI_TRAIN_COMMON_H
#define RL_CLI_TRAIN_COMMON_H

#include "backend/ctx.h"
#include "cli/options.h"
#include "train/run.h"

/* rl_opts_parse, after applying the options saved in the checkpoint that --resume names (so the
 * command line only needs what changes). */
int rl_cli_parse_resumable(rl_opts *o, int argc, char **argv);
/* rl_train_run with progress lines and Ctrl-C; returns the command's exit status. */
int rl_cli_train(const char *cmd, rl_ctx *ctx, const rl_run_config *c);

#endif
