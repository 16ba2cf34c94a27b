/* test_dataset.c — JSONL datasets: the TRL shapes (RL prompt/answer, SFT prompt/completion and
 * messages, conversational prompts), extra fields kept, every kind of bad line reported with
 * file, line and reason, skip vs stop, empty lines and CRLF. */
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "io/dataset.h"
#include "test_util.h"

static char dir[] = "/tmp/rlc-test-ds-XXXXXX";
static char path[128];

static void setup(void)
{
    strcpy(dir, "/tmp/rlc-test-ds-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/data.jsonl", dir);
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
}

static void write_file(const char *text)
{
    rl_err err;
    cr_assert_eq(rl_file_write_atomic(path, text, strlen(text), &err), 0, "%s", err.msg);
}

TestSuite(dataset, .init = setup, .fini = teardown);

Test(dataset, rl_shapes_and_extra_fields)
{
    write_file("{\"prompt\": \"What is 2+2?\", \"answer\": \"4\", \"id\": 7, \"tags\": [\"a\"]}\n"
               "\n"
               "   \n"
               "{\"prompt\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"3*3?\"}], "
               "\"answer\": 9}\r\n"
               "{\"prompt\": \"No reference here\", \"test_cases\": {\"in\": \"1\", \"out\": \"2\"}}\n"
               "{\"prompt\": \"p\", \"answer\": 0.5}");
    rl_dataset *ds;
    rl_err err;
    cr_assert_eq(rl_dataset_load(&ds, path, RL_DS_RL, RL_DS_STOP, &err), 0, "%s", err.msg);
    cr_assert_eq(ds->n, 4);
    cr_assert_eq(ds->n_skipped, 0);
    rl_example *e = &ds->examples[0];
    cr_assert_eq(e->line, 1);
    cr_assert_str_eq(e->prompt, "What is 2+2?");
    cr_assert_str_eq(e->answer, "4");
    cr_assert_str_eq(e->extra_json, "{\"id\":7,\"tags\":[\"a\"]}");
    cr_assert(cJSON_IsObject(e->fields) && cJSON_GetObjectItem(e->fields, "prompt"), "fields is the whole line");
    e = &ds->examples[1];
    cr_assert_eq(e->line, 4, "line numbers count empty lines too");
    cr_assert_null(e->prompt);
    cr_assert_eq(e->n_prompt_messages, 2);
    cr_assert_str_eq(e->prompt_messages[0].role, "system");
    cr_assert_str_eq(e->prompt_messages[1].content, "3*3?");
    cr_assert_str_eq(e->answer, "9");
    cr_assert_str_eq(e->extra_json, "{}");
    e = &ds->examples[2];
    cr_assert_null(e->answer);
    cr_assert_str_eq(e->extra_json, "{\"test_cases\":{\"in\":\"1\",\"out\":\"2\"}}");
    cr_assert_str_eq(ds->examples[3].answer, "0.5");
    rl_dataset_free(ds);
}

Test(dataset, sft_shapes)
{
    write_file("{\"prompt\": \"Say hi\", \"completion\": \"hi\"}\n"
               "{\"messages\": [{\"role\": \"user\", \"content\": \"Q\"}, {\"role\": \"assistant\", \"content\": \"A\"}], \"src\": \"x\"}\n"
               "{\"prompt\": [{\"role\": \"user\", \"content\": \"Q2\"}], \"completion\": [{\"role\": \"assistant\", \"content\": \"A2\"}]}\n");
    rl_dataset *ds;
    rl_err err;
    cr_assert_eq(rl_dataset_load(&ds, path, RL_DS_SFT, RL_DS_STOP, &err), 0, "%s", err.msg);
    cr_assert_eq(ds->n, 3);
    cr_assert_str_eq(ds->examples[0].prompt, "Say hi");
    cr_assert_str_eq(ds->examples[0].completion, "hi");
    cr_assert_eq(ds->examples[1].n_messages, 2);
    cr_assert_str_eq(ds->examples[1].messages[1].role, "assistant");
    cr_assert_str_eq(ds->examples[1].extra_json, "{\"src\":\"x\"}");
    cr_assert_eq(ds->examples[2].n_prompt_messages, 1);
    cr_assert_eq(ds->examples[2].n_completion_messages, 1);
    cr_assert_str_eq(ds->examples[2].completion_messages[0].content, "A2");
    rl_dataset_free(ds);
}

/* One bad line after a good one: STOP fails naming file:2 and the reason; SKIP keeps line 1
 * and reports the skip. */
static void expect_bad_line(rl_ds_kind kind, const char *line, const char *want)
{
    char text[1024];
    snprintf(text, sizeof text, "%s\n%s\n", kind == RL_DS_RL ? "{\"prompt\":\"ok\"}" : "{\"prompt\":\"ok\",\"completion\":\"c\"}",
             line);
    write_file(text);
    rl_dataset *ds = NULL;
    rl_err err = {{0}};
    cr_assert_eq(rl_dataset_load(&ds, path, kind, RL_DS_STOP, &err), -1, "line %s accepted, wanted '%s'", line, want);
    cr_assert_null(ds);
    char where[160];
    snprintf(where, sizeof where, "%s:2: ", path);
    cr_assert(strstr(err.msg, where), "message '%s' lacks '%s'", err.msg, where);
    cr_assert(strstr(err.msg, want), "line %s: message '%s' lacks '%s'", line, err.msg, want);
    cr_assert_eq(rl_dataset_load(&ds, path, kind, RL_DS_SKIP, &err), 0, "%s", err.msg);
    cr_assert_eq(ds->n, 1);
    cr_assert_eq(ds->n_skipped, 1);
    cr_assert_eq(ds->n_warnings, 1);
    cr_assert(strstr(ds->warnings[0], want), "warning '%s' lacks '%s'", ds->warnings[0], want);
    rl_dataset_free(ds);
}

Test(dataset, bad_lines)
{
    expect_bad_line(RL_DS_RL, "{\"prompt\": \"x\"", "invalid JSON at line 1, column");
    expect_bad_line(RL_DS_RL, "[1, 2]", "the line is not a JSON object");
    expect_bad_line(RL_DS_RL, "{\"question\": \"x\"}", "field 'prompt' is missing");
    expect_bad_line(RL_DS_RL, "{\"prompt\": 5}", "field 'prompt' must be a string or a list of messages");
    expect_bad_line(RL_DS_RL, "{\"prompt\": \"\"}", "field 'prompt' is empty");
    expect_bad_line(RL_DS_RL, "{\"prompt\": []}", "'prompt' is an empty list");
    expect_bad_line(RL_DS_RL, "{\"prompt\": \"x\", \"answer\": true}", "field 'answer' must be a string or a number");
    expect_bad_line(RL_DS_RL, "{\"prompt\": \"x\", \"prompt\": \"y\"}", "field 'prompt' appears twice");
    expect_bad_line(RL_DS_RL, "{\"prompt\": [{\"role\": \"bot\", \"content\": \"x\"}]}",
                    "prompt[0]: role 'bot' is not one of system, user, assistant, tool");
    expect_bad_line(RL_DS_RL, "{\"prompt\": [{\"role\": \"user\"}]}", "prompt[0]: field 'content' is missing");
    expect_bad_line(RL_DS_RL, "{\"prompt\": [{\"role\": \"user\", \"content\": null}]}",
                    "prompt[0]: field 'content' must be a string");
    expect_bad_line(RL_DS_RL, "{\"prompt\": [{\"role\": \"user\", \"content\": \"x\", \"name\": \"n\"}]}",
                    "prompt[0]: field 'name' unsupported field");
    expect_bad_line(RL_DS_RL, "{\"prompt\": [\"user\"]}", "prompt[0] is not an object");
    expect_bad_line(RL_DS_RL, "{\"prompt\": \"a\\u0000b\"}", "contains \\u0000");
    expect_bad_line(RL_DS_RL, "{\"prompt\": \"caf\xc3\"}", "invalid UTF-8 at byte 16");
    expect_bad_line(RL_DS_RL, "{\"prompt\": \"\xed\xa0\x80\"}", "invalid UTF-8");
    expect_bad_line(RL_DS_RL, "{\"prompt\": \"\\ud800\"}", "invalid JSON");
    expect_bad_line(RL_DS_SFT, "{\"prompt\": \"x\"}", "field 'completion' is missing");
    expect_bad_line(RL_DS_SFT, "{\"text\": \"x\"}", "neither 'messages' nor 'prompt' + 'completion' given");
    expect_bad_line(RL_DS_SFT, "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}", "no assistant message");
    expect_bad_line(RL_DS_SFT, "{\"messages\": \"x\"}", "field 'messages' must be a list of messages");
    expect_bad_line(RL_DS_SFT, "{\"messages\": [{\"role\": \"assistant\", \"content\": \"x\"}], \"prompt\": \"p\"}",
                    "both 'messages' and 'prompt'/'completion' given");
}

Test(dataset, escaped_backslash_before_u0000_is_text)
{
    write_file("{\"prompt\": \"a\\\\u0000b\"}\n");
    rl_dataset *ds;
    rl_err err;
    cr_assert_eq(rl_dataset_load(&ds, path, RL_DS_RL, RL_DS_STOP, &err), 0, "%s", err.msg);
    cr_assert_str_eq(ds->examples[0].prompt, "a\\u0000b");
    rl_dataset_free(ds);
}

Test(dataset, skip_counts_every_bad_line_and_keeps_first_warnings)
{
    char text[8192] = "";
    for (int i = 0; i < 30; i++) strcat(text, i % 3 ? "{\"prompt\": 1}\n" : "{\"prompt\": \"ok\"}\n");
    write_file(text);
    rl_dataset *ds;
    rl_err err;
    cr_assert_eq(rl_dataset_load(&ds, path, RL_DS_RL, RL_DS_SKIP, &err), 0, "%s", err.msg);
    cr_assert_eq(ds->n, 10);
    cr_assert_eq(ds->n_skipped, 20);
    cr_assert_eq(ds->n_warnings, RL_DS_MAX_WARNINGS);
    cr_assert(strstr(ds->warnings[0], "data.jsonl:2: "), "%s", ds->warnings[0]);
    cr_assert_eq(ds->examples[9].line, 28);
    rl_dataset_free(ds);
}

Test(dataset, empty_or_all_bad_files)
{
    rl_dataset *ds;
    rl_err err;
    write_file("\n\n  \n");
    cr_assert_eq(rl_dataset_load(&ds, path, RL_DS_RL, RL_DS_SKIP, &err), -1);
    cr_assert(strstr(err.msg, "no data (empty file)"), "%s", err.msg);
    write_file("{\"prompt\": 1}\n{}\n");
    cr_assert_eq(rl_dataset_load(&ds, path, RL_DS_RL, RL_DS_SKIP, &err), -1);
    cr_assert(strstr(err.msg, "none of its 2 lines is usable (first problem: ") && strstr(err.msg, ":1: field 'prompt'"),
              "%s", err.msg);
    cr_assert_eq(rl_dataset_load(&ds, "/tmp/rlc-no-such-file.jsonl", RL_DS_RL, RL_DS_SKIP, &err), -1);
    cr_assert(strstr(err.msg, "rlc-no-such-file.jsonl: cannot open"), "%s", err.msg);
}

/* Request lines of `rlc generate` / `rlc logprobs`: each shape, and every way a line is refused. */
Test(dataset, request_lines)
{
    const unsigned gen = RL_REQ_PROMPT | RL_REQ_MESSAGES | RL_REQ_PROMPT_IDS;
    rl_request r;
    rl_err err;
    const char *p = "{\"prompt\": \"2+2=\", \"extra\": 1}";
    cr_assert_eq(rl_request_parse(&r, p, strlen(p), gen, "input", &err), 0, "%s", err.msg);
    cr_expect_eq(r.kind, RL_REQ_PROMPT);
    cr_expect_str_eq(r.prompt, "2+2=");
    rl_request_free(&r);
    const char *m = "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": \"hi\"}]}";
    cr_assert_eq(rl_request_parse(&r, m, strlen(m), gen, "input", &err), 0, "%s", err.msg);
    cr_expect_eq(r.kind, RL_REQ_MESSAGES);
    cr_assert_eq(r.n_messages, 2);
    cr_expect_str_eq(r.messages[1].role, "user");
    cr_expect_str_eq(r.messages[1].content, "hi");
    rl_request_free(&r);
    const char *ids = "{\"ids\": [0, 7, 2147483647]}";
    cr_assert_eq(rl_request_parse(&r, ids, strlen(ids), RL_REQ_IDS, "input", &err), 0, "%s", err.msg);
    cr_assert_eq(r.n_ids, 3);
    cr_expect(r.ids[0] == 0 && r.ids[1] == 7 && r.ids[2] == 2147483647);
    rl_request_free(&r);
    const char *bad[][3] = {
        {"{\"ids\": [1]}", "g", "input: the line must be a JSON object with exactly one of 'prompt', 'messages', 'prompt_ids'"},
        {"{\"prompt\": \"a\", \"prompt_ids\": [1]}", "g", "exactly one of"},
        {"[1, 2]", "i", "input: the line must be a JSON object with 'ids'"},
        {"{\"ids\": [1, 2", "i", "input: invalid JSON"},
        {"{\"ids\": []}", "i", "input: field 'ids' is an empty list"},
        {"{\"ids\": \"1 2\"}", "i", "input: field 'ids' must be a list of token ids"},
        {"{\"ids\": [1, -4]}", "i", "input: ids[1] is not a token id"},
        {"{\"ids\": [1, 2.5]}", "i", "input: ids[1] is not a token id"},
        {"{\"ids\": [1, 2147483648]}", "i", "input: ids[1] is not a token id"},
        {"{\"prompt_ids\": [1, \"x\"]}", "g", "input: prompt_ids[1] is not a token id"},
        {"{\"prompt\": 5}", "g", "input: field 'prompt' must be a string"},
        {"{\"messages\": {}}", "g", "input: field 'messages' must be a list of messages"},
        {"{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}]}", "g", "role 'robot' is not one of"},
        {"{\"ids\": [1], \"ids\": [2]}", "i", "input: field 'ids' appears twice"},
        {"{\"prompt\": \"a\\u0000b\"}", "g", "input: a string contains \\u0000"},
        {"{\"prompt\": \"\xff\"}", "g", "input: invalid UTF-8 at byte 13"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned accept = bad[i][1][0] == 'g' ? gen : RL_REQ_IDS;
        cr_expect_eq(rl_request_parse(&r, bad[i][0], strlen(bad[i][0]), accept, "input", &err), -1, "%s accepted", bad[i][0]);
        cr_expect(strstr(err.msg, bad[i][2]), "%s: '%s' lacks '%s'", bad[i][0], err.msg, bad[i][2]);
        cr_expect(r.fields == NULL && r.ids == NULL && r.messages == NULL, "%s: request not emptied", bad[i][0]);
    }
}

/* A generate request line's own sampling parameters, and every way they are refused. */
Test(dataset, request_sampling_parameters)
{
    const unsigned gen = RL_REQ_PROMPT | RL_REQ_MESSAGES | RL_REQ_PROMPT_IDS;
    rl_request r;
    rl_request_sampling s;
    rl_err err;
    const char *all = "{\"prompt\": \"x\", \"max_tokens\": 12, \"temperature\": 0, \"top_p\": 0.5, \"top_k\": 7, "
                      "\"min_p\": 0.05, \"n\": 4, \"seed\": 99, \"stop\": [\"a\", \"bc\"], \"ignore_eos\": true}";
    cr_assert_eq(rl_request_parse(&r, all, strlen(all), gen, "input", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_request_sampling_parse(&r, &s, "input", &err), 0, "%s", err.msg);
    cr_expect(s.has_max_tokens && s.max_tokens == 12 && s.has_temperature && s.temperature == 0);
    cr_expect(s.has_top_p && s.top_p == 0.5 && s.has_top_k && s.top_k == 7 && s.has_min_p && s.min_p == 0.05);
    cr_expect(s.has_n && s.n == 4 && s.has_seed && s.seed == 99 && s.has_ignore_eos && s.ignore_eos);
    cr_expect(s.has_stop && s.n_stop == 2 && !strcmp(s.stop[0], "a") && !strcmp(s.stop[1], "bc"));
    rl_request_free(&r);
    const char *none = "{\"prompt_ids\": [1], \"stop\": \"end\"}";
    cr_assert_eq(rl_request_parse(&r, none, strlen(none), gen, "input", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_request_sampling_parse(&r, &s, "input", &err), 0, "%s", err.msg);
    cr_expect(!s.has_max_tokens && !s.has_temperature && !s.has_n && !s.has_seed && !s.has_ignore_eos);
    cr_expect(s.has_stop && s.n_stop == 1 && !strcmp(s.stop[0], "end"));
    rl_request_free(&r);
    const char *bad[][2] = {
        {"{\"prompt\": \"x\", \"max_tokens\": 0}", "input: field 'max_tokens' must be an integer in [1, 1000000000], got 0"},
        {"{\"prompt\": \"x\", \"temperature\": 1e-9}", "field 'temperature' must be 0 or a number in [0.0001, 1000000]"},
        {"{\"prompt\": \"x\", \"top_p\": 0}", "field 'top_p' must be a number in (0, 1], got 0"},
        {"{\"prompt\": \"x\", \"top_k\": 2.5}", "field 'top_k' must be an integer"},
        {"{\"prompt\": \"x\", \"min_p\": \"0.1\"}", "field 'min_p' must be a number in [0, 1]"},
        {"{\"prompt\": \"x\", \"n\": -1}", "field 'n' must be an integer in [1, 1000000]"},
        {"{\"prompt\": \"x\", \"seed\": 1e16}", "field 'seed' must be an integer in [0, 1e+15]"},
        {"{\"prompt\": \"x\", \"stop\": 3}", "field 'stop' must be a string or a list of at most 16 strings"},
        {"{\"prompt\": \"x\", \"stop\": [\"a\", 1]}", "field 'stop' must be a string or a list of strings"},
        {"{\"prompt\": \"x\", \"stop\": [\"a\", \"\"]}", "input: stop string 1 is empty"},
        {"{\"prompt\": \"x\", \"ignore_eos\": 1}", "field 'ignore_eos' must be true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(rl_request_parse(&r, bad[i][0], strlen(bad[i][0]), gen, "input", &err), 0, "%s", err.msg);
        cr_expect_eq(rl_request_sampling_parse(&r, &s, "input", &err), -1, "%s accepted", bad[i][0]);
        cr_expect(strstr(err.msg, bad[i][1]), "%s: '%s' lacks '%s'", bad[i][0], err.msg, bad[i][1]);
        rl_request_free(&r);
    }
}
