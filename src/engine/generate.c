/* generate.c — the CPU reference generation engine (see generate.h).
 *
 * One call: allocate a key/value slab per prompt (prompt + max_new_tokens rows, at most
 * max_position_embeddings; all layers in one backend allocation) and inference activations;
 * prefill the prompts in groups of at most PREFILL_CHUNK_TOKENS tokens (a longer prompt goes
 * alone), which leaves each prompt's next-token logits in row i of an [n, vocab] buffer; then
 * repeat: sample every row at once (finished rows get zero logits and are ignored), record
 * tokens, check the stop conditions, and run the unfinished sequences one token further. Stop
 * strings are found in the raw bytes of the completion as it grows; the final text is the
 * tokenizer's decode, cut at the first stop string. */
#include "engine/generate.h"

#include <stdlib.h>
#include <string.h>

/* Prefill batches up to this many prompt tokens at once: bounds the activation memory. */
#define PREFILL_CHUNK_TOKENS 2048

struct rl_engine {
    rl_model *model;
    const rl_tokenizer *tok;
    int32_t eos[RL_ENGINE_MAX_EOS];
    int n_eos;
};

typedef struct seq_state {
    int done;
    int limit;   /* new tokens at most: max_new_tokens, or fewer to stay in max_position_embeddings */
    char *bytes; /* raw bytes of the completion so far (stop-string search) */
    size_t n_bytes, cap_bytes;
} seq_state;

/* Working memory of one rl_engine_generate call. */
typedef struct run {
    rl_kv_slabs kv;
    void *kv_base;
    int32_t *slab_start, *slab_rows, *used, *slots, *batch_tokens, *batch_cu, *host_tokens;
    float *host_logp;
    rl_acts *acts;
    float *logits_step, *logits_all, *logp_dev; /* backend */
    int32_t *tokens_dev;                        /* backend */
    seq_state *seqs;
    int max_batch_tokens;
} run;

rl_gen_params rl_gen_params_default(void)
{
    rl_gen_params p = {.sample = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f},
                       .max_new_tokens = 256};
    return p;
}

const char *rl_finish_name(rl_finish_reason finish)
{
    return finish == RL_FINISH_EOS ? "eos" : finish == RL_FINISH_STOP ? "stop" : "length";
}

static void add_eos(rl_engine *e, int32_t id)
{
    if (id < 0 || e->n_eos == RL_ENGINE_MAX_EOS) return;
    for (int i = 0; i < e->n_eos; i++)
        if (e->eos[i] == id) return;
    e->eos[e->n_eos++] = id;
}

int rl_engine_create(rl_engine **out, rl_model *m, const rl_tokenizer *tok, rl_err *err)
{
    rl_engine *e = calloc(1, sizeof *e);
    if (!e) return rl_err_oom(err, "engine", sizeof *e);
    e->model = m;
    e->tok = tok;
    for (int i = 0; i < m->config.n_eos; i++) add_eos(e, m->config.eos_token_ids[i]);
    int32_t tok_eos[RL_TOK_MAX_EOS];
    for (int i = 0, n = tok ? rl_tok_eos_ids(tok, tok_eos) : 0; i < n; i++) add_eos(e, tok_eos[i]);
    *out = e;
    return 0;
}

void rl_engine_free(rl_engine *e) { free(e); }

int rl_engine_eos_ids(const rl_engine *e, const int32_t **ids)
{
    *ids = e->eos;
    return e->n_eos;
}

void rl_gen_result_free(rl_gen_result *r)
{
    free(r->ids);
    free(r->logprobs);
    free(r->text);
    memset(r, 0, sizeof *r);
}

static int is_eos(const rl_engine *e, int32_t id)
{
    for (int i = 0; i < e->n_eos; i++)
        if (e->eos[i] == id) return 1;
    return 0;
}

static int check_request(const rl_engine *e, const rl_gen_prompt *prompts, int n,
                         const rl_gen_params *p, rl_err *err)
{
    if (n < 1) return rl_err_set(err, "generate: need at least one prompt, got %d", n);
    if (p->max_new_tokens < 1) return rl_err_set(err, "generate: max_new_tokens = %d, must be >= 1", p->max_new_tokens);
    if (p->sample.temperature < 0) return rl_err_set(err, "generate: temperature %g is negative", p->sample.temperature);
    if (p->n_stop > 0 && !e->tok) return rl_err_set(err, "generate: stop strings need a tokenizer");
    for (int i = 0; i < p->n_stop; i++)
        if (!p->stop[i] || !p->stop[i][0]) return rl_err_set(err, "generate: stop string %d is empty", i);
    int vocab = e->model->config.vocab_size, max_pos = e->model->config.max_position_embeddings;
    for (int i = 0; i < n; i++) {
        if (prompts[i].n_ids < 1) return rl_err_set(err, "generate: prompt %d is empty", i);
        if (prompts[i].n_ids >= max_pos)
            return rl_err_set(err, "generate: prompt %d has %d tokens, leaving no room for new ones within "
                              "the model's max_position_embeddings = %d", i, prompts[i].n_ids, max_pos);
        for (int t = 0; t < prompts[i].n_ids; t++)
            if (prompts[i].ids[t] < 0 || prompts[i].ids[t] >= vocab)
                return rl_err_set(err, "generate: prompt %d: token %d at position %d is outside the vocabulary [0, %d)",
                                  i, prompts[i].ids[t], t, vocab);
    }
    return 0;
}

static void run_free(rl_ctx *ctx, run *r, int n)
{
    rl_free(ctx, r->kv_base);
    rl_free(ctx, r->logits_step);
    rl_free(ctx, r->logits_all);
    rl_free(ctx, r->logp_dev);
    rl_free(ctx, r->tokens_dev);
    rl_acts_free(r->acts);
    free(r->kv.k);
    free(r->slab_start);
    free(r->host_logp);
    if (r->seqs)
        for (int i = 0; i < n; i++) free(r->seqs[i].bytes);
    free(r->seqs);
}

/* New tokens a prompt of n_ids tokens may get: max_new, or fewer so that prompt + completion
 * stay within max_position_embeddings (check_request leaves room for at least one). */
static int seq_limit(const rl_model_config *c, int n_ids, int max_new)
{
    int room = c->max_position_embeddings - n_ids;
    return max_new < room ? max_new : room;
}

static int run_alloc(rl_engine *e, run *r, const rl_gen_prompt *prompts, int n, int max_new, rl_err *err)
{
    rl_model *m = e->model;
    rl_ctx *ctx = m->ctx;
    const rl_model_config *c = &m->config;
    int L = c->n_layers, V = c->vocab_size;
    memset(r, 0, sizeof *r);

    size_t total_rows = 0;
    int longest = 0;
    long total_prompt = 0;
    for (int i = 0; i < n; i++) {
        total_rows += (size_t)prompts[i].n_ids + (size_t)seq_limit(c, prompts[i].n_ids, max_new);
        total_prompt += prompts[i].n_ids;
        if (prompts[i].n_ids > longest) longest = prompts[i].n_ids;
    }
    if (total_rows > INT32_MAX) return rl_err_set(err, "generate: %zu cache rows exceed the int32 range", total_rows);
    r->max_batch_tokens = total_prompt < PREFILL_CHUNK_TOKENS ? (int)total_prompt : PREFILL_CHUNK_TOKENS;
    if (longest > r->max_batch_tokens) r->max_batch_tokens = longest;
    if (n > r->max_batch_tokens) r->max_batch_tokens = n;

    /* host: slab_start, slab_rows, used, slots [n] + batch_cu [n + 1] + batch_tokens,
     * host_tokens [max_batch_tokens] — one int32 allocation. */
    size_t n_i32 = 4 * (size_t)n + ((size_t)n + 1) + 2 * (size_t)r->max_batch_tokens;
    r->slab_start = malloc(n_i32 * sizeof(int32_t));
    r->host_logp = malloc((size_t)n * sizeof(float));
    r->seqs = calloc((size_t)n, sizeof *r->seqs);
    r->kv.k = calloc(2 * (size_t)L, sizeof(void *));
    if (!r->slab_start || !r->host_logp || !r->seqs || !r->kv.k)
        return rl_err_oom(err, "generate tables", n_i32 * sizeof(int32_t));
    r->slab_rows = r->slab_start + n;
    r->used = r->slab_rows + n;
    r->slots = r->used + n;
    r->batch_cu = r->slots + n;
    r->batch_tokens = r->batch_cu + n + 1;
    r->host_tokens = r->batch_tokens + r->max_batch_tokens;
    int32_t row = 0;
    for (int i = 0; i < n; i++) {
        r->slab_start[i] = row;
        r->seqs[i].limit = seq_limit(c, prompts[i].n_ids, max_new);
        r->slab_rows[i] = prompts[i].n_ids + r->seqs[i].limit;
        r->used[i] = 0;
        row += r->slab_rows[i];
    }

    size_t row_bytes = (size_t)c->n_kv_heads * c->head_dim * rl_dtype_size(ctx->act_dtype);
    size_t slab_bytes = total_rows * row_bytes;
    r->kv_base = rl_alloc(ctx, 2 * (size_t)L * slab_bytes);
    if (!r->kv_base) goto fail_ctx;
    r->kv.v = r->kv.k + L;
    for (int l = 0; l < L; l++) {
        r->kv.k[l] = (char *)r->kv_base + (size_t)(2 * l) * slab_bytes;
        r->kv.v[l] = (char *)r->kv_base + (size_t)(2 * l + 1) * slab_bytes;
    }
    r->kv.n_slots = n;
    r->kv.slab_start = r->slab_start;
    r->kv.slab_rows = r->slab_rows;
    r->kv.used = r->used;

    if (rl_acts_create(&r->acts, m, r->max_batch_tokens, RL_ACTS_INFER, err)) return -1;
    r->logits_step = rl_alloc(ctx, (size_t)n * V * sizeof(float));
    r->logits_all = rl_alloc(ctx, (size_t)n * V * sizeof(float));
    r->logp_dev = rl_alloc(ctx, (size_t)n * sizeof(float));
    r->tokens_dev = rl_alloc(ctx, (size_t)n * sizeof(int32_t));
    if (!r->logits_step || !r->logits_all || !r->logp_dev || !r->tokens_dev) goto fail_ctx;
    return 0;
fail_ctx:
    rl_ctx_error(ctx, err);
    return rl_err_prefix(err, "generate: ");
}

/* Copies row `from` of the step's logits to row `to` of the all-prompts buffer. */
static int put_logits(rl_ctx *ctx, run *r, int vocab, int from, int to, rl_err *err)
{
    size_t row = (size_t)vocab * sizeof(float);
    RL_TRY_OP(ctx, err, rl_memcpy(ctx, (char *)r->logits_all + (size_t)to * row,
                                  (char *)r->logits_step + (size_t)from * row, row, RL_D2D));
    return 0;
}

/* Runs the forward on the batch of slots r->slots[0 .. n_runs) already laid out in
 * batch_tokens / batch_cu, and moves each run's logits to its prompt's row. */
static int step_forward(rl_engine *e, run *r, int n_runs, rl_err *err)
{
    rl_model *m = e->model;
    if (rl_model_forward_cached(m, r->acts, &r->kv, r->slots, r->batch_tokens, r->batch_cu, n_runs,
                                r->logits_step, err))
        return -1;
    for (int s = 0; s < n_runs; s++)
        if (put_logits(m->ctx, r, m->config.vocab_size, s, r->slots[s], err)) return -1;
    return 0;
}

static int prefill(rl_engine *e, run *r, const rl_gen_prompt *prompts, int n, rl_err *err)
{
    int i = 0;
    while (i < n) {
        int n_runs = 0, n_tokens = 0;
        r->batch_cu[0] = 0;
        while (i < n && (n_runs == 0 || n_tokens + prompts[i].n_ids <= r->max_batch_tokens)) {
            memcpy(r->batch_tokens + n_tokens, prompts[i].ids, (size_t)prompts[i].n_ids * sizeof(int32_t));
            n_tokens += prompts[i].n_ids;
            r->slots[n_runs++] = i++;
            r->batch_cu[n_runs] = n_tokens;
        }
        if (step_forward(e, r, n_runs, err)) return -1;
    }
    return 0;
}

static int append_bytes(seq_state *s, const char *bytes, size_t len, rl_err *err)
{
    if (s->n_bytes + len + 1 > s->cap_bytes) {
        size_t cap = (s->n_bytes + len + 1) * 2;
        char *grown = realloc(s->bytes, cap);
        if (!grown) return rl_err_oom(err, "completion text", cap);
        s->bytes = grown;
        s->cap_bytes = cap;
    }
    memcpy(s->bytes + s->n_bytes, bytes, len);
    s->n_bytes += len;
    s->bytes[s->n_bytes] = '\0';
    return 0;
}

/* Whether a stop string ends inside the bytes appended since old_len. */
static int hits_stop(const seq_state *s, size_t old_len, const rl_gen_params *p)
{
    for (int j = 0; j < p->n_stop; j++) {
        size_t len = strlen(p->stop[j]);
        if (len > s->n_bytes) continue;
        size_t from = old_len + 1 > len ? old_len + 1 - len : 0;
        if (memmem(s->bytes + from, s->n_bytes - from, p->stop[j], len)) return 1;
    }
    return 0;
}

/* Records the token sampled for prompt i; marks the sequence done when it ends. */
static int take_token(rl_engine *e, run *r, int i, int32_t id, float logp, const rl_gen_params *p,
                      rl_gen_result *res, rl_err *err)
{
    seq_state *s = &r->seqs[i];
    res->ids[res->n_ids] = id;
    res->logprobs[res->n_ids] = logp;
    res->n_ids++;
    if (is_eos(e, id)) {
        res->finish = RL_FINISH_EOS;
        s->done = 1;
        return 0;
    }
    if (p->n_stop > 0) {
        const char *bytes;
        size_t len, old = s->n_bytes;
        /* Ids past the tokenizer (the padding rows of a model's vocabulary) have no text. */
        if (!rl_tok_token_bytes(e->tok, id, &bytes, &len) && append_bytes(s, bytes, len, err)) return -1;
        if (hits_stop(s, old, p)) {
            res->finish = RL_FINISH_STOP;
            s->done = 1;
            return 0;
        }
    }
    if (res->n_ids == s->limit) {
        res->finish = RL_FINISH_LENGTH;
        s->done = 1;
    }
    return 0;
}

/* Decoded text without a final eos token, cut before the first stop string. Ids that are not
 * tokens of the tokenizer (padding rows of the model's vocabulary) decode to nothing. */
static int finish_text(const rl_engine *e, const rl_gen_params *p, rl_gen_result *res, rl_err *err)
{
    int n_ids = res->n_ids - (res->finish == RL_FINISH_EOS ? 1 : 0), n = 0;
    int32_t *ids = malloc((size_t)(n_ids ? n_ids : 1) * sizeof *ids);
    if (!ids) return rl_err_oom(err, "completion ids", (size_t)n_ids * sizeof *ids);
    for (int i = 0; i < n_ids; i++) {
        const char *bytes;
        size_t len;
        if (!rl_tok_token_bytes(e->tok, res->ids[i], &bytes, &len)) ids[n++] = res->ids[i];
    }
    int rc = rl_tok_decode(e->tok, ids, n, &res->text, &res->text_len, err);
    free(ids);
    if (rc) return -1;
    if (res->finish != RL_FINISH_STOP) return 0;
    size_t cut = res->text_len;
    for (int j = 0; j < p->n_stop; j++) {
        const char *at = memmem(res->text, res->text_len, p->stop[j], strlen(p->stop[j]));
        if (at && (size_t)(at - res->text) < cut) cut = (size_t)(at - res->text);
    }
    res->text_len = cut;
    res->text[cut] = '\0';
    return 0;
}

static int decode_loop(rl_engine *e, run *r, int n, const rl_gen_params *p, rl_gen_result *results,
                       rl_err *err)
{
    rl_ctx *ctx = e->model->ctx;
    int V = e->model->config.vocab_size;
    for (uint64_t step = 0;; step++) {
        for (int i = 0; i < n; i++)
            if (r->seqs[i].done && rl_memzero(ctx, r->logits_all + (size_t)i * V, (size_t)V * sizeof(float)))
                goto fail_ctx;
        if (rl_sample(ctx, r->tokens_dev, r->logp_dev, r->logits_all, n, V, &p->sample, p->seed, step) ||
            rl_memcpy(ctx, r->host_tokens, r->tokens_dev, (size_t)n * sizeof(int32_t), RL_D2H) ||
            rl_memcpy(ctx, r->host_logp, r->logp_dev, (size_t)n * sizeof(float), RL_D2H))
            goto fail_ctx;
        int n_runs = 0;
        r->batch_cu[0] = 0;
        for (int i = 0; i < n; i++) {
            if (r->seqs[i].done) continue;
            if (take_token(e, r, i, r->host_tokens[i], r->host_logp[i], p, &results[i], err)) return -1;
            if (r->seqs[i].done) continue;
            r->batch_tokens[n_runs] = r->host_tokens[i];
            r->slots[n_runs++] = i;
            r->batch_cu[n_runs] = n_runs;
        }
        if (n_runs == 0) return 0;
        if (step_forward(e, r, n_runs, err)) return -1;
    }
fail_ctx:
    rl_ctx_error(ctx, err);
    return rl_err_prefix(err, "generate: ");
}

int rl_engine_generate(rl_engine *e, const rl_gen_prompt *prompts, int n,
                       const rl_gen_params *params, rl_gen_result *results, rl_err *err)
{
    for (int i = 0; i < n; i++) memset(&results[i], 0, sizeof results[i]);
    if (check_request(e, prompts, n, params, err)) return -1;
    for (int i = 0; i < n; i++) {
        size_t limit = (size_t)seq_limit(&e->model->config, prompts[i].n_ids, params->max_new_tokens);
        results[i].ids = malloc(limit * sizeof(int32_t));
        results[i].logprobs = malloc(limit * sizeof(float));
        if (!results[i].ids || !results[i].logprobs) return rl_err_oom(err, "generate results", limit * 8);
    }
    run r;
    int rc = -1;
    if (run_alloc(e, &r, prompts, n, params->max_new_tokens, err)) goto done;
    if (prefill(e, &r, prompts, n, err) || decode_loop(e, &r, n, params, results, err)) goto done;
    if (e->tok)
        for (int i = 0; i < n; i++)
            if (finish_text(e, params, &results[i], err)) goto done;
    rc = 0;
done:
    run_free(e->model->ctx, &r, n);
    return rc;
}
