/* kenv.c — see kenv.h. The worker's JSON is trusted only as far as the last line of its
 * stdout that carries this run's nonce (given in the plan on stdin, which the worker closes
 * after reading), so text a candidate prints cannot pass for a result. */
#include "reward/kernel_env/kenv.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "core/timer.h"
#include "io/json.h"
#include "reward/kernel_env/kcompile.h"
#include "reward/kernel_env/kproc.h"
#include "reward/kernel_env/kspec.h"
#include "reward/kernel_env/kstatic.h"

#define LOG_KEEP 8192

static char g_worker[PATH_MAX + 64], g_include[PATH_MAX + 64], g_cache[PATH_MAX + 64], g_nvcc[PATH_MAX + 64];

void rl_kenv_opts_default(rl_kenv_opts *o)
{
    memset(o, 0, sizeof *o);
    char exe[PATH_MAX] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(g_worker, sizeof g_worker, "%s/rlc-kernel-worker", exe);
    snprintf(g_include, sizeof g_include, "%s/../src/reward/kernel_env/include", exe);
    if (!rl_file_exists(g_include)) snprintf(g_include, sizeof g_include, "src/reward/kernel_env/include");
    const char *home = getenv("HOME");
    snprintf(g_cache, sizeof g_cache, "%s/.cache/rlc/kernels", home && *home ? home : "/tmp");
    const char *cuda = getenv("CUDA_HOME");
    snprintf(g_nvcc, sizeof g_nvcc, "%s%s", cuda && *cuda ? cuda : "", cuda && *cuda ? "/bin/nvcc" : "nvcc");
    o->worker = g_worker;
    o->include_dir = g_include;
    o->cache_dir = g_cache;
    o->nvcc = g_nvcc;
    o->arch = "90a";
    o->timeout_s = 120;
    o->compile_timeout_s = 120;
    o->trials = 2;
    o->timed = 30;
    o->warmup = 3;
    o->watchdog_ms = 5000;
    o->mem_cap_mb = 4096;
}

int rl_kenv_reward(const char *status, double speedup, int noisy, double *reward)
{
    if (!strcmp(status, "ok")) {
        double s = noisy && speedup > 1 ? 1 : speedup;
        double l = s > 0 ? log2(s) : -1;
        if (!(l >= -1)) l = -1; /* also NaN */
        if (l > 4) l = 4;
        *reward = 0.2 + 0.8 * l / 4;
        return 0;
    }
    if (!strcmp(status, "compile_error") || !strcmp(status, "incorrect") || !strcmp(status, "crash") ||
        !strcmp(status, "timeout")) {
        *reward = -0.5;
        return 0;
    }
    if (!strcmp(status, "cheat")) {
        *reward = -1.0;
        return 0;
    }
    return -1;
}

static uint64_t urandom64(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
        close(fd);
    }
    return v ^ (uint64_t)(rl_time_now() * 1e9);
}

static void set_status(cJSON *res, const char *status, const char *failure)
{
    cJSON_ReplaceItemInObject(res, "status", cJSON_CreateString(status));
    cJSON_ReplaceItemInObject(res, "failure", failure ? cJSON_CreateString(failure) : cJSON_CreateNull());
}

static void add_compile(cJSON *res, const char *key, const rl_kcompile_result *c)
{
    cJSON *o = cJSON_AddObjectToObject(res, key);
    cJSON_AddBoolToObject(o, "ok", c->ok);
    cJSON_AddBoolToObject(o, "cached", c->cached);
    cJSON_AddNumberToObject(o, "seconds", c->seconds);
    size_t n = c->log ? strlen(c->log) : 0;
    char *log = malloc(LOG_KEEP + 32);
    if (!log) return;
    snprintf(log, LOG_KEEP + 32, "%.*s%s", (int)(n > LOG_KEEP ? LOG_KEEP : n), c->log ? c->log : "",
             n > LOG_KEEP ? "\n[log truncated]" : "");
    cJSON_AddStringToObject(o, "log", log);
    free(log);
}

static void add_static(cJSON *res, const rl_kstatic *st)
{
    cJSON *arr = cJSON_AddArrayToObject(res, "static");
    for (int i = 0; i < st->n; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "check", st->items[i].check);
        cJSON_AddBoolToObject(f, "fatal", st->items[i].fatal);
        cJSON_AddNumberToObject(f, "line", st->items[i].line);
        cJSON_AddStringToObject(f, "detail", st->items[i].detail);
        cJSON_AddItemToArray(arr, f);
    }
}

/* The last stdout line holding "nonce":"<nonce>", parsed; NULL if none. */
static cJSON *find_worker_json(const char *out, const char *nonce)
{
    char key[64];
    snprintf(key, sizeof key, "\"nonce\":\"%s\"", nonce);
    const char *best = NULL;
    for (const char *p = out; (p = strstr(p, key)) != NULL; p++) best = p;
    if (!best) return NULL;
    const char *start = best;
    while (start > out && start[-1] != '\n') start--;
    const char *end = strchr(best, '\n');
    size_t len = end ? (size_t)(end - start) : strlen(start);
    rl_err e;
    cJSON *j = rl_json_parse(start, len, "worker output", &e);
    if (j && !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        j = NULL;
    }
    return j;
}

static void tail_of(const char *s, size_t len, char *out, size_t size)
{
    size_t keep = len < size - 1 ? len : size - 1;
    memcpy(out, s + len - keep, keep);
    out[keep] = 0;
    for (size_t i = 0; i < keep; i++)
        if (out[i] == '\n') out[i] = ' ';
}

static void run_worker(const rl_kenv_opts *o, const rl_kspec *spec, const char *ref_so, const char *cand_so,
                       cJSON *res, rl_err *err)
{
    char plan[16384], nonce[40], seed[32], trials[16], timed[16], warmup[16], wd[16], cap[16], gpu_env[64];
    snprintf(nonce, sizeof nonce, "%016" PRIx64, urandom64());
    int n = snprintf(plan, sizeof plan, "%s\n", nonce);
    if (rl_kspec_write_plan(spec, plan + n, sizeof plan - n, err)) {
        set_status(res, "error", err->msg);
        return;
    }
    snprintf(seed, sizeof seed, "%" PRIu64, o->seed);
    snprintf(trials, sizeof trials, "%d", o->trials);
    snprintf(timed, sizeof timed, "%d", o->timed);
    snprintf(warmup, sizeof warmup, "%d", o->warmup);
    snprintf(wd, sizeof wd, "%d", o->watchdog_ms);
    snprintf(cap, sizeof cap, "%d", o->mem_cap_mb);
    char *argv[] = {(char *)o->worker, "--ref", (char *)ref_so, "--cand", (char *)cand_so, "--seed", seed,
                    "--trials", trials, "--timed", timed, "--warmup", warmup, "--watchdog-ms", wd,
                    "--mem-cap-mb", cap, NULL};
    rl_kproc_opts po = {0};
    po.timeout_s = o->timeout_s;
    po.max_stdout = 1 << 20;
    po.max_stderr = 16384;
    po.fsize_limit = (size_t)64 << 20;
    po.stdin_data = plan;
    po.stdin_len = strlen(plan);
    const char *dev = o->gpu_acquire ? o->gpu_acquire(o->gpu_ctx) : o->devices;
    if (dev) {
        snprintf(gpu_env, sizeof gpu_env, "CUDA_VISIBLE_DEVICES=%s", dev);
        po.env_set[0] = gpu_env;
    }
    rl_kproc_result pr;
    int run_rc = rl_kproc_run(argv, &po, &pr, err);
    if (o->gpu_acquire) o->gpu_release(o->gpu_ctx, dev);
    if (run_rc) {
        set_status(res, "error", err->msg);
        return;
    }
    cJSON_AddNumberToObject(res, "worker_seconds", pr.seconds);
    char tail[600], msg[900];
    tail_of(pr.err, pr.err_len, tail, 400);
    cJSON *w = pr.truncated ? NULL : find_worker_json(pr.out, nonce);
    if (pr.timed_out) {
        snprintf(msg, sizeof msg, "wall-time limit of %.0f s passed (killed); stderr: %s", o->timeout_s, tail);
        set_status(res, "timeout", msg);
    } else if (pr.truncated) {
        snprintf(msg, sizeof msg, "wrote more than %zu bytes to stdout (killed)", po.max_stdout);
        set_status(res, "crash", msg);
    } else if (!w) {
        if (pr.exited && pr.exit_code == 127) {
            snprintf(msg, sizeof msg, "%s: cannot run the worker", o->worker);
            set_status(res, "error", msg);
        } else if (pr.signaled) {
            snprintf(msg, sizeof msg, "worker killed by signal %d (%s); stderr: %s", pr.signal, strsignal(pr.signal), tail);
            set_status(res, "crash", msg);
        } else {
            snprintf(msg, sizeof msg, "worker exited with status %d and no result; stderr: %s", pr.exit_code, tail);
            set_status(res, "crash", msg);
        }
    } else {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(w, "status");
        const cJSON *fa = cJSON_GetObjectItemCaseSensitive(w, "failure");
        set_status(res, cJSON_IsString(st) ? st->valuestring : "error", cJSON_IsString(fa) ? fa->valuestring : NULL);
        static const char *copy[] = {"checks", "trials", "max_err_ratio", "max_abs_err", "ref_ms", "cand_ms",
                                     "speedup", "noisy", "device"};
        for (size_t i = 0; i < sizeof copy / sizeof copy[0]; i++) {
            cJSON *item = cJSON_DetachItemFromObjectCaseSensitive(w, copy[i]);
            if (item) cJSON_AddItemToObject(res, copy[i], item);
        }
        cJSON_Delete(w);
    }
    rl_kproc_result_free(&pr);
}

static int compile_file(const rl_kenv_opts *o, const char *src, size_t len, int library, rl_kcompile_result *c,
                        rl_err *err)
{
    rl_kcompile_opts co = {o->nvcc, o->cache_dir, o->include_dir, o->arch, o->compile_timeout_s};
    return rl_kcompile(src, len, library, &co, c, err);
}

static void finish(cJSON *res, double t0)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "status");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(res, "speedup");
    const cJSON *no = cJSON_GetObjectItemCaseSensitive(res, "noisy");
    double reward;
    if (cJSON_IsString(st) &&
        rl_kenv_reward(st->valuestring, cJSON_IsNumber(sp) ? sp->valuedouble : 0, cJSON_IsTrue(no), &reward) == 0)
        cJSON_ReplaceItemInObject(res, "reward", cJSON_CreateNumber(reward));
    cJSON_AddNumberToObject(res, "eval_seconds", rl_time_now() - t0);
}

cJSON *rl_kenv_eval(const rl_kenv_opts *o, const char *task_dir, const char *source, size_t len, rl_err *err)
{
    double t0 = rl_time_now();
    cJSON *res = cJSON_CreateObject();
    if (!res) {
        rl_err_oom(err, "result", 0);
        return NULL;
    }
    cJSON_AddStringToObject(res, "task", task_dir);
    cJSON_AddStringToObject(res, "status", "error");
    cJSON_AddNullToObject(res, "failure");
    cJSON_AddNullToObject(res, "reward");
    rl_kspec *spec = malloc(sizeof *spec);
    rl_kstatic *st = malloc(sizeof *st);
    char *ref_src = NULL;
    size_t ref_len = 0;
    rl_kcompile_result rc = {0}, cc = {0};
    rl_err e;
    if (!spec || !st) {
        set_status(res, "error", "out of memory");
        goto done;
    }
    if (rl_kspec_load(spec, task_dir, &e)) {
        set_status(res, "error", e.msg);
        goto done;
    }
    cJSON_ReplaceItemInObject(res, "task", cJSON_CreateString(spec->name));
    rl_kstatic_check(source, len, spec->forbid, spec->library, st);
    add_static(res, st);
    char path[1200];
    snprintf(path, sizeof path, "%s/reference.cu", task_dir);
    if (rl_file_read_all(path, &ref_src, &ref_len, &e) || compile_file(o, ref_src, ref_len, spec->library, &rc, &e) ||
        compile_file(o, source, len, 0, &cc, &e)) {
        set_status(res, "error", e.msg);
        goto done;
    }
    if (!rc.ok) {
        set_status(res, "error", "the task's reference does not compile");
        add_compile(res, "reference_compile", &rc);
        goto done;
    }
    add_compile(res, "compile", &cc);
    char fatal[300] = "";
    for (int i = 0; i < st->n && !fatal[0]; i++)
        if (st->items[i].fatal) snprintf(fatal, sizeof fatal, "static %s: %s", st->items[i].check, st->items[i].detail);
    if (!fatal[0] && st->n_fatal) snprintf(fatal, sizeof fatal, "static: %d fatal findings", st->n_fatal);
    if (!cc.ok) set_status(res, "compile_error", "the candidate does not compile (see compile.log)");
    else if (!fatal[0] || o->keep_going) run_worker(o, spec, rc.so_path, cc.so_path, res, &e);
    if (fatal[0]) {
        const cJSON *ws = cJSON_GetObjectItemCaseSensitive(res, "status");
        const cJSON *wf = cJSON_GetObjectItemCaseSensitive(res, "failure");
        if (cJSON_IsString(ws) && strcmp(ws->valuestring, "error")) {
            cJSON_AddStringToObject(res, "dynamic_status", ws->valuestring);
            if (cJSON_IsString(wf)) cJSON_AddStringToObject(res, "dynamic_failure", wf->valuestring);
        }
        set_status(res, "cheat", fatal);
    }
done:
    finish(res, t0);
    rl_kcompile_result_free(&rc);
    rl_kcompile_result_free(&cc);
    free(ref_src);
    free(spec);
    free(st);
    return res;
}

int rl_kenv_count_gpus(const rl_kenv_opts *o)
{
    char *argv[] = {(char *)o->worker, "--count-devices", NULL};
    rl_kproc_opts po = {0};
    po.timeout_s = 60;
    po.max_stdout = 64;
    po.max_stderr = 4096;
    rl_kproc_result pr;
    rl_err e;
    if (rl_kproc_run(argv, &po, &pr, &e)) return 0;
    int n = pr.exited && pr.exit_code == 0 ? atoi(pr.out) : 0;
    rl_kproc_result_free(&pr);
    return n > 0 ? n : 0;
}
