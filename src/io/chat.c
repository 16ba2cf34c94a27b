/* chat.c — Qwen's chat text format (ChatML): "<|im_start|>role\ncontent<|im_end|>\n" per
 * message, then "<|im_start|>assistant\n" to prompt a reply. The text is encoded afterwards
 * with rl_tok_encode, which turns the markers into their special-token ids. Also the tokens
 * that end a turn or a text (rl_tok_eos_ids). */
#include <stdlib.h>
#include <string.h>

#include "io/tokenizer.h"

#define END_OF_TURN "<|im_end|>"
#define END_OF_TEXT "<|endoftext|>"

int rl_tok_chat_format(const rl_chat_message *msgs, int n, int add_generation_prompt, char **text, rl_err *err)
{
    static const char open[] = "<|im_start|>", close[] = END_OF_TURN "\n", prompt[] = "<|im_start|>assistant\n";
    *text = NULL;
    size_t total = sizeof prompt;
    for (int i = 0; i < n; i++) {
        if (!msgs[i].role || !msgs[i].content) return rl_err_set(err, "chat message %d: role and content must be set", i);
        total += sizeof open + strlen(msgs[i].role) + 1 + strlen(msgs[i].content) + sizeof close;
    }
    char *out = malloc(total);
    if (!out) return rl_err_oom(err, "chat text", total);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t lr = strlen(msgs[i].role), lc = strlen(msgs[i].content);
        memcpy(out + at, open, sizeof open - 1), at += sizeof open - 1;
        memcpy(out + at, msgs[i].role, lr), at += lr;
        out[at++] = '\n';
        memcpy(out + at, msgs[i].content, lc), at += lc;
        memcpy(out + at, close, sizeof close - 1), at += sizeof close - 1;
    }
    if (add_generation_prompt) memcpy(out + at, prompt, sizeof prompt - 1), at += sizeof prompt - 1;
    out[at] = '\0';
    *text = out;
    return 0;
}

int rl_tok_eos_ids(const rl_tokenizer *tok, int32_t ids[RL_TOK_MAX_EOS])
{
    static const char *const names[RL_TOK_MAX_EOS] = {END_OF_TURN, END_OF_TEXT};
    int n = 0;
    for (int i = 0; i < RL_TOK_MAX_EOS; i++) {
        int32_t id = rl_tok_token_id(tok, names[i]);
        if (id >= 0) ids[n++] = id;
    }
    return n;
}
