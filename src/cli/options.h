/* options.h — a small table-driven option parser for the training commands.
 *
 * Each option has a long name ("max-new-tokens"), a type and a pointer to the value it sets.
 * Accepted forms: --name VALUE, --name=VALUE, and for flags --name / --no-name. `--config
 * FILE.json` reads an object whose keys are option names (dashes or underscores) and sets them
 * the same way; options on the command line after it override it, and before it are
 * overridden by it. A string value set from the command line points into argv; one set from a
 * config file is copied (freed by rl_opts_free). */
#ifndef RL_CLI_OPTIONS_H
#define RL_CLI_OPTIONS_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { RL_OPT_INT, RL_OPT_I64, RL_OPT_DOUBLE, RL_OPT_STRING, RL_OPT_FLAG } rl_opt_type;

typedef struct rl_opt {
    const char *name;
    rl_opt_type type;
    void *value; /* int*, int64_t*, double*, const char**, int* (flag) */
    const char *help;
    int set;     /* filled: 1 once given */
} rl_opt;

/* Parses argv[1 ..] (argv[0] is the command name) against opts (terminated by a NULL name).
 * Returns 0, 1 when --help was given (help printed to stdout), or -1 after printing
 * "rlc <cmd>: <message>" to stderr. */
int rl_opts_parse(const char *cmd, rl_opt *opts, int argc, char **argv, const char *usage_head);
/* Sets options from a JSON object as --config does; `what` names its source in messages.
 * null values are skipped. */
int rl_opts_apply_json(const char *cmd, rl_opt *opts, const cJSON *j, const char *what);
/* Prints usage_head then the options with their defaults. */
void rl_opts_usage(FILE *out, const rl_opt *opts, const char *usage_head);
/* Frees strings copied from config files. */
void rl_opts_free(void);
/* The options as a JSON object (for trainer_state.json); caller frees with cJSON_Delete. */
cJSON *rl_opts_to_json(const rl_opt *opts);

#endif
