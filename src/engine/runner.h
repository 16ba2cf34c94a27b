/* runner.h — runs the scheduler's steps on the backend: the model's paged forward, the
 * sampler and, for decode steps, the device-resident decode state and its CUDA graphs.
 *
 * Two kinds of steps:
 *  - decode: every running sequence computes one token (no prefill, no fork). The decode
 *    state (token, position, key count, slot, sampling row and block table of each sequence,
 *    one row per running sequence) lives in backend memory; a step is [paged forward ->
 *    rl_sample -> (deterministic: log-probs by the training op) -> rl_decode_advance] over a
 *    fixed bucket of rows (rows past the running ones are inactive padding), captured once per
 *    bucket as a graph where the backend has graphs and replayed after. The host keeps an exact
 *    mirror of the state, applies the same advance to it, and uploads only what differs from the
 *    sequences' real state (admitted or removed rows, new blocks, the shared-prefix runs of
 *    adjacent rows: rl_bm_share_runs, for the attention's cascade) before a step; after it, only
 *    the sampled ids and log-probs come back (asynchronous copy, one event).
 *  - mixed: prefill chunks, possibly with decoding sequences: the host lays the batch out in
 *    pinned memory, uploads it and runs the same ops un-captured.
 * On the CPU the same code runs, without capture. */
#ifndef RL_ENGINE_RUNNER_H
#define RL_ENGINE_RUNNER_H

#include "backend/ops.h"
#include "engine/kv_pool.h"
#include "engine/scheduler.h"
#include "model/model.h"

typedef struct rl_runner_config {
    int max_num_seqs, max_num_batched_tokens;
    int max_blocks; /* block table length of a sequence */
    int graphs;     /* capture decode steps where the backend can */
    int pad_decode; /* pad decode steps to bucket sizes (always with graphs) */
    int cascade;    /* shared-prefix runs for the decode attention (not in deterministic mode) */
} rl_runner_config;

/* What one step sampled: n rows, for the plan's sampling items in order, then its forks. */
typedef struct rl_step_out {
    int n;
    const int32_t *seq, *token;
    const float *logp;
} rl_step_out;

typedef struct rl_runner_stats {
    long steps, decode_steps, graph_replays, graph_captures, mixed_steps, tokens, copies;
    long shared_keys; /* decode keys read once for a shared-prefix run instead of by each member */
} rl_runner_stats;

typedef struct rl_runner rl_runner;

int rl_runner_create(rl_runner **out, rl_model *m, const rl_runner_config *cfg, rl_err *err);
void rl_runner_free(rl_runner *r);

/* The pool the steps read and write (after it is made or remade: drops the graphs). */
void rl_runner_set_pool(rl_runner *r, rl_kv_pool *pool);

/* Starts a generate call over n_seqs sequences: no decode rows yet. det_inv_temperature > 0:
 * deterministic mode, the sampled tokens' log-probs come from the training forward's op at
 * that inverse temperature (graphs captured at another one are dropped). */
int rl_runner_begin(rl_runner *r, int n_seqs, float det_inv_temperature, rl_err *err);

/* Runs the planned step (copy-on-write first). base_rows[q]: sequence q's sampling row (its
 * step is filled in here). The result arrays stay valid until the next step. */
int rl_runner_step(rl_runner *r, const rl_sched_plan *plan, const rl_sched_seq *seqs,
                   const rl_sample_row *base_rows, rl_step_out *out, rl_err *err);

/* Sequence q stopped running (finished or preempted): its decode row, if any, goes. */
void rl_runner_drop(rl_runner *r, int q);

const rl_runner_stats *rl_runner_stats_of(const rl_runner *r);
/* Backend bytes the runner holds (activations, logits, batch and decode state). */
size_t rl_runner_bytes(const rl_runner *r);

#endif
