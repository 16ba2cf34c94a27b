/* dataset.h — JSON-lines datasets in the shapes TRL uses.
 *
 * RL (GRPO/PPO) lines:  {"prompt": "..." | [messages], "answer": "..." | number, ...}
 *                       answer is optional (a reward may use other fields instead).
 * SFT lines:            {"prompt": "..." | [messages], "completion": "..." | [messages], ...}
 *                    or {"messages": [{"role": "...", "content": "..."}, ...], ...}
 * Messages are {"role": system|user|assistant|tool, "content": string} with, for assistant
 * turns, optional "reasoning_content" (string) and "tool_calls" (list); see io/chat.h. A line
 * may carry "tools" (a list of tool schemas) for the chat template. Every other field of
 * a line is kept: `fields` is the whole line (rewards get it), `extra_json` the fields the
 * loader did not consume, as compact JSON text.
 *
 * Each line is checked on its own: valid UTF-8, one JSON object, the shape above. A bad line is
 * reported with file, line number and reason; the caller picks RL_DS_STOP (the load fails) or
 * RL_DS_SKIP (the line is counted in n_skipped and its message kept, the first
 * RL_DS_MAX_WARNINGS of them). Empty (whitespace-only) lines are ignored. Nothing else is
 * dropped.
 *
 * Request lines (`rlc generate`, `rlc logprobs`) go through the same checks: one object with
 * exactly one of {"prompt": "text"}, {"messages": [...]}, {"prompt_ids": [ids]}, {"ids": [ids]}
 * (the caller says which it takes), and optionally "tools"; token ids are integers in [0, 2^31);
 * other fields are ignored. */
#ifndef RL_IO_DATASET_H
#define RL_IO_DATASET_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/number.h"
#include "io/tokenizer.h"

typedef enum { RL_DS_RL, RL_DS_SFT } rl_ds_kind;
typedef enum { RL_DS_STOP, RL_DS_SKIP } rl_ds_on_error;

#define RL_DS_MAX_WARNINGS 20

typedef struct rl_example {
    int line;                        /* 1-based line number in the file */
    const char *prompt;              /* plain-text prompt, or NULL when prompt_messages is set */
    rl_chat_message *prompt_messages; /* conversational prompt (or NULL) */
    int n_prompt_messages;
    const char *answer;              /* RL reference answer (numbers as their JSON text), or NULL */
    const char *completion;          /* SFT plain-text completion, or NULL */
    rl_chat_message *completion_messages; /* SFT conversational completion (or NULL) */
    int n_completion_messages;
    rl_chat_message *messages;       /* SFT {"messages": [...]} (or NULL) */
    int n_messages;
    const cJSON *tools;              /* the line's "tools" list (or NULL) */
    cJSON *fields;                   /* the whole line; the strings above point into it */
    char *extra_json;                /* the other fields as a JSON object, "{}" when none */
    char answer_buf[32];
} rl_example;

/* Parses one line (len bytes, no newline) into ex; `what` and line_no go into messages:
 * "data.jsonl:17: field 'prompt' is missing". On failure ex is left empty. */
int rl_example_parse(rl_example *ex, const char *line, size_t len, rl_ds_kind kind, const char *what,
                     int line_no, rl_err *err);
void rl_example_free(rl_example *ex);

typedef struct rl_dataset {
    rl_example *examples;
    int n;
    int n_skipped;                   /* bad lines skipped (RL_DS_SKIP) */
    int n_warnings;                  /* messages kept: min(n_skipped, RL_DS_MAX_WARNINGS) */
    char warnings[RL_DS_MAX_WARNINGS][256];
} rl_dataset;

/* Reads path. With RL_DS_STOP the first bad line fails the load (its message in err). A file
 * with no usable line is an error either way. */
int rl_dataset_load(rl_dataset **out, const char *path, rl_ds_kind kind, rl_ds_on_error on_error,
                    rl_err *err);
void rl_dataset_free(rl_dataset *ds);

typedef enum { RL_REQ_PROMPT = 1, RL_REQ_MESSAGES = 2, RL_REQ_PROMPT_IDS = 4, RL_REQ_IDS = 8 } rl_request_kind;

typedef struct rl_request {
    rl_request_kind kind;      /* which field the line has */
    const char *prompt;        /* RL_REQ_PROMPT (points into fields) */
    rl_chat_message *messages; /* RL_REQ_MESSAGES */
    int n_messages;
    const cJSON *tools;        /* the line's "tools" list (or NULL) */
    int32_t *ids;              /* RL_REQ_PROMPT_IDS or RL_REQ_IDS (at least one) */
    int n_ids;
    cJSON *fields;             /* the whole line */
} rl_request;

/* Parses one request line (len bytes, no newline); accept: the RL_REQ_* kinds the caller takes.
 * Messages start with `where` ("input: field 'ids' is an empty list"). On failure r is empty. */
int rl_request_parse(rl_request *r, const char *line, size_t len, unsigned accept, const char *where, rl_err *err);
void rl_request_free(rl_request *r);

/* The sampling parameters a generation request line may carry, with vLLM's SamplingParams
 * names: max_tokens, temperature, top_p, top_k, min_p, n, seed, stop (a string or a list of
 * them), ignore_eos. has_* says which the line sets (they override the command line for that
 * request); the ranges are the command line's. Other fields are left to the caller. */
enum { RL_REQ_MAX_STOP = 16 };
typedef struct rl_request_sampling {
    int has_max_tokens, has_temperature, has_top_p, has_top_k, has_min_p, has_n, has_seed, has_stop, has_ignore_eos;
    int max_tokens, top_k, n, ignore_eos;
    double temperature, top_p, min_p, seed;
    const char *stop[RL_REQ_MAX_STOP]; /* point into r->fields */
    int n_stop;
} rl_request_sampling;

int rl_request_sampling_parse(const rl_request *r, rl_request_sampling *s, const char *where, rl_err *err);

#endif
