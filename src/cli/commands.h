/* commands.h — one entry point per `rlc <command>`, each in its own file src/cli/cmd_<name>.c.
 * Each takes the arguments after the command name (argv[0] is the command) and returns the
 * process exit status; it prints its own errors ("rlc <cmd>: <message>" on stderr).
 *
 * Exit status, the same for every command: 0 done; 1 the work failed (a file missing or
 * broken, a bad input line, no GPU); 2 the command line was wrong (unknown option, a value out
 * of range, a required option missing: cli/options.h); 130 stopped by Ctrl-C after saving. */
#ifndef RL_CLI_COMMANDS_H
#define RL_CLI_COMMANDS_H

enum { RL_EXIT_OK = 0, RL_EXIT_FAILURE = 1, RL_EXIT_USAGE = 2, RL_EXIT_INTERRUPTED = 130 };

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
int rl_cmd_kernel_db(int argc, char **argv);
int rl_cmd_info(int argc, char **argv);
int rl_cmd_demo(int argc, char **argv);
int rl_cmd_demo_kernel(int argc, char **argv);
int rl_cmd_sft(int argc, char **argv);
int rl_cmd_grpo(int argc, char **argv);
int rl_cmd_report(int argc, char **argv);
int rl_cmd_ppo(int argc, char **argv);
int rl_cmd_eval(int argc, char **argv);

#endif
