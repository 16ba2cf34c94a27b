/* test_decode_ops.c — rl_gather_rows (rows picked in any order, repeated) and rl_decode_advance
 * (active rows take the sampled token and move one position on, their next slot read through
 * the block table; inactive rows are left alone; a position past the table is refused before
 * anything changes). */
#include "op_fixture.h"

Test(decode_ops, gather_rows_in_any_order_and_repeated)
{
    rl_ctx ctx = fx_cpu();
    enum { ROWS = 9, DIM = 13, PICK = 6 };
    float in[ROWS * DIM], *out = fx_alloc_poisoned(PICK * DIM);
    tu_fill_uniform(in, ROWS * DIM, -3, 3, 5);
    int32_t rows[PICK] = {8, 0, 3, 3, 7, 8};
    cr_assert_eq(rl_gather_rows(&ctx, out, in, rows, PICK, DIM), 0, "%s", ctx.err.msg);
    for (int i = 0; i < PICK; i++)
        cr_assert(!memcmp(out + i * DIM, in + rows[i] * DIM, DIM * sizeof(float)), "row %d is not input row %d", i,
                  rows[i]);
    rows[2] = -1;
    fx_expect_refused(&ctx, rl_gather_rows(&ctx, out, in, rows, PICK, DIM), "rl_gather_rows: rows[2] -1 is negative");
    free(out);
}

Test(decode_ops, advance_moves_active_rows_one_position)
{
    rl_ctx ctx = fx_cpu();
    enum { N = 4, MB = 3, BS = 4 };
    /* row 0: position 2 -> 3 (same block); row 1: 3 -> 4 crosses into its second block;
     * row 2 inactive (seqlens_k 0); row 3: 7 -> 8, third block */
    int32_t tokens[N] = {10, 11, 12, 13}, pos[N] = {2, 3, 5, 7}, seqlens[N] = {3, 4, 0, 8}, slots[N] = {0, 0, 99, 0};
    int32_t sampled[N] = {20, 21, 22, 23}, tables[N * MB] = {5, -1, -1, 2, 9, -1, 1, 1, 1, 4, 0, 6};
    rl_sample_row rows[N];
    for (int i = 0; i < N; i++) rows[i] = (rl_sample_row){.temperature = 1, .top_p = 1, .seed = 3, .row = (uint32_t)i, .step = (uint32_t)(10 * i)};
    cr_assert_eq(rl_decode_advance(&ctx, tokens, pos, seqlens, slots, rows, sampled, tables, MB, BS, N), 0, "%s",
                 ctx.err.msg);
    int32_t want_tok[N] = {20, 21, 12, 23}, want_pos[N] = {3, 4, 5, 8}, want_len[N] = {4, 5, 0, 9};
    int32_t want_slot[N] = {5 * BS + 3, 9 * BS + 0, 99, 6 * BS + 0};
    uint32_t want_step[N] = {1, 11, 20, 31};
    for (int i = 0; i < N; i++) {
        cr_expect_eq(tokens[i], want_tok[i], "row %d token %d", i, tokens[i]);
        cr_expect_eq(pos[i], want_pos[i], "row %d position %d", i, pos[i]);
        cr_expect_eq(seqlens[i], want_len[i], "row %d seqlens_k %d", i, seqlens[i]);
        cr_expect_eq(slots[i], want_slot[i], "row %d slot %d, want %d", i, slots[i], want_slot[i]);
        cr_expect_eq(rows[i].step, want_step[i], "row %d step %u", i, rows[i].step);
    }
    /* row 3 at position 11 would move to 12 = block 3 of a 3-block table: refused, nothing changes */
    pos[3] = 11;
    pos[0] = 2;
    fx_expect_refused(&ctx, rl_decode_advance(&ctx, tokens, pos, seqlens, slots, rows, sampled, tables, MB, BS, N),
                      "rl_decode_advance: positions[3] 11 + 1 is outside max_blocks 3 x block_size 4");
    cr_assert_eq(pos[0], 2, "a refused advance must not move any row");
}
