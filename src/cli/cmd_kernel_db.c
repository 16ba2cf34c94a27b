/* cmd_kernel_db.c — `rlc kernel-db RUN_DIR`: what a kernel-writing run (`rlc grpo --reward
 * kernel`) found, from its attempt database RUN_DIR/attempts.jsonl (reward/kernel_env/attempts.h):
 * the fastest correct kernel of each task with its speedup and step, optionally its code
 * (--code), and the run's progress step by step (--steps: attempts, share correct, mean reward,
 * best speedup). RUN_DIR may also name the .jsonl file itself. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/file.h"
#include "reward/kernel_env/attempts.h"

static const char usage[] =
    "usage: rlc kernel-db RUN_DIR [--code] [--task TASK] [--steps]\n\n"
    "Lists the fastest correct kernel of each task in a kernel run's attempt database\n"
    "(RUN_DIR/attempts.jsonl, written by `rlc grpo --reward kernel`): its speedup over the\n"
    "reference, the step that wrote it, its hash, and how many attempts were made and correct.\n\n";

static void print_steps(const rl_kattempts_summary *s)
{
    printf("%6s %8s %8s %9s %12s\n", "step", "attempts", "correct", "reward", "best");
    for (int i = 0; i < s->n_steps; i++) {
        const rl_kstep_stat *st = &s->steps[i];
        char best[32] = "-";
        if (st->best_speedup > 0) snprintf(best, sizeof best, "%.2fx", st->best_speedup);
        printf("%6lld %8d %7.0f%% %9.3f %12s\n", (long long)st->step, st->n, 100.0 * st->n_ok / (st->n ? st->n : 1),
               st->n_reward ? st->reward_sum / st->n_reward : 0.0, best);
    }
}

static int run(const char *where, const char *only, int code, int steps)
{
    char path[4200];
    rl_err err;
    size_t n = strlen(where);
    if (n > 6 && !strcmp(where + n - 6, ".jsonl")) snprintf(path, sizeof path, "%s", where);
    else if (rl_path_join(path, sizeof path, where, "attempts.jsonl")) {
        fprintf(stderr, "rlc kernel-db: path too long: %s\n", where);
        return RL_EXIT_USAGE;
    }
    rl_kattempts_summary s;
    if (rl_kattempts_summarize(path, &s, &err)) {
        fprintf(stderr, "rlc kernel-db: %s\n", err.msg);
        return RL_EXIT_FAILURE;
    }
    int found = 0;
    if (steps) print_steps(&s);
    else printf("%-40s %9s %6s %-16s %8s %8s\n", "task", "best", "step", "hash", "attempts", "correct");
    for (int i = 0; i < s.n_tasks && !steps; i++) {
        const rl_ktask_best *b = &s.tasks[i];
        if (only && strcmp(only, b->task)) continue;
        found++;
        char best[32] = "-", step[32] = "-";
        if (b->has_best) {
            snprintf(best, sizeof best, "%.2fx", b->best_speedup);
            snprintf(step, sizeof step, "%lld", (long long)b->best_step);
        }
        printf("%-40s %9s %6s %-16s %8lld %8lld\n", b->task, best, step, b->has_best ? b->hash : "-", (long long)b->n,
               (long long)b->n_ok);
        if (code && b->has_best) printf("\n%s%s\n", b->source, b->source[0] && b->source[strlen(b->source) - 1] == '\n' ? "" : "\n");
    }
    if (s.n_torn) fprintf(stderr, "rlc kernel-db: %s: a torn last line was skipped\n", path);
    rl_kattempts_summary_free(&s);
    if (only && !found && !steps) {
        fprintf(stderr, "rlc kernel-db: %s: no attempts at task '%s'\n", path, only);
        return RL_EXIT_FAILURE;
    }
    return RL_EXIT_OK;
}

int rl_cmd_kernel_db(int argc, char **argv)
{
    const char *dir = NULL, *task = NULL;
    int code = 0, steps = 0;
    rl_opt list[] = {
        RL_OPT_P("RUN_DIR", &dir, "the run's output directory (or its attempts.jsonl)", .flags = RL_OPT_REQUIRED),
        RL_OPT_F("code", &code, "print the code of each best kernel"),
        RL_OPT_S("task", &task, "TASK", "only this task"),
        RL_OPT_F("steps", &steps, "per step: attempts, share correct, mean reward, best speedup"),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "kernel-db", .usage = usage, .list = list};
    int status = rl_opts_parse(&cli, argc, argv);
    if (status == RL_OPTS_CONTINUE) status = run(dir, task, code, steps);
    rl_opts_free(&cli);
    return status;
}
