/* test_chat.c — chat rendering (io/chat.h) against transformers' apply_chat_template: every
 * conversation of tests/fixtures/chat/ (one file per family) (tools/make_chat_fixtures.py) rendered under each
 * template family, byte for byte, including the ones transformers refuses; then how templates
 * are found and recognised, the tokenizer's end-of-turn tokens per family, message parsing and
 * Python's float repr in tool schemas. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/file.h"
#include "io/chat.h"
#include "io/chat_internal.h"
#include "io/json.h"
#include "io/tokenizer.h"
#include "test_util.h"

#define FIX "tests/fixtures/chat/"
#define QWEN_DIR "../shared/data/qwen3-tokenizer"

static cJSON *read_json(const char *path)
{
    rl_err err;
    cJSON *j = rl_json_parse_file(path, &err);
    cr_assert(j, "%s", err.msg);
    return j;
}

/* Index of the first byte where a and b differ. */
static size_t first_diff(const char *a, const char *b)
{
    size_t i = 0;
    while (a[i] && a[i] == b[i]) i++;
    return i;
}

/* Renders every case of one fixture file; returns the number of cases. */
static int check_family(const char *file, const char *family)
{
    char path[256];
    snprintf(path, sizeof path, FIX "%s", file);
    cJSON *doc = read_json(path);
    const cJSON *bos = cJSON_GetObjectItem(doc, "bos_token");
    rl_chat_template t;
    rl_err err = {{0}};
    cr_assert_eq(rl_chat_template_identify(&t, cJSON_GetObjectItem(doc, "chat_template")->valuestring,
                                           cJSON_IsString(bos) ? bos->valuestring : NULL, path, &err),
                 0, "%s", err.msg);
    cr_assert_str_eq(rl_chat_family_name(t.family), family, "%s recognised as %s", path, rl_chat_family_name(t.family));
    int n_cases = 0, n_refused = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        rl_chat_message *msgs;
        int n;
        cr_assert_eq(rl_chat_messages_parse(cJSON_GetObjectItem(c, "messages"), "messages", &msgs, &n, name, &err), 0,
                     "%s", err.msg);
        const cJSON *tools = cJSON_GetObjectItem(c, "tools"), *thinking = cJSON_GetObjectItem(c, "enable_thinking");
        const cJSON *date = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "template_kwargs"), "date_string");
        rl_chat_options opt = {.add_generation_prompt = cJSON_IsTrue(cJSON_GetObjectItem(c, "add_generation_prompt")),
                               .enable_thinking = !cJSON_IsFalse(thinking), .tools = tools,
                               .date_string = cJSON_IsString(date) ? date->valuestring : NULL};
        char *text = (char *)"poison";
        int rc = rl_chat_render(&t, msgs, n, &opt, &text, &err);
        const cJSON *want = cJSON_GetObjectItem(c, "text");
        if (!want) {
            cr_assert_eq(rc, -1, "%s %s: transformers refuses this (%s), rlc rendered it", file, name,
                         cJSON_GetObjectItem(c, "error")->valuestring);
            cr_assert_null(text);
            n_refused++;
        } else {
            cr_assert_eq(rc, 0, "%s %s: %s", file, name, err.msg);
            size_t at = first_diff(text, want->valuestring);
            cr_assert_str_eq(text, want->valuestring, "%s %s: differs at byte %zu:\n  rlc:  '%.60s'\n  want: '%.60s'",
                             file, name, at, text + at, want->valuestring + at);
            free(text);
        }
        free(msgs);
        n_cases++;
    }
    cJSON_Delete(doc);
    cr_log_info("%s: %d cases, %d refused as transformers does", file, n_cases, n_refused);
    return n_cases;
}

Test(chat, qwen3_matches_transformers) { cr_assert_geq(check_family("qwen3.json", "qwen3"), 27); }
Test(chat, qwen2_5_matches_transformers) { cr_assert_geq(check_family("qwen2_5.json", "qwen2.5"), 27); }
/* made by the jinja2 emulation: Qwen2.5's template with Qwen2.5-Math's default system prompt,
 * read from the template */
Test(chat, qwen2_5_math_matches_the_template) { cr_assert_geq(check_family("qwen2_5_math.json", "qwen2.5"), 27); }
Test(chat, llama3_matches_transformers) { cr_assert_geq(check_family("llama3.json", "llama3"), 27); }
Test(chat, llama3_1_matches_transformers) { cr_assert_geq(check_family("llama3_1.json", "llama3.1"), 27); }
/* made by the jinja2 emulation (its text equals llama3_1.json's but for the date, see
 * date_defaults_follow_the_family) */
Test(chat, llama3_2_matches_the_template) { cr_assert_geq(check_family("llama3_2.json", "llama3.2"), 27); }
Test(chat, chatml_matches_transformers) { cr_assert_geq(check_family("chatml.json", "chatml"), 27); }

/* A fresh directory under /tmp with the given files (name, text pairs, NULL-terminated). */
static void make_dir(char *dir, const char *const *files)
{
    strcpy(dir, "/tmp/rl_chat_test_XXXXXX");
    cr_assert(mkdtemp(dir));
    for (int i = 0; files[i]; i += 2) {
        char path[512];
        rl_err err;
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        cr_assert_eq(rl_file_write_atomic(path, files[i + 1], strlen(files[i + 1]), &err), 0, "%s", err.msg);
    }
}

static void remove_dir(const char *dir)
{
    rl_err err;
    cr_assert_eq(rl_remove_tree(dir, &err), 0, "%s", err.msg);
}

static void expect_load_error(const char *const *files, const char *expect, const char *in_name)
{
    char dir[64];
    make_dir(dir, files);
    rl_chat_template t;
    rl_err err = {{0}};
    cr_assert_eq(rl_chat_template_load(&t, dir, &err), -1, "loading should fail (%s)", expect);
    cr_assert(strstr(err.msg, expect), "message '%s' should contain '%s'", err.msg, expect);
    cr_assert(strstr(err.msg, in_name), "message '%s' should name %s", err.msg, in_name);
    remove_dir(dir);
}

#define CHATML "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\\\n' + message['content'] + '<|im_end|>' + '\\\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\\\n' }}{% endif %}"
#define LLAMA3 "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"

Test(chat, templates_are_found_and_recognised)
{
    rl_chat_template t;
    rl_err err = {{0}};
    cr_assert_eq(rl_chat_template_load(&t, "examples/demo", &err), 0, "%s", err.msg);
    cr_assert_eq(t.family, RL_CHAT_CHATML);

    /* list form, AddedToken bos */
    char dir[64];
    const char *const listed[] = {"tokenizer_config.json",
                                  "{\"bos_token\": {\"content\": \"<|begin_of_text|>\"}, \"chat_template\": "
                                  "[{\"name\": \"tool_use\", \"template\": \"x\"}, {\"name\": \"default\", \"template\": \"" LLAMA3 "\"}]}",
                                  NULL};
    make_dir(dir, listed);
    cr_assert_eq(rl_chat_template_load(&t, dir, &err), 0, "%s", err.msg);
    cr_assert_eq(t.family, RL_CHAT_LLAMA3);
    cr_assert_str_eq(t.bos_token, "<|begin_of_text|>");
    remove_dir(dir);

    /* chat_template.jinja wins over tokenizer_config.json, whose bos_token still counts */
    const char *const jinja[] = {"tokenizer_config.json", "{\"bos_token\": \"<s>\", \"chat_template\": \"" CHATML "\"}",
                                 "chat_template.jinja", "{% for message in messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}",
                                 NULL};
    make_dir(dir, jinja);
    cr_assert_eq(rl_chat_template_load(&t, dir, &err), 0, "%s", err.msg);
    cr_assert_eq(t.family, RL_CHAT_LLAMA3);
    cr_assert_str_eq(t.bos_token, "<s>");
    remove_dir(dir);

    const char *const none[] = {NULL};
    expect_load_error(none, "no chat template (neither tokenizer_config.json nor chat_template.jinja)", "/tmp/rl_chat_test_");
    const char *const no_key[] = {"tokenizer_config.json", "{\"bos_token\": null}", NULL};
    expect_load_error(no_key, "no \"chat_template\"", "tokenizer_config.json");
    const char *const broken[] = {"tokenizer_config.json", "{\"chat_template\": ", NULL};
    expect_load_error(broken, "invalid JSON", "tokenizer_config.json");
    const char *const unknown[] = {"tokenizer_config.json", "{\"chat_template\": \"{{ messages[0].content }}\"}", NULL};
    expect_load_error(unknown, "chat_template is not one rlc renders", "tokenizer_config.json");
    /* Qwen2.5 markers but no default system prompt to read */
    const char *const no_default[] = {"chat_template.jinja", "<|im_start|> messages[0]['role'] == 'system' <tool_response> "
                                      "tool_call.function is defined tool_call.arguments | tojson "
                                      "(message.role == \"assistant\" and not message.tool_calls)", NULL};
    expect_load_error(no_default, "its default system prompt", "chat_template.jinja");
    /* Llama 3.2 Vision (<|image|> in user turns) is neither 3.1 nor 3.2 text */
    const char *const llama32[] = {"chat_template.jinja", "<|start_header_id|> Cutting Knowledge Date: December 2023 "
                                   "strftime_now(\"%d %b %Y\") tools_in_user_message tool_call.arguments | tojson "
                                   "message.content is mapping or message.content is iterable <|image|>", NULL};
    expect_load_error(llama32, "chat_template is not one rlc renders", "chat_template.jinja");

    if (rl_file_exists(QWEN_DIR "/tokenizer_config.json")) {
        cr_assert_eq(rl_chat_template_load(&t, QWEN_DIR, &err), 0, "%s", err.msg);
        cr_assert_eq(t.family, RL_CHAT_QWEN3);
        cr_assert_str_eq(t.bos_token, "");
    }
}

/* Qwen2.5's default system prompt is read from the template: both branches must agree, and real
 * line breaks spell "\n" as well as the escape does. */
Test(chat, qwen2_5_default_system_prompt)
{
    cJSON *doc = read_json(FIX "qwen2_5.json");
    char *text = strdup(cJSON_GetObjectItem(doc, "chat_template")->valuestring);
    rl_chat_template t;
    rl_err err;
    cr_assert_eq(rl_chat_template_identify(&t, text, NULL, "x", &err), 0, "%s", err.msg);
    cr_assert_str_eq(t.default_system, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
    char *first = strstr(text, "You are Qwen"), *second = strstr(first + 1, "You are Qwen");
    cr_assert(first && second);
    second[-2] = '\n', memmove(second - 1, second, strlen(second) + 1); /* "system\\n" -> "system" + line break */
    cr_assert_eq(rl_chat_template_identify(&t, text, NULL, "x", &err), 0, "%s", err.msg);
    cr_assert_str_eq(t.default_system, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
    first[0] = 'Y' + 1; /* the tools branch now says something else */
    cr_assert_eq(rl_chat_template_identify(&t, text, NULL, "x", &err), -1);
    cr_assert(strstr(err.msg, "x: chat_template looks like Qwen2.5's but its default system prompt"), "%s", err.msg);
    free(text);
    cJSON_Delete(doc);
}

/* A tokenizer.json whose added tokens are both families' end tokens. */
#define TOK_JSON                                                                                             \
    "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}, "       \
    "\"decoder\": {\"type\": \"ByteLevel\"}, \"added_tokens\": ["                                             \
    "{\"id\": 3, \"content\": \"<|im_end|>\", \"special\": true}, {\"id\": 4, \"content\": \"<|endoftext|>\", \"special\": true}, " \
    "{\"id\": 5, \"content\": \"<|eot_id|>\", \"special\": true}, {\"id\": 6, \"content\": \"<|end_of_text|>\", \"special\": true}, " \
    "{\"id\": 7, \"content\": \"<|eom_id|>\", \"special\": true}], "                                         \
    "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": []}}"

static int eos_of(const char *const *files, int32_t ids[RL_TOK_MAX_EOS], rl_tokenizer **keep)
{
    char dir[64], path[128];
    make_dir(dir, files);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    rl_tokenizer *tok;
    rl_err err;
    cr_assert_eq(rl_tok_load(&tok, path, &err), 0, "%s", err.msg);
    int n = rl_tok_eos_ids(tok, ids);
    remove_dir(dir);
    if (keep) *keep = tok;
    else rl_tok_free(tok);
    return n;
}

Test(chat, end_tokens_follow_the_family)
{
    int32_t ids[RL_TOK_MAX_EOS];
    const char *const llama[] = {"tokenizer.json", TOK_JSON, "tokenizer_config.json",
                                 "{\"bos_token\": \"<|begin_of_text|>\", \"chat_template\": \"" LLAMA3 "\"}", NULL};
    rl_tokenizer *tok;
    cr_assert_eq(eos_of(llama, ids, &tok), 3);
    cr_assert(ids[0] == 5 && ids[1] == 6 && ids[2] == 7, "Llama: <|eot_id|> first, then <|end_of_text|>, <|eom_id|>");
    /* and its messages render with the header tokens and the BOS */
    rl_chat_message m = {.role = "user", .content = " hi "};
    rl_chat_options opt = RL_CHAT_OPTIONS_DEFAULT;
    char *text;
    rl_err err;
    cr_assert_eq(rl_tok_chat_format(tok, &m, 1, &opt, &text, &err), 0, "%s", err.msg);
    cr_assert_str_eq(text, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
                           "<|start_header_id|>assistant<|end_header_id|>\n\n");
    free(text);
    rl_tok_free(tok);

    const char *const chatml[] = {"tokenizer.json", TOK_JSON, "tokenizer_config.json", "{\"chat_template\": \"" CHATML "\"}",
                                  NULL};
    cr_assert_eq(eos_of(chatml, ids, NULL), 2);
    cr_assert(ids[0] == 3 && ids[1] == 4, "ChatML: <|im_end|>, <|endoftext|>");

    /* no template: the tokenizer still loads; ChatML's tokens when it has them; rendering fails
     * with the reason, naming the folder */
    const char *const bare[] = {"tokenizer.json", TOK_JSON, NULL};
    cr_assert_eq(eos_of(bare, ids, &tok), 2);
    cr_assert(ids[0] == 3 && ids[1] == 4);
    cr_assert_eq(rl_tok_chat_format(tok, &m, 1, &opt, &text, &err), -1);
    cr_assert(strstr(err.msg, "no chat template") && strstr(err.msg, "/tmp/rl_chat_test_"), "%s", err.msg);
    cr_assert_null(text);
    rl_tok_free(tok);
}

static void expect_parse_error(const char *json, const char *expect)
{
    rl_err err = {{0}};
    cJSON *arr = rl_json_parse(json, strlen(json), "test", &err);
    cr_assert(arr, "%s", err.msg);
    rl_chat_message *msgs = (rl_chat_message *)1;
    int n = -1;
    cr_assert_eq(rl_chat_messages_parse(arr, "messages", &msgs, &n, "data.jsonl:3", &err), -1, "%s should fail", json);
    cr_assert(strstr(err.msg, expect), "message '%s' should contain '%s'", err.msg, expect);
    cr_assert(!strncmp(err.msg, "data.jsonl:3: ", 14), "%s", err.msg);
    cr_assert(msgs == NULL && n == 0);
    cJSON_Delete(arr);
}

Test(chat, messages_are_checked)
{
    expect_parse_error("[]", "'messages' is an empty list");
    expect_parse_error("[3]", "messages[0] is not an object");
    expect_parse_error("[{\"role\": \"user\", \"content\": \"a\", \"name\": \"x\"}]", "field 'name' unsupported field");
    expect_parse_error("[{\"role\": \"robot\", \"content\": \"a\"}]", "messages[0]: role 'robot' is not one of system, user, assistant, tool");
    expect_parse_error("[{\"content\": \"a\"}]", "field 'role' is missing");
    expect_parse_error("[{\"role\": null, \"content\": \"a\"}]", "field 'role' must be a string");
    expect_parse_error("[{\"role\": \"user\"}]", "field 'content' is missing");
    expect_parse_error("[{\"role\": \"user\", \"content\": 5}]", "field 'content' must be a string");
    expect_parse_error("[{\"role\": \"user\", \"content\": null}]", "field 'content' must be a string");
    expect_parse_error("[{\"role\": \"assistant\", \"content\": \"a\", \"tool_calls\": {}}]", "field 'tool_calls' must be a list");
    expect_parse_error("[{\"role\": \"assistant\", \"content\": \"a\", \"tool_calls\": [1]}]", "must be a list of objects");
    expect_parse_error("[{\"role\": \"user\", \"content\": \"a\", \"tool_calls\": []}]", "is only for assistant messages");
    expect_parse_error("[{\"role\": \"assistant\", \"content\": \"a\", \"reasoning_content\": 1}]", "'reasoning_content' must be a string");

    /* an assistant turn of tool calls alone has content ""; null reasoning and calls are absent */
    const char *ok = "[{\"role\": \"user\", \"content\": \"q\"}, {\"role\": \"assistant\", \"tool_calls\": "
                     "[{\"name\": \"f\", \"arguments\": {}}]}, {\"role\": \"assistant\", \"content\": \"x\", "
                     "\"reasoning_content\": null, \"tool_calls\": null}]";
    rl_err err;
    cJSON *arr = rl_json_parse(ok, strlen(ok), "test", &err);
    rl_chat_message *msgs;
    int n;
    cr_assert_eq(rl_chat_messages_parse(arr, "messages", &msgs, &n, "x", &err), 0, "%s", err.msg);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(msgs[1].content, "");
    cr_assert(msgs[1].tool_calls && cJSON_GetArraySize(msgs[1].tool_calls) == 1);
    cr_assert(msgs[2].reasoning_content == NULL && msgs[2].tool_calls == NULL);
    free(msgs);
    cJSON_Delete(arr);
}

Test(chat, render_errors_name_the_message)
{
    rl_chat_template t = {.family = RL_CHAT_QWEN3};
    rl_chat_options opt = RL_CHAT_OPTIONS_DEFAULT;
    char *text = (char *)"poison";
    rl_err err;
    cr_assert_eq(rl_chat_render(&t, NULL, 0, &opt, &text, &err), -1);
    cr_assert(strstr(err.msg, "no messages"), "%s", err.msg);
    cr_assert_null(text);
    rl_chat_message bad = {"user", NULL, NULL, NULL};
    cr_assert_eq(rl_chat_render(&t, &bad, 1, &opt, &text, &err), -1);
    cr_assert(strstr(err.msg, "chat message 0"), "%s", err.msg);
    const char *calls = "[{\"type\": \"function\", \"function\": {\"arguments\": {}}}]";
    cJSON *c = rl_json_parse(calls, strlen(calls), "test", &err);
    rl_chat_message m[2] = {{"user", "q", NULL, NULL}, {"assistant", "", NULL, c}};
    cr_assert_eq(rl_chat_render(&t, m, 2, &opt, &text, &err), -1);
    cr_assert(strstr(err.msg, "chat message 1: tool_calls[0] needs a string 'name'"), "%s", err.msg);
    t.family = RL_CHAT_LLAMA3_1;
    cr_assert_eq(rl_chat_render(&t, m, 2, &opt, &text, &err), -1);
    cr_assert(strstr(err.msg, "chat message 1: tool_calls[0] needs a 'function' with a string 'name'"), "%s", err.msg);
    cJSON_Delete(c);
    cJSON *not_list = cJSON_CreateObject();
    opt.tools = not_list;
    cr_assert_eq(rl_chat_render(&t, m, 1, &opt, &text, &err), -1);
    cr_assert(strstr(err.msg, "tools must be a JSON list"), "%s", err.msg);
    cJSON_Delete(not_list);
}

/* Llama 3.1 is dated "26 Jul 2024", 3.2 today (as transformers' strftime_now), both date_string
 * when given. */
Test(chat, date_defaults_follow_the_family)
{
    rl_chat_message m = {.role = "user", .content = "hi"};
    rl_chat_options opt = RL_CHAT_OPTIONS_DEFAULT;
    rl_chat_template t = {.family = RL_CHAT_LLAMA3_1, .bos_token = "<B>"};
    char *text, today[32], want[256];
    rl_err err;
    const char *form = "<B><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
                       "Today Date: %s\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
                       "<|start_header_id|>assistant<|end_header_id|>\n\n";
    cr_assert_eq(rl_chat_render(&t, &m, 1, &opt, &text, &err), 0, "%s", err.msg);
    snprintf(want, sizeof want, form, "26 Jul 2024");
    cr_assert_str_eq(text, want);
    free(text);
    t.family = RL_CHAT_LLAMA3_2;
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(today, sizeof today, "%d %b %Y", &tm);
    cr_assert_eq(rl_chat_render(&t, &m, 1, &opt, &text, &err), 0, "%s", err.msg);
    snprintf(want, sizeof want, form, today);
    cr_assert_str_eq(text, want);
    free(text);
    opt.date_string = "01 Jan 2030";
    cr_assert_eq(rl_chat_render(&t, &m, 1, &opt, &text, &err), 0, "%s", err.msg);
    snprintf(want, sizeof want, form, "01 Jan 2030");
    cr_assert_str_eq(text, want);
    free(text);
}

/* The text later turns add: an episode's tool response and next generation prompt after the
 * model's Qwen3 turn; refused where Qwen3 re-renders the earlier turn (an empty think block shown
 * only while the turn is last). */
Test(chat, render_after_cuts_the_later_turns)
{
    rl_chat_template t = {.family = RL_CHAT_QWEN3};
    rl_err err;
    const char *calls_text = "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"x\": 1}}}]";
    cJSON *calls = rl_json_parse(calls_text, strlen(calls_text), "test", &err);
    rl_chat_message m[3] = {{"user", "q", NULL, NULL}, {"assistant", "<think>\nplan\n</think>\n\nok", NULL, calls},
                            {"tool", "42", NULL, NULL}};
    rl_chat_options before = {.add_generation_prompt = 0, .enable_thinking = 1};
    rl_chat_options after = RL_CHAT_OPTIONS_DEFAULT;
    char *head, *tail;
    cr_assert_eq(rl_chat_render_after(&t, m, 2, &before, 3, &after, &head, &tail, &err), 0, "%s", err.msg);
    cr_assert_str_eq(head, "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nplan\n</think>\n\nok\n"
                           "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}\n</tool_call><|im_end|>\n");
    cr_assert_str_eq(tail, "<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
    free(head), free(tail);
    m[1].content = "ok";
    cr_assert_eq(rl_chat_render_after(&t, m, 2, &before, 3, &after, NULL, &tail, &err), -1);
    cr_assert(strstr(err.msg, "renders messages 0-1 differently once messages 2-2 follow (from byte 51 on)"), "%s",
              err.msg);
    cr_assert_null(tail);
    cJSON_Delete(calls);
}

/* Tool schemas are written as Python's json.dumps writes them: floats as repr(float). */
Test(chat, json_numbers_as_python)
{
    static const struct { const char *in, *out; } cases[] = {
        {"0.5", "0.5"}, {"1e-07", "1e-07"}, {"1.5e-5", "1.5e-05"}, {"-0.001", "-0.001"}, {"0.0001", "0.0001"},
        {"0.1", "0.1"}, {"123.456", "123.456"}, {"1e22", "1e+22"}, {"1.5e16", "1.5e+16"}, {"12345.5", "12345.5"},
        {"3", "3"}, {"-17", "-17"}, {"12345678901234", "12345678901234"}, {"2.5e-300", "2.5e-300"},
        {"[1, {\"a\": [], \"b\": {}}]", "[1, {\"a\": [], \"b\": {}}]"}, {"\"\\u0001\\u007f\\t\\u00e9\"", "\"\\u0001\x7f\\t\xc3\xa9\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rl_err err;
        cJSON *j = rl_json_parse(cases[i].in, strlen(cases[i].in), "test", &err);
        cr_assert(j, "%s", err.msg);
        rl_chat_buf b = {0};
        rl_chat_json(&b, j, 0);
        cr_assert(!b.oom);
        cr_assert_str_eq(b.s, cases[i].out, "json.dumps(%s)", cases[i].in);
        free(b.s);
        cJSON_Delete(j);
    }
    rl_chat_span s = rl_chat_trim(rl_chat_span_of("\xe3\x80\x80 \x1c" "a\xc2\xa0" "b\xe2\x80\xa8\n"));
    cr_assert(s.n == 4 && !memcmp(s.s, "a\xc2\xa0" "b", 4), "Python's strip() takes U+3000, U+001C, U+2028");
}
