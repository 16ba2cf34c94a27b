/* test_toolcall.c — the Qwen tool-call parser: calls in order, arguments as an object, a JSON
 * string or missing, drafts inside <think> skipped, and every broken call reported with its
 * reason (cut off, not JSON, no name, text after the object, arguments of the wrong type). */
#include <string.h>

#include "rollout/toolcall.h"
#include "test_util.h"

static void parse(const char *text, rl_toolcalls *c) { rl_toolcalls_parse(text, strlen(text), c); }

Test(toolcall, calls_in_order)
{
    rl_toolcalls c;
    parse("Let me compile.\n<tool_call>\n{\"name\": \"compile\", \"arguments\": {\"code\": \"x\"}}\n</tool_call>\n"
          "and <tool_call>{\"name\":\"check\"}</tool_call> then <tool_call>{\"name\": \"calc\", \"arguments\": "
          "\"{\\\"expr\\\": \\\"1+2\\\"}\"}</tool_call>", &c);
    cr_assert_eq(c.n, 3);
    cr_assert_str_eq(c.calls[0].name, "compile");
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(c.calls[0].arguments, "code")->valuestring, "x");
    cr_assert_str_eq(c.calls[1].name, "check");
    cr_assert(cJSON_IsObject(c.calls[1].arguments) && !c.calls[1].arguments->child);
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(c.calls[2].arguments, "expr")->valuestring, "1+2");
    for (int i = 0; i < 3; i++) cr_assert_str_eq(c.calls[i].error, "");
    rl_toolcalls_free(&c);
}

Test(toolcall, drafts_in_think_are_skipped)
{
    rl_toolcalls c;
    parse("<think>maybe <tool_call>{\"name\": \"submit\"}</tool_call>? no</think><tool_call>{\"name\": \"check\"}</tool_call>", &c);
    cr_assert_eq(c.n, 1);
    cr_assert_str_eq(c.calls[0].name, "check");
    rl_toolcalls_free(&c);
    parse("<think>unfinished thought <tool_call>{\"name\": \"submit\"}</tool_call>", &c);
    cr_assert_eq(c.n, 0);
    rl_toolcalls_free(&c);
}

Test(toolcall, broken_calls_say_why)
{
    struct { const char *text, *why; } cases[] = {
        {"<tool_call>{\"name\": \"compile\"", "cut off"},
        {"<tool_call>not json</tool_call>", "not a JSON object"},
        {"<tool_call>[1, 2]</tool_call>", "not a JSON object"},
        {"<tool_call>{\"arguments\": {}}</tool_call>", "no \"name\""},
        {"<tool_call>{\"name\": \"\"}</tool_call>", "no \"name\""},
        {"<tool_call>{\"name\": \"a\"} extra</tool_call>", "text after"},
        {"<tool_call>{\"name\": \"a\", \"arguments\": 5}</tool_call>", "not an object"},
        {"<tool_call>{\"name\": \"a\", \"arguments\": \"[1]\"}</tool_call>", "does not hold"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rl_toolcalls c;
        parse(cases[i].text, &c);
        cr_assert_eq(c.n, 1, "case %zu", i);
        cr_assert_str_eq(c.calls[0].name, "", "case %zu", i);
        cr_assert_null(c.calls[0].arguments);
        cr_assert(strstr(c.calls[0].error, cases[i].why), "case %zu: '%s' lacks '%s'", i, c.calls[0].error, cases[i].why);
        rl_toolcalls_free(&c);
    }
}

Test(toolcall, at_most_eight_calls)
{
    char text[2048] = "";
    for (int i = 0; i < 11; i++) strcat(text, "<tool_call>{\"name\": \"x\"}</tool_call>");
    rl_toolcalls c;
    parse(text, &c);
    cr_assert_eq(c.n, RL_TOOLCALL_MAX);
    cr_assert_eq(c.n_ignored, 3);
    rl_toolcalls_free(&c);
    parse("", &c);
    cr_assert_eq(c.n, 0);
    rl_toolcalls_free(&c);
}
