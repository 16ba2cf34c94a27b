/* test_scheduler.c — the scheduler without a model: a simulated engine appends a token for every
 * sampling item and fork, and finishes sequences at their length. Checked: the token budget and
 * max_num_seqs are never exceeded; long prompts are prefilled in chunks mixed with decoding;
 * finished sequences make room for waiting ones at once (continuous batching); a pool too
 * small for all preempts the newest and every sequence still completes with all its tokens
 * computed in order; a group's prompt is computed once and its members fork; the prefix cache
 * lets a later sequence skip a cached prefix; blocks never leak. */
#include "engine/scheduler.h"
#include "test_util.h"

enum { MAX_SEQS = 16, MAX_LEN = 256 };

typedef struct sim {
    rl_block_manager bm;
    rl_scheduler s;
    rl_sched_seq seqs[MAX_SEQS];
    int32_t tokens[MAX_SEQS][MAX_LEN], ids[MAX_SEQS][MAX_LEN];
    int n, steps, max_running, max_step_tokens, preemptions, forks, prompt_computed[MAX_SEQS];
    int computed_pos[MAX_SEQS]; /* next position each sequence must compute: checks the order */
} sim;

/* Sequences with prompt lengths len[i], max_len[i] total, group[i]; prompts are i-specific
 * unless they share a group (then the group's). */
static void sim_init(sim *m, int n, const int *len, const int *max_len, const int *group, int n_blocks, int bs,
                     rl_sched_config cfg)
{
    memset(m, 0, sizeof *m);
    rl_err err;
    cr_assert_eq(rl_bm_create(&m->bm, n_blocks, bs, &err), 0, "%s", err.msg);
    m->n = n;
    for (int i = 0; i < n; i++) {
        int g = group ? group[i] : -1, src = g >= 0 ? g : i;
        for (int t = 0; t < len[i]; t++) m->tokens[i][t] = 1000 * src + t;
        m->seqs[i] = (rl_sched_seq){.tokens = m->tokens[i], .n_prompt = len[i], .n_tokens = len[i],
                                    .max_len = max_len[i], .group = g, .state = RL_SEQ_WAITING};
        m->seqs[i].bt.ids = m->ids[i];
    }
    cr_assert_eq(rl_sched_create(&m->s, m->seqs, n, &m->bm, &cfg, &err), 0, "%s", err.msg);
}

static void sim_run(sim *m)
{
    while (!rl_sched_idle(&m->s)) {
        cr_assert_lt(++m->steps, 10000, "the scheduler makes no progress");
        rl_sched_plan_step(&m->s);
        const rl_sched_plan *p = &m->s.plan;
        m->preemptions += p->n_preempted;
        m->forks += p->n_forks;
        for (int k = 0; k < p->n_preempted; k++) m->computed_pos[p->preempted[k]] = 0;
        cr_assert_gt(p->n_items, 0, "step %d plans nothing", m->steps);
        cr_assert_leq(p->n_tokens, m->s.cfg.max_num_batched_tokens);
        cr_assert_leq(m->s.n_running, m->s.cfg.max_num_seqs);
        if (m->s.n_running > m->max_running) m->max_running = m->s.n_running;
        if (p->n_tokens > m->max_step_tokens) m->max_step_tokens = p->n_tokens;
        for (int k = 0; k < p->n_items; k++) {
            const rl_sched_item *it = &p->items[k];
            rl_sched_seq *q = &m->seqs[it->seq];
            /* a cache hit may skip ahead, never back */
            cr_assert_geq(it->start, m->computed_pos[it->seq], "seq %d computes position %d before %d", it->seq,
                          it->start, m->computed_pos[it->seq]);
            m->computed_pos[it->seq] = it->start + it->n_new;
            cr_assert_eq(it->sample, it->start + it->n_new == q->n_tokens);
            int need = (it->start + it->n_new + it->sample < q->max_len ? it->start + it->n_new + it->sample : q->max_len);
            cr_assert_geq(q->bt.n * m->bm.block_size, need, "seq %d: blocks cover %d of %d positions", it->seq,
                          q->bt.n * m->bm.block_size, need);
            for (int t = it->start; t < it->start + it->n_new && t < q->n_prompt; t++) m->prompt_computed[it->seq]++;
        }
        rl_sched_step_done(&m->s);
        int done[MAX_SEQS], n_done = 0, samplers[2 * MAX_SEQS], n_samplers = 0;
        for (int k = 0; k < p->n_items; k++)
            if (p->items[k].sample) samplers[n_samplers++] = p->items[k].seq;
        for (int k = 0; k < p->n_forks; k++) {
            samplers[n_samplers++] = p->forks[k].seq;
            m->computed_pos[p->forks[k].seq] = m->seqs[p->forks[k].seq].n_prompt;
        }
        for (int k = 0; k < n_samplers; k++) {
            rl_sched_seq *q = &m->seqs[samplers[k]];
            q->tokens[q->n_tokens] = 7 * q->n_tokens + samplers[k]; /* any token */
            if (++q->n_tokens == q->max_len) done[n_done++] = samplers[k];
        }
        for (int k = 0; k < n_done; k++) rl_sched_finish(&m->s, done[k]);
    }
    for (int i = 0; i < m->n; i++) {
        cr_assert_eq(m->seqs[i].state, RL_SEQ_FINISHED);
        cr_assert_eq(m->seqs[i].n_tokens, m->seqs[i].max_len);
    }
    cr_assert_eq(rl_bm_n_free(&m->bm), m->bm.n_blocks, "blocks leaked");
}

static void sim_free(sim *m)
{
    rl_sched_free(&m->s);
    rl_bm_free(&m->bm);
}

Test(scheduler, budget_chunks_and_continuous_batching)
{
    sim m;
    int len[6] = {100, 3, 40, 5, 77, 9}, max_len[6] = {110, 30, 50, 8, 80, 60};
    rl_sched_config cfg = {.max_num_seqs = 3, .max_num_batched_tokens = 32, .prefix_caching = 1};
    sim_init(&m, 6, len, max_len, NULL, 64, 8, cfg);
    sim_run(&m);
    cr_assert_eq(m.max_running, 3);
    cr_assert_eq(m.max_step_tokens, 32, "long prompts fill the budget");
    cr_assert_eq(m.preemptions, 0);
    for (int i = 0; i < 6; i++) cr_assert_eq(m.prompt_computed[i], len[i]);
    sim_free(&m);
}

Test(scheduler, a_short_pool_preempts_and_everything_completes)
{
    sim m;
    int len[8], max_len[8];
    for (int i = 0; i < 8; i++) len[i] = 5 + 3 * i, max_len[i] = len[i] + 20 + i;
    rl_sched_config cfg = {.max_num_seqs = 8, .max_num_batched_tokens = 64, .prefix_caching = 1};
    /* 14 blocks of 4 tokens: the longest sequence (53 tokens) fits alone, not beside the others */
    sim_init(&m, 8, len, max_len, NULL, 14, 4, cfg);
    sim_run(&m);
    cr_assert_gt(m.preemptions, 0, "a pool of 14 blocks must preempt");
    sim_free(&m);
}

Test(scheduler, a_group_prefills_once_and_forks)
{
    sim m;
    int len[6] = {21, 21, 21, 21, 7, 21}, max_len[6] = {40, 40, 40, 40, 20, 40}, group[6] = {0, 0, 0, 0, -1, 0};
    rl_sched_config cfg = {.max_num_seqs = 8, .max_num_batched_tokens = 64, .prefix_caching = 1};
    sim_init(&m, 6, len, max_len, group, 64, 8, cfg);
    sim_run(&m);
    cr_assert_eq(m.forks, 4, "the other members of group 0 fork from its first");
    cr_assert_eq(m.prompt_computed[0], 21);
    for (int i = 1; i < 6; i++)
        if (i != 4) cr_assert_eq(m.prompt_computed[i], 0, "member %d computed its prompt", i);
    sim_free(&m);
}

Test(scheduler, late_members_and_later_sequences_use_the_prefix_cache)
{
    sim m;
    /* max_num_seqs 1: the members run one after the other, so the later ones find the first's
     * full blocks in the cache and compute only the rest (at least the last token) */
    int len[3] = {21, 21, 21}, max_len[3] = {25, 25, 25}, group[3] = {0, 0, 0};
    rl_sched_config cfg = {.max_num_seqs = 1, .max_num_batched_tokens = 64, .prefix_caching = 1};
    sim_init(&m, 3, len, max_len, group, 64, 8, cfg);
    sim_run(&m);
    cr_assert_eq(m.forks, 0);
    cr_assert_eq(m.prompt_computed[0], 21);
    cr_assert_eq(m.prompt_computed[1], 5, "16 of 21 prompt tokens are two cached blocks");
    cr_assert_eq(m.prompt_computed[2], 5);
    sim_free(&m);

    /* a prompt that is exactly two full blocks still computes its last token */
    int len2[2] = {16, 16}, max_len2[2] = {18, 18}, group2[2] = {0, 0};
    cfg.max_num_seqs = 1;
    sim_init(&m, 2, len2, max_len2, group2, 64, 8, cfg);
    sim_run(&m);
    cr_assert_eq(m.prompt_computed[1], 8, "only the first block may come from the cache");
    sim_free(&m);

    /* no prefix caching: everything is computed */
    cfg.prefix_caching = 0;
    sim_init(&m, 3, len, max_len, NULL, 64, 8, cfg);
    sim_run(&m);
    for (int i = 0; i < 3; i++) cr_assert_eq(m.prompt_computed[i], 21);
    sim_free(&m);
}
