/* train_common.c — see train_common.h. */
#include "cli/train_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/device.h"
#include "cli/progress.h"
#include "dist/dist.h"
#include "dist/launch.h"
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

/* The options as the run configuration every rank must share: "name=value" lines. */
static char *config_text(const cJSON *options)
{
    size_t cap = 256, len = 0;
    char *text = malloc(cap);
    if (!text) return NULL;
    text[0] = '\0';
    for (const cJSON *o = options ? options->child : NULL; o; o = o->next) {
        char *value = cJSON_PrintUnformatted(o);
        if (!value) {
            free(text);
            return NULL;
        }
        size_t need = strlen(o->string) + strlen(value) + 3;
        if (len + need > cap) {
            cap = 2 * (len + need);
            char *grown = realloc(text, cap);
            if (!grown) {
                free(value);
                free(text);
                return NULL;
            }
            text = grown;
        }
        len += (size_t)sprintf(text + len, "%s=%s\n", o->string, value);
        free(value);
    }
    return text;
}

/* --gpus N in a process that starts the ranks: there must be N GPUs, or CPU ranks asked for. */
static int check_gpus(const char *cmd, const rl_cli_ranks *p)
{
    if (p->device == RL_DEVICE_CPU) return 0;
    int n = rl_cuda_devices();
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (n == 0 && p->device == RL_DEVICE_AUTO)
        fprintf(stderr, "rlc %s: --gpus %d, but no GPU is visible (--device cpu starts %d CPU ranks instead)\n", cmd,
                p->gpus, p->gpus);
    else if (n < p->gpus)
        fprintf(stderr, "rlc %s: --gpus %d, but %d GPU%s visible%s%s%s\n", cmd, p->gpus, n, n == 1 ? " is" : "s are",
                visible ? " (CUDA_VISIBLE_DEVICES=" : "", visible ? visible : "", visible ? ")" : "");
    else
        return 0;
    return -1;
}

int rl_cli_train(const char *cmd, const rl_cli_ranks *p, rl_run_config *c, char **argv)
{
    rl_err err;
    rl_dist_config dc;
    int launched = rl_dist_from_env(&dc, &err);
    if (launched < 0) {
        fprintf(stderr, "rlc %s: %s\n", cmd, err.msg);
        return RL_EXIT_USAGE;
    }
    if (!launched && p->gpus > 1) {
        if (check_gpus(cmd, p)) return RL_EXIT_USAGE;
        int status = rl_dist_spawn_local(p->gpus, argv, &err);
        if (status < 0) fprintf(stderr, "rlc %s: %s\n", cmd, err.msg);
        return status < 0 ? RL_EXIT_FAILURE : status;
    }
    /* a rank takes the GPU of its local rank (device 0 when the launcher left it one), and
     * CPU ranks share the cores */
    int n_gpus = rl_cuda_devices(), ordinal = launched && n_gpus > 1 ? dc.local_rank : 0, threads = p->threads;
    if (launched && p->device != RL_DEVICE_CPU && n_gpus > 1 && dc.local_rank >= n_gpus) {
        fprintf(stderr, "rlc %s: rank %d has local rank %d, but %d GPUs are visible\n", cmd, dc.rank, dc.local_rank, n_gpus);
        return RL_EXIT_USAGE;
    }
    /* --reward kernel under several ranks: each rank times kernels on its own GPU (and on those
     * no rank trains on), in its own evaluation phase, never on a GPU where another rank may be
     * training (kreward.h) */
    if (launched && p->device != RL_DEVICE_CPU && n_gpus > 1) {
        c->reward_options.kernel.rank_gpu = ordinal + 1;
        c->reward_options.kernel.rank_gpus = dc.local_world;
    }
    if (launched && threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN) / dc.local_world;
        threads = cores > 1 ? (int)cores : 1;
    }
    rl_ctx ctx;
    int rc = rl_device_ctx(cmd, &ctx, p->device, p->precision, threads, ordinal);
    if (rc) return rc;
    ctx.deterministic = p->deterministic;
    rl_dist dist = {0};
    if (launched) {
        char *text = config_text(c->options);
        rc = text ? rl_dist_init(&dist, &dc, &ctx, text, &err) : rl_err_oom(&err, "run configuration", 0);
        free(text);
        if (rc) {
            fprintf(stderr, "rlc %s: %s\n", cmd, err.msg);
            rl_ctx_free(&ctx);
            return RL_EXIT_FAILURE;
        }
        c->comm = dist.comm;
        c->zero = p->zero;
    }
    rl_progress progress;
    rl_loop_watch watch = rl_progress_watch(&progress, cmd);
    progress.quiet = launched && dc.rank != 0;
    rc = rl_train_run(&ctx, c, &watch, &err);
    if (rc < 0) {
        if (launched) fprintf(stderr, "rlc %s: rank %d: %s\n", cmd, dc.rank, err.msg);
        else fprintf(stderr, "rlc %s: %s\n", cmd, err.msg);
        if (progress.rescued_dir)
            fprintf(stderr, "rlc %s: step %lld, the last completed, was saved to %s; once the cause is fixed, "
                            "continue with: rlc %s --resume %s\n",
                    cmd, (long long)progress.rescued_step, progress.rescued_dir, cmd, progress.rescued_dir);
    }
    if (launched && rl_dist_finish(&dist, rc >= 0, &err) && rc >= 0) {
        fprintf(stderr, "rlc %s: rank %d: %s\n", cmd, dc.rank, err.msg);
        rc = -1;
    }
    rl_ctx_free(&ctx);
    return rc < 0 ? RL_EXIT_FAILURE : rc == 0 ? RL_EXIT_OK : RL_EXIT_INTERRUPTED;
}
