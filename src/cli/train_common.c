/* train_common.c — see train_common.h. */
#include "cli/train_common.h"

#include <stdio.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "train/checkpoint.h"

int rl_cli_parse_resumable(rl_opts *o, int argc, char **argv)
{
    const char *dir = rl_opts_peek(argc, argv, "resume");
    if (dir) {
        rl_train_state state;
        cJSON *saved = NULL;
        rl_err err;
        if (rl_checkpoint_load_state(dir, &state, &saved, &err))
            return rl_opts_fail(o, "--resume: %s", err.msg);
        char what[4200];
        snprintf(what, sizeof what, "%s/trainer_state.json", dir);
        int rc = saved ? rl_opts_apply_json(o, saved, what) : 0;
        cJSON_Delete(saved);
        if (rc) return RL_EXIT_USAGE;
    }
    return rl_opts_parse(o, argc, argv);
}

int rl_cli_train(const char *cmd, rl_ctx *ctx, const rl_run_config *c)
{
    rl_progress progress;
    rl_loop_watch watch = rl_progress_watch(&progress, cmd);
    rl_err err;
    int rc = rl_train_run(ctx, c, &watch, &err);
    if (rc < 0) {
        fprintf(stderr, "rlc %s: %s\n", cmd, err.msg);
        return RL_EXIT_FAILURE;
    }
    return rc == 0 ? RL_EXIT_OK : RL_EXIT_INTERRUPTED;
}
