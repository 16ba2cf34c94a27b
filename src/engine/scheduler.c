/* scheduler.c — continuous batching with chunked prefill, group forks, the prefix cache and
 * preemption by recompute (see scheduler.h). The waiting queue is a ring over the sequence
 * indices (preempted sequences go back to its front); the running queue an array in admission
 * order, so the newest running sequence, the first preempted, is its last. */
#include "engine/scheduler.h"

#include <stdlib.h>
#include <string.h>

int rl_sched_create(rl_scheduler *s, rl_sched_seq *seqs, int n_seqs, rl_block_manager *bm,
                    const rl_sched_config *cfg, rl_err *err)
{
    memset(s, 0, sizeof *s);
    if (cfg->max_num_seqs < 1 || cfg->max_num_batched_tokens < 1)
        return rl_err_set(err, "scheduler: max_num_seqs = %d and max_num_batched_tokens = %d must be >= 1",
                          cfg->max_num_seqs, cfg->max_num_batched_tokens);
    s->seqs = seqs;
    s->n_seqs = n_seqs;
    s->bm = bm;
    s->cfg = *cfg;
    size_t n = (size_t)(n_seqs > 0 ? n_seqs : 1);
    s->waiting = malloc(n * sizeof *s->waiting);
    s->running = malloc(n * sizeof *s->running);
    s->plan.items = malloc(n * sizeof *s->plan.items);
    s->plan.forks = malloc(n * sizeof *s->plan.forks);
    s->plan.preempted = malloc(n * sizeof *s->plan.preempted);
    s->plan.copies = malloc((size_t)bm->n_blocks * sizeof *s->plan.copies);
    if (!s->waiting || !s->running || !s->plan.items || !s->plan.forks || !s->plan.preempted || !s->plan.copies) {
        rl_sched_free(s);
        return rl_err_oom(err, "scheduler queues", n * 40);
    }
    for (int i = 0; i < n_seqs; i++)
        if (seqs[i].state == RL_SEQ_WAITING) s->waiting[s->w_len++] = i;
    return 0;
}

void rl_sched_free(rl_scheduler *s)
{
    free(s->waiting);
    free(s->running);
    free(s->plan.items);
    free(s->plan.forks);
    free(s->plan.preempted);
    free(s->plan.copies);
    memset(s, 0, sizeof *s);
}

static int waiting_at(const rl_scheduler *s, int i) { return s->waiting[(s->w_head + i) % s->n_seqs]; }

static void waiting_remove(rl_scheduler *s, int i)
{
    for (int j = i; j + 1 < s->w_len; j++) s->waiting[(s->w_head + j) % s->n_seqs] = waiting_at(s, j + 1);
    s->w_len--;
}

static void waiting_push_front(rl_scheduler *s, int q)
{
    s->w_head = (s->w_head + s->n_seqs - 1) % s->n_seqs;
    s->waiting[s->w_head] = q;
    s->w_len++;
}

static void running_remove(rl_scheduler *s, int q)
{
    int i = 0;
    while (s->running[i] != q) i++;
    memmove(s->running + i, s->running + i + 1, (size_t)(s->n_running - i - 1) * sizeof *s->running);
    s->n_running--;
}

/* Positions the step writes plus the next one (the decode state's next slot), within the
 * sequence's longest possible length. */
static int cover(const rl_sched_seq *q, int start, int n_new, int sample)
{
    int n = start + n_new + sample;
    return n < q->max_len ? n : q->max_len;
}

static int ensure(rl_scheduler *s, rl_sched_seq *q, int start, int n_new, int sample)
{
    return rl_bm_ensure(s->bm, &q->bt, cover(q, start, n_new, sample), start, s->plan.copies, &s->plan.n_copies);
}

static void preempt(rl_scheduler *s, int q)
{
    rl_sched_seq *seq = &s->seqs[q];
    running_remove(s, q);
    rl_bm_release(s->bm, &seq->bt);
    seq->n_computed = 0;
    seq->state = RL_SEQ_WAITING;
    waiting_push_front(s, q);
    s->plan.preempted[s->plan.n_preempted++] = q;
}

static void add_item(rl_scheduler *s, int q, int start, int n_new, int sample)
{
    s->plan.items[s->plan.n_items++] = (rl_sched_item){.seq = q, .start = start, .n_new = n_new, .sample = sample};
    s->plan.n_tokens += n_new;
}

/* Step 1: the running sequences' next tokens, preempting from the newest when blocks run out.
 * Returns the budget left. */
static int schedule_running(rl_scheduler *s, int budget)
{
    for (int i = 0; i < s->n_running && budget > 0;) {
        int q = s->running[i];
        rl_sched_seq *seq = &s->seqs[q];
        int need = seq->n_tokens - seq->n_computed, n_new = need < budget ? need : budget;
        int sample = n_new == need, self_preempted = 0;
        while (ensure(s, seq, seq->n_computed, n_new, sample) != 0) {
            int victim = s->running[s->n_running - 1];
            preempt(s, victim);
            if (victim == q) {
                self_preempted = 1;
                break;
            }
        }
        if (self_preempted) break;
        add_item(s, q, seq->n_computed, n_new, sample);
        budget -= n_new;
        i++;
    }
    return budget;
}

static int fresh(const rl_sched_seq *q) { return q->n_tokens == q->n_prompt && q->n_computed == 0 && q->bt.n == 0; }

/* Whether a running member of the group is prefilling its prompt: the group's fresh members
 * wait for it and fork (step 3) rather than compute the same prompt beside it. */
static int group_prefilling(const rl_scheduler *s, int group)
{
    for (int i = 0; i < s->n_running; i++) {
        const rl_sched_seq *q = &s->seqs[s->running[i]];
        if (q->group == group && q->n_tokens == q->n_prompt) return 1;
    }
    return 0;
}

/* Step 2: admissions from the waiting queue in order, each after its cached prefix. */
static void admit_waiting(rl_scheduler *s, int budget)
{
    int bs = s->bm->block_size;
    for (int w = 0; budget > 0 && s->n_running < s->cfg.max_num_seqs && w < s->w_len;) {
        int q = waiting_at(s, w);
        rl_sched_seq *seq = &s->seqs[q];
        if (seq->group >= 0 && fresh(seq) && group_prefilling(s, seq->group)) {
            w++;
            continue;
        }
        seq->n_computed = 0;
        if (s->cfg.prefix_caching)
            seq->n_computed = rl_bm_match(s->bm, &seq->bt, seq->tokens, seq->n_tokens, (seq->n_tokens - 1) / bs);
        int need = seq->n_tokens - seq->n_computed, n_new = need < budget ? need : budget, sample = n_new == need;
        if (ensure(s, seq, seq->n_computed, n_new, sample) != 0) {
            rl_bm_release(s->bm, &seq->bt);
            seq->n_computed = 0;
            return;
        }
        waiting_remove(s, w);
        seq->state = RL_SEQ_RUNNING;
        s->running[s->n_running++] = q;
        add_item(s, q, seq->n_computed, n_new, sample);
        budget -= n_new;
    }
}

/* Step 3: waiting members of a group join the member whose prompt this step completes. */
static void fork_groups(rl_scheduler *s)
{
    int n_items = s->plan.n_items;
    for (int k = 0; k < n_items; k++) {
        const rl_sched_item *it = &s->plan.items[k];
        rl_sched_seq *lead = &s->seqs[it->seq];
        if (lead->group < 0 || !it->sample || lead->n_tokens != lead->n_prompt) continue;
        for (int w = 0; w < s->w_len && s->n_running < s->cfg.max_num_seqs;) {
            int q = waiting_at(s, w);
            rl_sched_seq *f = &s->seqs[q];
            if (f->group != lead->group || !fresh(f)) {
                w++;
                continue;
            }
            waiting_remove(s, w);
            rl_bm_fork(s->bm, &f->bt, &lead->bt, lead->n_prompt);
            f->state = RL_SEQ_RUNNING;
            s->running[s->n_running++] = q;
            s->plan.forks[s->plan.n_forks++] = (rl_sched_fork){.seq = q, .from = it->seq};
        }
    }
}

void rl_sched_plan_step(rl_scheduler *s)
{
    rl_sched_plan *p = &s->plan;
    p->n_items = p->n_tokens = p->n_forks = p->n_preempted = p->n_copies = 0;
    int budget = schedule_running(s, s->cfg.max_num_batched_tokens);
    if (p->n_preempted) return;
    admit_waiting(s, budget);
    fork_groups(s);
}

void rl_sched_step_done(rl_scheduler *s)
{
    const rl_sched_plan *p = &s->plan;
    for (int k = 0; k < p->n_items; k++) {
        rl_sched_seq *q = &s->seqs[p->items[k].seq];
        q->n_computed = p->items[k].start + p->items[k].n_new;
        if (s->cfg.prefix_caching) rl_bm_register(s->bm, &q->bt, q->tokens, q->n_computed);
    }
    for (int k = 0; k < p->n_forks; k++) {
        rl_sched_seq *q = &s->seqs[p->forks[k].seq];
        q->n_computed = q->n_prompt;
        if (s->cfg.prefix_caching) rl_bm_register(s->bm, &q->bt, q->tokens, q->n_computed);
    }
}

void rl_sched_finish(rl_scheduler *s, int seq)
{
    rl_sched_seq *q = &s->seqs[seq];
    running_remove(s, seq);
    rl_bm_release(s->bm, &q->bt);
    q->state = RL_SEQ_FINISHED;
}
