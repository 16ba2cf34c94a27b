/* cmd_report.c — `rlc report RUN_DIR [RUN_DIR...] [-o FILE]`: one self-contained HTML page with
 * the plots of the runs' metrics and their sample completions (train/report.h). */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "train/report.h"

static const char usage[] =
    "usage: rlc report RUN_DIR [RUN_DIR...] [-o FILE]\n\n"
    "Writes one HTML file (no network needed to view it) with a plot of every metric in each run's\n"
    "metrics.jsonl over the steps, the runs overlaid, and a table of the last sample completions\n"
    "of each run's samples.jsonl. RUN_DIR: the --out directory of rlc sft / grpo.\n\n";

int rl_cmd_report(int argc, char **argv)
{
    rl_opt_list dirs = {0};
    const char *out = "report.html";
    rl_opt list[] = {
        RL_OPT_PL("RUN_DIR", &dirs, "run directories (with metrics.jsonl) to show together", RL_OPT_REQUIRED),
        RL_OPT_S("out", &out, "FILE", "the HTML file to write", .alias = 'o'),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "report", .usage = usage, .list = list};
    int status = rl_opts_parse(&cli, argc, argv);
    if (status == RL_OPTS_CONTINUE) {
        rl_err err;
        if (rl_report_dirs(dirs.items, dirs.n, out, &err)) {
            fprintf(stderr, "rlc report: %s\n", err.msg);
            status = RL_EXIT_FAILURE;
        } else {
            printf("%s\n", out);
            status = RL_EXIT_OK;
        }
    }
    rl_opts_free(&cli);
    return status;
}
