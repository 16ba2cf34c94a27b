/* kenv.c — see kenv.h. A worker's JSON is trusted only as far as the last line of its stdout
 * that carries this run's nonce (given on stdin, which the worker closes after reading), so
 * text a candidate prints cannot pass for a result; that line must also hold a known status
 * and, for "ok", the timings, or the candidate fails ("crash": the worker did not finish
 * properly, whatever the reason). */
#include "reward/kernel_env/kenv.h"

#include <errno.h>
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
#include "reward/kernel_env/ksandbox.h"
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

/* The last stdout line that parses as an object whose "nonce" is ours; NULL if none. Python
 * and C write the field with or without a space after the colon, so the value is searched. */
static cJSON *find_worker_json(const char *out, const char *nonce)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\"", nonce);
    cJSON *best = NULL;
    for (const char *p = out; (p = strstr(p, key)) != NULL;) {
        const char *start = p;
        while (start > out && start[-1] != '\n') start--;
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - start) : strlen(start);
        rl_err e;
        cJSON *j = rl_json_parse(start, len, "worker output", &e);
        const cJSON *n = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "nonce") : NULL;
        if (cJSON_IsString(n) && !strcmp(n->valuestring, nonce)) {
            cJSON_Delete(best);
            best = j;
        } else {
            cJSON_Delete(j);
        }
        if (!end) break;
        p = end;
    }
    return best;
}

/* A positive finite number. */
static int positive(const cJSON *v)
{
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble > 0;
}

/* What the result line must hold; fills why and returns -1 when it does not. */
static int check_worker_json(const cJSON *w, int timed, char *why, size_t size)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(w, "status");
    int known = 0;
    for (int i = 0; rl_kenv_status_names[i] && cJSON_IsString(st); i++) known |= !strcmp(st->valuestring, rl_kenv_status_names[i]);
    if (!known) {
        snprintf(why, size, "status %s%.40s%s is not one of ok, compile_error, incorrect, cheat, crash, timeout, error, disallowed",
                 cJSON_IsString(st) ? "'" : "", cJSON_IsString(st) ? st->valuestring : "missing", cJSON_IsString(st) ? "'" : "");
        return -1;
    }
    const cJSON *fa = cJSON_GetObjectItemCaseSensitive(w, "failure");
    if (fa && !cJSON_IsString(fa) && !cJSON_IsNull(fa)) return snprintf(why, size, "'failure' is not a string"), -1;
    const cJSON *ck = cJSON_GetObjectItemCaseSensitive(w, "checks");
    if (ck && !cJSON_IsObject(ck)) return snprintf(why, size, "'checks' is not an object"), -1;
    if (strcmp(st->valuestring, "ok") || !timed) return 0;
    static const char *const times[] = {"ref_ms", "cand_ms"};
    for (int i = 0; i < 2; i++) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(w, times[i]);
        if (!cJSON_IsObject(t) || !positive(cJSON_GetObjectItemCaseSensitive(t, "median")))
            return snprintf(why, size, "status ok without '%s' {\"median\": > 0}", times[i]), -1;
    }
    if (!positive(cJSON_GetObjectItemCaseSensitive(w, "speedup")))
        return snprintf(why, size, "status ok without a positive 'speedup'"), -1;
    const cJSON *no = cJSON_GetObjectItemCaseSensitive(w, "noisy");
    if (no && !cJSON_IsBool(no)) return snprintf(why, size, "'noisy' is not true or false"), -1;
    return 0;
}

static void tail_of(const char *s, size_t len, char *out, size_t size)
{
    size_t keep = len < size - 1 ? len : size - 1;
    memcpy(out, s + len - keep, keep);
    out[keep] = 0;
    for (size_t i = 0; i < keep; i++)
        if (out[i] == '\n') out[i] = ' ';
}

/* Turns a finished child into the result: its verdict and measurements, or a failure of the
 * candidate when it was killed, crashed, flooded or printed no valid result line. what names
 * the program in messages ("the worker", "the Python worker"). */
static void read_worker(cJSON *res, const rl_kproc_result *pr, const rl_kproc_opts *po, const char *nonce,
                        int timed, const char *program, const char *what)
{
    char tail[600], msg[900], why[200];
    tail_of(pr->err, pr->err_len, tail, 400);
    cJSON *w = pr->timed_out || pr->truncated ? NULL : find_worker_json(pr->out, nonce);
    if (pr->timed_out) {
        snprintf(msg, sizeof msg, "wall-time limit of %.0f s passed (killed); stderr: %s", po->timeout_s, tail);
        set_status(res, "timeout", msg);
    } else if (pr->truncated) {
        snprintf(msg, sizeof msg, "wrote more than %zu bytes to stdout (killed)", po->max_stdout);
        set_status(res, "crash", msg);
    } else if (!w) {
        if (pr->exited && pr->exit_code == 127) {
            snprintf(msg, sizeof msg, "%s: cannot run %s (not found or not executable)", program, what);
            set_status(res, "error", msg);
        } else if (pr->signaled) {
            snprintf(msg, sizeof msg, "%s killed by signal %d (%s); stderr: %s", what, pr->signal, strsignal(pr->signal), tail);
            set_status(res, "crash", msg);
        } else {
            snprintf(msg, sizeof msg, "%s exited with status %d and no result; stderr: %s", what, pr->exit_code, tail);
            set_status(res, "crash", msg);
        }
    } else if (check_worker_json(w, timed, why, sizeof why)) {
        snprintf(msg, sizeof msg, "%s printed a malformed result (%s); stderr: %s", what, why, tail);
        set_status(res, "crash", msg);
    } else {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(w, "status");
        const cJSON *fa = cJSON_GetObjectItemCaseSensitive(w, "failure");
        set_status(res, st->valuestring, cJSON_IsString(fa) ? fa->valuestring : NULL);
        static const char *copy[] = {"checks", "trials", "max_err_ratio", "max_abs_err", "ref_ms", "cand_ms",
                                     "speedup", "noisy", "ref_solo_ms", "device", "kernels", "sandbox"};
        for (size_t i = 0; i < sizeof copy / sizeof copy[0]; i++) {
            cJSON *item = cJSON_DetachItemFromObjectCaseSensitive(w, copy[i]);
            if (item) cJSON_AddItemToObject(res, copy[i], item);
        }
    }
    cJSON_Delete(w);
}

/* The sandbox of one worker run (ksandbox.h): writes only in the private directories, reads
 * anywhere but $HOME, where the rlc tree, the module cache, the working directory, the task
 * and, for Python, the interpreter's prefix and ~/.local/lib stay readable. */
#define WORKER_DATA_BYTES ((size_t)32 << 30)
typedef struct worker_box {
    rl_ksandbox_spec spec;
    char paths[RL_KSANDBOX_MAX_PATHS][PATH_MAX];
    int n;
} worker_box;

static void box_read(worker_box *b, const char *path, int up)
{
    if (b->n >= RL_KSANDBOX_MAX_PATHS || !path || !*path) return;
    char real[PATH_MAX];
    if (!realpath(path, real)) return;
    for (int i = 0; i < up; i++) {
        char *slash = strrchr(real, '/');
        if (slash && slash != real) *slash = 0;
    }
    snprintf(b->paths[b->n], PATH_MAX, "%s", real);
    b->spec.read_paths[b->n] = b->paths[b->n];
    b->n++;
}

/* The real file of an interpreter named python (a path, or a name looked up in PATH). */
static int which(const char *name, char *out, size_t size)
{
    if (strchr(name, '/')) return realpath(name, out) ? 0 : -1;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        char probe[PATH_MAX];
        snprintf(probe, sizeof probe, "%.*s/%s", (int)n, p, name);
        if (access(probe, X_OK) == 0 && realpath(probe, out)) return 0;
        p += n + (p[n] == ':');
    }
    (void)size;
    return -1;
}

static void worker_box_init(worker_box *b, const rl_kenv_opts *o, const char *private_dir, const char *build_dir,
                            const char *task, int python, double cpu_s)
{
    memset(b, 0, sizeof *b);
    b->spec.write_dirs[0] = private_dir;
    b->spec.write_dirs[1] = build_dir;
    b->spec.no_fork = !python; /* the native worker never needs a process; load_inline runs ninja */
    b->spec.cpu_s = 4 * cpu_s; /* CPU seconds over all threads: a margin over the wall-time limit */
    b->spec.data_bytes = WORKER_DATA_BYTES;
    box_read(b, o->protocol_path, 4); /* src/reward/kernel_env/protocol.json -> the rlc tree */
    box_read(b, o->worker, 1);
    box_read(b, o->cache_dir, 0);
    box_read(b, ".", 0);
    box_read(b, task, 1);
    if (python) {
        char exe[PATH_MAX];
        if (which(o->python, exe, sizeof exe) == 0) box_read(b, exe, 2); /* <prefix>/bin/python3.x */
        const char *home = getenv("HOME");
        char local[PATH_MAX];
        snprintf(local, sizeof local, "%s/.local/lib", home ? home : "/nonexistent");
        box_read(b, local, 0);
    }
}

/* Runs one worker (native or Python) in a limited child on a GPU of the pool, with input on
 * stdin (its first line the nonce) and up to two more environment entries (NULL-terminated
 * list, or NULL), and reads its verdict into res. */
static void run_worker(const rl_kenv_opts *o, char *const argv[], const char *input, const char *nonce,
                       double timeout_s, const char *const *extra_env, int use_gpu, int timed, const char *what,
                       const worker_box *box, cJSON *res)
{
    char gpu_env[64], home_env[PATH_MAX + 8], tmp_env[PATH_MAX + 8];
    rl_kproc_opts po = {0};
    po.timeout_s = timeout_s;
    po.max_stdout = 1 << 20;
    po.max_stderr = 16384;
    po.fsize_limit = (size_t)64 << 20;
    po.stdin_data = input;
    po.stdin_len = strlen(input);
    int n_env = 0;
    for (int i = 0; extra_env && extra_env[i] && i < RL_KPROC_MAX_ENV - 1; i++) po.env_set[n_env++] = extra_env[i];
    /* Without the GPU (a build-only run): no device visible, and no pool slot taken, so such
     * runs overlap freely with the one timed worker per GPU. */
    const char *dev = !use_gpu ? "" : o->gpu_acquire ? o->gpu_acquire(o->gpu_ctx) : o->devices;
    if (dev && n_env < RL_KPROC_MAX_ENV) {
        snprintf(gpu_env, sizeof gpu_env, "CUDA_VISIBLE_DEVICES=%s", dev);
        po.env_set[n_env++] = gpu_env;
    }
    /* The GPU's lock file (worker.cu, kernelbench_worker.py: correctness shared, timing
     * exclusive), created here so that the sandboxed worker only opens it. */
    char lock_path[PATH_MAX], *args[80];
    int n_args = 0;
    for (; argv[n_args] && n_args < 76; n_args++) args[n_args] = argv[n_args];
    if (use_gpu) {
        const char *tmp = getenv("TMPDIR");
        int len = snprintf(lock_path, sizeof lock_path, "%s/rlc-gpu-%s.lock", tmp && *tmp ? tmp : "/tmp",
                           dev && *dev ? dev : "0");
        for (int i = len - 1; i > 0 && lock_path[i] != '/'; i--)
            if (lock_path[i] == ' ' || lock_path[i] == ',') lock_path[i] = '_';
        int fd = open(lock_path, O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
        if (fd >= 0) {
            close(fd);
            args[n_args++] = "--gpu-lock";
            args[n_args++] = lock_path;
        }
    }
    args[n_args] = NULL;
    rl_kproc_result pr;
    rl_err err;
    rl_ksandbox *sb = NULL;
    if (box && !o->no_sandbox) {
        /* $HOME and the temporary directory are the private one: what a candidate writes
         * there (caches, temporary files) goes away with it. */
        snprintf(home_env, sizeof home_env, "HOME=%s", box->spec.write_dirs[0]);
        snprintf(tmp_env, sizeof tmp_env, "TMPDIR=%s", box->spec.write_dirs[0]);
        if (n_env + 2 <= RL_KPROC_MAX_ENV) po.env_set[n_env++] = home_env, po.env_set[n_env++] = tmp_env;
        if (rl_ksandbox_prepare(&box->spec, &sb, &err)) {
            if (use_gpu && o->gpu_acquire) o->gpu_release(o->gpu_ctx, dev);
            set_status(res, "error", err.msg);
            return;
        }
        po.sandbox = sb;
    }
    int run_rc = rl_kproc_run(args, &po, &pr, &err);
    rl_ksandbox_free(sb);
    if (use_gpu && o->gpu_acquire) o->gpu_release(o->gpu_ctx, dev);
    if (run_rc) {
        set_status(res, "error", err.msg);
        return;
    }
    cJSON_AddNumberToObject(res, "worker_seconds", pr.seconds);
    if (pr.exited && pr.exit_code == 125 && !strncmp(pr.err, "sandbox:", 8)) {
        set_status(res, "error", pr.err); /* the sandbox could not be entered: not the candidate's fault */
        rl_kproc_result_free(&pr);
        return;
    }
    read_worker(res, &pr, &po, nonce, timed, argv[0], what);
    rl_kproc_result_free(&pr);
}

static void new_nonce(char *out, size_t size)
{
    snprintf(out, size, "%016" PRIx64, urandom64());
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
    new_nonce(nonce, sizeof nonce);
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
    argv[n_args] = NULL;
    char dir[PATH_MAX];
    if (make_private_dir(dir, sizeof dir, &err)) {
        set_status(res, "error", err.msg);
        return;
    }
    worker_box box;
    worker_box_init(&box, o, dir, NULL, task_dir, 0, p->timeout_s);
    box_read(&box, ref_so, 1);
    run_worker(o, argv, plan, nonce, p->timeout_s, NULL, 1, mode == MODE_FULL, "the worker", &box, res);
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

/* build_dir: load_inline's build directory (TORCH_EXTENSIONS_DIR, kb_build_dir). mode
 * MODE_COMPILE runs the worker with --build-only and no GPU (it imports the candidate, which
 * builds its extensions); MODE_CHECK stops after the correctness trials. */
static void run_python(const rl_kenv_opts *o, const char *problem, const char *dir, const char *build_dir,
                       const char *cand_path, int mode, cJSON *res)
{
    const rl_kproto *p = &o->proto;
    char nonce[40], input[48], val[N_SHARED_FLAGS][32], slow[2][32], tol[4][2][32];
    new_nonce(nonce, sizeof nonce);
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
    if (mode == MODE_CHECK) argv[n++] = "--check-only";
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
    const char *env[] = {"PYTHONDONTWRITEBYTECODE=1", ext_env, arch_env, NULL};
    worker_box box;
    worker_box_init(&box, o, dir, build_dir, problem, 1, p->timeout_s + p->compile_timeout_s);
    if (mode == MODE_COMPILE) {
        run_worker(o, argv, input, nonce, p->compile_timeout_s, env, 0, 0, "the Python worker (build)", &box, res);
        return;
    }
    /* load_inline builds inside the worker when the build step could not (a lazy build): its
     * time counts too. */
    run_worker(o, argv, input, nonce, p->timeout_s + p->compile_timeout_s, env, 1, mode == MODE_FULL,
               "the Python worker", &box, res);
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
            run_python(o, problem, dir, build, path, MODE_COMPILE, res);
            const cJSON *bs = cJSON_GetObjectItemCaseSensitive(res, "status");
            int built_bad = cJSON_IsString(bs) && !strcmp(bs->valuestring, "compile_error");
            if (mode != MODE_COMPILE && !built_bad) {
                cJSON_DeleteItemFromObjectCaseSensitive(res, "checks");
                run_python(o, problem, dir, build, path, mode, res);
            }
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
    char box_desc[160] = "off";
    if (!o->no_sandbox) rl_ksandbox_describe(box_desc, sizeof box_desc);
    cJSON_AddStringToObject(res, "sandbox", box_desc);
    if (!o->proto_loaded) set_status(res, "error", "no protocol loaded (rl_kenv_load_protocol)");
    else if (rl_kenv_is_kernelbench(task)) eval_kernelbench(o, task, source, len, mode, res);
    else eval_native(o, task, source, len, mode, res);
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
