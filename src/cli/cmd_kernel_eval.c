/* cmd_kernel_eval.c — `rlc kernel-eval`: scores kernel candidates against a task
 * (docs/kernel-env.md): a native task directory with a CUDA candidate, or a KernelBench
 * problem file (*.py) with a Python candidate defining ModelNew.
 *
 *   rlc kernel-eval TASK CANDIDATE [--json] [options]
 *   rlc kernel-eval --batch [options] < requests.jsonl > results.jsonl
 *
 * The protocol's parameters come from protocol.json (--protocol FILE), single ones overridden
 * by flags. Batch mode runs the pool's threads (kpool.h); each takes the next request line,
 * compiles it once one of --jobs compile slots is free, then waits for a free GPU slot of the
 * pool (pinned by CUDA_VISIBLE_DEVICES) and writes one result line (the request's "id" echoed)
 * as soon as it is done. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/file.h"
#include "io/json.h"
#include "reward/kernel_env/kdiag.h"
#include "reward/kernel_env/kenv.h"
#include "reward/kernel_env/kpool.h"

static const char usage[] =
    "usage: rlc kernel-eval TASK CANDIDATE [--json] [options]\n"
    "       rlc kernel-eval --batch [options] < requests.jsonl\n\n"
    "Runs the evaluation protocol for one candidate against the task's reference on a GPU and\n"
    "prints the result (status, checks, times, speedup, reward). TASK is either a task directory\n"
    "(spec.json, reference.cu; CANDIDATE is a .cu defining rl_kernel, compiled with nvcc and run\n"
    "by rlc-kernel-worker) or a KernelBench problem file PROBLEM.py (Model, get_inputs,\n"
    "get_init_inputs; CANDIDATE is a .py defining ModelNew, run by kernelbench_worker.py under\n"
    "--python, which needs torch). Batch requests are JSON lines {\"id\", \"task\": DIR | FILE.py,\n"
    "\"candidate\": PATH | \"source\": TEXT}; one result line each, candidates spread over the\n"
    "visible GPUs. The protocol's parameters come from --protocol; the flags that name a\n"
    "protocol key override that one value (in the range protocol.json must respect).\n\n";

/* Batch mode: request lines from stdin, result lines to stdout as they finish. */
typedef struct batch {
    pthread_mutex_t out_lock;
    long line_no;
} batch;

typedef struct request_line {
    char *text;
    size_t len;
    long line_no;
} request_line;

static void *next_line(void *user)
{
    batch *b = user;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        b->line_no++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if (n == 0) continue;
        request_line *r = malloc(sizeof *r);
        if (!r) break;
        *r = (request_line){line, (size_t)n, b->line_no};
        return r;
    }
    free(line);
    return NULL;
}

/* One request line -> its result record, the request's "id" echoed (the line number without one). */
static cJSON *eval_request(rl_kenv_pool *pool, const request_line *rq)
{
    rl_err err;
    char what[64];
    snprintf(what, sizeof what, "stdin line %ld", rq->line_no);
    cJSON *req = rl_json_parse(rq->text, rq->len, what, &err), *res = NULL;
    const char *task = NULL, *cand = NULL, *src = NULL;
    if (req && !cJSON_IsObject(req)) rl_err_set(&err, "%s: must be a JSON object", what);
    else if (req && (rl_json_string(req, "task", &task, 1, what, &err) || rl_json_string(req, "candidate", &cand, 0, what, &err) ||
                     rl_json_string(req, "source", &src, 0, what, &err)))
        task = NULL;
    else if (req && !cand == !src)
        rl_err_set(&err, "%s: give exactly one of 'candidate' (a path) and 'source' (the code)", what), task = NULL;
    if (task) {
        char *text = NULL;
        size_t n = 0;
        rl_kenv_result r;
        if (!(cand && rl_file_read_all(cand, &text, &n, &err)) &&
            !rl_kenv_pool_eval(pool, task, cand ? text : src, cand ? n : strlen(src), &r, &err))
            res = r.json, r.json = NULL;
        free(text);
    }
    if (!res) {
        res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "status", "error");
        cJSON_AddStringToObject(res, "failure", err.msg);
        cJSON_AddNullToObject(res, "reward");
    }
    const cJSON *id = cJSON_IsObject(req) ? cJSON_GetObjectItemCaseSensitive(req, "id") : NULL;
    cJSON_AddItemToObject(res, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNumber((double)rq->line_no));
    cJSON_Delete(req);
    return res;
}

static void run_line(void *user, rl_kenv_pool *pool, void *work)
{
    batch *b = user;
    request_line *rq = work;
    cJSON *res = eval_request(pool, rq);
    char *text = cJSON_PrintUnformatted(res);
    cJSON_Delete(res);
    pthread_mutex_lock(&b->out_lock);
    if (text) printf("%s\n", text);
    fflush(stdout);
    pthread_mutex_unlock(&b->out_lock);
    free(text);
    free(rq->text);
    free(rq);
}

static int batch_run(const rl_kenv_opts *o, int gpus, int jobs)
{
    rl_kenv_pool *pool;
    rl_err err;
    if (rl_kenv_pool_create(&pool, o, gpus, &err)) {
        fprintf(stderr, "rlc kernel-eval: %s (--gpus N skips the query)\n", err.msg);
        return RL_EXIT_FAILURE;
    }
    batch b = {.line_no = 0};
    pthread_mutex_init(&b.out_lock, NULL);
    rl_kenv_feed feed = {&b, next_line, run_line};
    rl_kenv_pool_run(pool, jobs, &feed);
    pthread_mutex_destroy(&b.out_lock);
    rl_kenv_pool_free(pool);
    return RL_EXIT_OK;
}

static void print_human(const rl_kenv_result *r)
{
    printf("status   %s\n", rl_kenv_status_names[r->status]);
    if (r->has_reward) printf("reward   %.3f\n", r->reward);
    if (r->failure) printf("failure  %s\n", r->failure);
    if (r->timed)
        printf("time     reference %.4f ms, candidate %.4f ms, speedup %.2fx%s\n", r->ref_ms, r->cand_ms, r->speedup,
               r->noisy ? " (noisy)" : "");
    for (int i = 0; i < r->findings.n; i++)
        printf("static   %s%s\n", r->findings.items[i].detail, r->findings.items[i].fatal ? " [fatal]" : "");
    if (r->compile_log) printf("%s", r->compile_log);
}

/* Prints the protocol that a run with these options would use (for --help). */
static void print_protocol(rl_kenv_opts *o)
{
    rl_err err;
    if (rl_kenv_load_protocol(o, &err)) {
        printf("\nprotocol: not loaded (%s)\n", err.msg);
        return;
    }
    const rl_kproto *p = &o->proto;
    printf("\nprotocol: %s\n  random_trials %d, warmup %d, timed %d, input_copies %d, l2_flush_factor %g,\n"
           "  max_spread %g, spread_repeats %d, ref_slowdown_limit %g (+%g ms), watchdog_ms %d, mem_cap_mb %d,\n"
           "  timeout_s %g, compile_timeout_s %g; tolerance atol/rtol f32 %g/%g, f16 %g/%g, bf16 %g/%g, i32 %g/%g\n",
           o->protocol_path, p->random_trials, p->warmup, p->timed, p->input_copies, p->l2_flush_factor,
           p->max_spread, p->spread_repeats, p->ref_slowdown_limit, p->ref_slowdown_min_ms, p->watchdog_ms,
           p->mem_cap_mb, p->timeout_s, p->compile_timeout_s, p->tol.atol[0], p->tol.rtol[0], p->tol.atol[1],
           p->tol.rtol[1], p->tol.atol[2], p->tol.rtol[2], p->tol.atol[3], p->tol.rtol[3]);
}

/* The flags that override one protocol value each: option name, protocol key. */
static const char *const proto_flags[][2] = {
    {"timeout", "timeout_s"}, {"compile-timeout", "compile_timeout_s"}, {"trials", "random_trials"},
    {"timed", "timed"},       {"warmup", "warmup"},                     {"copies", "input_copies"},
    {"watchdog-ms", "watchdog_ms"}, {"mem-cap", "mem_cap_mb"}};
enum { N_PROTO_FLAGS = sizeof proto_flags / sizeof proto_flags[0] };

/* --sandbox-diag: which sandbox layer the GPU driver needs (kdiag.h); --sandbox-trace FILE: a
 * tracer preloaded into its probes (tools/kenv_trace.c). */
static int sandbox_diag;
static const char *sandbox_trace;

static int run(rl_kenv_opts *o, const char *const proto_values[N_PROTO_FLAGS], int batch_mode, int json, int gpus,
               int jobs, const char *task, const char *candidate)
{
    rl_err err;
    if (rl_kenv_load_protocol(o, &err)) {
        fprintf(stderr, "rlc kernel-eval: %s\n", err.msg);
        return RL_EXIT_FAILURE;
    }
    if (sandbox_trace && !sandbox_diag) {
        fprintf(stderr, "rlc kernel-eval: --sandbox-trace goes with --sandbox-diag\n");
        return RL_EXIT_USAGE;
    }
    if (sandbox_diag) {
        if (task || batch_mode) {
            fprintf(stderr, "rlc kernel-eval: --sandbox-diag takes no TASK, CANDIDATE or --batch\n");
            return RL_EXIT_USAGE;
        }
        if (sandbox_trace && !rl_file_exists(sandbox_trace)) {
            fprintf(stderr, "rlc kernel-eval: --sandbox-trace %s: no such file\n", sandbox_trace);
            return RL_EXIT_USAGE;
        }
        int rc = rl_kdiag_run(o, sandbox_trace, 1, stdout, &err);
        if (rc < 0) fprintf(stderr, "rlc kernel-eval: %s\n", err.msg);
        return rc ? RL_EXIT_FAILURE : RL_EXIT_OK;
    }
    for (int k = 0; k < N_PROTO_FLAGS; k++) {
        char what[64];
        snprintf(what, sizeof what, "--%s", proto_flags[k][0]);
        if (proto_values[k] && rl_kproto_set(&o->proto, proto_flags[k][1], proto_values[k], what, &err)) {
            fprintf(stderr, "rlc kernel-eval: %s\n", err.msg);
            return RL_EXIT_USAGE;
        }
    }
    if (batch_mode) {
        if (task) {
            fprintf(stderr, "rlc kernel-eval: --batch reads requests from stdin and takes no TASK/CANDIDATE\n");
            return RL_EXIT_USAGE;
        }
        return batch_run(o, gpus, jobs);
    }
    if (!candidate) {
        fprintf(stderr, "rlc kernel-eval: TASK and CANDIDATE are required without --batch (see --help)\n");
        return RL_EXIT_USAGE;
    }
    char *text = NULL;
    size_t len = 0;
    if (rl_file_read_all(candidate, &text, &len, &err)) {
        fprintf(stderr, "rlc kernel-eval: %s\n", err.msg);
        return RL_EXIT_FAILURE;
    }
    rl_kenv_result res;
    int rc = rl_kenv_eval(o, task, text, len, &res, &err);
    free(text);
    if (rc) {
        fprintf(stderr, "rlc kernel-eval: %s\n", err.msg);
        return RL_EXIT_FAILURE;
    }
    if (json) {
        char *s = cJSON_PrintUnformatted(res.json);
        if (s) printf("%s\n", s);
        free(s);
    } else {
        print_human(&res);
    }
    rc = res.status == RL_KENV_ERROR ? RL_EXIT_FAILURE : RL_EXIT_OK;
    if (rc) fprintf(stderr, "rlc kernel-eval: %s\n", res.failure ? res.failure : "evaluation failed");
    rl_kenv_result_free(&res);
    return rc;
}

int rl_cmd_kernel_eval(int argc, char **argv)
{
    rl_kenv_opts o;
    rl_kenv_paths paths;
    rl_kenv_opts_default(&o, &paths);
    int json = 0, batch_mode = 0, gpus = 0, jobs = 0;
    const char *task = NULL, *candidate = NULL, *proto_values[N_PROTO_FLAGS] = {NULL};
    rl_opt list[] = {
        RL_OPT_P("TASK", &task, "task directory or KernelBench problem file"),
        RL_OPT_P("CANDIDATE", &candidate, "the candidate's source file"),
        RL_OPT_F("json", &json, "print the result as JSON (single mode)"),
        RL_OPT_F("batch", &batch_mode, "read requests from stdin, one result line each"),
        RL_OPT_I("gpus", &gpus, 1, 16, "GPUs to use in batch mode (0 = all the worker sees)", .range.or_zero = 1),
        RL_OPT_I("jobs", &jobs, 1, 64, "compiles at once; compiled requests wait for a GPU meanwhile (0 = 2 per GPU worker or 1 per core, the more)", .range.or_zero = 1),
        RL_OPT_I("gpu-workers", &o.gpu_workers, 1, 16,
                 "workers at once per GPU: correctness shared, timing exclusive by a lock (0 = 4)", .range.or_zero = 1),
        RL_OPT_I("gpu-workers-idle", &o.gpu_workers_idle, -1, 32,
                 "workers per GPU while compile slots are idle, at the end of a batch (0 = 2 x --gpu-workers, "
                 "-1 = --gpu-workers)"),
        RL_OPT_S("protocol", &o.protocol_path, "FILE", "protocol parameters (protocol.json)"),
        RL_OPT_S("worker", &o.worker, "PATH", "rlc-kernel-worker"),
        RL_OPT_S("python", &o.python, "PATH", "Python with torch for KernelBench tasks"),
        RL_OPT_S("kb-worker", &o.kb_worker, "PATH", "kernelbench_worker.py"),
        RL_OPT_S("nvcc", &o.nvcc, "PATH", "CUDA compiler"),
        RL_OPT_S("cache", &o.cache_dir, "DIR", "compiled modules"),
        RL_OPT_S("include", &o.include_dir, "DIR", "directory of rl_kernel.h"),
        RL_OPT_S("arch", &o.arch, "A", "GPU architecture"),
        RL_OPT_S("timeout", &proto_values[0], "S", "worker wall time per candidate (protocol timeout_s; KernelBench: plus compile_timeout_s)"),
        RL_OPT_S("compile-timeout", &proto_values[1], "S", "nvcc wall time (protocol compile_timeout_s)"),
        RL_OPT_S("trials", &proto_values[2], "N", "random trials at the timed size (protocol random_trials)"),
        RL_OPT_S("timed", &proto_values[3], "N", "timed runs per side (protocol timed)"),
        RL_OPT_S("warmup", &proto_values[4], "N", "warm-up runs per side (protocol warmup)"),
        RL_OPT_S("copies", &proto_values[5], "K", "input copies rotated in timing (protocol input_copies)"),
        RL_OPT_S("watchdog-ms", &proto_values[6], "MS", "limit for one call plus synchronize (protocol watchdog_ms)"),
        RL_OPT_S("mem-cap", &proto_values[7], "MB", "GPU memory a candidate may keep (protocol mem_cap_mb)"),
        RL_OPT_F("keep-going", &o.keep_going, "run the GPU protocol even after a fatal static finding"),
        RL_OPT_F("no-sandbox", &o.no_sandbox, "run workers and nvcc without the sandbox (docs/kernel-env.md; debugging)"),
        RL_OPT_S("kb-pch", &o.kb_pch, "DIR", "KernelBench: the precompiled torch header's directory (default <cache>/kb-pch-*)"),
        RL_OPT_F("kb-no-pch", &o.kb_no_pch, "KernelBench: no precompiled torch header (each build parses it)"),
        RL_OPT_F("kb-no-light", &o.kb_no_light,
                 "KernelBench: nvcc gets the candidate's torch/extension.h, not the lighter one first"),
        RL_OPT_F("profile", &o.profile, "also time each GPU kernel of one call per side (the result's \"profile\")"),
        RL_OPT_F("sandbox-diag", &sandbox_diag,
                 "run the GPU probe of both workers under each sandbox layer and variant and print which sees the GPU"),
        RL_OPT_S("sandbox-trace", &sandbox_trace, "SO", "with --sandbox-diag: preload this tracer into the probes"),
        RL_OPT_F("require-kernel", &o.require_kernel,
                 "KernelBench: ModelNew must launch a GPU kernel its own code defines (else status disallowed)"),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "kernel-eval", .usage = usage, .list = list};
    int status = rl_opts_parse(&cli, argc, argv);
    if (status == RL_EXIT_OK) print_protocol(&o); /* --help was given */
    if (status == RL_OPTS_CONTINUE) status = run(&o, proto_values, batch_mode, json, gpus, jobs, task, candidate);
    rl_opts_free(&cli);
    return status;
}
