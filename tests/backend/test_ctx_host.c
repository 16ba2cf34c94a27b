/* test_ctx_host.c — the CPU side of ctx.h's engine calls: host memory for asynchronous copies
 * (aligned, copies land at once), events that are no-ops, graphs that are refused with a
 * message, and rl_mem_info (MemAvailable within MemTotal, both plausible). */
#include "op_fixture.h"

Test(ctx_host, async_copies_events_and_host_memory)
{
    rl_ctx ctx = fx_cpu();
    float *h = rl_alloc_host(&ctx, 1000 * sizeof(float)), *d = rl_alloc(&ctx, 1000 * sizeof(float));
    cr_assert(h && d, "%s", ctx.err.msg);
    cr_assert_eq((uintptr_t)h % 256, 0, "host memory must be 256-byte aligned");
    tu_fill_uniform(h, 1000, -1, 1, 3);
    rl_event *ev;
    cr_assert_eq(rl_event_create(&ctx, &ev), 0);
    cr_assert_eq(rl_memcpy_async(&ctx, d, h, 1000 * sizeof(float), RL_H2D), 0);
    cr_assert_eq(rl_event_record(&ctx, ev), 0);
    cr_assert_eq(rl_event_wait_host(&ctx, ev), 0);
    cr_assert(!memcmp(h, d, 1000 * sizeof(float)));
    rl_event_free(&ctx, ev);
    rl_free(&ctx, d);
    rl_free_host(&ctx, h);
}

Test(ctx_host, graphs_are_refused_on_the_cpu)
{
    rl_ctx ctx = fx_cpu();
    rl_graph *g = (rl_graph *)&ctx;
    cr_assert_eq(rl_graph_supported(&ctx), 0);
    cr_assert_eq(rl_graph_capture_begin(&ctx), -1);
    cr_assert(strstr(ctx.err.msg, "graphs: the cpu backend cannot capture ops"), "%s", ctx.err.msg);
    cr_assert_eq(rl_graph_capture_end(&ctx, &g), -1);
    cr_assert_null(g, "a refused capture gives no graph");
    rl_graph_free(&ctx, NULL);
}

Test(ctx_host, memory_info)
{
    rl_ctx ctx = fx_cpu();
    size_t free_bytes = 0, total_bytes = 0;
    cr_assert_eq(rl_mem_info(&ctx, &free_bytes, &total_bytes), 0, "%s", ctx.err.msg);
    cr_log_info("host memory: %.2f GiB available of %.2f GiB", free_bytes / 1073741824.0, total_bytes / 1073741824.0);
    cr_assert(total_bytes >= ((size_t)64 << 20) && free_bytes > 0 && free_bytes <= total_bytes,
              "available %zu of %zu bytes", free_bytes, total_bytes);
}
