/* chat_qwen.c — the ChatML families: plain ChatML, Qwen2.5-Instruct and Qwen3, each step as
 * their chat_template does it (transformers renders with trim_blocks and lstrip_blocks, so only
 * the {{ }} outputs below reach the text).
 *
 * Qwen3 in short: a tools block opens the system turn; an assistant turn after the last real
 * user query (one not wrapped in <tool_response>) shows its reasoning in <think> blocks, the
 * final turn always (empty when it has none), earlier turns never (their reasoning is
 * stripped); tool responses become user turns; with enable_thinking off the generation prompt
 * holds an empty think block. Qwen2.5 has a default system prompt (read from its template:
 * chat.c) and no thinking. */
#include <string.h>

#include "io/chat_internal.h"

#define IM_START "<|im_start|>"
#define IM_END "<|im_end|>"
#define TOOLS_HEAD                                                                                        \
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided " \
    "with function signatures within <tools></tools> XML tags:\n<tools>"
#define TOOLS_TAIL                                                                                       \
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "     \
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": " \
    "<args-json-object>}\n</tool_call>" IM_END "\n"

static int is(const rl_chat_message *m, const char *role) { return !strcmp(m->role, role); }

static void turn(rl_chat_buf *b, const char *role, const char *content)
{
    rl_chat_puts(b, IM_START), rl_chat_puts(b, role), rl_chat_puts(b, "\n");
    rl_chat_puts(b, content), rl_chat_puts(b, IM_END "\n");
}

int rl_chat_render_chatml(rl_chat_buf *b, const rl_chat_message *msgs, int n, const rl_chat_options *opt,
                          rl_err *err)
{
    (void)err;
    for (int i = 0; i < n; i++) turn(b, msgs[i].role, msgs[i].content);
    if (opt->add_generation_prompt) rl_chat_puts(b, IM_START "assistant\n");
    return 0;
}

static int has_tools(const rl_chat_options *opt) { return opt->tools && cJSON_GetArraySize(opt->tools) > 0; }

static void tools_block(rl_chat_buf *b, const cJSON *tools)
{
    rl_chat_puts(b, TOOLS_HEAD);
    for (const cJSON *t = tools->child; t; t = t->next) rl_chat_puts(b, "\n"), rl_chat_json(b, t, 0);
    rl_chat_puts(b, TOOLS_TAIL);
}

/* One <tool_call> of message i. Qwen3 writes string arguments as they are, Qwen2.5 as JSON. */
static int tool_call(rl_chat_buf *b, int qwen3, const cJSON *call, int i, int j, rl_err *err)
{
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
    /* Qwen3: `if tool_call.function` (a non-empty object); Qwen2.5: `is defined` */
    if (qwen3 ? cJSON_IsObject(fn) && fn->child : fn != NULL) call = fn;
    const cJSON *name = cJSON_IsObject(call) ? cJSON_GetObjectItemCaseSensitive(call, "name") : NULL;
    const cJSON *args = cJSON_IsObject(call) ? cJSON_GetObjectItemCaseSensitive(call, "arguments") : NULL;
    if (!cJSON_IsString(name) || !args)
        return rl_err_set(err, "chat message %d: tool_calls[%d] needs a string 'name' and 'arguments'", i, j);
    rl_chat_puts(b, "<tool_call>\n{\"name\": \""), rl_chat_puts(b, name->valuestring);
    rl_chat_puts(b, "\", \"arguments\": ");
    if (qwen3 && cJSON_IsString(args)) rl_chat_puts(b, args->valuestring);
    else rl_chat_json(b, args, 0);
    rl_chat_puts(b, "}\n</tool_call>");
    return 0;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !memcmp(s + n - k, tail, k);
}

/* Python's s.split(sep)[-1]: what follows the last sep (all of s when there is none). */
static rl_chat_span after_last(rl_chat_span s, const char *sep)
{
    size_t k = strlen(sep);
    for (size_t at = s.n; at >= k; at--)
        if (!memcmp(s.s + at - k, sep, k)) return (rl_chat_span){s.s + at, s.n - at};
    return s;
}

/* Qwen3's assistant turn: reasoning from reasoning_content, else split off an inline
 * "<think>...</think>"; shown only after the last query (see the top of the file). */
static int qwen3_assistant(rl_chat_buf *b, const rl_chat_message *msgs, int n, int i, int last_query, rl_err *err)
{
    const rl_chat_message *m = &msgs[i];
    rl_chat_span content = rl_chat_span_of(m->content), reasoning = {"", 0};
    if (m->reasoning_content) {
        reasoning = rl_chat_span_of(m->reasoning_content);
    } else if (strstr(m->content, "</think>")) {
        content = rl_chat_strip_chars(after_last(content, "</think>"), "\n", 1, 0);
        rl_chat_span head = {m->content, (size_t)(strstr(m->content, "</think>") - m->content)};
        reasoning = rl_chat_strip_chars(after_last(rl_chat_strip_chars(head, "\n", 0, 1), "<think>"), "\n", 1, 0);
    }
    rl_chat_puts(b, IM_START "assistant\n");
    if (i > last_query && (i == n - 1 || reasoning.n > 0)) {
        rl_chat_span r = rl_chat_strip_chars(reasoning, "\n", 1, 1), c = rl_chat_strip_chars(content, "\n", 1, 0);
        rl_chat_puts(b, "<think>\n"), rl_chat_put(b, r.s, r.n), rl_chat_puts(b, "\n</think>\n\n");
        rl_chat_put(b, c.s, c.n);
    } else {
        rl_chat_put(b, content.s, content.n);
    }
    int j = 0;
    for (const cJSON *call = m->tool_calls ? m->tool_calls->child : NULL; call; call = call->next, j++) {
        if (j > 0 || content.n > 0) rl_chat_puts(b, "\n");
        if (tool_call(b, 1, call, i, j, err)) return -1;
    }
    rl_chat_puts(b, IM_END "\n");
    return 0;
}

static int qwen25_assistant(rl_chat_buf *b, const rl_chat_message *m, int i, rl_err *err)
{
    rl_chat_puts(b, IM_START "assistant");
    if (m->content[0]) rl_chat_puts(b, "\n"), rl_chat_puts(b, m->content);
    int j = 0;
    for (const cJSON *call = m->tool_calls->child; call; call = call->next, j++) {
        rl_chat_puts(b, "\n");
        if (tool_call(b, 0, call, i, j, err)) return -1;
    }
    rl_chat_puts(b, IM_END "\n");
    return 0;
}

int rl_chat_render_qwen(rl_chat_buf *b, const rl_chat_template *t, const rl_chat_message *msgs, int n,
                        const rl_chat_options *opt, rl_err *err)
{
    int qwen3 = t->family == RL_CHAT_QWEN3;
    int system_first = is(&msgs[0], "system");
    if (has_tools(opt)) {
        rl_chat_puts(b, IM_START "system\n");
        if (system_first) rl_chat_puts(b, msgs[0].content), rl_chat_puts(b, "\n\n");
        else if (!qwen3) rl_chat_puts(b, t->default_system), rl_chat_puts(b, "\n\n");
        tools_block(b, opt->tools);
    } else if (system_first) {
        turn(b, "system", msgs[0].content);
    } else if (!qwen3) {
        turn(b, "system", t->default_system);
    }
    int last_query = n - 1;
    for (int i = n - 1; i >= 0; i--)
        if (is(&msgs[i], "user") &&
            !(!strncmp(msgs[i].content, "<tool_response>", 15) && ends_with(msgs[i].content, "</tool_response>"))) {
            last_query = i;
            break;
        }
    for (int i = 0; i < n; i++) {
        const rl_chat_message *m = &msgs[i];
        int calls = m->tool_calls && cJSON_GetArraySize(m->tool_calls) > 0;
        if (is(m, "user") || (is(m, "system") && i > 0) || (!qwen3 && is(m, "assistant") && !calls)) {
            turn(b, m->role, m->content);
        } else if (is(m, "assistant")) {
            if (qwen3 ? qwen3_assistant(b, msgs, n, i, last_query, err) : qwen25_assistant(b, m, i, err)) return -1;
        } else if (is(m, "tool")) {
            if (i == 0 || !is(&msgs[i - 1], "tool")) rl_chat_puts(b, IM_START "user");
            rl_chat_puts(b, "\n<tool_response>\n"), rl_chat_puts(b, m->content), rl_chat_puts(b, "\n</tool_response>");
            if (i == n - 1 || !is(&msgs[i + 1], "tool")) rl_chat_puts(b, IM_END "\n");
        }
    }
    if (opt->add_generation_prompt) {
        rl_chat_puts(b, IM_START "assistant\n");
        if (qwen3 && !opt->enable_thinking) rl_chat_puts(b, "<think>\n\n</think>\n\n");
    }
    return 0;
}
