/* kenv.c — see kenv.h. One evaluation: the task (native or KernelBench), the static checks, the
 * compile (nvcc, or the KernelBench build-only run), the worker run (kworker.h: sandbox, GPU,
 * verdict), then the reward and the typed view of the record. */
#include "reward/kernel_env/kenv.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "core/timer.h"
#include "io/json.h"
#include "reward/kernel_env/kblight.h"
#include "reward/kernel_env/kbpch.h"
#include "reward/kernel_env/kcompile.h"
#include "reward/kernel_env/kproc.h"
#include "reward/kernel_env/kworker.h"
#include "reward/kernel_env/kspec.h"
#include "reward/kernel_env/kstatic.h"

#define LOG_KEEP 8192
/* KernelBench problems have no spec: what the native default forbids, less the library rule
 * (a ModelNew may call torch, which calls cuBLAS). */
#define KB_FORBID (RL_KFORBID_STREAMS | RL_KFORBID_GRAPHS | RL_KFORBID_THREADS)

/* What one call does: everything, compile only (tools' "compile"), or correctness only. */
enum { MODE_FULL, MODE_COMPILE, MODE_CHECK };

const char *const rl_kenv_status_names[] = {"ok", "compile_error", "incorrect", "cheat", "crash", "timeout", "error",
                                            "disallowed", NULL};

/* src/reward/kernel_env seen from the executable's directory (build/rlc: one level up,
 * build/<flavour>/rlc: two), canonical; else relative to the working directory. */
static void find_kenv_dir(const char *exe_dir, char *out, size_t size)
{
    static const char *const ups[] = {"/..", "/../..", "/../../.."};
    for (int i = 0; i < 3 && exe_dir[0]; i++) {
        char dir[PATH_MAX + 128], probe[PATH_MAX + 160], real[PATH_MAX];
        snprintf(dir, sizeof dir, "%s%s/src/reward/kernel_env", exe_dir, ups[i]);
        snprintf(probe, sizeof probe, "%s/protocol.json", dir);
        if (rl_file_exists(probe) && realpath(dir, real)) {
            snprintf(out, size, "%s", real);
            return;
        }
    }
    snprintf(out, size, "src/reward/kernel_env");
}

void rl_kenv_opts_default(rl_kenv_opts *o, rl_kenv_paths *paths)
{
    memset(o, 0, sizeof *o);
    char exe[PATH_MAX] = "", kdir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    find_kenv_dir(exe, kdir, sizeof kdir);
    snprintf(paths->worker, sizeof paths->worker, "%s/rlc-kernel-worker", exe);
    snprintf(paths->include_dir, sizeof paths->include_dir, "%s/include", kdir);
    snprintf(paths->protocol, sizeof paths->protocol, "%s/protocol.json", kdir);
    snprintf(paths->kb_worker, sizeof paths->kb_worker, "%s/kernelbench_worker.py", kdir);
    const char *home = getenv("HOME");
    snprintf(paths->cache_dir, sizeof paths->cache_dir, "%s/.cache/rlc/kernels", home && *home ? home : "/tmp");
    const char *cuda = getenv("CUDA_HOME");
    snprintf(paths->nvcc, sizeof paths->nvcc, "%s%s", cuda && *cuda ? cuda : "", cuda && *cuda ? "/bin/nvcc" : "nvcc");
    o->worker = paths->worker;
    o->python = "python3";
    o->kb_worker = paths->kb_worker;
    o->protocol_path = paths->protocol;
    o->include_dir = paths->include_dir;
    o->cache_dir = paths->cache_dir;
    o->nvcc = paths->nvcc;
    o->arch = "90a";
}

int rl_kenv_load_protocol(rl_kenv_opts *o, rl_err *err)
{
    o->proto_loaded = rl_kproto_load(&o->proto, o->protocol_path, err) == 0;
    return o->proto_loaded ? 0 : -1;
}

int rl_kenv_is_kernelbench(const char *task)
{
    size_t n = strlen(task);
    return n > 3 && !strcmp(task + n - 3, ".py");
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
    if (!strcmp(status, "disallowed")) {
        *reward = -0.75;
        return 0;
    }
    if (!strcmp(status, "cheat")) {
        *reward = -1.0;
        return 0;
    }
    return -1;
}

/* Status changes go through kworker.c's setter (one place that writes status and failure). */
static void set_status(cJSON *res, const char *status, const char *failure)
{
    rl_kworker_set_status(res, status, failure);
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


/* The flags both workers take from the protocol (trials, timing, L2 flush, spread), appended
 * to argv at n with their values formatted into val; returns the new n. */
enum { N_SHARED_FLAGS = 7 };
static int shared_args(const rl_kproto *p, char val[N_SHARED_FLAGS][32], char **argv, int n)
{
    static const char *const flags[N_SHARED_FLAGS] = {"--trials", "--timed", "--warmup", "--copies",
                                                      "--flush-factor", "--max-spread", "--spread-repeats"};
    snprintf(val[0], 32, "%d", p->random_trials);
    snprintf(val[1], 32, "%d", p->timed);
    snprintf(val[2], 32, "%d", p->warmup);
    snprintf(val[3], 32, "%d", p->input_copies);
    snprintf(val[4], 32, "%.17g", p->l2_flush_factor);
    snprintf(val[5], 32, "%.17g", p->max_spread);
    snprintf(val[6], 32, "%d", p->spread_repeats);
    for (int i = 0; i < N_SHARED_FLAGS; i++) argv[n++] = (char *)flags[i], argv[n++] = val[i];
    return n;
}

static int make_private_dir(char *dir, size_t size, rl_err *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, size, "%s/rlc-kb-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return rl_err_set(err, "%s: cannot create a directory for the candidate: %s", dir, strerror(errno));
    return 0;
}

static void run_native(const rl_kenv_opts *o, const char *task_dir, const rl_kspec *spec, const char *ref_so,
                       const char *cand_so, int mode, cJSON *res)
{
    const rl_kproto *p = &o->proto;
    char plan[16384], nonce[40], seed[32], wd[16], cap[16], val[N_SHARED_FLAGS][32];
    rl_err err;
    rl_kworker_nonce(nonce, sizeof nonce);
    int n = snprintf(plan, sizeof plan, "%s\n", nonce);
    if (rl_kspec_write_plan(spec, &p->tol, plan + n, sizeof plan - n, &err)) {
        set_status(res, "error", err.msg);
        return;
    }
    snprintf(seed, sizeof seed, "%" PRIu64, o->seed);
    snprintf(wd, sizeof wd, "%d", p->watchdog_ms);
    snprintf(cap, sizeof cap, "%d", p->mem_cap_mb);
    char *argv[32] = {(char *)o->worker, "--ref", (char *)ref_so, "--cand", (char *)cand_so, "--seed", seed,
                      "--watchdog-ms", wd, "--mem-cap-mb", cap};
    int n_args = shared_args(p, val, argv, 11);
    if (mode == MODE_CHECK) argv[n_args++] = "--check-only";
    if (mode == MODE_FULL && o->profile) argv[n_args++] = "--profile";
    argv[n_args] = NULL;
    char dir[PATH_MAX];
    if (make_private_dir(dir, sizeof dir, &err)) {
        set_status(res, "error", err.msg);
        return;
    }
    rl_kworker_box box;
    rl_kworker_box_init(&box, o, dir, NULL, task_dir, 0, p->timeout_s);
    rl_kworker_box_read(&box, ref_so, 1);
    rl_kworker_run(o, argv, plan, nonce, p->timeout_s, NULL, 1, mode == MODE_FULL, "the worker", &box, res);
    rl_remove_tree(dir, &err); /* best effort */
}

static int compile_file(const rl_kenv_opts *o, const char *src, size_t len, int library, rl_kcompile_result *c,
                        rl_err *err)
{
    rl_kcompile_opts co = {o->nvcc, o->cache_dir, o->include_dir, o->arch, o->proto.compile_timeout_s, !o->no_sandbox};
    return rl_kcompile(src, len, library, &co, c, err);
}

/* The first fatal static finding as a failure line; "" when there is none. */
static void first_fatal(const rl_kstatic *st, char *out, size_t size)
{
    out[0] = 0;
    for (int i = 0; i < st->n && !out[0]; i++)
        if (st->items[i].fatal) snprintf(out, size, "static %s: %s", st->items[i].check, st->items[i].detail);
    if (!out[0] && st->n_fatal) snprintf(out, size, "static: %d fatal findings", st->n_fatal);
}

/* A fatal static finding is a pattern the rules do not allow: status "disallowed" ("cheat"
 * stays for behaviour that fakes a result or a time, which only the worker sees: with
 * --keep-going a dynamic "cheat" wins). What the worker found stays in dynamic_status /
 * dynamic_failure. */
static void mark_disallowed(cJSON *res, const char *fatal)
{
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(res, "status");
    const cJSON *wf = cJSON_GetObjectItemCaseSensitive(res, "failure");
    if (cJSON_IsString(ws) && strcmp(ws->valuestring, "error")) {
        cJSON_AddStringToObject(res, "dynamic_status", ws->valuestring);
        if (cJSON_IsString(wf)) cJSON_AddStringToObject(res, "dynamic_failure", wf->valuestring);
        if (!strcmp(ws->valuestring, "cheat")) return;
    }
    set_status(res, "disallowed", fatal);
}

static void eval_native(const rl_kenv_opts *o, const char *task_dir, const char *source, size_t len, int mode,
                        cJSON *res)
{
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
    if (o->build_acquire) o->build_acquire(o->gpu_ctx);
    int failed = rl_file_read_all(path, &ref_src, &ref_len, &e) ||
                 compile_file(o, ref_src, ref_len, spec->library, &rc, &e) || compile_file(o, source, len, 0, &cc, &e);
    if (o->build_release) o->build_release(o->gpu_ctx);
    if (failed) {
        set_status(res, "error", e.msg);
        goto done;
    }
    if (!rc.ok) {
        set_status(res, "error", "the task's reference does not compile");
        add_compile(res, "reference_compile", &rc);
        goto done;
    }
    add_compile(res, "compile", &cc);
    char fatal[300];
    first_fatal(st, fatal, sizeof fatal);
    if (!cc.ok) set_status(res, "compile_error", "the candidate does not compile (see compile.log)");
    else if (mode == MODE_COMPILE) set_status(res, "ok", NULL);
    else if (!fatal[0] || o->keep_going) run_native(o, task_dir, spec, rc.so_path, cc.so_path, mode, res);
    if (fatal[0]) mark_disallowed(res, fatal);
done:
    rl_kcompile_result_free(&rc);
    rl_kcompile_result_free(&cc);
    free(ref_src);
    free(spec);
    free(st);
}

/* The candidate goes to a fresh private directory (the worker imports a file; a batch request
 * may carry only the source), removed afterwards with whatever the candidate left there. */
static int write_candidate(const char *source, size_t len, char *dir, size_t dir_size, char *path, size_t path_size,
                           rl_err *err)
{
    if (make_private_dir(dir, dir_size, err)) return -1;
    snprintf(path, path_size, "%s/candidate.py", dir);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(source, 1, len, f) == len;
    if (f && fclose(f)) ok = 0;
    if (!ok) {
        int code = errno;
        rl_remove_tree(dir, err);
        return rl_err_set(err, "%s: cannot write the candidate: %s", path, strerror(code));
    }
    return 0;
}

/* The extension build directory of a KernelBench candidate: <cache>/kb-<hash>, the hash over
 * the source, the architecture and the interpreter, so an identical candidate reuses the
 * modules load_inline built (ninja finds them up to date) and different ones never share. */
static int kb_build_dir(const rl_kenv_opts *o, const char *source, size_t len, char *out, size_t size, rl_err *err)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const char *parts[3] = {source, o->arch, o->python};
    size_t lens[3] = {len, strlen(o->arch), strlen(o->python)};
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; i < lens[k]; i++) h = (h ^ (unsigned char)parts[k][i]) * 0x100000001b3ull;
        h = (h ^ 0xff) * 0x100000001b3ull;
    }
    snprintf(out, size, "%s/kb-%016" PRIx64, o->cache_dir, h);
    return rl_mkdir_p(out, err);
}

/* TORCH_CUDA_ARCH_LIST for o->arch ("90a" -> "9.0a"): the build-only run sees no GPU, and both
 * runs must give ninja the same command lines, or the second one rebuilds. */
static void arch_list(const char *arch, char *out, size_t size)
{
    size_t n = strspn(arch, "0123456789");
    if (n >= 2) snprintf(out, size, "TORCH_CUDA_ARCH_LIST=%.*s.%.*s%s", (int)(n - 1), arch, 1, arch + n - 1, arch + n);
    else snprintf(out, size, "TORCH_CUDA_ARCH_LIST=%s", arch);
}

/* The environment entries of a KernelBench candidate's runs: the precompiled header's (kbpch.h;
 * one answer for both runs: the same CXX keeps ninja's command lines equal, so the GPU run
 * finds the build up to date) and the light header's (kblight.h; the build-only run alone). */
typedef struct kb_env {
    char cxx[PATH_MAX + 16], pch[PATH_MAX + 16], real_cxx[PATH_MAX + 16];
    int have_pch;
    char light[PATH_MAX + 600], light_dir[PATH_MAX];
    int use_light, drop_build;
} kb_env;

/* build_dir: load_inline's build directory (TORCH_EXTENSIONS_DIR, kb_build_dir). mode
 * MODE_COMPILE runs the worker with --build-only and no GPU (it imports the candidate, which
 * builds its extensions); MODE_CHECK stops after the correctness trials. */
static void run_python(const rl_kenv_opts *o, const char *problem, const char *dir, const char *build_dir,
                       const char *cand_path, int mode, const kb_env *ke, cJSON *res)
{
    const rl_kproto *p = &o->proto;
    char nonce[40], input[48], val[N_SHARED_FLAGS][32], slow[2][32], tol[4][2][32];
    rl_kworker_nonce(nonce, sizeof nonce);
    snprintf(input, sizeof input, "%s\n", nonce);
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)o->python;
    argv[n++] = (char *)o->kb_worker;
    argv[n++] = "--ref", argv[n++] = (char *)problem;
    argv[n++] = "--cand", argv[n++] = (char *)cand_path;
    argv[n++] = "--nonce-stdin";
    if (o->require_kernel) argv[n++] = "--require-kernel";
    if (mode == MODE_COMPILE) argv[n++] = "--build-only";
    if (mode == MODE_COMPILE && ke->use_light) argv[n++] = "--light-check";
    if (mode == MODE_COMPILE && ke->drop_build) argv[n++] = "--drop-build";
    if (mode == MODE_CHECK) argv[n++] = "--check-only";
    if (mode == MODE_FULL && o->profile) argv[n++] = "--profile";
    n = shared_args(p, val, argv, n);
    snprintf(slow[0], 32, "%.17g", p->ref_slowdown_limit);
    snprintf(slow[1], 32, "%.17g", p->ref_slowdown_min_ms);
    argv[n++] = "--ref-slowdown-limit", argv[n++] = slow[0];
    argv[n++] = "--ref-slowdown-min-ms", argv[n++] = slow[1];
    for (int d = 0; d < 4; d++) {
        snprintf(tol[d][0], 32, "%.17g", p->tol.atol[d]);
        snprintf(tol[d][1], 32, "%.17g", p->tol.rtol[d]);
        argv[n++] = "--tol", argv[n++] = (char *)rl_kdtype_names[d], argv[n++] = tol[d][0], argv[n++] = tol[d][1];
    }
    argv[n] = NULL;
    char ext_env[PATH_MAX + 64], arch_env[64];
    snprintf(ext_env, sizeof ext_env, "TORCH_EXTENSIONS_DIR=%s", build_dir);
    arch_list(o->arch, arch_env, sizeof arch_env);
    const char *env[8] = {"PYTHONDONTWRITEBYTECODE=1", ext_env, arch_env};
    int n_env = 3;
    rl_kworker_box box;
    rl_kworker_box_init(&box, o, dir, build_dir, problem, 1, p->timeout_s + p->compile_timeout_s);
    if (ke->have_pch) {
        env[n_env++] = ke->cxx, env[n_env++] = ke->pch;
        if (ke->real_cxx[0]) env[n_env++] = ke->real_cxx;
        rl_kworker_box_read(&box, ke->pch + strlen("RLC_KB_PCH="), 0);
    }
    if (ke->use_light && mode == MODE_COMPILE) {
        env[n_env++] = ke->light;
        rl_kworker_box_read(&box, ke->light_dir, 0);
    }
    env[n_env] = NULL;
    if (mode == MODE_COMPILE) {
        rl_kworker_run(o, argv, input, nonce, p->compile_timeout_s, env, 0, 0, "the Python worker (build)", &box, res);
        return;
    }
    /* load_inline builds inside the worker when the build step could not (a lazy build): its
     * time counts too. */
    rl_kworker_run(o, argv, input, nonce, p->timeout_s + p->compile_timeout_s, env, 1, mode == MODE_FULL,
               "the Python worker", &box, res);
}

static int is_status(const cJSON *res, const char *status)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "status");
    return cJSON_IsString(st) && !strcmp(st->valuestring, status);
}

/* What a worker run put into res (kworker.c's read_worker), so that another run starts clean. */
static void drop_run_fields(cJSON *res)
{
    static const char *const keys[] = {"checks", "trials", "max_err_ratio", "max_abs_err", "ref_ms", "cand_ms",
                                       "speedup", "noisy", "ref_solo_ms", "device", "kernels", "build_note",
                                       "profile", "phases", "build_phases", "worker_seconds"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        while (cJSON_HasObjectItem(res, keys[i])) cJSON_DeleteItemFromObjectCaseSensitive(res, keys[i]);
}

/* A failed launch of the candidate's kernels ("invalid device function", "no kernel image is
 * available"): what a build whose two nvcc passes made different kernels gives at run time. */
static int launch_failed(const cJSON *res)
{
    const cJSON *fa = cJSON_GetObjectItemCaseSensitive(res, "failure");
    return !is_status(res, "ok") && cJSON_IsString(fa) &&
           (strstr(fa->valuestring, "invalid device function") || strstr(fa->valuestring, "no kernel image is available"));
}

/* The build-only run; returns its seconds (taken out of res). */
static double run_build(const rl_kenv_opts *o, const char *problem, const char *dir, const char *build,
                        const char *path, const kb_env *ke, cJSON *res)
{
    run_python(o, problem, dir, build, path, MODE_COMPILE, ke, res);
    cJSON *ws = cJSON_DetachItemFromObjectCaseSensitive(res, "worker_seconds");
    double s = cJSON_IsNumber(ws) ? ws->valuedouble : 0;
    cJSON_Delete(ws);
    return s;
}

/* The Python worker's sandbox calibration (kworker.h), in a thread beside a candidate's build. */
typedef struct calibration {
    const rl_kenv_opts *o;
    rl_kworker_box box;
    pthread_t thread;
} calibration;

static void *calibrate_main(void *arg)
{
    calibration *c = arg;
    rl_kworker_calibrate(c->o, &c->box);
    return NULL;
}

/* The first candidate of a process that will run on a GPU starts the calibration while it
 * builds (the GPU idles then), not on its GPU run, where it held the first GPU slots for two
 * worker start-ups (~11 s on the H100). NULL when another did, or none is needed. */
static calibration *start_calibration(const rl_kenv_opts *o, const char *dir, const char *build, const char *problem)
{
    if (!rl_kworker_calibration_claim(o, 1)) return NULL;
    calibration *c = malloc(sizeof *c);
    if (!c) return NULL; /* the GPU run calibrates */
    c->o = o;
    rl_kworker_box_init(&c->box, o, dir, build, problem, 1, o->proto.timeout_s + o->proto.compile_timeout_s);
    if (pthread_create(&c->thread, NULL, calibrate_main, c)) {
        free(c);
        return NULL;
    }
    return c;
}

static void finish_calibration(calibration *c)
{
    if (!c) return;
    pthread_join(c->thread, NULL);
    free(c);
}

static void eval_kernelbench(const rl_kenv_opts *o, const char *problem, const char *source, size_t len, int mode,
                             cJSON *res)
{
    const char *base = strrchr(problem, '/');
    base = base ? base + 1 : problem;
    char name[256], msg[PATH_MAX + 200];
    snprintf(name, sizeof name, "%.*s", (int)(strlen(base) - 3), base);
    cJSON_ReplaceItemInObject(res, "task", cJSON_CreateString(name));
    if (!rl_file_exists(problem)) {
        snprintf(msg, sizeof msg, "%s: no such KernelBench problem file", problem);
        set_status(res, "error", msg);
        return;
    }
    if (!rl_file_exists(o->kb_worker)) {
        snprintf(msg, sizeof msg, "%s: no KernelBench worker there (--kb-worker sets it)", o->kb_worker);
        set_status(res, "error", msg);
        return;
    }
    rl_kstatic *st = malloc(sizeof *st);
    if (!st) {
        set_status(res, "error", "out of memory");
        return;
    }
    rl_kstatic_check_py(source, len, KB_FORBID, st);
    add_static(res, st);
    char fatal[300];
    first_fatal(st, fatal, sizeof fatal);
    free(st);
    if (!fatal[0] || o->keep_going) {
        char dir[PATH_MAX], path[PATH_MAX + 32], build[PATH_MAX + 64];
        rl_err e;
        if (kb_build_dir(o, source, len, build, sizeof build, &e) ||
            write_candidate(source, len, dir, sizeof dir, path, sizeof path, &e)) {
            set_status(res, "error", e.msg);
        } else {
            /* The build first, without the GPU, so that compiles of a batch overlap on the CPU
             * cores while each GPU times one candidate; a real build error ends it there. */
            calibration *cal = mode != MODE_COMPILE ? start_calibration(o, dir, build, problem) : NULL;
            kb_env env_store = {0}, *ke = &env_store;
            ke->have_pch = rl_kbpch_env(o, ke->cxx, sizeof ke->cxx, ke->pch, sizeof ke->pch, ke->real_cxx,
                                        sizeof ke->real_cxx);
            ke->use_light = rl_kblight_env(o, source, len, ke->light, sizeof ke->light, ke->light_dir, sizeof ke->light_dir);
            if (o->build_acquire) o->build_acquire(o->gpu_ctx);
            double build_s = run_build(o, problem, dir, build, path, ke, res);
            if (ke->use_light && is_status(res, "compile_error")) {
                /* The light headers must never decide a verdict: what failed with them, or
                 * whose two nvcc passes made different kernels (the worker's --light-check,
                 * which then removed the objects), is built again as written (the GPU run never
                 * gets them either). */
                int mismatch = cJSON_HasObjectItem(res, "light_mismatch");
                drop_run_fields(res); /* "light_mismatch" stays: the kernels that differed */
                ke->use_light = 0;
                build_s += run_build(o, problem, dir, build, path, ke, res);
                cJSON_AddStringToObject(res, "kb_header", mismatch ? "original after light mismatch"
                                                                   : "original after light failed");
            } else if (ke->use_light) {
                cJSON_AddStringToObject(res, "kb_header", "light");
            }
            if (o->build_release) o->build_release(o->gpu_ctx);
            cJSON_AddNumberToObject(res, "build_seconds", build_s);
            if (mode != MODE_COMPILE && !is_status(res, "compile_error")) {
                /* the GPU run's record replaces the build run's */
                static const char *const drop[] = {"checks", "trials", "max_err_ratio", "max_abs_err", "device"};
                for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++) cJSON_DeleteItemFromObjectCaseSensitive(res, drop[i]);
                int light_built = ke->use_light;
                run_python(o, problem, dir, build, path, mode, ke, res);
                if (light_built && launch_failed(res)) {
                    /* A kernel the check did not see differ: no verdict from that build. The
                     * worker removes its CUDA objects and modules (--drop-build), the text is
                     * built as written and run again. */
                    drop_run_fields(res);
                    cJSON_DeleteItemFromObjectCaseSensitive(res, "gpu_wait_seconds");
                    cJSON_DeleteItemFromObjectCaseSensitive(res, "gpu_slot_seconds");
                    ke->use_light = 0, ke->drop_build = 1;
                    if (o->build_acquire) o->build_acquire(o->gpu_ctx);
                    build_s += run_build(o, problem, dir, build, path, ke, res);
                    if (o->build_release) o->build_release(o->gpu_ctx);
                    ke->drop_build = 0;
                    cJSON_ReplaceItemInObject(res, "kb_header", cJSON_CreateString("original after light launch failure"));
                    cJSON_ReplaceItemInObject(res, "build_seconds", cJSON_CreateNumber(build_s));
                    if (!is_status(res, "compile_error")) {
                        for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++) cJSON_DeleteItemFromObjectCaseSensitive(res, drop[i]);
                        run_python(o, problem, dir, build, path, mode, ke, res);
                    }
                }
            }
            finish_calibration(cal); /* its box names dir */
            rl_remove_tree(dir, &e); /* best effort: a leftover temporary directory harms nothing */
        }
    }
    if (fatal[0]) mark_disallowed(res, fatal);
}

static double median_of(const cJSON *res, const char *key)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, key), "median");
    return cJSON_IsNumber(m) ? m->valuedouble : 0;
}

/* The reward and the typed view of the finished record (the one place that reads it back). */
static void finish(rl_kenv_result *r, double t0)
{
    cJSON *res = r->json;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "status");
    const cJSON *fa = cJSON_GetObjectItemCaseSensitive(res, "failure");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(res, "speedup");
    r->status = RL_KENV_ERROR;
    for (int i = 0; rl_kenv_status_names[i] && cJSON_IsString(st); i++)
        if (!strcmp(st->valuestring, rl_kenv_status_names[i])) r->status = (rl_kenv_status)i;
    r->failure = cJSON_IsString(fa) ? fa->valuestring : NULL;
    r->noisy = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "noisy"));
    r->timed = r->status == RL_KENV_OK && cJSON_IsNumber(sp);
    if (r->timed) {
        r->speedup = sp->valuedouble;
        r->ref_ms = median_of(res, "ref_ms");
        r->cand_ms = median_of(res, "cand_ms");
    }
    /* An ok of compile or check (no timing) is rewarded as an ok at speedup 1. */
    r->has_reward = rl_kenv_reward(rl_kenv_status_names[r->status], r->timed ? r->speedup : 1, r->noisy, &r->reward) == 0;
    if (r->has_reward) cJSON_ReplaceItemInObject(res, "reward", cJSON_CreateNumber(r->reward));
    const cJSON *log = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "compile"), "log");
    r->compile_log = r->status == RL_KENV_COMPILE_ERROR && cJSON_IsString(log) ? log->valuestring : NULL;
    const cJSON *findings = cJSON_GetObjectItemCaseSensitive(res, "static");
    for (const cJSON *f = findings ? findings->child : NULL; f && r->findings.n < RL_KSTATIC_MAX; f = f->next) {
        rl_kfinding *k = &r->findings.items[r->findings.n++];
        const cJSON *check = cJSON_GetObjectItemCaseSensitive(f, "check"), *detail = cJSON_GetObjectItemCaseSensitive(f, "detail");
        const cJSON *line = cJSON_GetObjectItemCaseSensitive(f, "line");
        snprintf(k->check, sizeof k->check, "%s", cJSON_IsString(check) ? check->valuestring : "");
        snprintf(k->detail, sizeof k->detail, "%s", cJSON_IsString(detail) ? detail->valuestring : "");
        k->line = cJSON_IsNumber(line) ? (int)line->valuedouble : 0;
        k->fatal = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "fatal"));
        r->findings.n_fatal += k->fatal;
    }
    cJSON_AddNumberToObject(res, "eval_seconds", rl_time_now() - t0);
}

static int eval_mode(const rl_kenv_opts *o, const char *task, const char *source, size_t len, int mode,
                     rl_kenv_result *r, rl_err *err)
{
    double t0 = rl_time_now();
    memset(r, 0, sizeof *r);
    cJSON *res = r->json = cJSON_CreateObject();
    if (!res) return rl_err_oom(err, "result", 0);
    cJSON_AddStringToObject(res, "task", task);
    cJSON_AddStringToObject(res, "status", "error");
    cJSON_AddNullToObject(res, "failure");
    cJSON_AddNullToObject(res, "reward");
    if (!o->proto_loaded) set_status(res, "error", "no protocol loaded (rl_kenv_load_protocol)");
    else if (rl_kenv_is_kernelbench(task)) eval_kernelbench(o, task, source, len, mode, res);
    else eval_native(o, task, source, len, mode, res);
    char box_desc[300];
    rl_kworker_describe(o, box_desc, sizeof box_desc); /* after the run: a calibrated level shows */
    cJSON_AddStringToObject(res, "sandbox", box_desc);
    finish(r, t0);
    return 0;
}

int rl_kenv_eval(const rl_kenv_opts *o, const char *task, const char *source, size_t len, rl_kenv_result *r,
                 rl_err *err)
{
    return eval_mode(o, task, source, len, MODE_FULL, r, err);
}

int rl_kenv_compile(const rl_kenv_opts *o, const char *task, const char *source, size_t len, rl_kenv_result *r,
                    rl_err *err)
{
    return eval_mode(o, task, source, len, MODE_COMPILE, r, err);
}

int rl_kenv_check(const rl_kenv_opts *o, const char *task, const char *source, size_t len, rl_kenv_result *r,
                  rl_err *err)
{
    return eval_mode(o, task, source, len, MODE_CHECK, r, err);
}

int rl_kenv_profile(const rl_kenv_opts *o, const char *task, const char *source, size_t len, rl_kenv_result *r,
                    rl_err *err)
{
    return eval_mode(o, task, source, len, MODE_FULL, r, err);
}

void rl_kenv_result_free(rl_kenv_result *r)
{
    cJSON_Delete(r->json);
    memset(r, 0, sizeof *r);
}
