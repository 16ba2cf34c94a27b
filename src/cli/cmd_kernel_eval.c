/* cmd_kernel_eval.c — `rlc kernel-eval`: scores kernel candidates against a task
 * (docs/kernel-env.md): a native task directory with a CUDA candidate, or a KernelBench
 * problem file (*.py) with a Python candidate defining ModelNew.
 *
 *   rlc kernel-eval TASK CANDIDATE [--json] [options]
 *   rlc kernel-eval --batch [options] < requests.jsonl > results.jsonl
 *
 * The protocol's parameters come from protocol.json (--protocol FILE), single ones overridden
 * by flags. Batch mode runs --jobs threads; each takes the next request line, compiles it
 * (native tasks), then waits for a free GPU of the pool (one worker per GPU at a time, pinned
 * by CUDA_VISIBLE_DEVICES) and writes one result line (the request's "id" echoed) as soon as
 * it is done. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "core/file.h"
#include "io/json.h"
#include "reward/kernel_env/kenv.h"

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

typedef struct batch {
    const rl_kenv_opts *opt;
    pthread_mutex_t in_lock, out_lock, gpu_lock;
    pthread_cond_t gpu_free;
    char devices[16][32];
    int busy[16], n_gpus;
    long line_no;
} batch;

/* GPU pool: a worker runs only on a free GPU; compiles run in any thread meanwhile. */
static const char *gpu_acquire(void *ctx)
{
    batch *b = ctx;
    pthread_mutex_lock(&b->gpu_lock);
    for (;;) {
        for (int i = 0; i < b->n_gpus; i++)
            if (!b->busy[i]) {
                b->busy[i] = 1;
                pthread_mutex_unlock(&b->gpu_lock);
                return b->devices[i];
            }
        pthread_cond_wait(&b->gpu_free, &b->gpu_lock);
    }
}

static void gpu_release(void *ctx, const char *device)
{
    batch *b = ctx;
    pthread_mutex_lock(&b->gpu_lock);
    for (int i = 0; i < b->n_gpus; i++)
        if (b->devices[i] == device) b->busy[i] = 0;
    pthread_cond_signal(&b->gpu_free);
    pthread_mutex_unlock(&b->gpu_lock);
}

static cJSON *eval_request(const rl_kenv_opts *o, const char *line, size_t len, long line_no)
{
    rl_err err;
    char what[64], msg[1200];
    snprintf(what, sizeof what, "stdin line %ld", line_no);
    cJSON *req = rl_json_parse(line, len, what, &err);
    const char *task = NULL, *cand = NULL, *src = NULL;
    cJSON *res = NULL;
    if (req && !cJSON_IsObject(req)) {
        rl_err_set(&err, "%s: must be a JSON object", what);
        cJSON_Delete(req);
        req = NULL;
    }
    if (req && (rl_json_string(req, "task", &task, 1, what, &err) || rl_json_string(req, "candidate", &cand, 0, what, &err) ||
                rl_json_string(req, "source", &src, 0, what, &err)))
        task = NULL;
    if (req && task && !cand == !src) {
        rl_err_set(&err, "%s: give exactly one of 'candidate' (a path) and 'source' (the code)", what);
        task = NULL;
    }
    if (req && task) {
        char *text = NULL;
        size_t n = 0;
        if (cand && rl_file_read_all(cand, &text, &n, &err)) task = NULL;
        else res = rl_kenv_eval(o, task, cand ? text : src, cand ? n : strlen(src), &err);
        free(text);
    }
    if (!res) {
        res = cJSON_CreateObject();
        snprintf(msg, sizeof msg, "%s", err.msg);
        cJSON_AddStringToObject(res, "status", "error");
        cJSON_AddStringToObject(res, "failure", msg);
        cJSON_AddNullToObject(res, "reward");
    }
    const cJSON *id = req ? cJSON_GetObjectItemCaseSensitive(req, "id") : NULL;
    cJSON_AddItemToObject(res, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNumber((double)line_no));
    cJSON_Delete(req);
    return res;
}

static void *batch_main(void *arg)
{
    batch *b = arg;
    rl_kenv_opts o = *b->opt;
    o.gpu_acquire = gpu_acquire;
    o.gpu_release = gpu_release;
    o.gpu_ctx = b;
    char *line = NULL;
    size_t cap = 0;
    for (;;) {
        pthread_mutex_lock(&b->in_lock);
        ssize_t n = getline(&line, &cap, stdin);
        long line_no = ++b->line_no;
        pthread_mutex_unlock(&b->in_lock);
        if (n < 0) break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if (n == 0) continue;
        cJSON *res = eval_request(&o, line, (size_t)n, line_no);
        char *text = cJSON_PrintUnformatted(res);
        cJSON_Delete(res);
        pthread_mutex_lock(&b->out_lock);
        if (text) printf("%s\n", text);
        fflush(stdout);
        pthread_mutex_unlock(&b->out_lock);
        free(text);
    }
    free(line);
    return NULL;
}

/* Device names for the children: entries of the parent's CUDA_VISIBLE_DEVICES, or 0..n-1.
 * jobs threads take requests (compiles overlap); the GPU pool serializes workers per GPU. */
static int batch_run(const rl_kenv_opts *o, int gpus, int jobs)
{
    if (gpus <= 0) gpus = rl_kenv_count_gpus(o);
    if (gpus <= 0) {
        fprintf(stderr, "rlc kernel-eval: no GPU found: neither %s --count-devices nor %s with torch sees one "
                        "(--gpus N skips the query)\n", o->worker, o->python);
        return RL_EXIT_FAILURE;
    }
    if (gpus > 16) gpus = 16;
    batch b;
    memset(&b, 0, sizeof b);
    b.opt = o;
    pthread_mutex_init(&b.in_lock, NULL);
    pthread_mutex_init(&b.out_lock, NULL);
    pthread_mutex_init(&b.gpu_lock, NULL);
    pthread_cond_init(&b.gpu_free, NULL);
    b.n_gpus = gpus;
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    for (int i = 0; i < gpus; i++) {
        snprintf(b.devices[i], sizeof b.devices[i], "%d", i);
        if (vis && *vis) {
            const char *p = vis;
            for (int k = 0; k < i && p; k++) {
                p = strchr(p, ',');
                if (p) p++;
            }
            if (p) snprintf(b.devices[i], sizeof b.devices[i], "%.*s", (int)strcspn(p, ","), p);
        }
    }
    if (jobs <= 0) jobs = 2 * gpus;
    if (jobs > 64) jobs = 64;
    pthread_t th[64];
    for (int i = 0; i < jobs; i++) pthread_create(&th[i], NULL, batch_main, &b);
    for (int i = 0; i < jobs; i++) pthread_join(th[i], NULL);
    return RL_EXIT_OK;
}

static void print_human(const cJSON *res)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "status");
    const cJSON *rw = cJSON_GetObjectItemCaseSensitive(res, "reward");
    const cJSON *fa = cJSON_GetObjectItemCaseSensitive(res, "failure");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(res, "speedup");
    const cJSON *rm = cJSON_GetObjectItemCaseSensitive(res, "ref_ms");
    const cJSON *cm = cJSON_GetObjectItemCaseSensitive(res, "cand_ms");
    printf("status   %s\n", cJSON_IsString(st) ? st->valuestring : "?");
    if (cJSON_IsNumber(rw)) printf("reward   %.3f\n", rw->valuedouble);
    if (cJSON_IsString(fa)) printf("failure  %s\n", fa->valuestring);
    if (cJSON_IsObject(rm) && cJSON_IsObject(cm) && cJSON_IsNumber(sp)) {
        const cJSON *rmed = cJSON_GetObjectItemCaseSensitive(rm, "median"), *cmed = cJSON_GetObjectItemCaseSensitive(cm, "median");
        printf("time     reference %.4f ms, candidate %.4f ms, speedup %.2fx%s\n", cJSON_IsNumber(rmed) ? rmed->valuedouble : 0,
               cJSON_IsNumber(cmed) ? cmed->valuedouble : 0, sp->valuedouble,
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "noisy")) ? " (noisy)" : "");
    }
    const cJSON *stat = cJSON_GetObjectItemCaseSensitive(res, "static");
    for (const cJSON *f = stat ? stat->child : NULL; f; f = f->next) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(f, "detail");
        printf("static   %s%s\n", cJSON_IsString(d) ? d->valuestring : "", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "fatal")) ? " [fatal]" : "");
    }
    const cJSON *comp = cJSON_GetObjectItemCaseSensitive(res, "compile");
    const cJSON *log = comp ? cJSON_GetObjectItemCaseSensitive(comp, "log") : NULL;
    if (cJSON_IsString(st) && !strcmp(st->valuestring, "compile_error") && cJSON_IsString(log)) printf("%s", log->valuestring);
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

static int run(rl_kenv_opts *o, const char *const proto_values[N_PROTO_FLAGS], int batch_mode, int json, int gpus,
               int jobs, const char *task, const char *candidate)
{
    rl_err err;
    if (rl_kenv_load_protocol(o, &err)) {
        fprintf(stderr, "rlc kernel-eval: %s\n", err.msg);
        return RL_EXIT_FAILURE;
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
    cJSON *res = rl_kenv_eval(o, task, text, len, &err);
    free(text);
    if (!res) {
        fprintf(stderr, "rlc kernel-eval: %s\n", err.msg);
        return RL_EXIT_FAILURE;
    }
    if (json) {
        char *s = cJSON_PrintUnformatted(res);
        if (s) printf("%s\n", s);
        free(s);
    } else {
        print_human(res);
    }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "status");
    int rc = cJSON_IsString(st) && !strcmp(st->valuestring, "error") ? RL_EXIT_FAILURE : RL_EXIT_OK;
    if (rc) {
        const cJSON *fa = cJSON_GetObjectItemCaseSensitive(res, "failure");
        fprintf(stderr, "rlc kernel-eval: %s\n", cJSON_IsString(fa) ? fa->valuestring : "evaluation failed");
    }
    cJSON_Delete(res);
    return rc;
}

int rl_cmd_kernel_eval(int argc, char **argv)
{
    rl_kenv_opts o;
    rl_kenv_opts_default(&o);
    int json = 0, batch_mode = 0, gpus = 0, jobs = 0;
    const char *task = NULL, *candidate = NULL, *proto_values[N_PROTO_FLAGS] = {NULL};
    rl_opt list[] = {
        RL_OPT_P("TASK", &task, "task directory or KernelBench problem file"),
        RL_OPT_P("CANDIDATE", &candidate, "the candidate's source file"),
        RL_OPT_F("json", &json, "print the result as JSON (single mode)"),
        RL_OPT_F("batch", &batch_mode, "read requests from stdin, one result line each"),
        RL_OPT_I("gpus", &gpus, 1, 16, "GPUs to use in batch mode (0 = all the worker sees)", .range.or_zero = 1),
        RL_OPT_I("jobs", &jobs, 1, 64, "batch requests in flight; compiles overlap (0 = 2 per GPU)", .range.or_zero = 1),
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
        RL_OPT_END,
    };
    rl_opts cli = {"kernel-eval", usage, list, NULL, 0};
    int status = rl_opts_parse(&cli, argc, argv);
    if (status == RL_EXIT_OK) print_protocol(&o); /* --help was given */
    if (status == RL_OPTS_CONTINUE) status = run(&o, proto_values, batch_mode, json, gpus, jobs, task, candidate);
    rl_opts_free(&cli);
    return status;
}
