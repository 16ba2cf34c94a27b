/* chat_llama.c — the Llama 3 families: "<|start_header_id|>role<|end_header_id|>\n\n" + the
 * trimmed content + "<|eot_id|>" per message, after the BOS token.
 *
 * Llama 3.1 (and 3.3) adds a system header that is always there (knowledge cut-off and a date:
 * date_string, else 3.1's fixed "26 Jul 2024", else for 3.2 today as transformers' strftime_now
 * gives it) holding the system message; with tools, "Environment: ipython" and the tool schemas (JSON, indent 4) go into the
 * first user message (the template's default tools_in_user_message); an assistant tool call is
 * {"name": ..., "parameters": ...} (exactly one per turn, as the template demands) and a tool
 * response an "ipython" turn holding its content as a JSON string. Llama 3.2's text template is
 * 3.1's without builtin tools, so the same code renders both. builtin_tools and custom_tools are
 * not passed, as apply_chat_template does by default. */
#include <string.h>
#include <time.h>

#include "io/chat_internal.h"

#define EOT "<|eot_id|>"

static void header(rl_chat_buf *b, const char *role)
{
    rl_chat_puts(b, "<|start_header_id|>"), rl_chat_puts(b, role), rl_chat_puts(b, "<|end_header_id|>\n\n");
}

static void put_trimmed(rl_chat_buf *b, const char *s)
{
    rl_chat_span t = rl_chat_trim(rl_chat_span_of(s));
    rl_chat_put(b, t.s, t.n);
}

int rl_chat_render_llama3(rl_chat_buf *b, const rl_chat_template *t, const rl_chat_message *msgs, int n,
                          const rl_chat_options *opt, rl_err *err)
{
    (void)err;
    for (int i = 0; i < n; i++) {
        if (i == 0) rl_chat_puts(b, t->bos_token);
        header(b, msgs[i].role), put_trimmed(b, msgs[i].content), rl_chat_puts(b, EOT);
    }
    if (opt->add_generation_prompt) header(b, "assistant");
    return 0;
}

static int tool_call(rl_chat_buf *b, const rl_chat_message *m, int i, rl_err *err)
{
    if (cJSON_GetArraySize(m->tool_calls) != 1)
        return rl_err_set(err, "chat message %d: Llama 3.1's template takes exactly one tool call per turn, got %d",
                          i, cJSON_GetArraySize(m->tool_calls));
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(m->tool_calls->child, "function");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
    if (!cJSON_IsObject(fn) || !cJSON_IsString(name) || !args)
        return rl_err_set(err, "chat message %d: tool_calls[0] needs a 'function' with a string 'name' and "
                          "'arguments'", i);
    header(b, "assistant");
    rl_chat_puts(b, "{\"name\": \""), rl_chat_puts(b, name->valuestring), rl_chat_puts(b, "\", \"parameters\": ");
    rl_chat_json(b, args, 0);
    rl_chat_puts(b, "}" EOT);
    return 0;
}

int rl_chat_render_llama3_1(rl_chat_buf *b, const rl_chat_template *t, const rl_chat_message *msgs, int n,
                            const rl_chat_options *opt, rl_err *err)
{
    int at = 0;
    const char *system = "";
    if (!strcmp(msgs[0].role, "system")) system = msgs[at++].content;
    rl_chat_puts(b, t->bos_token);
    header(b, "system");
    if (opt->tools) rl_chat_puts(b, "Environment: ipython\n");
    char today[32] = "26 Jul 2024";
    if (t->family == RL_CHAT_LLAMA3_2) {
        time_t now = time(NULL);
        struct tm tm;
        if (!localtime_r(&now, &tm) || !strftime(today, sizeof today, "%d %b %Y", &tm))
            return rl_err_set(err, "chat: cannot format today's date for the Llama 3.2 system header");
    }
    rl_chat_puts(b, "Cutting Knowledge Date: December 2023\nToday Date: ");
    rl_chat_puts(b, opt->date_string ? opt->date_string : today);
    rl_chat_puts(b, "\n\n");
    put_trimmed(b, system);
    rl_chat_puts(b, EOT);
    if (opt->tools) {
        if (at == n)
            return rl_err_set(err, "chat: Llama 3.1's template puts the tools into the first user message, and "
                              "there is none");
        header(b, "user");
        rl_chat_puts(b, "Given the following functions, please respond with a JSON for a function call with its "
                        "proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": "
                        "function name, \"parameters\": dictionary of argument name and its value}.Do not use "
                        "variables.\n\n");
        for (const cJSON *tool = opt->tools->child; tool; tool = tool->next)
            rl_chat_json(b, tool, 4), rl_chat_puts(b, "\n\n");
        put_trimmed(b, msgs[at++].content);
        rl_chat_puts(b, EOT);
    }
    for (int i = at; i < n; i++) {
        const rl_chat_message *m = &msgs[i];
        if (m->tool_calls) {
            if (tool_call(b, m, i, err)) return -1;
        } else if (!strcmp(m->role, "tool") || !strcmp(m->role, "ipython")) {
            header(b, "ipython");
            cJSON s = {.type = cJSON_String, .valuestring = (char *)m->content};
            rl_chat_json(b, &s, 0);
            rl_chat_puts(b, EOT);
        } else {
            header(b, m->role), put_trimmed(b, m->content), rl_chat_puts(b, EOT);
        }
    }
    if (opt->add_generation_prompt) header(b, "assistant");
    return 0;
}
