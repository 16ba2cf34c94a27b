/* chat.c — which chat template a checkpoint ships, and the messages and options to render. See
 * chat.h; the families are rendered by chat_qwen.c and chat_llama.c, the tokenizer's view of its
 * template is in chat_tok.c.
 *
 * A template is recognised by text that only its family has: every marker of the family must be
 * in it and no marker of another family. The markers avoid line breaks, which templates spell as
 * real ones or as "\n" inside Jinja strings. Variants that render differently (Qwen3-2507 without
 * enable_thinking, Llama 3.2 Vision with <|image|>) therefore fail to match and are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "io/chat_internal.h"
#include "io/json.h"

typedef struct family_markers {
    rl_chat_family family;
    const char *name;
    const char *all[8];     /* each must occur */
    const char *none[4];    /* none may occur */
} family_markers;

static const family_markers families[] = {
    {RL_CHAT_QWEN3, "qwen3",
     {"<|im_start|>", "enable_thinking is defined and enable_thinking is false", "reasoning_content",
      "last_query_index", "<tool_response>", "tool_call.arguments is string", "</think>", NULL},
     {"strftime_now", NULL}},
    {RL_CHAT_QWEN2_5, "qwen2.5",
     {"<|im_start|>", "messages[0]['role'] == 'system'", "<tool_response>", "tool_call.function is defined",
      "tool_call.arguments | tojson", "(message.role == \"assistant\" and not message.tool_calls)", NULL},
     {"reasoning_content", "enable_thinking", "<think>", NULL}},
    {RL_CHAT_CHATML, "chatml",
     {"<|im_start|>' + message['role'] + '", "message['content'] + '<|im_end|>'", "add_generation_prompt", NULL},
     {"system", "tool", "think", "loop"}},
    {RL_CHAT_LLAMA3, "llama3",
     {"<|start_header_id|>' + message['role'] + '<|end_header_id|>", "message['content'] | trim + '<|eot_id|>'",
      "loop.index0 == 0", "bos_token + content", NULL},
     {"tool", "system", "date", NULL}},
    {RL_CHAT_LLAMA3_1, "llama3.1",
     {"<|start_header_id|>", "Cutting Knowledge Date: December 2023", "\"26 Jul 2024\"", "tools_in_user_message",
      "<|python_tag|>", "tool_call.arguments | tojson", "message.content is mapping or message.content is iterable",
      NULL},
     {"strftime_now", "<|image|>", NULL}},
    {RL_CHAT_LLAMA3_2, "llama3.2",
     {"<|start_header_id|>", "Cutting Knowledge Date: December 2023", "strftime_now(\"%d %b %Y\")",
      "tools_in_user_message", "tool_call.arguments | tojson", "message.content is mapping or message.content is iterable",
      NULL},
     {"builtin_tools", "<|python_tag|>", "<|image|>", NULL}},
};
#define N_FAMILIES (int)(sizeof families / sizeof families[0])

const char *rl_chat_family_name(rl_chat_family family)
{
    for (int i = 0; i < N_FAMILIES; i++)
        if (families[i].family == family) return families[i].name;
    return "?";
}

/* A Jinja string literal's text (between its quotes) unescaped as Jinja's lexer does for the
 * escapes a system prompt may hold; -1 for any other escape or when it does not fit. */
static int unescape(const char *s, size_t n, char *out, size_t size)
{
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\') {
            if (++i == n) return -1;
            switch (s[i]) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case '\\': case '\'': case '"': c = s[i]; break;
            default: return -1;
            }
        }
        if (at + 1 >= size) return -1;
        out[at++] = c;
    }
    out[at] = '\0';
    return 0;
}

/* Qwen2.5's default system prompt: the text of the no-tools branch's
 * '<|im_start|>system\n{prompt}<|im_end|>\n' literal; the tools branch must hold the same
 * literal '{prompt}'. The line break after "system" may be spelled "\n" or be a real one. */
static int qwen25_default_system(const char *text, char *out, size_t size)
{
    static const char head[] = "'<|im_start|>system";
    for (const char *p = strstr(text, head); p; p = strstr(p + 1, head)) {
        const char *q = p + sizeof head - 1;
        if (!strncmp(q, "\\n", 2)) q += 2;
        else if (*q == '\n') q++;
        else continue;
        const char *end = strstr(q, "<|im_end|>");
        if (!end || *q == '\'' || memchr(q, '\'', (size_t)(end - q))) continue;
        char literal[1024];
        size_t n = (size_t)(end - q);
        if (n + 3 > sizeof literal) return -1;
        literal[0] = '\'';
        memcpy(literal + 1, q, n);
        literal[n + 1] = '\'', literal[n + 2] = '\0';
        if (!strstr(text, literal)) return -1; /* the tools branch says otherwise */
        return unescape(q, n, out, size);
    }
    return -1;
}

static int matches(const family_markers *f, const char *text)
{
    for (int i = 0; i < 8 && f->all[i]; i++)
        if (!strstr(text, f->all[i])) return 0;
    for (int i = 0; i < 4 && f->none[i]; i++)
        if (strstr(text, f->none[i])) return 0;
    return 1;
}

int rl_chat_template_identify(rl_chat_template *out, const char *text, const char *bos_token, const char *what,
                              rl_err *err)
{
    memset(out, 0, sizeof *out);
    int found = -1;
    for (int i = 0; i < N_FAMILIES; i++) {
        if (!matches(&families[i], text)) continue;
        if (found >= 0)
            return rl_err_set(err, "%s: chat_template matches both %s and %s; rlc cannot tell which it is", what,
                              families[found].name, families[i].name);
        found = i;
    }
    if (found < 0)
        return rl_err_set(err, "%s: chat_template is not one rlc renders (it renders Qwen3, Qwen2.5-Instruct, "
                          "plain ChatML, Llama 3, 3.1 and 3.2 Instruct templates; see docs/chat.md)", what);
    if (bos_token && strlen(bos_token) >= sizeof out->bos_token)
        return rl_err_set(err, "%s: bos_token is longer than %zu bytes", what, sizeof out->bos_token - 1);
    out->family = families[found].family;
    snprintf(out->bos_token, sizeof out->bos_token, "%s", bos_token ? bos_token : "");
    if (out->family == RL_CHAT_QWEN2_5 && qwen25_default_system(text, out->default_system, sizeof out->default_system))
        return rl_err_set(err, "%s: chat_template looks like Qwen2.5's but its default system prompt (the same "
                          "'<|im_start|>system\\n...<|im_end|>' text in both branches) was not found", what);
    return 0;
}

/* tokenizer_config.json's special token: a string, {"content": string} (an AddedToken) or null. */
static const char *token_text(const cJSON *v)
{
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* "chat_template": a string, or a list of {"name", "template"} (the "default" one is used). */
static const char *config_template(const cJSON *v)
{
    if (cJSON_IsString(v)) return v->valuestring;
    const cJSON *e;
    if (!cJSON_IsArray(v)) return NULL;
    cJSON_ArrayForEach(e, v) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(e, "template");
        if (cJSON_IsString(name) && !strcmp(name->valuestring, "default") && cJSON_IsString(tpl))
            return tpl->valuestring;
    }
    return NULL;
}

int rl_chat_template_load(rl_chat_template *out, const char *dir, rl_err *err)
{
    char config_path[4096], jinja_path[4096];
    if (rl_path_join(config_path, sizeof config_path, dir, "tokenizer_config.json") ||
        rl_path_join(jinja_path, sizeof jinja_path, dir, "chat_template.jinja"))
        return rl_err_set(err, "path too long: %s", dir);
    int have_config = rl_file_exists(config_path), have_jinja = rl_file_exists(jinja_path);
    if (!have_config && !have_jinja)
        return rl_err_set(err, "%s: no chat template (neither tokenizer_config.json nor chat_template.jinja)", dir);
    cJSON *config = have_config ? rl_json_parse_file(config_path, err) : NULL;
    if (have_config && !config) return -1;
    const char *bos = token_text(cJSON_GetObjectItemCaseSensitive(config, "bos_token"));
    int rc;
    if (have_jinja) {
        char *text = NULL;
        size_t len;
        rc = rl_file_read_all(jinja_path, &text, &len, err);
        if (rc == 0 && strlen(text) != len) rc = rl_err_set(err, "%s: contains a NUL byte", jinja_path);
        if (rc == 0) rc = rl_chat_template_identify(out, text, bos, jinja_path, err);
        free(text);
    } else {
        const char *text = config_template(cJSON_GetObjectItemCaseSensitive(config, "chat_template"));
        rc = text ? rl_chat_template_identify(out, text, bos, config_path, err)
                  : rl_err_set(err, "%s: no \"chat_template\" (a string or a list with a \"default\" one)",
                               config_path);
    }
    cJSON_Delete(config);
    return rc;
}

int rl_chat_render(const rl_chat_template *t, const rl_chat_message *msgs, int n, const rl_chat_options *opt,
                   char **text, rl_err *err)
{
    *text = NULL;
    if (n < 1) return rl_err_set(err, "chat: no messages to render");
    for (int i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content) return rl_err_set(err, "chat message %d: role and content must be set", i);
    if (opt->tools && !cJSON_IsArray(opt->tools)) return rl_err_set(err, "chat: tools must be a JSON list");
    rl_chat_buf b = {0};
    int rc;
    switch (t->family) {
    case RL_CHAT_CHATML: rc = rl_chat_render_chatml(&b, msgs, n, opt, err); break;
    case RL_CHAT_QWEN2_5:
    case RL_CHAT_QWEN3: rc = rl_chat_render_qwen(&b, t, msgs, n, opt, err); break;
    case RL_CHAT_LLAMA3: rc = rl_chat_render_llama3(&b, t, msgs, n, opt, err); break;
    case RL_CHAT_LLAMA3_1:
    case RL_CHAT_LLAMA3_2: rc = rl_chat_render_llama3_1(&b, t, msgs, n, opt, err); break;
    default: rc = rl_err_set(err, "chat: unknown template family %d", (int)t->family);
    }
    if (rc == 0 && b.oom) rc = rl_err_oom(err, "chat text", b.cap * 2);
    if (rc == 0 && !b.s && !(b.s = calloc(1, 1))) rc = rl_err_oom(err, "chat text", 1);
    if (rc) {
        free(b.s);
        return -1;
    }
    *text = b.s;
    return 0;
}

int rl_chat_render_after(const rl_chat_template *t, const rl_chat_message *msgs, int n_before,
                         const rl_chat_options *before, int n, const rl_chat_options *opt, char **head, char **tail,
                         rl_err *err)
{
    if (head) *head = NULL;
    *tail = NULL;
    if (n_before > n) return rl_err_set(err, "chat: %d earlier messages of %d", n_before, n);
    char *first, *whole;
    if (rl_chat_render(t, msgs, n_before, before, &first, err)) return -1;
    if (rl_chat_render(t, msgs, n, opt, &whole, err)) {
        free(first);
        return -1;
    }
    size_t len = strlen(first), at = 0;
    while (at < len && first[at] == whole[at]) at++;
    int rc = 0;
    if (at < len)
        rc = rl_err_set(err, "chat: the template renders messages 0-%d differently once messages %d-%d follow (from "
                        "byte %zu on), so the later turns cannot be cut out", n_before - 1, n_before, n - 1, at);
    else if (!(*tail = strdup(whole + len)))
        rc = rl_err_oom(err, "chat text", strlen(whole + len));
    free(whole);
    if (rc == 0 && head) *head = first;
    else free(first);
    return rc;
}

static const char *const msg_fields[] = {"role", "content", "reasoning_content", "tool_calls"};
static const char *const roles[] = {"system", "user", "assistant", "tool"};

/* The problem with message m, or NULL; *field names the field it is about. */
static const char *check_message(const cJSON *m, const char **field)
{
    *field = NULL;
    if (!cJSON_IsObject(m)) return "is not an object";
    for (const cJSON *f = m->child; f; f = f->next) {
        int known = 0;
        for (size_t k = 0; k < sizeof msg_fields / sizeof msg_fields[0]; k++) known |= !strcmp(f->string, msg_fields[k]);
        *field = f->string;
        if (!known) return "unsupported field";
        if (!strcmp(f->string, "tool_calls")) {
            if (cJSON_IsNull(f)) continue;
            if (!cJSON_IsArray(f)) return "must be a list";
            for (const cJSON *c = f->child; c; c = c->next)
                if (!cJSON_IsObject(c)) return "must be a list of objects";
        } else if (!cJSON_IsString(f) && !(cJSON_IsNull(f) && strcmp(f->string, "role"))) {
            return "must be a string";
        }
    }
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
    *field = "role";
    if (!role) return "is missing";
    *field = "content";
    if (!cJSON_IsString(content) && !(cJSON_IsArray(calls) && !strcmp(role->valuestring, "assistant")))
        return content ? "must be a string" : "is missing";
    *field = "tool_calls";
    if (cJSON_IsArray(calls) && strcmp(role->valuestring, "assistant")) return "is only for assistant messages";
    return NULL;
}

int rl_chat_messages_parse(const cJSON *arr, const char *key, rl_chat_message **out, int *n_out, const char *where,
                           rl_err *err)
{
    *out = NULL, *n_out = 0;
    int n = cJSON_GetArraySize(arr);
    if (n == 0) return rl_err_set(err, "%s: '%s' is an empty list", where, key);
    rl_chat_message *msgs = calloc((size_t)n, sizeof *msgs);
    if (!msgs) return rl_err_oom(err, where, (size_t)n * sizeof *msgs);
    int i = 0;
    for (const cJSON *m = arr->child; m; m = m->next, i++) {
        const char *field, *problem = check_message(m, &field);
        if (problem) {
            free(msgs);
            if (field) return rl_err_set(err, "%s: %s[%d]: field '%.64s' %s", where, key, i, field, problem);
            return rl_err_set(err, "%s: %s[%d] %s", where, key, i, problem);
        }
        const char *role = cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring;
        int known = 0;
        for (size_t r = 0; r < sizeof roles / sizeof roles[0]; r++) known |= !strcmp(role, roles[r]);
        if (!known) {
            free(msgs);
            return rl_err_set(err, "%s: %s[%d]: role '%.32s' is not one of system, user, assistant, tool", where, key,
                              i, role);
        }
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        const cJSON *reasoning = cJSON_GetObjectItemCaseSensitive(m, "reasoning_content");
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        msgs[i].role = role;
        msgs[i].content = cJSON_IsString(content) ? content->valuestring : "";
        msgs[i].reasoning_content = cJSON_IsString(reasoning) ? reasoning->valuestring : NULL;
        msgs[i].tool_calls = cJSON_IsArray(calls) ? calls : NULL;
    }
    *out = msgs;
    *n_out = n;
    return 0;
}

int rl_chat_tools_check(const cJSON *tools, const char *where, rl_err *err)
{
    if (!cJSON_IsArray(tools)) return rl_err_set(err, "%s: field 'tools' must be a list of tool schemas", where);
    int i = 0;
    for (const cJSON *t = tools->child; t; t = t->next, i++)
        if (!cJSON_IsObject(t)) return rl_err_set(err, "%s: tools[%d] is not an object", where, i);
    return 0;
}

int rl_chat_end_tokens(rl_chat_family family, const char *names[RL_CHAT_MAX_END_TOKENS])
{
    static const char *const chatml[] = {"<|im_end|>", "<|endoftext|>"};
    static const char *const llama[] = {"<|eot_id|>", "<|end_of_text|>", "<|eom_id|>"};
    int is_llama = family == RL_CHAT_LLAMA3 || family == RL_CHAT_LLAMA3_1 || family == RL_CHAT_LLAMA3_2;
    int n = is_llama ? 3 : 2;
    for (int i = 0; i < n; i++) names[i] = is_llama ? llama[i] : chatml[i];
    return n;
}
