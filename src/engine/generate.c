/* generate.c — one rl_engine_generate call (see generate.h).
 *
 * Requests are checked one by one (a bad one gets its error and stays out); the rest become
 * scheduler sequences, each with a token buffer for prompt + completion and its sampling row.
 * Requests with the same prompt form a group (scheduler.h: prefilled once, then forked). Then
 * steps run until every sequence finished: the scheduler plans, the runner executes and
 * returns the sampled tokens, and each token is recorded and checked against the stop
 * conditions; a finished sequence releases its blocks at once (continuous batching) and its
 * result goes to the callback. Stop strings are found in the raw bytes of the completion as it
 * grows; the final text is the tokenizer's decode, cut at the first stop string. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "engine/scheduler.h"

typedef struct seq_extra {
    const rl_gen_params *p; /* the request's parameters */
    int limit;              /* new tokens at most */
    char *bytes;            /* raw bytes of the completion so far (stop-string search) */
    size_t n_bytes, cap_bytes;
} seq_extra;

typedef struct call {
    rl_engine *e;
    const rl_gen_prompt *prompts;
    rl_gen_result *results;
    int n;
    rl_sched_seq *seqs;
    seq_extra *x;
    rl_sample_row *rows;
    int32_t *tokens, *block_ids; /* every sequence's token buffer and block table, in two allocations */
    rl_scheduler sched;
    rl_gen_done_fn on_done;
    void *user;
    int n_refused, first_refused;
} call;

static void refuse(call *c, int i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void refuse(call *c, int i, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rl_gen_result *r = &c->results[i];
    r->error = strdup(msg);
    c->seqs[i].state = RL_SEQ_FINISHED;
    if (c->n_refused++ == 0) c->first_refused = i;
}

/* The sampling row of a request's filters (seed and counters are set when it runs). */
static rl_sample_row filter_row(const rl_sample_params *s)
{
    return (rl_sample_row){.temperature = s->temperature, .top_k = s->top_k, .top_p = s->top_p, .min_p = s->min_p};
}

/* 0 when the request's parameters can run, else -1 with the reason in why. The filters are
 * checked here, on the host: rl_sample reads them from backend memory and does not (ops.h). */
static int bad_params(const rl_engine *e, const rl_gen_params *p, rl_err *why)
{
    rl_sample_row row = filter_row(&p->sample);
    if (rl_sample_row_check(&row, why)) return -1;
    if (p->max_new_tokens < 1) return rl_err_set(why, "max_new_tokens = %d, must be >= 1", p->max_new_tokens);
    if (p->n_stop > 0 && !e->tok) return rl_err_set(why, "stop strings need a tokenizer");
    for (int j = 0; j < p->n_stop; j++)
        if (!p->stop || !p->stop[j] || !p->stop[j][0]) return rl_err_set(why, "stop string %d is empty", j);
    return 0;
}

/* Refuses what cannot run; returns the KV blocks the others need at their full lengths. */
static long check_requests(call *c, const rl_gen_params *params)
{
    const rl_engine *e = c->e;
    int vocab = e->model->config.vocab_size, max_len = e->opt.max_model_len, bs = e->opt.block_size;
    long need = 0;
    rl_err why;
    for (int i = 0; i < c->n; i++) {
        const rl_gen_prompt *pr = &c->prompts[i];
        const rl_gen_params *p = pr->params ? pr->params : params;
        c->x[i].p = p;
        int bad = bad_params(e, p, &why);
        int bad_id = -1;
        for (int t = 0; pr->ids && t < pr->n_ids && bad_id < 0; t++)
            if (pr->ids[t] < 0 || pr->ids[t] >= vocab) bad_id = t;
        if (bad) refuse(c, i, "request %d: %s", i, why.msg);
        else if (pr->n_ids < 1 || !pr->ids) refuse(c, i, "request %d: the prompt is empty", i);
        else if (bad_id >= 0)
            refuse(c, i, "request %d: token %d at position %d is outside the vocabulary [0, %d)", i, pr->ids[bad_id],
                   bad_id, vocab);
        else if (pr->n_ids >= max_len)
            refuse(c, i, "request %d: the prompt has %d tokens, leaving no room for new ones within max_model_len = %d",
                   i, pr->n_ids, max_len);
        else {
            c->x[i].limit = p->max_new_tokens < max_len - pr->n_ids ? p->max_new_tokens : max_len - pr->n_ids;
            need += (pr->n_ids + c->x[i].limit + bs - 1) / bs;
        }
    }
    return need;
}

/* Deterministic mode samples at one temperature: the log-prob op takes one. */
static float deterministic_inv_t(call *c)
{
    if (!c->e->model->ctx->deterministic) return 0.0f;
    float t = -1;
    for (int i = 0; i < c->n; i++) {
        if (c->seqs[i].state == RL_SEQ_FINISHED) continue;
        float ti = c->x[i].p->sample.temperature;
        if (t < 0) t = ti;
        else if (ti != t)
            refuse(c, i, "request %d: deterministic mode samples a call at one temperature (%g), not %g", i, t, ti);
    }
    return t > 0 ? 1.0f / t : 1.0f;
}

/* Sequences with the same prompt share a group (the first one's index). */
static int assign_groups(call *c)
{
    uint32_t slots = 1;
    while (slots < 2u * (uint32_t)c->n) slots <<= 1;
    int *table = malloc((size_t)slots * sizeof *table);
    if (!table) return -1;
    memset(table, 0xff, (size_t)slots * sizeof *table);
    for (int i = 0; i < c->n; i++) {
        c->seqs[i].group = -1;
        if (c->seqs[i].state == RL_SEQ_FINISHED || !c->e->opt.prefix_sharing) continue;
        const rl_gen_prompt *p = &c->prompts[i];
        uint64_t h = 1469598103934665603ull;
        for (int t = 0; t < p->n_ids; t++) h = (h ^ (uint32_t)p->ids[t]) * 1099511628211ull;
        for (uint32_t s = (uint32_t)h & (slots - 1);; s = (s + 1) & (slots - 1)) {
            int j = table[s];
            if (j < 0) {
                table[s] = i;
                c->seqs[i].group = i;
                break;
            }
            const rl_gen_prompt *q = &c->prompts[j];
            if (q->n_ids == p->n_ids && !memcmp(q->ids, p->ids, (size_t)p->n_ids * sizeof *p->ids)) {
                c->seqs[i].group = j;
                break;
            }
        }
    }
    free(table);
    return 0;
}

/* Token buffers, block tables, sampling rows and result arrays of the sequences that run. */
static int setup_seqs(call *c, rl_err *err)
{
    const rl_engine *e = c->e;
    size_t n_tok = 0, n_blk = 0;
    for (int i = 0; i < c->n; i++)
        if (c->seqs[i].state != RL_SEQ_FINISHED) {
            int max_len = c->prompts[i].n_ids + c->x[i].limit;
            n_tok += (size_t)max_len;
            n_blk += (size_t)(max_len + e->opt.block_size - 1) / e->opt.block_size;
        }
    c->tokens = malloc((n_tok ? n_tok : 1) * sizeof *c->tokens);
    c->block_ids = malloc((n_blk ? n_blk : 1) * sizeof *c->block_ids);
    if (!c->tokens || !c->block_ids) return rl_err_oom(err, "generate buffers", (n_tok + n_blk) * 4);
    int32_t *tok = c->tokens, *blk = c->block_ids;
    for (int i = 0; i < c->n; i++) {
        rl_sched_seq *q = &c->seqs[i];
        if (q->state == RL_SEQ_FINISHED) continue;
        const rl_gen_prompt *pr = &c->prompts[i];
        const rl_gen_params *p = c->x[i].p;
        memcpy(tok, pr->ids, (size_t)pr->n_ids * sizeof *tok);
        q->tokens = tok;
        q->n_prompt = q->n_tokens = pr->n_ids;
        q->max_len = pr->n_ids + c->x[i].limit;
        q->bt.ids = blk;
        tok += q->max_len;
        blk += (q->max_len + e->opt.block_size - 1) / e->opt.block_size;
        c->rows[i] = filter_row(&p->sample);
        c->rows[i].seed = p->seed;
        c->rows[i].row = (uint32_t)(pr->params ? pr->sample : i);
        rl_gen_result *r = &c->results[i];
        r->ids = malloc((size_t)c->x[i].limit * sizeof *r->ids);
        r->logprobs = malloc((size_t)c->x[i].limit * sizeof *r->logprobs);
        if (!r->ids || !r->logprobs) return rl_err_oom(err, "generate results", (size_t)c->x[i].limit * 8);
    }
    return 0;
}

static int is_eos(const rl_engine *e, int32_t id)
{
    for (int i = 0; i < e->n_eos; i++)
        if (e->eos[i] == id) return 1;
    return 0;
}

static int append_bytes(seq_extra *s, const char *bytes, size_t len, rl_err *err)
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
static int hits_stop(const seq_extra *s, size_t old_len)
{
    const rl_gen_params *p = s->p;
    for (int j = 0; j < p->n_stop; j++) {
        size_t len = strlen(p->stop[j]);
        if (len > s->n_bytes) continue;
        size_t from = old_len + 1 > len ? old_len + 1 - len : 0;
        if (memmem(s->bytes + from, s->n_bytes - from, p->stop[j], len)) return 1;
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

/* Records the token sampled for sequence q; returns 1 when it ended the completion. */
static int take_token(call *c, int q, int32_t id, float logp, rl_err *err)
{
    rl_sched_seq *seq = &c->seqs[q];
    seq_extra *x = &c->x[q];
    rl_gen_result *res = &c->results[q];
    seq->tokens[seq->n_tokens++] = id;
    res->ids[res->n_ids] = id;
    res->logprobs[res->n_ids] = logp;
    res->n_ids++;
    if (!x->p->ignore_eos && is_eos(c->e, id)) {
        res->finish = RL_FINISH_EOS;
        return 1;
    }
    if (x->p->n_stop > 0) {
        const char *bytes;
        size_t len, old = x->n_bytes;
        /* Ids past the tokenizer (the padding rows of a model's vocabulary) have no text. */
        if (!rl_tok_token_bytes(c->e->tok, id, &bytes, &len) && append_bytes(x, bytes, len, err)) return -1;
        if (hits_stop(x, old)) {
            res->finish = RL_FINISH_STOP;
            return 1;
        }
    }
    if (res->n_ids == x->limit) {
        res->finish = RL_FINISH_LENGTH;
        return 1;
    }
    return 0;
}

static int finish_seq(call *c, int q, rl_err *err)
{
    rl_runner_drop(c->e->runner, q);
    rl_sched_finish(&c->sched, q);
    if (c->e->tok && finish_text(c->e, c->x[q].p, &c->results[q], err)) return -1;
    if (c->on_done) c->on_done(c->user, q, &c->results[q]);
    return 0;
}

static void count_step(call *c, const rl_sched_plan *plan)
{
    rl_engine_stats *st = &c->e->stats;
    for (int k = 0; k < plan->n_items; k++) {
        const rl_sched_item *it = &plan->items[k];
        int end = it->start + it->n_new, n_prompt = c->seqs[it->seq].n_prompt;
        if (it->start < n_prompt) st->prompt_tokens += (end < n_prompt ? end : n_prompt) - it->start;
    }
    st->preemptions += plan->n_preempted;
    st->forks += plan->n_forks;
    st->cow_copies += plan->n_copies;
}

static int run_steps(call *c, rl_err *err)
{
    rl_engine *e = c->e;
    while (!rl_sched_idle(&c->sched)) {
        rl_sched_plan_step(&c->sched);
        const rl_sched_plan *plan = &c->sched.plan;
        for (int k = 0; k < plan->n_preempted; k++) rl_runner_drop(e->runner, plan->preempted[k]);
        if (plan->n_items == 0)
            return rl_err_set(err, "engine: no sequence can run (%d waiting, %d free blocks): a scheduler bug",
                              c->sched.w_len, rl_bm_n_free(&e->bm));
        count_step(c, plan);
        rl_step_out out;
        if (rl_runner_step(e->runner, plan, c->seqs, c->rows, &out, err)) return -1;
        rl_sched_step_done(&c->sched);
        int used = e->bm.n_blocks - rl_bm_n_free(&e->bm);
        if (used > e->stats.peak_blocks) e->stats.peak_blocks = used;
        e->stats.generated_tokens += out.n;
        for (int j = 0; j < out.n; j++) {
            int done = take_token(c, out.seq[j], out.token[j], out.logp[j], err);
            if (done < 0 || (done && finish_seq(c, out.seq[j], err))) return -1;
        }
    }
    return 0;
}

static void call_free(call *c)
{
    if (c->seqs && c->e->bm.ref)
        for (int i = 0; i < c->n; i++)
            if (c->seqs[i].bt.n > 0) rl_bm_release(&c->e->bm, &c->seqs[i].bt);
    rl_sched_free(&c->sched);
    if (c->x)
        for (int i = 0; i < c->n; i++) free(c->x[i].bytes);
    free(c->x);
    free(c->seqs);
    free(c->rows);
    free(c->tokens);
    free(c->block_ids);
}

int rl_engine_generate(rl_engine *e, const rl_gen_prompt *prompts, int n, const rl_gen_params *params,
                       rl_gen_result *results, rl_gen_done_fn on_done, void *user, rl_err *err)
{
    for (int i = 0; i < n; i++) memset(&results[i], 0, sizeof results[i]);
    if (n < 1) return rl_err_set(err, "generate: need at least one prompt, got %d", n);
    call c = {.e = e, .prompts = prompts, .results = results, .n = n, .on_done = on_done, .user = user};
    c.seqs = calloc((size_t)n, sizeof *c.seqs);
    c.x = calloc((size_t)n, sizeof *c.x);
    c.rows = calloc((size_t)n, sizeof *c.rows);
    int rc = -1, failed = 1;
    if (!c.seqs || !c.x || !c.rows) {
        rl_err_oom(err, "generate", (size_t)n * 128);
        goto done;
    }
    long need = check_requests(&c, params);
    memset(&e->stats, 0, sizeof e->stats);
    long hits_before = 0;
    if (need > 0) {
        if (rl_engine_prepare(e, need, err)) goto done;
        hits_before = e->bm.n_hit_blocks;
        for (int i = 0; i < n; i++) {
            if (c.seqs[i].state == RL_SEQ_FINISHED) continue;
            int blocks = (prompts[i].n_ids + c.x[i].limit + e->opt.block_size - 1) / e->opt.block_size;
            if (blocks > e->pool.view.n_blocks)
                refuse(&c, i, "request %d: %d prompt + %d new tokens need %d KV blocks of %d, the pool has %d (raise the "
                       "memory budget or lower max_tokens)", i, prompts[i].n_ids, c.x[i].limit, blocks,
                       e->opt.block_size, e->pool.view.n_blocks);
        }
    }
    float inv_t = deterministic_inv_t(&c);
    for (int i = 0; on_done && i < n; i++)
        if (results[i].error) on_done(user, i, &results[i]);
    if (c.n_refused < n) {
        rl_sched_config sc = {.max_num_seqs = e->opt.max_num_seqs,
                              .max_num_batched_tokens = e->opt.max_num_batched_tokens,
                              .prefix_caching = e->opt.prefix_sharing};
        if (assign_groups(&c)) {
            rl_err_oom(err, "prompt groups", (size_t)n * 8);
            goto done;
        }
        rl_runner_stats before = *rl_runner_stats_of(e->runner);
        if (setup_seqs(&c, err) || rl_sched_create(&c.sched, c.seqs, n, &e->bm, &sc, err) ||
            rl_runner_begin(e->runner, n, inv_t, err) || run_steps(&c, err))
            goto done;
        const rl_runner_stats *after = rl_runner_stats_of(e->runner);
        e->stats.cached_tokens = (e->bm.n_hit_blocks - hits_before) * e->opt.block_size;
        e->stats.steps = after->steps - before.steps;
        e->stats.decode_steps = after->decode_steps - before.decode_steps;
        e->stats.graph_replays = after->graph_replays - before.graph_replays;
        e->stats.mixed_steps = after->mixed_steps - before.mixed_steps;
        e->stats.shared_keys = after->shared_keys - before.shared_keys;
    }
    failed = 0;
    rc = 0;
    if (c.n_refused)
        rc = rl_err_set(err, "generate: %d of %d requests refused; %s", c.n_refused, n, results[c.first_refused].error);
done:
    /* A failed call leaves no half-made result: whatever did not finish carries the error. */
    for (int i = 0; failed && c.seqs && i < n; i++)
        if (c.seqs[i].state != RL_SEQ_FINISHED) {
            rl_gen_result_free(&results[i]);
            results[i].error = strdup(err->msg);
        }
    call_free(&c);
    return rc;
}
