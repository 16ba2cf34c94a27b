/* runner.c — the backend side of an engine step (see runner.h).
 *
 * Memory (all made once, in rl_runner_create): inference activations for the step's largest
 * batch, fp32 logits [max_num_seqs, vocab], and two regions each in backend memory with a
 * pinned host twin of the same layout:
 *   decode state  tokens, positions, seqlens_k, slots [S] int32, sample rows [S], then block
 *                 tables [S, max_blocks]   (S = max_num_seqs; the host twin is the mirror)
 *   batch         tokens, positions, slots [T], cu_seqlens_q [S + 1], seqlens_k, logit rows [S],
 *                 sample rows [S], block tables [S, max_blocks]   (T = max_num_batched_tokens)
 * plus iota [S + 1] (cu_seqlens_q and logit rows of a decode step) and the sampled ids and
 * log-probs [S] with their pinned copies.
 *
 * Decode rows: row i < n_rows belongs to running sequence seq_of_row[i]; rows past n_rows are
 * inactive (seqlens_k 0, slot -1), so any bucket >= n_rows can run. A sequence gets a row at
 * its first decode step and loses it when it stops running; the last row moves into the hole.
 * Before a step each row is brought to its sequence's state (token = its last token, position
 * = its index, seqlens_k = its length, step = tokens generated so far); what changed is
 * uploaded: the small arrays in one copy, a block table row from its first changed entry. */
#include "engine/runner.h"

#include <stdlib.h>
#include <string.h>

#include "backend/ops.h"

#define MAX_BUCKETS 64

struct rl_runner {
    rl_model *m;
    rl_ctx *ctx;
    rl_runner_config cfg;
    rl_kv_pool *pool;
    rl_acts *acts;
    float *logits;
    int S, T, vocab;
    int max_share; /* sequences per shared-prefix run: 16 rows of (sequence, query head) per kv head */
    int buckets[MAX_BUCKETS], n_buckets;
    rl_graph *graphs[MAX_BUCKETS];
    unsigned char warm[MAX_BUCKETS];
    float det_inv_t;

    /* decode state: backend, host mirror, byte offsets */
    char *d_state, *h_state;
    size_t st_tokens, st_pos, st_seqlens, st_slots, st_rows, st_share, st_tables, st_iota, st_sampled, st_logp, st_bytes;
    int32_t *d_iota, *d_sampled;
    float *d_logp;
    int n_rows, small_dirty;
    int *seq_of_row, *row_version; /* [S] */
    int *row_of_seq, n_seqs;       /* [n_seqs] of the current call */
    int32_t *share_new;            /* [3, S] scratch: the shared-prefix runs of a step */
    int *new_rows;                 /* [S] scratch: sequences getting a decode row */
    int *item_of_seq;              /* [n_seqs] scratch of a mixed step */

    /* batch of a mixed step */
    char *d_batch, *h_batch;
    size_t b_tokens, b_pos, b_slots, b_cu, b_seqlens, b_logit_rows, b_rows, b_tables, b_bytes;

    /* results */
    char *h_out;      /* pinned twin of the state's sampled ids and log-probs (same offsets) */
    int32_t *out_seq; /* [S] */
    rl_event *done;
    rl_runner_stats stats;
};

static size_t take(size_t *at, size_t bytes)
{
    size_t off = *at;
    *at += (bytes + 255) & ~(size_t)255;
    return off;
}

#define ST(r, off, type) ((type *)((r)->h_state + (r)->off))
#define BT(r, off, type) ((type *)((r)->h_batch + (r)->off))
#define DEV(r, base, off, type) ((type *)((r)->base + (r)->off))

static rl_sample_row idle_row(void) { return (rl_sample_row){.temperature = 0.0f, .top_p = 1.0f}; }

static void make_buckets(rl_runner *r)
{
    static const int small[] = {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256};
    r->n_buckets = 0;
    for (size_t i = 0; i < sizeof small / sizeof small[0] && small[i] < r->S; i++) r->buckets[r->n_buckets++] = small[i];
    for (int b = 320; b < r->S && r->n_buckets < MAX_BUCKETS - 1; b += 64) r->buckets[r->n_buckets++] = b;
    r->buckets[r->n_buckets++] = r->S;
}

static void drop_graphs(rl_runner *r)
{
    for (int i = 0; i < r->n_buckets; i++) {
        rl_graph_free(r->ctx, r->graphs[i]);
        r->graphs[i] = NULL;
        r->warm[i] = 0;
    }
}

static int fail_ctx(rl_runner *r, rl_err *err)
{
    rl_ctx_error(r->ctx, err);
    return rl_err_prefix(err, "engine: ");
}

void rl_runner_free(rl_runner *r)
{
    if (!r) return;
    drop_graphs(r);
    rl_event_free(r->ctx, r->done);
    rl_acts_free(r->acts);
    rl_free(r->ctx, r->logits);
    rl_free(r->ctx, r->d_state);
    rl_free(r->ctx, r->d_batch);
    rl_free_host(r->ctx, r->h_state);
    rl_free_host(r->ctx, r->h_batch);
    rl_free_host(r->ctx, r->h_out);
    free(r->seq_of_row);
    free(r->row_version);
    free(r->share_new);
    free(r->new_rows);
    free(r->row_of_seq);
    free(r->item_of_seq);
    free(r->out_seq);
    free(r);
}

static void plan_layout(rl_runner *r)
{
    size_t S = (size_t)r->S, T = (size_t)r->T, MB = (size_t)r->cfg.max_blocks, at = 0;
    r->st_tokens = take(&at, S * 4);
    r->st_pos = take(&at, S * 4);
    r->st_seqlens = take(&at, S * 4);
    r->st_slots = take(&at, S * 4);
    r->st_rows = take(&at, S * sizeof(rl_sample_row));
    r->st_share = take(&at, 3 * S * 4);
    r->st_tables = take(&at, S * MB * 4);
    r->st_iota = take(&at, (S + 1) * 4);
    r->st_sampled = take(&at, S * 4);
    r->st_logp = take(&at, S * 4);
    r->st_bytes = at;
    at = 0;
    r->b_tokens = take(&at, T * 4);
    r->b_pos = take(&at, T * 4);
    r->b_slots = take(&at, T * 4);
    r->b_cu = take(&at, (S + 1) * 4);
    r->b_seqlens = take(&at, S * 4);
    r->b_logit_rows = take(&at, S * 4);
    r->b_rows = take(&at, S * sizeof(rl_sample_row));
    r->b_tables = take(&at, S * MB * 4);
    r->b_bytes = at;
}

/* Every row inactive, iota 0..S, and one sampling pass over S rows so that the backend's
 * scratch already has its largest size when a decode step is captured. */
static int init_state(rl_runner *r, rl_err *err)
{
    size_t S = (size_t)r->S, MB = (size_t)r->cfg.max_blocks;
    memset(r->h_state, 0, r->st_bytes);
    for (int i = 0; i < r->S; i++) {
        ST(r, st_slots, int32_t)[i] = -1;
        ST(r, st_rows, rl_sample_row)[i] = idle_row();
    }
    memset(ST(r, st_tables, int32_t), 0xff, S * MB * 4);
    for (size_t i = 0; i <= S; i++) ST(r, st_iota, int32_t)[i] = (int32_t)i;
    if (rl_memcpy(r->ctx, r->d_state, r->h_state, r->st_bytes, RL_H2D) ||
        rl_memzero(r->ctx, r->logits, S * (size_t)r->vocab * sizeof(float)) ||
        rl_sample(r->ctx, r->d_sampled, r->d_logp, r->logits, r->S, r->vocab, DEV(r, d_state, st_rows, rl_sample_row)) ||
        rl_sync(r->ctx))
        return fail_ctx(r, err);
    return 0;
}

int rl_runner_create(rl_runner **out, rl_model *m, const rl_runner_config *cfg, rl_err *err)
{
    *out = NULL;
    if (cfg->max_num_seqs < 1 || cfg->max_num_batched_tokens < cfg->max_num_seqs || cfg->max_blocks < 1)
        return rl_err_set(err, "engine: max_num_seqs = %d, max_num_batched_tokens = %d (must be >= max_num_seqs), "
                               "max_blocks = %d",
                          cfg->max_num_seqs, cfg->max_num_batched_tokens, cfg->max_blocks);
    rl_runner *r = calloc(1, sizeof *r);
    if (!r) return rl_err_oom(err, "engine runner", sizeof *r);
    r->m = m;
    r->ctx = m->ctx;
    r->cfg = *cfg;
    r->cfg.graphs = cfg->graphs && rl_graph_supported(m->ctx);
    r->cfg.pad_decode = cfg->pad_decode || r->cfg.graphs;
    r->S = cfg->max_num_seqs;
    r->T = cfg->max_num_batched_tokens;
    r->vocab = m->config.vocab_size;
    int group = m->config.n_heads / m->config.n_kv_heads;
    r->max_share = group >= 1 && group <= 16 ? 16 / group : 1;
    make_buckets(r);
    plan_layout(r);
    size_t S = (size_t)r->S;
    r->seq_of_row = malloc(S * sizeof(int));
    r->row_version = malloc(S * sizeof(int));
    r->out_seq = malloc(S * sizeof(int32_t));
    r->share_new = malloc(3 * S * sizeof(int32_t));
    r->new_rows = malloc(S * sizeof(int));
    if (!r->seq_of_row || !r->row_version || !r->out_seq || !r->share_new || !r->new_rows) {
        rl_runner_free(r);
        return rl_err_oom(err, "engine runner tables", S * 24);
    }
    if (rl_acts_create(&r->acts, m, r->T, RL_ACTS_INFER, err)) {
        rl_runner_free(r);
        return rl_err_prefix(err, "engine: ");
    }
    r->logits = rl_alloc(r->ctx, S * (size_t)r->vocab * sizeof(float));
    r->d_state = rl_alloc(r->ctx, r->st_bytes);
    r->d_batch = rl_alloc(r->ctx, r->b_bytes);
    r->h_state = r->logits && r->d_state && r->d_batch ? rl_alloc_host(r->ctx, r->st_bytes) : NULL;
    r->h_batch = r->h_state ? rl_alloc_host(r->ctx, r->b_bytes) : NULL;
    r->h_out = r->h_batch ? rl_alloc_host(r->ctx, r->st_bytes - r->st_sampled) : NULL;
    if (!r->h_out || rl_event_create(r->ctx, &r->done)) {
        fail_ctx(r, err);
        rl_runner_free(r);
        return -1;
    }
    r->d_iota = DEV(r, d_state, st_iota, int32_t);
    r->d_sampled = DEV(r, d_state, st_sampled, int32_t);
    r->d_logp = DEV(r, d_state, st_logp, float);
    if (init_state(r, err)) {
        rl_runner_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

void rl_runner_set_pool(rl_runner *r, rl_kv_pool *pool)
{
    drop_graphs(r);
    r->pool = pool;
}

/* ---- decode rows ------------------------------------------------------------------------- */

static void set_inactive(rl_runner *r, int row)
{
    ST(r, st_tokens, int32_t)[row] = 0;
    ST(r, st_pos, int32_t)[row] = 0;
    ST(r, st_seqlens, int32_t)[row] = 0;
    ST(r, st_slots, int32_t)[row] = -1;
    ST(r, st_rows, rl_sample_row)[row] = idle_row();
    r->small_dirty = 1;
}

int rl_runner_begin(rl_runner *r, int n_seqs, float det_inv_temperature, rl_err *err)
{
    if (det_inv_temperature != r->det_inv_t) drop_graphs(r);
    r->det_inv_t = det_inv_temperature;
    free(r->row_of_seq);
    free(r->item_of_seq);
    r->row_of_seq = malloc((size_t)(n_seqs > 0 ? n_seqs : 1) * sizeof(int));
    r->item_of_seq = malloc((size_t)(n_seqs > 0 ? n_seqs : 1) * sizeof(int));
    if (!r->row_of_seq || !r->item_of_seq) return rl_err_oom(err, "engine rows", (size_t)n_seqs * 8);
    for (int q = 0; q < n_seqs; q++) r->row_of_seq[q] = -1;
    r->n_seqs = n_seqs;
    /* Rows a failed call left become inactive (uploaded with the next decode step). */
    for (; r->n_rows > 0; r->n_rows--) set_inactive(r, r->n_rows - 1);
    return 0;
}

void rl_runner_drop(rl_runner *r, int q)
{
    if (q < 0 || q >= r->n_seqs || r->row_of_seq[q] < 0) return;
    int row = r->row_of_seq[q], last = r->n_rows - 1;
    r->row_of_seq[q] = -1;
    if (row != last) {
        int moved = r->seq_of_row[last];
        ST(r, st_tokens, int32_t)[row] = ST(r, st_tokens, int32_t)[last];
        ST(r, st_pos, int32_t)[row] = ST(r, st_pos, int32_t)[last];
        ST(r, st_seqlens, int32_t)[row] = ST(r, st_seqlens, int32_t)[last];
        ST(r, st_slots, int32_t)[row] = ST(r, st_slots, int32_t)[last];
        ST(r, st_rows, rl_sample_row)[row] = ST(r, st_rows, rl_sample_row)[last];
        r->seq_of_row[row] = moved;
        r->row_of_seq[moved] = row;
        r->row_version[row] = -1; /* the block table row is re-uploaded from its first difference */
    }
    set_inactive(r, last);
    r->n_rows--;
}

/* Uploads block table row `row` of the mirror from the first entry that differs from bt. */
static int sync_table(rl_runner *r, int row, const rl_block_table *bt)
{
    if (r->row_version[row] == bt->version) return 0;
    int32_t *mirror = ST(r, st_tables, int32_t) + (size_t)row * r->cfg.max_blocks;
    int i0 = 0;
    while (i0 < bt->n && mirror[i0] == bt->ids[i0]) i0++;
    r->row_version[row] = bt->version;
    if (i0 == bt->n) return 0;
    memcpy(mirror + i0, bt->ids + i0, (size_t)(bt->n - i0) * sizeof(int32_t));
    size_t off = r->st_tables + ((size_t)row * r->cfg.max_blocks + (size_t)i0) * 4;
    return rl_memcpy_async(r->ctx, r->d_state + off, r->h_state + off, (size_t)(bt->n - i0) * 4, RL_H2D);
}

static int32_t slot_of(const int32_t *table, int pos, int block_size)
{
    return table[pos / block_size] * block_size + pos % block_size;
}

/* Brings row `row` to the state of decoding sequence q. */
static int sync_row(rl_runner *r, int row, const rl_sched_seq *q, const rl_sample_row *base)
{
    if (sync_table(r, row, &q->bt)) return -1;
    int pos = q->n_tokens - 1, bs = r->pool->view.block_size;
    rl_sample_row want = *base;
    want.step = (uint32_t)(q->n_tokens - q->n_prompt);
    int32_t vals[4] = {q->tokens[pos], pos, pos + 1, slot_of(q->bt.ids, pos, bs)};
    int32_t *dst[4] = {ST(r, st_tokens, int32_t) + row, ST(r, st_pos, int32_t) + row, ST(r, st_seqlens, int32_t) + row,
                       ST(r, st_slots, int32_t) + row};
    for (int k = 0; k < 4; k++)
        if (*dst[k] != vals[k]) {
            *dst[k] = vals[k];
            r->small_dirty = 1;
        }
    rl_sample_row *have = ST(r, st_rows, rl_sample_row) + row;
    if (memcmp(have, &want, sizeof want)) {
        *have = want;
        r->small_dirty = 1;
    }
    return 0;
}

/* The decode rows' shared-prefix runs (rl_bm_share_runs over the mirror's tables and lengths,
 * which sync_row has brought to this step), into the state where they changed. None in
 * deterministic mode: there every op keeps the training forward's order of sums. */
static void sync_share(rl_runner *r)
{
    size_t S = (size_t)r->S;
    int32_t *lead = r->share_new, *len = lead + S, *count = len + S;
    int n = r->det_inv_t > 0 || !r->cfg.cascade ? 0 : r->n_rows;
    rl_bm_share_runs(ST(r, st_tables, int32_t), r->cfg.max_blocks, ST(r, st_seqlens, int32_t), n,
                     r->pool->view.block_size, r->max_share, lead, len, count);
    for (int i = n; i < r->S; i++) {
        lead[i] = i;
        len[i] = count[i] = 0;
    }
    for (int i = 0; i < n; i++)
        if (count[i] > 1) r->stats.shared_keys += (long)len[i] * (count[i] - 1);
    if (memcmp(ST(r, st_share, int32_t), lead, 3 * S * sizeof(int32_t))) {
        memcpy(ST(r, st_share, int32_t), lead, 3 * S * sizeof(int32_t));
        r->small_dirty = 1;
    }
}

/* What rl_decode_advance does on the device, done to the mirror. */
static void advance_mirror(rl_runner *r, const int32_t *sampled)
{
    int bs = r->pool->view.block_size, mb = r->cfg.max_blocks;
    for (int i = 0; i < r->n_rows; i++) {
        int32_t *seqlens = ST(r, st_seqlens, int32_t);
        if (seqlens[i] <= 0) continue;
        int p = ++ST(r, st_pos, int32_t)[i];
        ST(r, st_tokens, int32_t)[i] = sampled[i];
        seqlens[i]++;
        ST(r, st_rows, rl_sample_row)[i].step++;
        ST(r, st_slots, int32_t)[i] = slot_of(ST(r, st_tables, int32_t) + (size_t)i * mb, p, bs);
    }
}

/* A step in which every running sequence decodes one token, all with rows after assignment. */
static int decode_only(rl_runner *r, const rl_sched_plan *plan, const rl_sched_seq *seqs)
{
    if (plan->n_forks) return 0;
    int without_row = 0;
    for (int k = 0; k < plan->n_items; k++) {
        const rl_sched_item *it = &plan->items[k];
        if (it->n_new != 1 || !it->sample || it->start != seqs[it->seq].n_tokens - 1) return 0;
        without_row += r->row_of_seq[it->seq] < 0;
    }
    return r->n_rows + without_row == plan->n_items;
}

static int bucket_of(const rl_runner *r, int n_rows)
{
    int i = 0;
    while (r->buckets[i] < n_rows) i++;
    return i;
}

/* The ops of a decode step over B rows, all on backend data (capturable). */
static int decode_ops(rl_runner *r, int B, rl_err *err)
{
    rl_ctx *ctx = r->ctx;
    int mb = r->cfg.max_blocks, bs = r->pool->view.block_size;
    rl_paged_batch b = {.n_tokens = B, .n_seqs = B, .tokens = DEV(r, d_state, st_tokens, int32_t),
                        .positions = DEV(r, d_state, st_pos, int32_t), .slots = DEV(r, d_state, st_slots, int32_t),
                        .cu_seqlens_q = r->d_iota, .seqlens_k = DEV(r, d_state, st_seqlens, int32_t),
                        .block_tables = DEV(r, d_state, st_tables, int32_t), .max_blocks = mb, .max_seqlen_q = 1,
                        .max_seqlen_k = mb * bs, .logit_rows = r->d_iota, .n_logits = B};
    if (r->cfg.cascade && r->det_inv_t <= 0) {
        b.share_lead = DEV(r, d_state, st_share, int32_t);
        b.share_len = b.share_lead + r->S;
        b.share_count = b.share_len + r->S;
        b.max_share = r->max_share;
    }
    rl_sample_row *rows = DEV(r, d_state, st_rows, rl_sample_row);
    if (rl_model_forward_paged(r->m, r->acts, &r->pool->view, &b, r->logits, err)) return -1;
    if (rl_sample(ctx, r->d_sampled, r->d_logp, r->logits, B, r->vocab, rows)) return fail_ctx(r, err);
    if (r->det_inv_t > 0 && rl_model_paged_logprobs(r->m, r->acts, r->d_sampled, B, r->det_inv_t, r->d_logp, err))
        return -1;
    if (rl_decode_advance(ctx, DEV(r, d_state, st_tokens, int32_t), DEV(r, d_state, st_pos, int32_t), DEV(r, d_state, st_seqlens, int32_t),
                          DEV(r, d_state, st_slots, int32_t), rows, r->d_sampled, b.block_tables, mb, bs, B))
        return fail_ctx(r, err);
    return 0;
}

/* Runs a decode step over bucket bi: un-captured the first time (which also sizes whatever
 * the ops allocate), captured the second, replayed after. */
static int run_decode(rl_runner *r, int bi, rl_err *err)
{
    int B = r->buckets[bi];
    if (!r->cfg.graphs || !r->warm[bi]) {
        r->warm[bi] = 1;
        return decode_ops(r, B, err);
    }
    if (!r->graphs[bi]) {
        if (rl_graph_capture_begin(r->ctx)) return fail_ctx(r, err);
        int rc = decode_ops(r, B, err);
        rl_graph *g = NULL;
        if (rl_graph_capture_end(r->ctx, &g) && rc == 0) rc = fail_ctx(r, err);
        if (rc) {
            rl_graph_free(r->ctx, g);
            return -1;
        }
        r->graphs[bi] = g;
        r->stats.graph_captures++;
    }
    r->stats.graph_replays++;
    if (rl_graph_launch(r->ctx, r->graphs[bi])) return fail_ctx(r, err);
    return 0;
}

/* Copies n sampled ids and log-probs back and waits for them. */
/* Copies the n sampled ids and log-probs back (one copy: they are neighbours in the state
 * region) and waits for them. */
static int fetch_out(rl_runner *r, int n, rl_err *err)
{
    size_t bytes = r->st_logp - r->st_sampled + (size_t)n * 4;
    if (rl_memcpy_async(r->ctx, r->h_out, r->d_sampled, bytes, RL_D2H) || rl_event_record(r->ctx, r->done) ||
        rl_event_wait_host(r->ctx, r->done))
        return fail_ctx(r, err);
    return 0;
}

/* Whether sequence a (index qa) goes after b (qb) among new decode rows. */
static int first_block_after(const rl_sched_seq *a, int qa, const rl_sched_seq *b, int qb)
{
    int32_t ba = a->bt.n ? a->bt.ids[0] : -1, bb = b->bt.n ? b->bt.ids[0] : -1;
    return ba != bb ? ba > bb : qa > qb;
}

static int decode_step(rl_runner *r, const rl_sched_plan *plan, const rl_sched_seq *seqs,
                       const rl_sample_row *base_rows, rl_step_out *out, rl_err *err)
{
    /* With cascade, new rows in the order of their first block (then sequence): the samples of
     * one prompt become adjacent rows, which is what a shared-prefix run is made of. */
    int n_new = 0, *fresh = r->new_rows;
    for (int k = 0; k < plan->n_items; k++) {
        int q = plan->items[k].seq, at = n_new;
        if (r->row_of_seq[q] >= 0) continue;
        for (; r->cfg.cascade && at > 0 && first_block_after(&seqs[fresh[at - 1]], fresh[at - 1], &seqs[q], q); at--)
            fresh[at] = fresh[at - 1];
        fresh[at] = q;
        n_new++;
    }
    for (int k = 0; k < n_new; k++) {
        int q = fresh[k], row = r->n_rows++;
        r->row_of_seq[q] = row;
        r->seq_of_row[row] = q;
        r->row_version[row] = -1;
    }
    for (int row = 0; row < r->n_rows; row++) {
        int q = r->seq_of_row[row];
        if (sync_row(r, row, &seqs[q], &base_rows[q])) return fail_ctx(r, err);
    }
    if (r->cfg.cascade) sync_share(r);
    if (r->small_dirty && rl_memcpy_async(r->ctx, r->d_state, r->h_state, r->st_tables, RL_H2D)) return fail_ctx(r, err);
    r->small_dirty = 0;
    int bi = r->cfg.pad_decode ? bucket_of(r, r->n_rows) : -1;
    int rc = bi >= 0 ? run_decode(r, bi, err) : decode_ops(r, r->n_rows, err);
    if (rc || fetch_out(r, r->n_rows, err)) return -1;
    advance_mirror(r, (const int32_t *)r->h_out);
    for (int row = 0; row < r->n_rows; row++) r->out_seq[row] = r->seq_of_row[row];
    out->n = r->n_rows;
    r->stats.decode_steps++;
    return 0;
}

/* ---- mixed steps ------------------------------------------------------------------------- */

static int upload_batch(rl_runner *r, size_t off, size_t bytes)
{
    return bytes ? rl_memcpy_async(r->ctx, r->d_batch + off, r->h_batch + off, bytes, RL_H2D) : 0;
}

static int mixed_step(rl_runner *r, const rl_sched_plan *plan, const rl_sched_seq *seqs,
                      const rl_sample_row *base_rows, rl_step_out *out, rl_err *err)
{
    int bs = r->pool->view.block_size, mb = 1, n_tok = 0, n_out = 0, max_q = 1, max_k = 1;
    /* The batch's block tables are as wide as its widest: what is uploaded is what is used. */
    for (int k = 0; k < plan->n_items; k++)
        if (seqs[plan->items[k].seq].bt.n > mb) mb = seqs[plan->items[k].seq].bt.n;
    int32_t *tokens = BT(r, b_tokens, int32_t), *pos = BT(r, b_pos, int32_t), *slots = BT(r, b_slots, int32_t);
    int32_t *cu = BT(r, b_cu, int32_t), *seqlens = BT(r, b_seqlens, int32_t), *logit_rows = BT(r, b_logit_rows, int32_t);
    rl_sample_row *rows = BT(r, b_rows, rl_sample_row);
    int32_t *tables = BT(r, b_tables, int32_t);
    cu[0] = 0;
    for (int k = 0; k < plan->n_items; k++) {
        const rl_sched_item *it = &plan->items[k];
        const rl_sched_seq *q = &seqs[it->seq];
        for (int j = 0; j < it->n_new; j++) {
            int p = it->start + j;
            tokens[n_tok] = q->tokens[p];
            pos[n_tok] = p;
            slots[n_tok++] = slot_of(q->bt.ids, p, bs);
        }
        cu[k + 1] = n_tok;
        seqlens[k] = it->start + it->n_new;
        memcpy(tables + (size_t)k * mb, q->bt.ids, (size_t)q->bt.n * sizeof(int32_t));
        if (it->n_new > max_q) max_q = it->n_new;
        if (seqlens[k] > max_k) max_k = seqlens[k];
        r->item_of_seq[it->seq] = k;
        if (!it->sample) continue;
        logit_rows[n_out] = n_tok - 1;
        rows[n_out] = base_rows[it->seq];
        rows[n_out].step = (uint32_t)(q->n_tokens - q->n_prompt);
        r->out_seq[n_out++] = it->seq;
    }
    for (int k = 0; k < plan->n_forks; k++) {
        int lead = r->item_of_seq[plan->forks[k].from];
        logit_rows[n_out] = cu[lead + 1] - 1;
        rows[n_out] = base_rows[plan->forks[k].seq];
        rows[n_out].step = 0;
        r->out_seq[n_out++] = plan->forks[k].seq;
    }
    int n_items = plan->n_items;
    if (upload_batch(r, r->b_tokens, (size_t)n_tok * 4) || upload_batch(r, r->b_pos, (size_t)n_tok * 4) ||
        upload_batch(r, r->b_slots, (size_t)n_tok * 4) || upload_batch(r, r->b_cu, (size_t)(n_items + 1) * 4) ||
        upload_batch(r, r->b_seqlens, (size_t)n_items * 4) || upload_batch(r, r->b_logit_rows, (size_t)n_out * 4) ||
        upload_batch(r, r->b_rows, (size_t)n_out * sizeof *rows) ||
        upload_batch(r, r->b_tables, (size_t)n_items * mb * 4))
        return fail_ctx(r, err);
    rl_paged_batch b = {.n_tokens = n_tok, .n_seqs = n_items, .tokens = DEV(r, d_batch, b_tokens, int32_t),
                        .positions = DEV(r, d_batch, b_pos, int32_t), .slots = DEV(r, d_batch, b_slots, int32_t),
                        .cu_seqlens_q = DEV(r, d_batch, b_cu, int32_t), .seqlens_k = DEV(r, d_batch, b_seqlens, int32_t),
                        .block_tables = DEV(r, d_batch, b_tables, int32_t), .max_blocks = mb, .max_seqlen_q = max_q,
                        .max_seqlen_k = max_k, .logit_rows = DEV(r, d_batch, b_logit_rows, int32_t), .n_logits = n_out};
    if (rl_model_forward_paged(r->m, r->acts, &r->pool->view, &b, r->logits, err)) return -1;
    if (n_out > 0) {
        if (rl_sample(r->ctx, r->d_sampled, r->d_logp, r->logits, n_out, r->vocab, DEV(r, d_batch, b_rows, rl_sample_row)))
            return fail_ctx(r, err);
        if (r->det_inv_t > 0 &&
            rl_model_paged_logprobs(r->m, r->acts, r->d_sampled, n_out, r->det_inv_t, r->d_logp, err))
            return -1;
    }
    if (fetch_out(r, n_out, err)) return -1;
    out->n = n_out;
    r->stats.mixed_steps++;
    return 0;
}

int rl_runner_step(rl_runner *r, const rl_sched_plan *plan, const rl_sched_seq *seqs,
                   const rl_sample_row *base_rows, rl_step_out *out, rl_err *err)
{
    for (int k = 0; k < plan->n_copies; k++)
        if (rl_kv_pool_copy_block(r->pool, plan->copies[k].dst, plan->copies[k].src, err)) return -1;
    r->stats.copies += plan->n_copies;
    out->seq = r->out_seq;
    out->token = (const int32_t *)r->h_out;
    out->logp = (const float *)(r->h_out + (r->st_logp - r->st_sampled));
    int rc = decode_only(r, plan, seqs) ? decode_step(r, plan, seqs, base_rows, out, err)
                                        : mixed_step(r, plan, seqs, base_rows, out, err);
    if (rc) return -1;
    r->stats.steps++;
    r->stats.tokens += plan->n_tokens;
    return 0;
}

const rl_runner_stats *rl_runner_stats_of(const rl_runner *r) { return &r->stats; }

size_t rl_runner_bytes(const rl_runner *r)
{
    return rl_acts_bytes(r->acts) + (size_t)r->S * r->vocab * sizeof(float) + r->st_bytes + r->b_bytes;
}
