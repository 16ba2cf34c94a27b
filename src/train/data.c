/* data.c — see data.h. */
#include "train/data.h"

#include <stdlib.h>
#include <string.h>

static int32_t eos_id(const rl_tokenizer *tok, const rl_model_config *cfg)
{
    int32_t ids[RL_TOK_MAX_EOS];
    if (rl_tok_eos_ids(tok, ids) > 0) return ids[0];
    return cfg && cfg->n_eos > 0 ? cfg->eos_token_ids[0] : -1;
}

static int alloc_rows(rl_train_data *d, int n, rl_err *err)
{
    d->ids = calloc((size_t)(n ? n : 1), sizeof *d->ids);
    d->texts = calloc((size_t)(n ? n : 1), sizeof *d->texts);
    if (!d->ids || !d->texts) return rl_err_oom(err, "training data", (size_t)n * 16);
    return 0;
}

/* The chat options of ex: its tools, the generation prompt when gen. */
static rl_chat_options chat_options(const rl_example *ex, int gen, int enable_thinking)
{
    return (rl_chat_options){.add_generation_prompt = gen, .enable_thinking = enable_thinking, .tools = ex->tools};
}

/* The prompt of ex as text: plain, or chat-formatted with the generation prompt. */
static int prompt_text(const char *path, const rl_example *ex, const rl_tokenizer *tok, int enable_thinking, char **out,
                       rl_err *err)
{
    rl_chat_options opt = chat_options(ex, 1, enable_thinking);
    if (ex->prompt_messages) {
        if (rl_tok_chat_format(tok, ex->prompt_messages, ex->n_prompt_messages, &opt, out, err))
            return rl_err_prefix(err, "%s:%d: ", path, ex->line);
        return 0;
    }
    *out = strdup(ex->prompt ? ex->prompt : "");
    return *out ? 0 : rl_err_oom(err, "prompt", 0);
}

/* The prompt (msgs[0, n_prompt) with the generation prompt) and the completion (what the whole
 * conversation msgs[0, n) adds to it) of an SFT line, as TRL cuts them. */
static int split(const char *path, const rl_example *ex, const rl_tokenizer *tok, const rl_chat_message *msgs,
                 int n_prompt, int n, char **prompt, char **completion, rl_err *err)
{
    rl_chat_options gen = chat_options(ex, 1, 1), whole = chat_options(ex, 0, 1);
    const rl_chat_template *t = rl_tok_chat_template(tok, err);
    if (!t || rl_chat_render_after(t, msgs, n_prompt, &gen, n, &whole, prompt, completion, err))
        return rl_err_prefix(err, "%s:%d: ", path, ex->line);
    return 0;
}

/* prompt and completion texts of an SFT line of file `path`; *add_eos when the completion is
 * plain text. */
static int sft_texts(const char *path, const rl_example *ex, const rl_tokenizer *tok, char **prompt,
                     char **completion, int *add_eos, rl_err *err)
{
    *prompt = *completion = NULL;
    *add_eos = 0;
    if (ex->messages) {
        int last = -1;
        for (int i = 0; i < ex->n_messages; i++)
            if (!strcmp(ex->messages[i].role, "assistant")) last = i;
        if (last < 0) return rl_err_set(err, "%s:%d: \"messages\" has no assistant turn to learn", path, ex->line);
        return split(path, ex, tok, ex->messages, last, last + 1, prompt, completion, err);
    }
    if (ex->completion_messages) {
        int n = ex->n_prompt_messages + ex->n_completion_messages;
        rl_chat_message *all = malloc((size_t)n * sizeof *all);
        if (!all) return rl_err_oom(err, "messages", 0);
        memcpy(all, ex->prompt_messages, (size_t)ex->n_prompt_messages * sizeof *all);
        memcpy(all + ex->n_prompt_messages, ex->completion_messages, (size_t)ex->n_completion_messages * sizeof *all);
        int rc = split(path, ex, tok, all, ex->n_prompt_messages, n, prompt, completion, err);
        free(all);
        return rc;
    }
    if (prompt_text(path, ex, tok, 1, prompt, err)) return -1;
    *completion = strdup(ex->completion ? ex->completion : "");
    *add_eos = 1;
    return *completion ? 0 : rl_err_oom(err, "completion", 0);
}

int rl_train_data_sft(rl_train_data *d, const char *path, const rl_tokenizer *tok, const rl_model_config *cfg,
                      int max_len, rl_err *err)
{
    memset(d, 0, sizeof *d);
    if (rl_dataset_load(&d->ds, path, RL_DS_SFT, RL_DS_STOP, err)) return -1;
    int n = d->ds->n;
    d->sft = calloc((size_t)(n ? n : 1), sizeof *d->sft);
    if (!d->sft || alloc_rows(d, n, err)) {
        rl_train_data_free(d);
        return rl_err_oom(err, "training data", (size_t)n * 16);
    }
    int32_t eos = eos_id(tok, cfg);
    for (int i = 0; i < n; i++) {
        const rl_example *ex = &d->ds->examples[i];
        char *pt, *ct;
        int add_eos, rc = sft_texts(path, ex, tok, &pt, &ct, &add_eos, err);
        int32_t *pi = NULL, *ci = NULL;
        int np = 0, nc = 0;
        if (rc == 0) rc = rl_tok_encode(tok, pt, strlen(pt), &pi, &np, err) || rl_tok_encode(tok, ct, strlen(ct), &ci, &nc, err);
        free(pt), free(ct);
        if (rc == 0 && !(d->ids[i] = malloc((size_t)(np + nc + 1) * sizeof(int32_t)))) rc = rl_err_oom(err, "example", 0);
        if (rc == 0) {
            memcpy(d->ids[i], pi, (size_t)np * sizeof(int32_t));
            memcpy(d->ids[i] + np, ci, (size_t)nc * sizeof(int32_t));
            int len = np + nc;
            if (add_eos && eos >= 0) d->ids[i][len++] = eos;
            if (len > max_len) {
                len = max_len;
                d->n_truncated++;
            }
            if (len - (np > 1 ? np : 1) < 1)
                rc = rl_err_set(err, "%s:%d: nothing left to learn (prompt %d tokens, examples cut at %d)", path,
                                ex->line, np, max_len);
            d->sft[i] = (rl_sft_example){d->ids[i], len, np};
            if (len > d->max_ids) d->max_ids = len;
        }
        free(pi), free(ci);
        if (rc) {
            d->n = i + 1;
            rl_train_data_free(d);
            return -1;
        }
    }
    d->n = n;
    return 0;
}

int rl_train_data_rl(rl_train_data *d, const char *path, const rl_tokenizer *tok, int max_len, rl_err *err)
{
    return rl_train_data_rl_chat(d, path, tok, max_len, 1, err);
}

int rl_train_data_rl_chat(rl_train_data *d, const char *path, const rl_tokenizer *tok, int max_len, int enable_thinking,
                          rl_err *err)
{
    memset(d, 0, sizeof *d);
    if (rl_dataset_load(&d->ds, path, RL_DS_RL, RL_DS_STOP, err)) return -1;
    int n = d->ds->n;
    d->prompts = calloc((size_t)(n ? n : 1), sizeof *d->prompts);
    if (!d->prompts || alloc_rows(d, n, err)) {
        rl_train_data_free(d);
        return rl_err_oom(err, "training data", (size_t)n * 16);
    }
    d->n = n;
    for (int i = 0; i < n; i++) {
        const rl_example *ex = &d->ds->examples[i];
        int np = 0;
        if (prompt_text(path, ex, tok, enable_thinking, &d->texts[i], err) || rl_tok_encode(tok, d->texts[i], strlen(d->texts[i]), &d->ids[i], &np, err)) {
            rl_train_data_free(d);
            return -1;
        }
        if (np < 1 || np > max_len) {
            rl_err_set(err, "%s:%d: prompt has %d tokens (must be 1 to %d)", path, ex->line, np, max_len);
            rl_train_data_free(d);
            return -1;
        }
        d->prompts[i] = (rl_grpo_prompt){d->ids[i], np, d->texts[i], ex->answer, ex->fields};
        if (np > d->max_ids) d->max_ids = np;
    }
    return 0;
}

void rl_train_data_free(rl_train_data *d)
{
    for (int i = 0; i < d->n; i++) {
        if (d->ids) free(d->ids[i]);
        if (d->texts) free(d->texts[i]);
    }
    free(d->ids), free(d->texts), free(d->sft), free(d->prompts);
    rl_dataset_free(d->ds);
    memset(d, 0, sizeof *d);
}
