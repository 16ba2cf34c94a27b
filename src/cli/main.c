/* main.c — `rlc <command> [options]`: finds the command in the table and runs it. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

const rl_command rl_commands[] = {
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
