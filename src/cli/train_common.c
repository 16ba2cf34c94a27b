/* train_common.c — see train_common.h. */
#include "cli/train_common.h"

#include <stdio.h>
#include <string.h>

#include "cli/backend_opt.h"
#include "core/file.h"
#include "io/json.h"

const char *rl_cli_resume_arg(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--resume=", 9)) return argv[i] + 9;
        if (!strcmp(argv[i], "--resume") && i + 1 < argc) return argv[i + 1];
    }
    return NULL;
}

int rl_cli_resume_options(const char *cmd, rl_opt *opts, const char *dir)
{
    char path[4096];
    if (rl_cli_path(cmd, path, dir, "trainer_state.json")) return -1;
    rl_err err;
    cJSON *j = rl_json_parse_file(path, &err);
    if (!j) {
        fprintf(stderr, "rlc %s: --resume: %s\n", cmd, err.msg);
        return -1;
    }
    const cJSON *saved = cJSON_GetObjectItemCaseSensitive(j, "options");
    int rc = saved ? rl_opts_apply_json(cmd, opts, saved, path) : 0;
    cJSON_Delete(j);
    return rc;
}

int rl_cli_ctx(const char *cmd, rl_ctx *ctx, const char *device, int threads)
{
    rl_err err;
    if (rl_backend_opt_ctx(ctx, device, &err) != 0) {
        fprintf(stderr, "rlc %s: %s\n", cmd, err.msg);
        return -1;
    }
    ctx->n_threads = threads;
    return 0;
}

int rl_cli_path(const char *cmd, char *out, const char *dir, const char *name)
{
    if (rl_path_join(out, 4096, dir, name) != 0) {
        fprintf(stderr, "rlc %s: path too long: %s/%s\n", cmd, dir, name);
        return -1;
    }
    return 0;
}
