/* options.h — the one option parser of every `rlc` command.
 *
 * A command describes its options in a table (rl_opt, built with the RL_OPT_* macros below):
 * long name, type, where the value goes, a placeholder and one line of help, and for numbers
 * the accepted range, for choices the accepted names. The same table parses argv, reads
 * --config files, writes --help (so help and behaviour cannot drift) and is saved with a
 * checkpoint (rl_opts_to_json).
 *
 * Accepted forms: --name VALUE, --name=VALUE; flags --name, --no-name, --name=true|false;
 * positional arguments (RL_OPT_POS) in table order, the last may take all the rest
 * (RL_OPT_PL); a one-letter short form "-x VALUE" where an option has an alias; --help / -h. `--config FILE.json` reads an
 * object whose keys are option names (dashes or underscores) and sets them the same way: options
 * after it on the command line override it, options before it are overridden by it (a
 * repeatable option takes a list of strings there; its values replace earlier ones as a whole).
 *
 * Errors: "rlc <cmd>: <message>" on stderr, one format for every command ("--top-p must be a
 * number in (0, 1], got '0'", "unknown option '--bogus' (see --help)", "--model is required");
 * the parse then returns exit status 2. A string set from a config file is copied and owned by
 * the rl_opts (rl_opts_free); one set from argv points into argv. */
#ifndef RL_CLI_OPTIONS_H
#define RL_CLI_OPTIONS_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

#include "core/number.h"

typedef enum {
    RL_OPT_INT,    /* int *, in range */
    RL_OPT_I64,    /* int64_t *, in range */
    RL_OPT_DOUBLE, /* double *, finite, in range */
    RL_OPT_STRING, /* const char ** */
    RL_OPT_CHOICE, /* int *: index of the value in choices */
    RL_OPT_FLAG,   /* int *: 0 or 1 */
    RL_OPT_LIST,   /* rl_opt_list *: a repeatable string option */
    RL_OPT_POS,    /* const char **: the next positional argument; with RL_OPT_REPEAT an
                      rl_opt_list *: every positional argument left */
} rl_opt_type;

#define RL_OPT_LIST_MAX 16
typedef struct rl_opt_list {
    const char *items[RL_OPT_LIST_MAX];
    int n;
} rl_opt_list;

enum {
    RL_OPT_REQUIRED = 1, /* the command refuses to run without it */
    RL_OPT_REPEAT = 2,   /* RL_OPT_POS: takes every remaining positional argument (RL_OPT_PL) */
};

typedef struct rl_opt {
    const char *name;           /* long name without "--"; for RL_OPT_POS its placeholder */
    rl_opt_type type;
    void *value;
    const char *arg;            /* placeholder in --help ("DIR") */
    const char *help;
    rl_number_range range;      /* numbers */
    const char *const *choices; /* RL_OPT_CHOICE: NULL-terminated names */
    unsigned flags;
    char alias;                 /* one-letter short form ('o': "-o VALUE"), 0 for none */
    int set;                    /* filled: 1 once given */
    int source;                 /* filled: which source (argv, a config file) set it last */
} rl_opt;

/* Table entries; extra designators may follow: `.flags = RL_OPT_REQUIRED`, `.range.above_lo = 1`. */
#define RL_OPT_S(n, p, a, h, ...) {.name = n, .type = RL_OPT_STRING, .value = p, .arg = a, .help = h, __VA_ARGS__}
#define RL_OPT_I(n, p, min_, max_, h, ...) \
    {.name = n, .type = RL_OPT_INT, .value = p, .arg = "N", .help = h, .range.lo = min_, .range.hi = max_, .range.whole = 1, __VA_ARGS__}
#define RL_OPT_L(n, p, min_, max_, h, ...) \
    {.name = n, .type = RL_OPT_I64, .value = p, .arg = "N", .help = h, .range.lo = min_, .range.hi = max_, .range.whole = 1, __VA_ARGS__}
#define RL_OPT_D(n, p, min_, max_, h, ...) \
    {.name = n, .type = RL_OPT_DOUBLE, .value = p, .arg = "X", .help = h, .range.lo = min_, .range.hi = max_, __VA_ARGS__}
#define RL_OPT_C(n, p, names, h, ...) \
    {.name = n, .type = RL_OPT_CHOICE, .value = p, .choices = names, .help = h, __VA_ARGS__}
#define RL_OPT_F(n, p, h, ...) {.name = n, .type = RL_OPT_FLAG, .value = p, .help = h, __VA_ARGS__}
#define RL_OPT_LST(n, p, a, h, ...) {.name = n, .type = RL_OPT_LIST, .value = p, .arg = a, .help = h, __VA_ARGS__}
#define RL_OPT_P(n, p, h, ...) {.name = n, .type = RL_OPT_POS, .value = p, .help = h, __VA_ARGS__}
/* every positional argument left, into an rl_opt_list; more_flags: RL_OPT_REQUIRED or 0 */
#define RL_OPT_PL(n, p, h, more_flags) {.name = n, .type = RL_OPT_POS, .value = p, .help = h, .flags = RL_OPT_REPEAT | (more_flags)}
#define RL_OPT_END {.name = NULL}

/* --thinking on|off for commands that render chat prompts: *p is 0 (on, the chat templates'
 * default) or 1 (off: enable_thinking false, io/chat.h). */
extern const char *const rl_opt_thinking_names[];
#define RL_OPT_THINKING(p)                                                                                  \
    RL_OPT_C("thinking", p, rl_opt_thinking_names,                                                          \
             "chat prompts: off passes enable_thinking=false to the template (Qwen3: empty <think> block)")

typedef struct rl_opts {
    const char *cmd;   /* "generate": messages start "rlc generate: " */
    const char *usage; /* --help text before the option list: usage line(s) and what it does */
    rl_opt *list;      /* ends with RL_OPT_END */
    char **copied;     /* strings from config files */
    int n_copied;
    int source;        /* counts the sources read: a repeatable option's values from a later
                          source replace those of an earlier one */
} rl_opts;

/* rl_opts_parse's "go on" value; anything else is the exit status to return (0 after --help). */
#define RL_OPTS_CONTINUE (-1)

/* Parses argv[1 ..] (argv[0] is the command). Checks required options last. */
int rl_opts_parse(rl_opts *o, int argc, char **argv);
/* Sets options from a JSON object as --config does; `what` names its source in messages.
 * null values are skipped. 0, or -1 after printing the message. */
int rl_opts_apply_json(rl_opts *o, const cJSON *j, const char *what);
/* The value of option `name` in argv (either form), or NULL: for an option that decides how the
 * rest is read (--resume loads saved options before the command line is applied). */
const char *rl_opts_peek(int argc, char **argv, const char *name);
/* The table entry of `name`; NULL when there is none. */
rl_opt *rl_opts_find(rl_opts *o, const char *name);
/* Prints "rlc <cmd>: <message>" to stderr; returns 2 (the usage-error exit status). */
int rl_opts_fail(const rl_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The --help text: usage, then every option with its placeholder, help, default and range. */
void rl_opts_usage(FILE *out, const rl_opts *o);
/* Frees strings copied from config files. */
void rl_opts_free(rl_opts *o);
/* The options as a JSON object (saved in trainer_state.json); caller frees with cJSON_Delete. */
cJSON *rl_opts_to_json(const rl_opts *o);

#endif
