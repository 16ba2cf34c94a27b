/* scheduler.h — which sequences compute which tokens in each engine step: a waiting and a
 * running queue, continuous batching with chunked prefill, prefix sharing within a group and
 * through the prefix cache, preemption by recompute. Host-only; unit-tested without a model.
 *
 * One step (rl_sched_plan_step), under a budget of max_num_batched_tokens tokens:
 *  1. The running sequences in admission order each get their next tokens: one for a sequence
 *     that is decoding, the rest of its prompt (a chunk, if the budget is short) for one that is
 *     prefilling. Their blocks must cover what they write plus one position ahead (the decode
 *     state's next slot, ops.h rl_decode_advance). When the pool is short, the newest running
 *     sequence is preempted: its blocks are released (cached full blocks stay cached) and it
 *     goes back to the front of the waiting queue, to be recomputed from its tokens later.
 *  2. If nothing was preempted, waiting sequences are admitted in order while the budget,
 *     max_num_seqs and the pool allow, each starting after the longest prefix of its tokens
 *     that the prefix cache holds (leaving at least one token to compute: the step must
 *     produce its logits). A sequence whose group already has a member prefilling the same
 *     prompt is passed over: it waits to fork.
 *  3. A sequence whose fresh prompt is completed by this step takes along the waiting
 *     sequences of its group (same prompt, nothing computed): they share its prompt blocks
 *     (rl_bm_fork) and sample their first token from its logits. So a group of G samples
 *     prefills its prompt once; the partial last block is copied when each writes into it.
 * A step never exceeds the pool; a sequence that fits the pool alone always makes progress. */
#ifndef RL_ENGINE_SCHEDULER_H
#define RL_ENGINE_SCHEDULER_H

#include "engine/block_manager.h"

typedef enum { RL_SEQ_WAITING, RL_SEQ_RUNNING, RL_SEQ_FINISHED } rl_seq_state;

typedef struct rl_sched_seq {
    int32_t *tokens;       /* prompt, then the sampled tokens (owned by the engine) */
    int n_prompt, n_tokens;
    int max_len;           /* prompt + new tokens at most: its blocks never cover more */
    int n_computed;        /* leading tokens whose keys and values are in the pool */
    int group;             /* sequences of one group have the same prompt; -1: none */
    rl_seq_state state;
    rl_block_table bt;     /* bt.ids: capacity max_blocks, owned by the engine */
} rl_sched_seq;

/* This step computes tokens [start, start + n_new) of seq; sample: they end its known
 * tokens, so the step gives its next-token logits. */
typedef struct rl_sched_item {
    int seq, start, n_new, sample;
} rl_sched_item;

/* seq shares the prompt blocks of `from` (whose prefill this step completes) and samples its
 * first token from the same logits. */
typedef struct rl_sched_fork {
    int seq, from;
} rl_sched_fork;

typedef struct rl_sched_plan {
    rl_sched_item *items;
    int n_items, n_tokens;
    rl_sched_fork *forks;
    int n_forks;
    int *preempted; /* sequences sent back to waiting by this step */
    int n_preempted;
    rl_block_copy *copies; /* copy-on-write to run before the step */
    int n_copies;
} rl_sched_plan;

typedef struct rl_sched_config {
    int max_num_seqs, max_num_batched_tokens;
    int prefix_caching; /* 0: no rl_bm_match (group forks still share) */
} rl_sched_config;

typedef struct rl_scheduler {
    rl_sched_seq *seqs; /* not owned */
    int n_seqs;
    rl_block_manager *bm; /* not owned */
    rl_sched_config cfg;
    int *waiting, w_head, w_len; /* ring of n_seqs */
    int *running, n_running;     /* admission order */
    rl_sched_plan plan;
} rl_scheduler;

/* Queues every sequence in state WAITING, in index order. */
int rl_sched_create(rl_scheduler *s, rl_sched_seq *seqs, int n_seqs, rl_block_manager *bm,
                    const rl_sched_config *cfg, rl_err *err);
void rl_sched_free(rl_scheduler *s);

/* Plans the next step into s->plan (empty when nothing is left to do). */
void rl_sched_plan_step(rl_scheduler *s);

/* After the planned step ran: advances the sequences' computed tokens and registers their
 * newly full blocks in the prefix cache. (The engine then appends the sampled tokens.) */
void rl_sched_step_done(rl_scheduler *s);

/* A running sequence is done: its blocks are released, it leaves the running queue. */
void rl_sched_finish(rl_scheduler *s, int seq);

static inline int rl_sched_idle(const rl_scheduler *s) { return s->n_running == 0 && s->w_len == 0; }

#endif
