/* test_block_manager.c — the KV block bookkeeping: reference counts and the free queue;
 * rl_bm_ensure grows a table all or nothing and copies a shared block before it is written
 * (copy-on-write, reported for the device); forks share; the prefix cache finds a registered
 * prefix (chained keys: the same block after a different prefix is not a hit), survives the
 * last holder's release and is evicted least recently released first. */
#include "engine/block_manager.h"
#include "test_util.h"

enum { BS = 4, MAXB = 16 };

typedef struct table {
    rl_block_table bt;
    int32_t ids[MAXB];
} table;

static void table_init(table *t)
{
    memset(t, 0, sizeof *t);
    t->bt.ids = t->ids;
}

static void check_counts(const rl_block_manager *bm)
{
    int free_blocks = 0;
    for (int b = bm->head; b >= 0; b = bm->next[b]) {
        cr_assert_eq(bm->ref[b], 0, "block %d is in the free queue with %d holders", b, bm->ref[b]);
        free_blocks++;
    }
    cr_assert_eq(free_blocks, bm->n_free, "the free queue has %d blocks, n_free says %d", free_blocks, bm->n_free);
}

Test(block_manager, ensure_grows_all_or_nothing_and_release_frees)
{
    rl_block_manager bm;
    rl_err err;
    cr_assert_eq(rl_bm_create(&bm, 6, BS, &err), 0, "%s", err.msg);
    table a, b;
    table_init(&a);
    table_init(&b);
    rl_block_copy copies[8];
    int n_copies = 0;
    cr_assert_eq(rl_bm_blocks_needed(&bm, &a.bt, 9, 0), 3);
    cr_assert_eq(rl_bm_ensure(&bm, &a.bt, 9, 0, copies, &n_copies), 0);
    cr_assert_eq(a.bt.n, 3);
    cr_assert_eq(rl_bm_n_free(&bm), 3);
    cr_assert_eq(rl_bm_ensure(&bm, &a.bt, 12, 9, copies, &n_copies), 0, "position 11 is still in block 2");
    cr_assert_eq(a.bt.n, 3);
    cr_assert_eq(rl_bm_ensure(&bm, &b.bt, 17, 0, copies, &n_copies), -1, "5 blocks do not fit in 3");
    cr_assert_eq(b.bt.n, 0, "a failed ensure takes nothing");
    cr_assert_eq(rl_bm_n_free(&bm), 3);
    cr_assert_eq(rl_bm_ensure(&bm, &b.bt, 12, 0, copies, &n_copies), 0);
    cr_assert_eq(rl_bm_n_free(&bm), 0);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) cr_assert_neq(a.ids[i], b.ids[j], "two tables hold block %d", a.ids[i]);
    rl_bm_release(&bm, &a.bt);
    cr_assert_eq(a.bt.n, 0);
    cr_assert_eq(rl_bm_n_free(&bm), 3);
    cr_assert_eq(n_copies, 0);
    check_counts(&bm);
    rl_bm_free(&bm);
}

Test(block_manager, fork_shares_and_writes_copy_the_shared_block)
{
    rl_block_manager bm;
    rl_err err;
    cr_assert_eq(rl_bm_create(&bm, 10, BS, &err), 0, "%s", err.msg);
    table lead, f1, f2;
    table_init(&lead);
    table_init(&f1);
    table_init(&f2);
    rl_block_copy copies[8];
    int n_copies = 0;
    /* a prompt of 6 tokens: block 0 full, block 1 half full */
    cr_assert_eq(rl_bm_ensure(&bm, &lead.bt, 7, 0, copies, &n_copies), 0);
    rl_bm_fork(&bm, &f1.bt, &lead.bt, 6);
    rl_bm_fork(&bm, &f2.bt, &lead.bt, 6);
    cr_assert_eq(f1.bt.n, 2);
    cr_assert_eq(bm.ref[lead.ids[0]], 3);
    cr_assert_eq(bm.ref[lead.ids[1]], 3);
    cr_assert_eq(rl_bm_n_free(&bm), 8, "forks take no new block");
    /* f1 writes position 6 (block 1, shared): it gets a copy; block 0 stays shared */
    cr_assert_eq(rl_bm_blocks_needed(&bm, &f1.bt, 8, 6), 1);
    cr_assert_eq(rl_bm_ensure(&bm, &f1.bt, 8, 6, copies, &n_copies), 0);
    cr_assert_eq(n_copies, 1);
    cr_assert(copies[0].src == lead.ids[1] && copies[0].dst == f1.ids[1] && f1.ids[1] != lead.ids[1]);
    cr_assert_eq(f1.ids[0], lead.ids[0]);
    cr_assert_eq(bm.ref[lead.ids[1]], 2);
    cr_assert_eq(rl_bm_ensure(&bm, &f2.bt, 8, 6, copies, &n_copies), 0);
    cr_assert_eq(n_copies, 2);
    cr_assert_eq(bm.ref[lead.ids[1]], 1, "the last holder writes in place");
    cr_assert_eq(rl_bm_ensure(&bm, &lead.bt, 8, 6, copies, &n_copies), 0);
    cr_assert_eq(n_copies, 2, "no copy for a block held once");
    cr_assert_eq(bm.ref[lead.ids[0]], 3);
    int version = f2.bt.version;
    rl_bm_release(&bm, &f2.bt);
    cr_assert_neq(f2.bt.version, version);
    rl_bm_release(&bm, &f1.bt);
    rl_bm_release(&bm, &lead.bt);
    cr_assert_eq(rl_bm_n_free(&bm), 10);
    check_counts(&bm);
    rl_bm_free(&bm);
}

Test(block_manager, prefix_cache_hits_chained_prefixes_only)
{
    rl_block_manager bm;
    rl_err err;
    cr_assert_eq(rl_bm_create(&bm, 12, BS, &err), 0, "%s", err.msg);
    table a, b, c;
    table_init(&a);
    table_init(&b);
    table_init(&c);
    rl_block_copy copies[4];
    int n_copies = 0;
    int32_t tokens[11] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    cr_assert_eq(rl_bm_ensure(&bm, &a.bt, 11, 0, copies, &n_copies), 0);
    rl_bm_register(&bm, &a.bt, tokens, 11);
    cr_assert_eq(a.bt.n_cached, 2, "two full blocks of 11 computed tokens");
    /* the same 8 tokens then others: both blocks hit, held by two now */
    int32_t other[10] = {1, 2, 3, 4, 5, 6, 7, 8, 50, 51};
    cr_assert_eq(rl_bm_match(&bm, &b.bt, other, 10, 8), 8);
    cr_assert(b.ids[0] == a.ids[0] && b.ids[1] == a.ids[1]);
    cr_assert_eq(bm.ref[a.ids[0]], 2);
    /* max_blocks caps the match; a different first block stops it at once, although the
     * second block's tokens are equal (the keys are chained over the prefix) */
    rl_bm_release(&bm, &b.bt);
    cr_assert_eq(rl_bm_match(&bm, &b.bt, other, 10, 1), 4);
    rl_bm_release(&bm, &b.bt);
    int32_t shifted[8] = {9, 2, 3, 4, 5, 6, 7, 8};
    cr_assert_eq(rl_bm_match(&bm, &c.bt, shifted, 8, 8), 0);
    /* released, the blocks stay cached in the free queue and still hit */
    rl_bm_release(&bm, &a.bt);
    cr_assert_eq(rl_bm_n_free(&bm), 12);
    cr_assert_eq(rl_bm_match(&bm, &b.bt, tokens, 11, 8), 8);
    cr_assert_eq(rl_bm_n_free(&bm), 10, "a hit takes the blocks out of the free queue");
    rl_bm_release(&bm, &b.bt);
    check_counts(&bm);
    cr_assert_eq(bm.n_evicted, 0);
    rl_bm_free(&bm);
}

Test(block_manager, eviction_is_least_recently_released_first)
{
    rl_block_manager bm;
    rl_err err;
    cr_assert_eq(rl_bm_create(&bm, 4, BS, &err), 0, "%s", err.msg);
    table a, b, fill, probe;
    table_init(&a);
    table_init(&b);
    table_init(&fill);
    table_init(&probe);
    rl_block_copy copies[4];
    int n_copies = 0;
    int32_t ta[8] = {1, 1, 1, 1, 2, 2, 2, 2}, tb[8] = {3, 3, 3, 3, 4, 4, 4, 4};
    cr_assert_eq(rl_bm_ensure(&bm, &a.bt, 8, 0, copies, &n_copies), 0);
    cr_assert_eq(rl_bm_ensure(&bm, &b.bt, 8, 0, copies, &n_copies), 0);
    rl_bm_register(&bm, &a.bt, ta, 8);
    rl_bm_register(&bm, &b.bt, tb, 8);
    rl_bm_release(&bm, &a.bt); /* a's blocks are the least recently released, last block first */
    rl_bm_release(&bm, &b.bt);
    /* one new block evicts a's second block; a's first block and all of b still hit */
    cr_assert_eq(rl_bm_ensure(&bm, &fill.bt, 1, 0, copies, &n_copies), 0);
    cr_assert_eq(bm.n_evicted, 1);
    cr_assert_eq(rl_bm_match(&bm, &probe.bt, ta, 8, 2), 4, "a's prefix block must survive its tail");
    rl_bm_release(&bm, &probe.bt);
    cr_assert_eq(rl_bm_match(&bm, &probe.bt, tb, 8, 2), 8);
    rl_bm_release(&bm, &probe.bt);
    /* two more evict a's first block, then b's last block */
    cr_assert_eq(rl_bm_ensure(&bm, &fill.bt, 9, 0, copies, &n_copies), 0);
    cr_assert_eq(bm.n_evicted, 3);
    cr_assert_eq(rl_bm_match(&bm, &probe.bt, ta, 8, 2), 0);
    cr_assert_eq(rl_bm_match(&bm, &probe.bt, tb, 8, 2), 4);
    rl_bm_release(&bm, &probe.bt);
    rl_bm_release(&bm, &fill.bt);
    check_counts(&bm);
    rl_bm_free(&bm);
}

/* Many registrations and evictions through one small table: lookups keep finding what is
 * cached after backward-shift deletions (a broken deletion loses entries). */
Test(block_manager, cache_table_survives_churn)
{
    rl_block_manager bm;
    rl_err err;
    cr_assert_eq(rl_bm_create(&bm, 8, 1, &err), 0, "%s", err.msg);
    rl_rng rng;
    rl_rng_init(&rng, 3);
    table t[8];
    int32_t tok[8][1];
    rl_block_copy copies[2];
    int n_copies = 0;
    for (int round = 0; round < 500; round++) {
        int k = (int)rl_rng_below(&rng, 8);
        table_init(&t[k]);
        tok[k][0] = (int32_t)rl_rng_below(&rng, 40);
        if (rl_bm_match(&bm, &t[k].bt, tok[k], 1, 1) == 0) {
            cr_assert_eq(rl_bm_ensure(&bm, &t[k].bt, 1, 0, copies, &n_copies), 0);
            rl_bm_register(&bm, &t[k].bt, tok[k], 1);
        }
        /* every cached block is found again through its token */
        for (int b = 0; b < 8; b++) {
            if (!bm.cached[b]) continue;
            table p;
            table_init(&p);
            cr_assert_eq(rl_bm_match(&bm, &p.bt, &bm.tokens[b], 1, 1), 1, "round %d: cached block %d is lost", round, b);
            cr_assert_eq(p.ids[0], b);
            rl_bm_release(&bm, &p.bt);
        }
        rl_bm_release(&bm, &t[k].bt);
    }
    check_counts(&bm);
    cr_assert_gt(bm.n_evicted, 0);
    rl_bm_free(&bm);
}

/* Shared-prefix runs of a decode step: adjacent rows whose tables begin alike, the shared part
 * wholly before each row's last key, at most max_share rows a run; idle rows and rows sharing
 * nothing are in no run. */
Test(block_manager, share_runs_of_adjacent_rows)
{
    enum { ROWS = 9, STRIDE = 5 };
    const int32_t tables[ROWS][STRIDE] = {
        {7, 8, 9, 1, -1},  /* rows 0-2: a prompt's 2 blocks (row 2 shares only the first) */
        {7, 8, 9, 2, -1},  /* block 9: a copy-on-write not made yet, beyond the last key of row 0 */
        {7, 3, -1, -1, -1},
        {4, 5, 6, -1, -1}, /* rows 3-4 share 2 blocks, row 5 idle */
        {4, 5, 10, -1, -1},
        {4, 5, 11, -1, -1},
        {12, 13, 14, -1, -1}, /* rows 6-8: a run of 3 cut at max_share 2 */
        {12, 13, 15, -1, -1},
        {12, 13, 16, -1, -1},
    };
    const int32_t len_k[ROWS] = {9, 13, 6, 12, 9, 0, 10, 10, 11};
    int32_t lead[ROWS], len[ROWS], count[ROWS];
    rl_bm_share_runs(&tables[0][0], STRIDE, len_k, ROWS, 4, 2, lead, len, count);
    /* max_share 2: rows 0-1 (row 0's last key 8 is in block 2: 2 blocks shared), row 2 alone */
    const int32_t want_lead[ROWS] = {0, 0, 2, 3, 3, 5, 6, 6, 8}, want_len[ROWS] = {8, 8, 0, 8, 8, 0, 8, 8, 0};
    const int32_t want_count[ROWS] = {2, 0, 0, 2, 0, 0, 2, 0, 0};
    for (int i = 0; i < ROWS; i++) {
        cr_assert_eq(lead[i], want_lead[i], "row %d: lead %d, want %d", i, lead[i], want_lead[i]);
        cr_assert_eq(len[i], want_len[i], "row %d: len %d, want %d", i, len[i], want_len[i]);
        cr_assert_eq(count[i], want_count[i], "row %d: count %d, want %d", i, count[i], want_count[i]);
    }
    /* max_share 3: row 2 joins rows 0-1 and the run shares one block; rows 6-8 are one run */
    rl_bm_share_runs(&tables[0][0], STRIDE, len_k, ROWS, 4, 3, lead, len, count);
    const int32_t lead3[ROWS] = {0, 0, 0, 3, 3, 5, 6, 6, 6}, len3[ROWS] = {4, 4, 4, 8, 8, 0, 8, 8, 8};
    const int32_t count3[ROWS] = {3, 0, 0, 2, 0, 0, 3, 0, 0};
    for (int i = 0; i < ROWS; i++) {
        cr_assert_eq(lead[i], lead3[i], "max_share 3, row %d: lead %d, want %d", i, lead[i], lead3[i]);
        cr_assert_eq(len[i], len3[i], "max_share 3, row %d: len %d, want %d", i, len[i], len3[i]);
        cr_assert_eq(count[i], count3[i], "max_share 3, row %d: count %d, want %d", i, count[i], count3[i]);
    }
}
