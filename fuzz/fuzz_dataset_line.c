/* fuzz_dataset_line.c — libFuzzer target: any byte string as one JSONL dataset line, parsed as
 * an RL line and as an SFT line, and as a request line of `rlc generate` and of `rlc logprobs`.
 * Either refused with a message naming file and line (or the request), or an example or request
 * whose fields are consistent with its shape; the messages of a parsed line are then rendered
 * with every chat template family (io/chat.h), with and without the line's tools: text, or a
 * refusal that names the chat. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/chat.h"
#include "io/dataset.h"

static void check(int ok)
{
    if (!ok) __builtin_trap();
}

static void render_all(const rl_chat_message *msgs, int n, const cJSON *tools)
{
    static const rl_chat_family families[] = {RL_CHAT_CHATML, RL_CHAT_QWEN2_5, RL_CHAT_QWEN3, RL_CHAT_LLAMA3,
                                              RL_CHAT_LLAMA3_1, RL_CHAT_LLAMA3_2};
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (int variant = 0; variant < 4; variant++) {
            rl_chat_template t = {.family = families[f], .bos_token = "<|begin_of_text|>"};
            rl_chat_options opt = {.add_generation_prompt = variant & 1, .enable_thinking = variant >> 1,
                                   .tools = variant == 2 ? tools : NULL};
            char *text;
            rl_err err;
            if (rl_chat_render(&t, msgs, n, &opt, &text, &err)) {
                check(text == NULL && strncmp(err.msg, "chat", 4) == 0);
                continue;
            }
            check(text != NULL);
            free(text);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int kind = RL_DS_RL; kind <= RL_DS_SFT; kind++) {
        rl_example ex;
        rl_err err;
        if (rl_example_parse(&ex, (const char *)data, size, (rl_ds_kind)kind, "fuzz.jsonl", 3, &err)) {
            check(strncmp(err.msg, "fuzz.jsonl:3: ", 14) == 0);
            check(ex.fields == NULL && ex.extra_json == NULL);
            continue;
        }
        check(ex.fields != NULL && ex.extra_json != NULL && ex.extra_json[0] == '{');
        check((ex.prompt != NULL) + (ex.n_prompt_messages > 0) + (ex.n_messages > 0) == 1);
        for (int i = 0; i < ex.n_messages; i++) check(ex.messages[i].role && ex.messages[i].content);
        for (int i = 0; i < ex.n_prompt_messages; i++) check(strlen(ex.prompt_messages[i].content) < size);
        if (ex.n_messages) render_all(ex.messages, ex.n_messages, ex.tools);
        if (ex.n_prompt_messages) render_all(ex.prompt_messages, ex.n_prompt_messages, ex.tools);
        rl_example_free(&ex);
    }
    const unsigned accepts[] = {RL_REQ_PROMPT | RL_REQ_MESSAGES | RL_REQ_PROMPT_IDS, RL_REQ_IDS};
    for (int k = 0; k < 2; k++) {
        rl_request r;
        rl_err err;
        if (rl_request_parse(&r, (const char *)data, size, accepts[k], "input", &err)) {
            check(strncmp(err.msg, "input: ", 7) == 0);
            check(r.fields == NULL && r.ids == NULL && r.messages == NULL);
            continue;
        }
        check(r.fields != NULL && (r.kind & accepts[k]));
        check((r.prompt != NULL) + (r.n_messages > 0) + (r.n_ids > 0) == 1);
        check((r.kind == RL_REQ_PROMPT) == (r.prompt != NULL) && (r.kind == RL_REQ_MESSAGES) == (r.n_messages > 0));
        for (int i = 0; i < r.n_ids; i++) check(r.ids[i] >= 0);
        for (int i = 0; i < r.n_messages; i++) check(r.messages[i].role && r.messages[i].content);
        rl_request_sampling s;
        if (rl_request_sampling_parse(&r, &s, "input", &err) == 0) {
            check(s.n_stop >= 0 && s.n_stop <= RL_REQ_MAX_STOP && (!s.has_n || s.n >= 1));
            for (int i = 0; i < s.n_stop; i++) check(s.stop[i] && s.stop[i][0]);
        } else {
            check(strncmp(err.msg, "input: ", 7) == 0);
        }
        rl_request_free(&r);
    }
    return 0;
}
