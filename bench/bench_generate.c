/* bench_generate.c — generation throughput of the engine (issue 10's workloads) on a randomly
 * initialised model, with a progress line and a table.
 *
 * usage: bench_generate CONFIG_JSON [WORKLOAD ...] [--device cuda|cpu] [--max-num-seqs N]
 *        [--max-num-batched-tokens N] [--gpu-memory-utilization X] [--block-size N]
 *        [--max-model-len N] [--deterministic] [--no-graphs] [--write DIR]
 * Workloads (random prompt ids in [0, 10000], every sample runs to its own max_tokens with eos
 * ignored, seed 0 for the lengths and ids, sampling seed 0):
 *   a  nano-vllm's bench.py protocol: 256 sequences, prompt and output lengths uniform in
 *      [100, 1024], temperature 0.6
 *   b  64 sequences, prompt and output lengths uniform in [100, 4096], temperature 1
 *   c  256 sequences, 128-token prompts -> 256 new tokens, temperature 1
 *   d  batch 1, 128 -> 256: decode latency per token = (time for 256 - time for 1) / 255
 *   e  a GRPO rollout: 8 prompts x 8 samples (groups share their prompt), ~130-token prompts
 *      (uniform in [120, 140]) -> 256 new tokens, temperature 1
 *   NAME=N:PLO-PHI:OLO-OHI  a custom one (N sequences, prompt and output length ranges)
 * Default: a b c d e. Each runs once with every max_tokens cut to 8 (warm-up: pool, graphs),
 * then timed with rl_sync on a host clock. d, a 0.2 s run, is measured as vLLM's latency
 * benchmark measures (its defaults: 10 warm-up iterations of the whole request, then the mean
 * of 30): D_WARMUP whole runs, then the median of D_RUNS runs of 256 tokens and of 1 token (its
 * line also gives the slowest run's latency). A single run after one short warm-up depended on
 * the GPU's state more than on the code: 0.92 ms/token alone in a process, 0.79 right after
 * other workloads, same binary, same H100. Throughput counts generated tokens (as nano-vllm
 * does). The table lists seconds, generated tokens/s, engine steps (decode steps replayed as
 * graphs), preemptions and the most KV blocks held; one line per workload for scripts:
 *   "rlc generate workload=<w> n=<N> prompt_tokens=<P> output_tokens=<O> seconds=<s>
 *    tokens_per_s=<rate> [ms_per_token=<m> ms_per_token_slowest=<m>] steps=<k> graph_replays=<g> preemptions=<p>
 *    peak_blocks=<b> pool_blocks=<B> pool_gib=<G>"
 * --write DIR writes each workload's requests to DIR/<w>.jsonl ({"prompt_ids", "max_tokens",
 * "temperature"} lines) for bench/bench_generate_hf.py to run the same requests through
 * transformers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/ctx.h"
#include "core/rng.h"
#include "core/timer.h"
#include "engine/generate.h"
#include "io/config.h"

typedef struct workload {
    char name[32];
    int n, p_lo, p_hi, o_lo, o_hi, group;
    float temperature;
} workload;

typedef struct requests {
    rl_gen_prompt *prompts;
    rl_gen_params *params;
    int32_t *ids;
    long prompt_tokens, output_tokens;
} requests;

typedef struct progress {
    const char *name;
    int done, n;
    double t0, last;
} progress;

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "bench_generate: %s: %s\n", what, msg);
    return 1;
}

static int builtin(const char *name, workload *w)
{
    static const workload all[] = {
        {"a", 256, 100, 1024, 100, 1024, 1, 0.6f}, {"b", 64, 100, 4096, 100, 4096, 1, 1.0f},
        {"c", 256, 128, 128, 256, 256, 1, 1.0f},   {"d", 1, 128, 128, 256, 256, 1, 1.0f},
        {"e", 64, 120, 140, 256, 256, 8, 1.0f},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(all[i].name, name)) {
            *w = all[i];
            return 0;
        }
    memset(w, 0, sizeof *w);
    const char *eq = strchr(name, '=');
    if (!eq || (size_t)(eq - name) >= sizeof w->name ||
        sscanf(eq + 1, "%d:%d-%d:%d-%d", &w->n, &w->p_lo, &w->p_hi, &w->o_lo, &w->o_hi) != 5 || w->n < 1 ||
        w->p_lo < 1 || w->p_hi < w->p_lo || w->o_lo < 1 || w->o_hi < w->o_lo)
        return -1;
    memcpy(w->name, name, (size_t)(eq - name));
    w->group = 1;
    w->temperature = 1.0f;
    return 0;
}

static int uniform(rl_rng *rng, int lo, int hi) { return lo + (int)rl_rng_below(rng, (uint32_t)(hi - lo + 1)); }

/* The workload's requests: groups of w->group samples share a prompt (and its parameters). */
static int make_requests(const workload *w, int vocab, requests *r)
{
    rl_rng rng;
    rl_rng_init(&rng, 0);
    memset(r, 0, sizeof *r);
    r->prompts = calloc((size_t)w->n, sizeof *r->prompts);
    r->params = calloc((size_t)w->n, sizeof *r->params);
    r->ids = malloc((size_t)w->n * (size_t)w->p_hi * sizeof *r->ids);
    if (!r->prompts || !r->params || !r->ids) return -1;
    int id_max = vocab - 1 < 10000 ? vocab - 1 : 10000;
    for (int i = 0; i < w->n; i++) {
        int32_t *ids = r->ids + (size_t)i * w->p_hi;
        rl_gen_params *p = &r->params[i];
        if (i % w->group == 0) {
            int len = uniform(&rng, w->p_lo, w->p_hi);
            for (int t = 0; t < len; t++) ids[t] = uniform(&rng, 0, id_max);
            *p = rl_gen_params_default();
            p->sample.temperature = w->temperature;
            p->max_new_tokens = uniform(&rng, w->o_lo, w->o_hi);
            p->ignore_eos = 1;
            r->prompts[i] = (rl_gen_prompt){.ids = ids, .n_ids = len, .params = p, .sample = i};
        } else {
            *p = r->params[i - 1];
            r->prompts[i] = r->prompts[i - 1];
            r->prompts[i].params = p;
            r->prompts[i].sample = i;
        }
        r->prompt_tokens += r->prompts[i].n_ids;
        r->output_tokens += p->max_new_tokens;
    }
    return 0;
}

static void free_requests(requests *r)
{
    free(r->prompts);
    free(r->params);
    free(r->ids);
}

static int write_requests(const char *dir, const workload *w, const requests *r)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.jsonl", dir, w->name);
    FILE *f = fopen(path, "w");
    if (!f) return fail(path, strerror(errno));
    for (int i = 0; i < w->n; i++) {
        fprintf(f, "{\"prompt_ids\": [");
        for (int t = 0; t < r->prompts[i].n_ids; t++) fprintf(f, t ? ", %d" : "%d", r->prompts[i].ids[t]);
        fprintf(f, "], \"max_tokens\": %d, \"temperature\": %g}\n", r->params[i].max_new_tokens,
                r->params[i].sample.temperature);
    }
    return fclose(f) ? fail(path, strerror(errno)) : 0;
}

static void on_done(void *user, int index, const rl_gen_result *result)
{
    (void)index, (void)result;
    progress *p = user;
    p->done++;
    double now = rl_time_now();
    if (now - p->last < 0.5 && p->done < p->n) return;
    p->last = now;
    fprintf(stderr, "\r[%s] %d/%d sequences done, %.1f s", p->name, p->done, p->n, now - p->t0);
    if (p->done == p->n) fputc('\n', stderr);
}

/* One timed call; every result must have run to its max_tokens. */
static int run_once(rl_engine *e, rl_ctx *ctx, const workload *w, const requests *r, int max_tokens_cap,
                    double *seconds, rl_err *err)
{
    rl_gen_params *capped = malloc((size_t)w->n * sizeof *capped);
    rl_gen_prompt *prompts = malloc((size_t)w->n * sizeof *prompts);
    rl_gen_result *results = calloc((size_t)w->n, sizeof *results);
    if (!capped || !prompts || !results) return rl_err_set(err, "out of memory");
    for (int i = 0; i < w->n; i++) {
        capped[i] = r->params[i];
        if (max_tokens_cap && capped[i].max_new_tokens > max_tokens_cap) capped[i].max_new_tokens = max_tokens_cap;
        prompts[i] = r->prompts[i];
        prompts[i].params = &capped[i];
    }
    progress p = {.name = w->name, .n = w->n};
    if (rl_sync(ctx)) return rl_err_set(err, "%s", ctx->err.msg);
    p.t0 = p.last = rl_time_now();
    int rc = rl_engine_generate(e, prompts, w->n, &capped[0], results, max_tokens_cap ? NULL : on_done, &p, err);
    if (rc == 0 && rl_sync(ctx)) rc = rl_err_set(err, "%s", ctx->err.msg);
    *seconds = rl_time_now() - p.t0;
    for (int i = 0; rc == 0 && i < w->n; i++)
        if (results[i].n_ids != capped[i].max_new_tokens)
            rc = rl_err_set(err, "sequence %d stopped after %d of %d tokens", i, results[i].n_ids, capped[i].max_new_tokens);
    for (int i = 0; i < w->n; i++) rl_gen_result_free(&results[i]);
    free(results), free(prompts), free(capped);
    return rc;
}

#define D_WARMUP 10
#define D_RUNS 5

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Workload d: the median seconds of D_RUNS whole runs and of D_RUNS one-token runs, after
 * D_WARMUP whole runs; *worst_ms the slowest whole run's latency per token. */
static int latency_runs(rl_engine *e, rl_ctx *ctx, const workload *w, const requests *r, double *seconds, double *one,
                        double *worst_ms, rl_err *err)
{
    double full[D_RUNS], first[D_RUNS], warm;
    for (int i = 0; i < D_WARMUP; i++)
        if (run_once(e, ctx, w, r, 0, &warm, err)) return -1;
    for (int i = 0; i < D_RUNS; i++) /* the whole runs last: the table's engine statistics are theirs */
        if (run_once(e, ctx, w, r, 1, &first[i], err)) return -1;
    for (int i = 0; i < D_RUNS; i++)
        if (run_once(e, ctx, w, r, 0, &full[i], err)) return -1;
    qsort(full, D_RUNS, sizeof full[0], cmp_double);
    qsort(first, D_RUNS, sizeof first[0], cmp_double);
    *seconds = full[D_RUNS / 2];
    *one = first[D_RUNS / 2];
    *worst_ms = 1000.0 * (full[D_RUNS - 1] - *one) / (double)(r->output_tokens - 1);
    return 0;
}

static int run_workload(rl_engine *e, rl_ctx *ctx, const workload *w, const requests *r, FILE *table, rl_err *err)
{
    double warm, seconds, ms_per_token = 0, worst_ms = 0;
    if (!strcmp(w->name, "d")) {
        double one;
        if (latency_runs(e, ctx, w, r, &seconds, &one, &worst_ms, err)) return -1;
        ms_per_token = 1000.0 * (seconds - one) / (double)(r->output_tokens - 1);
    } else if (run_once(e, ctx, w, r, 8, &warm, err) || run_once(e, ctx, w, r, 0, &seconds, err)) {
        return -1;
    }
    rl_engine_stats st;
    rl_engine_stats_get(e, &st);
    double rate = (double)r->output_tokens / seconds, gib = (double)st.pool_bytes / (1 << 30);
    printf("rlc generate workload=%s n=%d prompt_tokens=%ld output_tokens=%ld seconds=%.3f tokens_per_s=%.1f", w->name,
           w->n, r->prompt_tokens, r->output_tokens, seconds, rate);
    if (ms_per_token > 0) printf(" ms_per_token=%.3f ms_per_token_slowest=%.3f", ms_per_token, worst_ms);
    printf(" steps=%ld graph_replays=%ld preemptions=%ld peak_blocks=%d pool_blocks=%d pool_gib=%.2f\n", st.steps,
           st.graph_replays, st.preemptions, st.peak_blocks, st.n_blocks, gib);
    char latency[32] = "-";
    if (ms_per_token > 0) snprintf(latency, sizeof latency, "%.3f", ms_per_token);
    fprintf(table, "%-10s %5d %9ld %9ld %9.2f %11.1f %9s %7ld %7ld %7ld %6d/%d\n", w->name, w->n, r->prompt_tokens,
            r->output_tokens, seconds, rate, latency, st.steps, st.graph_replays, st.preemptions, st.peak_blocks,
            st.n_blocks);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: bench_generate CONFIG_JSON [a b c d e NAME=N:PLO-PHI:OLO-OHI ...] [--device cuda|cpu] "
                        "[--max-num-seqs N] [--max-num-batched-tokens N] [--gpu-memory-utilization X] [--block-size N] "
                        "[--max-model-len N] [--deterministic] [--no-graphs] [--write DIR]\n");
        return 2;
    }
    rl_engine_options opt = rl_engine_options_default();
    const char *names[16], *write_dir = NULL;
    int n_names = 0, cuda = 1, deterministic = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--deterministic")) deterministic = 1;
        else if (!strcmp(a, "--no-graphs")) opt.graphs = 0;
        else if (a[0] == '-' && a[1] == '-' && !v) return fail(a, "needs a value");
        else if (!strcmp(a, "--device") && ++i) cuda = strcmp(v, "cpu") != 0;
        else if (!strcmp(a, "--max-num-seqs") && ++i) opt.max_num_seqs = atoi(v);
        else if (!strcmp(a, "--max-num-batched-tokens") && ++i) opt.max_num_batched_tokens = atoi(v);
        else if (!strcmp(a, "--gpu-memory-utilization") && ++i) opt.gpu_memory_utilization = atof(v);
        else if (!strcmp(a, "--block-size") && ++i) opt.block_size = atoi(v);
        else if (!strcmp(a, "--max-model-len") && ++i) opt.max_model_len = atoi(v);
        else if (!strcmp(a, "--write") && ++i) write_dir = v;
        else if (a[0] == '-') return fail(a, "unknown option");
        else if (n_names < 16) names[n_names++] = a;
    }
    static const char *defaults[] = {"a", "b", "c", "d", "e"};
    if (n_names == 0)
        for (n_names = 0; n_names < 5; n_names++) names[n_names] = defaults[n_names];

    rl_err err = {{0}};
    rl_model_config cfg;
    rl_ctx ctx;
    rl_model m;
    rl_engine *e;
    if (rl_config_load(&cfg, argv[1], &err)) return fail("config", err.msg);
    if (rl_ctx_create(&ctx, cuda ? RL_BACKEND_CUDA : RL_BACKEND_CPU, 0, &err)) return fail("context", err.msg);
    ctx.deterministic = deterministic;
    if (rl_model_init_random(&m, &ctx, &cfg, 1, &err)) return fail("model", err.msg);
    if (rl_engine_create(&e, &m, NULL, &opt, &err)) return fail("engine", err.msg);
    if (write_dir && mkdir(write_dir, 0755) && errno != EEXIST) return fail(write_dir, strerror(errno));
    char table_text[8192] = "";
    FILE *table = fmemopen(table_text, sizeof table_text, "w");
    fprintf(table, "%-10s %5s %9s %9s %9s %11s %9s %7s %7s %7s %s\n", "workload", "seqs", "prompt", "output", "seconds",
            "out tok/s", "ms/token", "steps", "graphs", "preempt", "peak/pool blocks");
    int status = 0;
    for (int k = 0; k < n_names && !status; k++) {
        workload w;
        requests r;
        if (builtin(names[k], &w)) return fail(names[k], "not a workload (a-e or NAME=N:PLO-PHI:OLO-OHI)");
        if (make_requests(&w, cfg.vocab_size, &r)) return fail(names[k], "out of memory");
        if (write_dir) status = write_requests(write_dir, &w, &r);
        if (!status && run_workload(e, &ctx, &w, &r, table, &err)) status = fail(w.name, err.msg);
        free_requests(&r);
    }
    fclose(table);
    printf("== %s, %s%s, max_num_seqs %d, max_num_batched_tokens %d, block size %d, gpu_memory_utilization %.2f\n%s",
           argv[1], rl_backend_name(&ctx), deterministic ? " deterministic" : "", opt.max_num_seqs,
           opt.max_num_batched_tokens, opt.block_size, opt.gpu_memory_utilization, table_text);
    rl_engine_free(e);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
    return status;
}
