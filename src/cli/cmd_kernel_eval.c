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
#include "core/file.h"
#include "io/json.h"
#include "reward/kernel_env/kenv.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: rlc kernel-eval TASK CANDIDATE [--json] [options]\n"
            "       rlc kernel-eval --batch [options] < requests.jsonl\n\n"
            "Runs the evaluation protocol for one candidate against the task's reference on a GPU and\n"
            "prints the result (status, checks, times, speedup, reward). TASK is either a task directory\n"
            "(spec.json, reference.cu; CANDIDATE is a .cu defining rl_kernel, compiled with nvcc and run\n"
            "by rlc-kernel-worker) or a KernelBench problem file PROBLEM.py (Model, get_inputs,\n"
            "get_init_inputs; CANDIDATE is a .py defining ModelNew, run by kernelbench_worker.py under\n"
            "--python, which needs torch). Batch requests are JSON lines {\"id\", \"task\": DIR | FILE.py,\n"
            "\"candidate\": PATH | \"source\": TEXT}; one result line each, candidates spread over the\n"
            "visible GPUs.\n\n"
            "options:\n"
            "  --json               print the result as JSON (single mode)\n"
            "  --gpus N             GPUs to use in batch mode (default: all the worker sees)\n"
            "  --jobs N             batch requests in flight (compiles overlap; default 2 per GPU)\n"
            "  --protocol FILE      protocol parameters (default: src/reward/kernel_env/protocol.json,\n"
            "                       found from the rlc binary); the flags below override single values\n"
            "  --worker PATH        rlc-kernel-worker (default: beside rlc)\n"
            "  --python PATH        Python with torch for KernelBench tasks (default: python3)\n"
            "  --kb-worker PATH     kernelbench_worker.py (default: beside protocol.json)\n"
            "  --nvcc PATH          CUDA compiler (default: $CUDA_HOME/bin/nvcc or nvcc)\n"
            "  --cache DIR          compiled modules (default: ~/.cache/rlc/kernels)\n"
            "  --include DIR        directory of rl_kernel.h\n"
            "  --arch A             GPU architecture (default 90a)\n"
            "  --timeout S          worker wall time per candidate (protocol: timeout_s; KernelBench\n"
            "                       workers get timeout_s + compile_timeout_s, load_inline builds inside)\n"
            "  --compile-timeout S  nvcc wall time (protocol: compile_timeout_s)\n"
            "  --trials N           random trials at the timed size (protocol: random_trials)\n"
            "  --timed N            timed runs per side (protocol: timed)\n"
            "  --warmup N           warm-up runs per side (protocol: warmup)\n"
            "  --copies K           input copies rotated in timing (protocol: input_copies)\n"
            "  --watchdog-ms MS     limit for one call plus synchronize (protocol: watchdog_ms)\n"
            "  --mem-cap MB         GPU memory a candidate may keep (protocol: mem_cap_mb)\n"
            "  --keep-going         run the GPU protocol even after a fatal static finding\n");
}

static int parse_num(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end = NULL;
    double x = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "rlc kernel-eval: %s needs a number in [%g, %g], got '%s'\n", opt, lo, hi, v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

/* Index of flag in the override table, or -1. */
static int proto_flag(const char *const table[][2], int n, const char *flag)
{
    for (int k = 0; k < n; k++)
        if (!strcmp(table[k][0], flag)) return k;
    return -1;
}

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
        return 1;
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
    return 0;
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

int rl_cmd_kernel_eval(int argc, char **argv)
{
    rl_kenv_opts o;
    rl_kenv_opts_default(&o);
    int json = 0, batch_mode = 0, gpus = 0, jobs = 0, help = 0;
    /* Flags that override one protocol value each, applied (and range-checked by kproto.c) once
     * the file is loaded. */
    static const char *const proto_flags[][2] = {
        {"--timeout", "timeout_s"}, {"--compile-timeout", "compile_timeout_s"}, {"--trials", "random_trials"},
        {"--timed", "timed"},       {"--warmup", "warmup"},                     {"--copies", "input_copies"},
        {"--watchdog-ms", "watchdog_ms"}, {"--mem-cap", "mem_cap_mb"}};
    enum { N_PROTO_FLAGS = sizeof proto_flags / sizeof proto_flags[0] };
    const char *proto_values[N_PROTO_FLAGS] = {NULL};
    const char *pos[2] = {NULL, NULL};
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        int pf = proto_flag(proto_flags, N_PROTO_FLAGS, a);
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) help = 1;
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--batch")) batch_mode = 1;
        else if (!strcmp(a, "--keep-going")) o.keep_going = 1;
        else if (!strcmp(a, "--worker") && v) o.worker = argv[++i];
        else if (!strcmp(a, "--python") && v) o.python = argv[++i];
        else if (!strcmp(a, "--kb-worker") && v) o.kb_worker = argv[++i];
        else if (!strcmp(a, "--protocol") && v) o.protocol_path = argv[++i];
        else if (!strcmp(a, "--nvcc") && v) o.nvcc = argv[++i];
        else if (!strcmp(a, "--cache") && v) o.cache_dir = argv[++i];
        else if (!strcmp(a, "--include") && v) o.include_dir = argv[++i];
        else if (!strcmp(a, "--arch") && v) o.arch = argv[++i];
        else if (!strcmp(a, "--gpus")) { if (parse_num(a, v, 1, 16, &x)) return 2; gpus = (int)x; i++; }
        else if (!strcmp(a, "--jobs")) { if (parse_num(a, v, 1, 64, &x)) return 2; jobs = (int)x; i++; }
        else if (pf >= 0 && v) proto_values[pf] = argv[++i];
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "rlc kernel-eval: unknown option or missing value: %s\n", a);
            usage(stderr);
            return 2;
        } else if (n_pos < 2) pos[n_pos++] = a;
        else {
            fprintf(stderr, "rlc kernel-eval: unexpected argument '%s'\n", a);
            return 2;
        }
    }
    if (help) {
        usage(stdout);
        print_protocol(&o);
        return 0;
    }
    rl_err err;
    if (rl_kenv_load_protocol(&o, &err)) {
        fprintf(stderr, "rlc kernel-eval: %s\n", err.msg);
        return 1;
    }
    for (int k = 0; k < N_PROTO_FLAGS; k++)
        if (proto_values[k] && rl_kproto_set(&o.proto, proto_flags[k][1], proto_values[k], proto_flags[k][0], &err)) {
            fprintf(stderr, "rlc kernel-eval: %s\n", err.msg);
            return 2;
        }
    if (batch_mode) {
        if (n_pos) {
            fprintf(stderr, "rlc kernel-eval: --batch reads requests from stdin and takes no TASK/CANDIDATE\n");
            return 2;
        }
        return batch_run(&o, gpus, jobs);
    }
    if (n_pos != 2) {
        usage(stderr);
        return 2;
    }
    char *text = NULL;
    size_t len = 0;
    if (rl_file_read_all(pos[1], &text, &len, &err)) {
        fprintf(stderr, "rlc kernel-eval: %s\n", err.msg);
        return 1;
    }
    cJSON *res = rl_kenv_eval(&o, pos[0], text, len, &err);
    free(text);
    if (!res) {
        fprintf(stderr, "rlc kernel-eval: %s\n", err.msg);
        return 1;
    }
    if (json) {
        char *s = cJSON_PrintUnformatted(res);
        if (s) printf("%s\n", s);
        free(s);
    } else {
        print_human(res);
    }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "status");
    int rc = cJSON_IsString(st) && !strcmp(st->valuestring, "error") ? 1 : 0;
    if (rc) {
        const cJSON *fa = cJSON_GetObjectItemCaseSensitive(res, "failure");
        fprintf(stderr, "rlc kernel-eval: %s\n", cJSON_IsString(fa) ? fa->valuestring : "evaluation failed");
    }
    cJSON_Delete(res);
    return rc;
}
