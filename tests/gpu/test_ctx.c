/* test_ctx.c — the CUDA backend's asynchronous calls: pinned host memory and queued copies
 * completed by an event; graphs: a captured decode advance replayed several times moves the
 * device state as the CPU op run as many times does (so each replay re-reads what the last one
 * wrote), ops queued in a capture do not run until a replay; scratch that would grow inside a
 * capture fails with a message instead of allocating; a graph captured with the old scratch
 * still samples right after scratch grew (the old buffer is kept while the graph lives). */
#include "gpu_util.h"

#include "core/rng.h"

Test(gpu_ctx, pinned_memory_async_copies_and_events)
{
    gu g;
    gu_begin(&g);
    enum { N = 1 << 20 };
    int32_t *h_in = rl_alloc_host(&g.gpu, N * 4), *h_out = rl_alloc_host(&g.gpu, N * 4);
    cr_assert(h_in && h_out, "%s", g.gpu.err.msg);
    for (int i = 0; i < N; i++) h_in[i] = i * 7 + 3, h_out[i] = -1;
    int32_t *d = gu_dev(&g, N * 4);
    rl_event *ev;
    GU_OK(&g, rl_event_create(&g.gpu, &ev));
    GU_OK(&g, rl_memcpy_async(&g.gpu, d, h_in, N * 4, RL_H2D));
    GU_OK(&g, rl_memcpy_async(&g.gpu, h_out, d, N * 4, RL_D2H));
    GU_OK(&g, rl_event_record(&g.gpu, ev));
    GU_OK(&g, rl_event_wait_host(&g.gpu, ev));
    cr_assert(!memcmp(h_in, h_out, N * 4), "the round trip through device memory changed the data");
    size_t free_b = 0, total_b = 0;
    GU_OK(&g, rl_mem_info(&g.gpu, &free_b, &total_b));
    cr_assert(free_b > 0 && free_b <= total_b, "mem_info: free %zu total %zu", free_b, total_b);
    rl_event_free(&g.gpu, ev);
    rl_free_host(&g.gpu, h_in);
    rl_free_host(&g.gpu, h_out);
    gu_end(&g);
}

Test(gpu_ctx, captured_decode_advance_replays)
{
    gu g;
    gu_begin(&g);
    cr_assert(rl_graph_supported(&g.gpu));
    enum { N = 10, MB = 8, BS = 4, REPLAYS = 5 };
    int32_t tokens[N], pos[N], seqlens[N], slots[N], sampled[N], tables[N * MB];
    rl_sample_row rows[N];
    for (int i = 0; i < N; i++) {
        tokens[i] = i;
        pos[i] = 3 * i % 11;
        seqlens[i] = i == 4 ? 0 : pos[i] + 1;
        slots[i] = -1;
        sampled[i] = 100 + i;
        rows[i] = (rl_sample_row){.temperature = 1, .top_p = 1, .row = (uint32_t)i};
    }
    for (int i = 0; i < N * MB; i++) tables[i] = (i * 37) % 101;
    int32_t *d_tok = gu_up_bytes(&g, tokens, sizeof tokens), *d_pos = gu_up_bytes(&g, pos, sizeof pos);
    int32_t *d_len = gu_up_bytes(&g, seqlens, sizeof seqlens), *d_slots = gu_up_bytes(&g, slots, sizeof slots);
    rl_sample_row *d_rows = gu_up_bytes(&g, rows, sizeof rows);
    int32_t *d_sampled = gu_up_bytes(&g, sampled, sizeof sampled), *d_tables = gu_up_bytes(&g, tables, sizeof tables);

    GU_OK(&g, rl_graph_capture_begin(&g.gpu));
    GU_OK(&g, rl_decode_advance(&g.gpu, d_tok, d_pos, d_len, d_slots, d_rows, d_sampled, d_tables, MB, BS, N));
    rl_graph *graph;
    GU_OK(&g, rl_graph_capture_end(&g.gpu, &graph));
    int32_t got[N];
    cr_assert_eq(rl_memcpy(&g.gpu, got, d_pos, sizeof got, RL_D2H), 0);
    cr_assert(!memcmp(got, pos, sizeof got), "the capture ran the op");
    for (int r = 0; r < REPLAYS; r++) {
        GU_OK(&g, rl_graph_launch(&g.gpu, graph));
        GU_CPU_OK(&g, rl_cpu_decode_advance(&g.cpu, tokens, pos, seqlens, slots, rows, sampled, tables, MB, BS, N));
    }
    int32_t *want[3] = {pos, seqlens, slots}, *dev[3] = {d_pos, d_len, d_slots};
    for (int a = 0; a < 3; a++) {
        cr_assert_eq(rl_memcpy(&g.gpu, got, dev[a], sizeof got, RL_D2H), 0);
        cr_assert(!memcmp(got, want[a], sizeof got), "array %d after %d replays differs from the CPU's", a, REPLAYS);
    }
    fprintf(stderr, "[err] graph: %d replays of decode_advance exact\n", REPLAYS);
    rl_graph_free(&g.gpu, graph);
    gu_end(&g);
}

/* Samples n rows of the same logits on the CPU: the tokens a GPU replay must give. */
static void cpu_tokens(gu *g, int32_t *tok, const float *logits, int n, int vocab, const rl_sample_row *rows)
{
    float *copy = gu_copy(g, logits, (size_t)n * vocab), *logp = gu_host(g, n * 4);
    GU_CPU_OK(g, rl_cpu_sample(&g->cpu, tok, logp, copy, n, vocab, rows));
}

Test(gpu_ctx, scratch_in_and_after_a_capture)
{
    gu g;
    gu_begin(&g);
    enum { SMALL = 4, BIG = 300, VOCAB = 151936 };
    float *logits = gu_rand(&g, (size_t)BIG * VOCAB, -5, 5, 3);
    float *d_logits = gu_up_f32(&g, logits, (size_t)BIG * VOCAB);
    rl_sample_row rows[BIG];
    for (int r = 0; r < BIG; r++) rows[r] = (rl_sample_row){.temperature = 0.9f, .top_p = 1, .seed = 11, .row = (uint32_t)r};
    rl_sample_row *d_rows = gu_up_bytes(&g, rows, sizeof rows);
    int32_t *d_tok = gu_dev(&g, BIG * 4);
    float *d_logp = gu_dev(&g, BIG * 4);

    /* warm: scratch sized for SMALL rows, then captured */
    GU_OK(&g, rl_sample(&g.gpu, d_tok, d_logp, d_logits, SMALL, VOCAB, d_rows));
    GU_OK(&g, rl_sync(&g.gpu));
    GU_OK(&g, rl_graph_capture_begin(&g.gpu));
    GU_OK(&g, rl_sample(&g.gpu, d_tok, d_logp, d_logits, SMALL, VOCAB, d_rows));
    rl_graph *graph;
    GU_OK(&g, rl_graph_capture_end(&g.gpu, &graph));

    /* growing inside a capture fails with a message */
    GU_OK(&g, rl_graph_capture_begin(&g.gpu));
    cr_assert_eq(rl_sample(&g.gpu, d_tok, d_logp, d_logits, BIG, VOCAB, d_rows), -1);
    cr_assert(strstr(g.gpu.err.msg, "inside a graph capture"), "%s", g.gpu.err.msg);
    rl_graph *unused = NULL;
    rl_graph_capture_end(&g.gpu, &unused);
    rl_graph_free(&g.gpu, unused);

    /* scratch grows outside, then the old graph replays with its own buffer */
    GU_OK(&g, rl_sample(&g.gpu, d_tok, d_logp, d_logits, BIG, VOCAB, d_rows));
    int32_t want[BIG], got[BIG];
    cpu_tokens(&g, want, logits, BIG, VOCAB, rows);
    cr_assert_eq(rl_memcpy(&g.gpu, got, d_tok, sizeof got, RL_D2H), 0);
    cr_assert(!memcmp(got, want, sizeof got), "the sample over %d rows differs from the CPU", BIG);
    GU_OK(&g, rl_memzero(&g.gpu, d_tok, BIG * 4));
    GU_OK(&g, rl_graph_launch(&g.gpu, graph));
    cr_assert_eq(rl_memcpy(&g.gpu, got, d_tok, sizeof got, RL_D2H), 0);
    cr_assert(!memcmp(got, want, SMALL * 4), "the replay after scratch grew sampled other tokens");
    for (int r = SMALL; r < BIG; r++) cr_assert_eq(got[r], 0, "the replay wrote row %d", r);
    fprintf(stderr, "[err] graph replay after scratch growth: %d rows exact\n", SMALL);
    rl_graph_free(&g.gpu, graph);
    gu_end(&g);
}
