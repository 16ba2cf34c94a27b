/* test_data.c — dataset lines to token ids (src/train/data.c) with the demo tokenizer: text
 * completions end with the end-of-turn token, chat prompts get the generation prompt, a
 * {"messages"} line learns its last assistant turn (with Qwen3's template: its think block,
 * tools, --thinking), long examples are cut (SFT) or refused (prompts) with the file and line
 * in the message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "io/tokenizer.h"
#include "train/data.h"
#include "test_util.h"

#define TOKENIZER "examples/demo/tokenizer.json"

static char path[64];
static rl_tokenizer *tok;

static void setup(void)
{
    snprintf(path, sizeof path, "/tmp/rlc-test-data-%d.jsonl", (int)getpid());
    rl_err err;
    cr_assert_eq(rl_tok_load(&tok, TOKENIZER, &err), 0, "%s", err.msg);
}

static void teardown(void)
{
    unlink(path);
    rl_tok_free(tok);
}

TestSuite(data, .init = setup, .fini = teardown);

static void write_lines(const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

/* ids of text encoded alone */
static int encode(const char *text, int32_t *out, int cap)
{
    int32_t *ids;
    int n;
    rl_err err;
    cr_assert_eq(rl_tok_encode(tok, text, strlen(text), &ids, &n, &err), 0, "%s", err.msg);
    cr_assert_leq(n, cap);
    memcpy(out, ids, (size_t)n * sizeof *ids);
    free(ids);
    return n;
}

Test(data, sft_shapes)
{
    write_lines("{\"prompt\": \"What is 1+2?\", \"completion\": \"3\"}\n"
                "{\"prompt\": [{\"role\": \"user\", \"content\": \"What is 1+2?\"}], \"completion\": \"3\"}\n"
                "{\"messages\": [{\"role\": \"user\", \"content\": \"What is 1+2?\"}, {\"role\": \"assistant\", \"content\": \"3\"}]}\n");
    rl_train_data d;
    rl_err err;
    cr_assert_eq(rl_train_data_sft(&d, path, tok, NULL, 1000, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n, 3);
    int32_t eos[RL_TOK_MAX_EOS], want[64];
    cr_assert_gt(rl_tok_eos_ids(tok, eos), 0);
    cr_expect_eq(eos[0], rl_tok_token_id(tok, "<|im_end|>"), "end of turn first");
    /* plain text: prompt + completion + end of turn */
    int np = encode("What is 1+2?", want, 64), nc = encode("3", want + np, 64 - np);
    want[np + nc] = eos[0];
    cr_assert_eq(d.sft[0].n_ids, np + nc + 1);
    cr_expect_eq(d.sft[0].n_prompt, np);
    cr_expect_arr_eq(d.sft[0].ids, want, (size_t)(np + nc + 1) * sizeof(int32_t));
    /* chat prompt + text completion: the same chat text the demo and generate use */
    np = encode("<|im_start|>user\nWhat is 1+2?<|im_end|>\n<|im_start|>assistant\n", want, 64);
    nc = encode("3", want + np, 64 - np);
    want[np + nc] = eos[0];
    cr_assert_eq(d.sft[1].n_ids, np + nc + 1);
    cr_expect_eq(d.sft[1].n_prompt, np);
    cr_expect_arr_eq(d.sft[1].ids, want, (size_t)(np + nc + 1) * sizeof(int32_t));
    /* messages: the assistant turn as the chat format writes it (its own <|im_end|>\n) */
    nc = encode("3<|im_end|>\n", want + np, 64 - np);
    cr_assert_eq(d.sft[2].n_ids, np + nc);
    cr_expect_eq(d.sft[2].n_prompt, np);
    cr_expect_arr_eq(d.sft[2].ids, want, (size_t)(np + nc) * sizeof(int32_t));
    cr_expect_eq(d.max_ids, d.sft[2].n_ids > d.sft[1].n_ids ? d.sft[2].n_ids : d.sft[1].n_ids);
    rl_train_data_free(&d);
}

Test(data, long_examples_are_cut_or_refused_by_line)
{
    write_lines("{\"prompt\": \"What is 1+2?\", \"completion\": \"3 3 3 3 3 3 3 3\"}\n"
                "\n{\"prompt\": \"What is 11+22? What is 11+22?\", \"completion\": \"33\"}\n");
    rl_train_data d;
    rl_err err;
    int32_t ids[64];
    int np = encode("What is 1+2?", ids, 64);
    cr_assert_eq(rl_train_data_sft(&d, path, tok, NULL, np + 2, &err), -1, "the second line has nothing left to learn");
    char want[128];
    snprintf(want, sizeof want, "%s:3: nothing left to learn", path);
    cr_expect(strstr(err.msg, want), "%s", err.msg);
    cr_expect(strstr(err.msg, "examples cut at") && !strstr(err.msg, "--"), "no CLI flag in: %s", err.msg);
    write_lines("{\"prompt\": \"What is 1+2?\", \"completion\": \"3 3 3 3 3 3 3 3\"}\n");
    cr_assert_eq(rl_train_data_sft(&d, path, tok, NULL, np + 2, &err), 0, "%s", err.msg);
    cr_expect_eq(d.n_truncated, 1);
    cr_expect_eq(d.sft[0].n_ids, np + 2);
    rl_train_data_free(&d);
    /* GRPO prompts: kept whole or refused */
    write_lines("{\"prompt\": \"What is 1+2?\", \"answer\": 3}\n{\"prompt\": \"What is 11+22? What is 11+22?\", \"answer\": 33}\n");
    cr_assert_eq(rl_train_data_rl(&d, path, tok, np, &err), -1);
    snprintf(want, sizeof want, "%s:2: prompt has", path);
    cr_expect(strstr(err.msg, want), "%s", err.msg);
    cr_assert_eq(rl_train_data_rl(&d, path, tok, 64, &err), 0, "%s", err.msg);
    cr_expect_eq(d.n, 2);
    cr_expect_eq(d.prompts[0].n_ids, np);
    cr_expect_str_eq(d.prompts[0].answer, "3");
    cr_expect_str_eq(d.prompts[0].text, "What is 1+2?");
    rl_train_data_free(&d);
}

/* A copy of the demo tokenizer beside Qwen3's real chat template (from the chat fixtures). */
static rl_tokenizer *load_with_qwen3_template(char *dir)
{
    rl_err err;
    char *vocab, *fixture, file[128];
    size_t len, flen;
    strcpy(dir, "/tmp/rlc-test-data-q3-XXXXXX");
    cr_assert(mkdtemp(dir));
    cr_assert_eq(rl_file_read_all(TOKENIZER, &vocab, &len, &err), 0, "%s", err.msg);
    snprintf(file, sizeof file, "%s/tokenizer.json", dir);
    cr_assert_eq(rl_file_write_atomic(file, vocab, len, &err), 0, "%s", err.msg);
    free(vocab);
    cr_assert_eq(rl_file_read_all("tests/fixtures/chat/qwen3.json", &fixture, &flen, &err), 0, "%s", err.msg);
    cJSON *doc = cJSON_Parse(fixture), *config = cJSON_CreateObject();
    cJSON_AddStringToObject(config, "chat_template", cJSON_GetObjectItem(doc, "chat_template")->valuestring);
    char *text = cJSON_PrintUnformatted(config);
    snprintf(file, sizeof file, "%s/tokenizer_config.json", dir);
    cr_assert_eq(rl_file_write_atomic(file, text, strlen(text), &err), 0, "%s", err.msg);
    free(text), free(fixture), cJSON_Delete(doc), cJSON_Delete(config);
    snprintf(file, sizeof file, "%s/tokenizer.json", dir);
    rl_tokenizer *q3;
    cr_assert_eq(rl_tok_load(&q3, file, &err), 0, "%s", err.msg);
    return q3;
}

static void expect_ids(const rl_sft_example *ex, const char *prompt, const char *completion)
{
    int32_t want[2048];
    int np = encode(prompt, want, 2048), nc = encode(completion, want + np, 2048 - np);
    cr_assert_eq(ex->n_prompt, np, "prompt tokens (masked): '%s'", prompt);
    cr_assert_eq(ex->n_ids, np + nc, "completion: '%s'", completion);
    cr_assert_arr_eq(ex->ids, want, (size_t)(np + nc) * sizeof(int32_t));
}

/* With Qwen3's template the learned turn carries the template's think block, earlier turns lose
 * their reasoning, tools open the system turn, and GRPO prompts follow --thinking. */
Test(data, qwen3_template_targets)
{
    char dir[64];
    rl_tokenizer *q3 = load_with_qwen3_template(dir);
    write_lines("{\"messages\": [{\"role\": \"user\", \"content\": \"What is 1+2?\"}, {\"role\": \"assistant\", \"content\": \"3\"}]}\n"
                "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": \"b\", \"reasoning_content\": \"r1\"},"
                " {\"role\": \"user\", \"content\": \"c\"}, {\"role\": \"assistant\", \"content\": \"d\", \"reasoning_content\": \"r2\"}]}\n"
                "{\"prompt\": [{\"role\": \"user\", \"content\": \"x\"}], \"completion\": [{\"role\": \"assistant\", \"content\": \"y\"}],"
                " \"tools\": [{\"name\": \"f\"}]}\n");
    rl_train_data d;
    rl_err err;
    cr_assert_eq(rl_train_data_sft(&d, path, q3, NULL, 1000, &err), 0, "%s", err.msg);
    expect_ids(&d.sft[0], "<|im_start|>user\nWhat is 1+2?<|im_end|>\n<|im_start|>assistant\n",
               "<think>\n\n</think>\n\n3<|im_end|>\n");
    expect_ids(&d.sft[1], "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n<|im_start|>user\nc<|im_end|>\n"
                          "<|im_start|>assistant\n",
               "<think>\nr2\n</think>\n\nd<|im_end|>\n");
    int32_t eos[RL_TOK_MAX_EOS];
    cr_assert_eq(rl_tok_eos_ids(q3, eos), 2);
    cr_expect_eq(eos[0], rl_tok_token_id(q3, "<|im_end|>"));
    char tools_prompt[1024];
    snprintf(tools_prompt, sizeof tools_prompt, "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist "
             "with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
             "{\"name\": \"f\"}\n</tools>\n\nFor each function call, return a json object with function name and arguments "
             "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
             "<args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
    expect_ids(&d.sft[2], tools_prompt, "<think>\n\n</think>\n\ny<|im_end|>\n");
    rl_train_data_free(&d);

    /* two assistant turns after the last query: the first renders differently once it is not
     * the last, so the turn to learn cannot be cut out */
    write_lines("{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"role\": \"assistant\", \"content\": \"b\"},"
                " {\"role\": \"assistant\", \"content\": \"c\"}]}\n");
    cr_assert_eq(rl_train_data_sft(&d, path, q3, NULL, 1000, &err), -1);
    char want[256];
    snprintf(want, sizeof want, "%s:1: chat: the template renders messages 0-1 differently once messages 2-2 follow", path);
    cr_expect(strstr(err.msg, want), "%s", err.msg);

    write_lines("{\"prompt\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"answer\": 1}\n");
    cr_assert_eq(rl_train_data_rl(&d, path, q3, 64, &err), 0, "%s", err.msg);
    cr_expect_str_eq(d.prompts[0].text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    rl_train_data_free(&d);
    cr_assert_eq(rl_train_data_rl_chat(&d, path, q3, 64, 0, &err), 0, "%s", err.msg);
    cr_expect_str_eq(d.prompts[0].text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    rl_train_data_free(&d);
    rl_tok_free(q3);
    cr_assert_eq(rl_remove_tree(dir, &err), 0, "%s", err.msg);
}
