/* chat_tok.c — a tokenizer's chat template (the one beside its tokenizer.json, read at load time
 * by rl_tok_chat_attach) and its end-of-turn tokens, named per template family in one place
 * (rl_chat_end_tokens). See tokenizer.h. */
#include <stdio.h>
#include <string.h>

#include "io/tok_internal.h"
#include "io/tokenizer.h"

void rl_tok_chat_attach(rl_tokenizer *tok, const char *tokenizer_path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", tokenizer_path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    rl_err err;
    tok->has_chat = rl_chat_template_load(&tok->chat, dir, &err) == 0;
    if (!tok->has_chat) snprintf(tok->chat_error, sizeof tok->chat_error, "%s", err.msg);
}

const rl_chat_template *rl_tok_chat_template(const rl_tokenizer *tok, rl_err *err)
{
    if (tok->has_chat) return &tok->chat;
    rl_err_set(err, "%s", tok->chat_error);
    return NULL;
}

int rl_tok_chat_format(const rl_tokenizer *tok, const rl_chat_message *msgs, int n, const rl_chat_options *opt,
                       char **text, rl_err *err)
{
    *text = NULL;
    const rl_chat_template *t = rl_tok_chat_template(tok, err);
    return t ? rl_chat_render(t, msgs, n, opt, text, err) : -1;
}

/* The ids of a family's end tokens that the vocabulary has. */
static int family_ids(const rl_tokenizer *tok, rl_chat_family family, int32_t ids[RL_TOK_MAX_EOS])
{
    const char *names[RL_CHAT_MAX_END_TOKENS];
    int n_names = rl_chat_end_tokens(family, names), n = 0;
    for (int i = 0; i < n_names; i++) {
        int32_t id = rl_tok_token_id(tok, names[i]);
        if (id >= 0) ids[n++] = id;
    }
    return n;
}

int rl_tok_eos_ids(const rl_tokenizer *tok, int32_t ids[RL_TOK_MAX_EOS])
{
    if (tok->has_chat) return family_ids(tok, tok->chat.family, ids);
    int n = family_ids(tok, RL_CHAT_CHATML, ids); /* no template: ChatML's tokens, else Llama's */
    return n > 0 ? n : family_ids(tok, RL_CHAT_LLAMA3, ids);
}
