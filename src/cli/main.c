/* main.c — `rlc <command> [options]`: finds the command in the table and runs it. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

const rl_command rl_commands[] = {
    {"tokenize", rl_cmd_tokenize, "encode text from stdin to token ids with a tokenizer.json"},
    {"logprobs", rl_cmd_logprobs, "per-token log-probs of token sequences (JSON lines) under a model"},
    {"generate", rl_cmd_generate, "sample completions for prompts (JSON lines) with a model"},
    {"kernel-eval", rl_cmd_kernel_eval, "score CUDA kernel candidates against a task (docs/kernel-env.md)"},
    {"kernel-db", rl_cmd_kernel_db, "the best kernel per task of a kernel-writing run (docs/kernel-env.md)"},
    {"info", rl_cmd_info, "check a Hugging Face model directory and show its size and memory needs"},
    {"sft", rl_cmd_sft, "supervised fine-tuning on JSON lines (prompt/completion or messages)"},
    {"grpo", rl_cmd_grpo, "GRPO / DAPO / Dr. GRPO with a reward (math, exact, regex, format, cmd)"},
    {"report", rl_cmd_report, "an HTML page with the plots and sample completions of training runs"},
    {"ppo", rl_cmd_ppo, "PPO with a value model (GAE, KL-shaped rewards, reward normalisation)"},
    {"eval", rl_cmd_eval, "greedy accuracy and mean reward of a model on prompts with answers"},
    {"demo", rl_cmd_demo, "train a tiny model on CPU: SFT then GRPO on addition (the README's demo)"},
    {"demo-kernel", rl_cmd_demo_kernel, "GPU: a tiny policy learns which of its kernels is fastest (kernel reward)"},
    {NULL, NULL, NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: rlc <command> [options]   (rlc <command> --help for its options)\n\ncommands:\n");
    for (const rl_command *c = rl_commands; c->name; c++) fprintf(out, "  %-12s %s\n", c->name, c->summary);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (const rl_command *c = rl_commands; c->name; c++)
        if (!strcmp(c->name, argv[1])) return c->run(argc - 1, argv + 1);
    fprintf(stderr, "rlc: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
