/* train_common.c — see train_common.h. */
#include "cli/train_common.h"

#include <stdio.h>

#include "cli/commands.h"
#include "core/file.h"
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

int rl_cli_path(const char *cmd, char *out, const char *dir, const char *name)
{
    if (rl_path_join(out, 4096, dir, name) != 0) {
        fprintf(stderr, "rlc %s: path too long: %s/%s\n", cmd, dir, name);
        return -1;
    }
    return 0;
}
