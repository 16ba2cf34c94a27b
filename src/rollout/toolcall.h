/* toolcall.h — the tool calls in a model's turn, in the Qwen format (Qwen2.5 / Qwen3 chat
 * templates, also Hermes):
 *
 *   <tool_call>
 *   {"name": "compile", "arguments": {"code": "..."}}
 *   </tool_call>
 *
 * Calls inside <think>...</think> are drafts and are skipped. "arguments" may be missing (no
 * arguments), an object, or a string holding a JSON object (some models write it so). A call
 * whose closing tag is missing (the turn hit its token limit) or whose body is not such an
 * object is reported as a bad call with the reason, so an environment can answer it. */
#ifndef RL_ROLLOUT_TOOLCALL_H
#define RL_ROLLOUT_TOOLCALL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define RL_TOOLCALL_MAX 8

typedef struct rl_toolcall {
    char name[64];       /* "" for a bad call */
    cJSON *arguments;    /* an object (owned), NULL for a bad call */
    char error[160];     /* why the call is bad, "" when it is good */
} rl_toolcall;

typedef struct rl_toolcalls {
    rl_toolcall calls[RL_TOOLCALL_MAX];
    int n;               /* calls found (at most RL_TOOLCALL_MAX; later ones are ignored) */
    int n_ignored;       /* beyond RL_TOOLCALL_MAX */
} rl_toolcalls;

/* Parses text (len bytes, need not be NUL-terminated). Never fails: problems are bad calls. */
void rl_toolcalls_parse(const char *text, size_t len, rl_toolcalls *out);
void rl_toolcalls_free(rl_toolcalls *c);

#endif
