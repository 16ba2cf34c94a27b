/* commands.h — one entry point per `rlc <command>`, each in its own file src/cli/cmd_<name>.c.
 * Each takes the arguments after the command name (argv[0] is the command) and returns the
 * process exit status; it prints its own errors. */
#ifndef RL_CLI_COMMANDS_H
#define RL_CLI_COMMANDS_H

typedef struct rl_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} rl_command;

/* The table lives in main.c; add a line there and a declaration here for a new command. */
extern const rl_command rl_commands[];

int rl_cmd_tokenize(int argc, char **argv);
int rl_cmd_logprobs(int argc, char **argv);
int rl_cmd_generate(int argc, char **argv);
int rl_cmd_kernel_eval(int argc, char **argv);
int rl_cmd_info(int argc, char **argv);
int rl_cmd_demo(int argc, char **argv);
int rl_cmd_sft(int argc, char **argv);
int rl_cmd_grpo(int argc, char **argv);

#endif
