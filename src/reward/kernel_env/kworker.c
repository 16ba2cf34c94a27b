/* kworker.c — see kworker.h. A worker's JSON is trusted only as far as the last line of its
 * stdout that carries this run's nonce (given on stdin, which the worker closes after reading),
 * so text a candidate prints cannot pass for a result; that line must also hold a known status
 * and, for a timed "ok", the timings, or the candidate fails ("crash": the worker did not
 * finish properly, whatever the reason). */
#include "reward/kernel_env/kworker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/timer.h"
#include "io/json.h"
#include "reward/kernel_env/kproc.h"

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

void rl_kworker_set_status(cJSON *res, const char *status, const char *failure)
{
    cJSON_ReplaceItemInObject(res, "status", cJSON_CreateString(status));
    cJSON_ReplaceItemInObject(res, "failure", failure ? cJSON_CreateString(failure) : cJSON_CreateNull());
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
        rl_kworker_set_status(res, "timeout", msg);
    } else if (pr->truncated) {
        snprintf(msg, sizeof msg, "wrote more than %zu bytes to stdout (killed)", po->max_stdout);
        rl_kworker_set_status(res, "crash", msg);
    } else if (!w) {
        if (pr->exited && pr->exit_code == 127) {
            snprintf(msg, sizeof msg, "%s: cannot run %s (not found or not executable)", program, what);
            rl_kworker_set_status(res, "error", msg);
        } else if (pr->signaled) {
            snprintf(msg, sizeof msg, "%s killed by signal %d (%s); stderr: %s", what, pr->signal, strsignal(pr->signal), tail);
            rl_kworker_set_status(res, "crash", msg);
        } else {
            snprintf(msg, sizeof msg, "%s exited with status %d and no result; stderr: %s", what, pr->exit_code, tail);
            rl_kworker_set_status(res, "crash", msg);
        }
    } else if (check_worker_json(w, timed, why, sizeof why)) {
        snprintf(msg, sizeof msg, "%s printed a malformed result (%s); stderr: %s", what, why, tail);
        rl_kworker_set_status(res, "crash", msg);
    } else {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(w, "status");
        const cJSON *fa = cJSON_GetObjectItemCaseSensitive(w, "failure");
        rl_kworker_set_status(res, st->valuestring, cJSON_IsString(fa) ? fa->valuestring : NULL);
        static const char *copy[] = {"checks", "trials", "max_err_ratio", "max_abs_err", "ref_ms", "cand_ms",
                                     "speedup", "noisy", "ref_solo_ms", "device", "kernels", "build_note",
                                     "profile", "phases", "build_phases", "light_mismatch", "light_host"};
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

/* Makes path, less its last up components (removed before symlinks are resolved: a venv's
 * bin/python3 links to the base interpreter), readable in the sandbox. */
void rl_kworker_box_read(rl_kworker_box *b, const char *path, int up)
{
    if (b->n >= RL_KSANDBOX_MAX_PATHS || !path || !*path) return;
    char dir[PATH_MAX], real[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    for (int i = 0; i < up; i++) {
        char *slash = strrchr(dir, '/');
        if (!slash) snprintf(dir, sizeof dir, ".");
        else if (slash == dir) dir[1] = 0;
        else *slash = 0;
    }
    if (!realpath(dir, real)) return;
    snprintf(b->paths[b->n], PATH_MAX, "%s", real);
    b->spec.read_paths[b->n] = b->paths[b->n];
    b->n++;
}

/* The path of an interpreter named name (a path, or a name looked up in PATH), unresolved. */
static int which(const char *name, char *out, size_t size)
{
    if (strchr(name, '/')) return snprintf(out, size, "%s", name), 0;
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, size, "%.*s/%s", (int)n, p, name);
        if (n && access(out, X_OK) == 0) return 0;
        p += n + (p[n] == ':');
    }
    return -1;
}

void rl_kworker_box_init(rl_kworker_box *b, const rl_kenv_opts *o, const char *private_dir, const char *build_dir,
                            const char *task, int python, double cpu_s)
{
    memset(b, 0, sizeof *b);
    b->spec.write_dirs[0] = private_dir;
    b->spec.write_dirs[1] = build_dir;
    b->spec.no_fork = !python; /* the native worker never needs a process; load_inline runs ninja */
    b->spec.cpu_s = 4 * cpu_s; /* CPU seconds over all threads: a margin over the wall-time limit */
    b->spec.data_bytes = WORKER_DATA_BYTES;
    rl_kworker_box_read(b, o->protocol_path, 4); /* src/reward/kernel_env/protocol.json -> the rlc tree */
    rl_kworker_box_read(b, o->worker, 1);
    rl_kworker_box_read(b, o->cache_dir, 0);
    rl_kworker_box_read(b, ".", 0);
    rl_kworker_box_read(b, task, 1);
    if (python) {
        char exe[PATH_MAX], real[PATH_MAX];
        if (which(o->python, exe, sizeof exe) == 0) {
            rl_kworker_box_read(b, exe, 2); /* <prefix>/bin/python3: a venv's prefix */
            if (realpath(exe, real)) rl_kworker_box_read(b, real, 2); /* the base interpreter's */
        }
        const char *pp = getenv("PYTHONPATH");
        for (const char *q = pp ? pp : ""; *q;) {
            size_t n = strcspn(q, ":");
            char entry[PATH_MAX];
            snprintf(entry, sizeof entry, "%.*s", (int)n, q);
            rl_kworker_box_read(b, entry, 0);
            q += n + (q[n] == ':');
        }
        const char *home = getenv("HOME");
        char local[PATH_MAX];
        snprintf(local, sizeof local, "%s/.local/lib", home ? home : "/nonexistent");
        rl_kworker_box_read(b, local, 0);
    }
}

/* Runs one worker (native or Python) in a limited child on a GPU of the pool, with input on
 * stdin (its first line the nonce) and up to two more environment entries (NULL-terminated
 * list, or NULL), and reads its verdict into res. */
/* Sandbox levels, strongest first. A GPU machine's driver may need more than the full sandbox
 * allows (a data-segment limit below what it maps, a device ioctl, a file Landlock hides): the
 * first worker run of each kind (native, Python) in this process calibrates, running the
 * worker's device count (--count-devices; torch.cuda.device_count() for Python) under each
 * level until the GPUs it sees without a sandbox appear, and keeps that level. A machine
 * without a GPU keeps the full sandbox. The level is reported in every result ("sandbox"). */
enum { LEVEL_FULL, LEVEL_NO_DATA, LEVEL_NO_IOCTL, LEVEL_NO_LANDLOCK, LEVEL_OFF, N_LEVELS };
static const char *const level_notes[N_LEVELS] = {
    "", "; data limit off (the GPU driver did not start under it)",
    "; data limit and Landlock's device-ioctl rule off (the GPU driver did not start under them)",
    "; data limit and Landlock off (the GPU driver did not start under them)",
    "off: the GPU driver started under no level of the sandbox"};
static pthread_mutex_t level_lock = PTHREAD_MUTEX_INITIALIZER;
static int levels[2] = {-1, -1};

static void apply_level(rl_ksandbox_spec *spec, int level)
{
    if (level >= LEVEL_NO_DATA) spec->data_bytes = 0;
    if (level >= LEVEL_NO_IOCTL) spec->no_ioctl_rule = 1;
    if (level >= LEVEL_NO_LANDLOCK) spec->no_landlock = 1;
}

int rl_kworker_preload(const rl_kenv_opts *o, const char *extra, char *out, size_t size)
{
    char dir[PATH_MAX], shim[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s", o->worker);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    snprintf(shim, sizeof shim, "%s/librlc-kenv-preload.so", dir);
    char real[PATH_MAX];
    int have = realpath(shim, real) != NULL;
    const char *old = getenv("LD_PRELOAD");
    snprintf(out, size, "LD_PRELOAD=%s%s%s%s%s", have ? real : "", have && extra ? ":" : "", extra ? extra : "",
             old && *old ? ":" : "", old && *old ? old : "");
    return have;
}

void rl_kworker_probe_argv(const rl_kenv_opts *o, int python, char *argv[4])
{
    /* a context and a kernel, not only the count: see worker.cu's --count-devices */
    static const char torch_probe[] =
        "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() and "
        "float((torch.ones(4, device='cuda') * 2).sum()) == 8.0 else 0)";
    argv[0] = (char *)(python ? o->python : o->worker);
    argv[1] = python ? "-c" : "--count-devices";
    argv[2] = python ? (char *)torch_probe : NULL;
    argv[3] = NULL;
}

/* The device count printed by argv under the box at level (LEVEL_OFF: no sandbox), with gpu_env
 * ("CUDA_VISIBLE_DEVICES=..." or NULL); -1 on failure. */
static int probe_count(const rl_kenv_opts *o, char *const argv[], const rl_kworker_box *box, int level,
                       const char *gpu_env)
{
    rl_kproc_opts po = {0};
    char preload[2 * PATH_MAX];
    po.env_set[0] = gpu_env;
    if (level != LEVEL_OFF && rl_kworker_preload(o, NULL, preload, sizeof preload)) po.env_set[gpu_env ? 1 : 0] = preload;
    po.timeout_s = 120;
    po.max_stdout = 256;
    po.max_stderr = 4096;
    rl_ksandbox *sb = NULL;
    rl_err err;
    if (level != LEVEL_OFF) {
        rl_ksandbox_spec spec = box->spec;
        apply_level(&spec, level);
        if (rl_ksandbox_prepare(&spec, &sb, &err)) return -1;
        po.sandbox = sb;
    }
    rl_kproc_result pr;
    int rc = rl_kproc_run(argv, &po, &pr, &err);
    rl_ksandbox_free(sb);
    if (rc) return -1;
    int n = -1;
    if (pr.exited && pr.exit_code == 0 && sscanf(pr.out, "%d", &n) != 1) n = -1;
    rl_kproc_result_free(&pr);
    return n;
}

/* lock_path: the GPU's lock file, held exclusively around the probes (they create a context and
 * touch the GPU, which must not happen beside another worker's timed run). */
static int sandbox_level(const rl_kenv_opts *o, const rl_kworker_box *box, int python, const char *gpu_env,
                         const char *lock_path)
{
    pthread_mutex_lock(&level_lock);
    if (levels[python] < 0) {
        int lock_fd = lock_path ? open(lock_path, O_RDONLY | O_CLOEXEC) : -1;
        while (lock_fd >= 0 && flock(lock_fd, LOCK_EX) != 0 && errno == EINTR) {
        }
        char *argv[4];
        rl_kworker_probe_argv(o, python, argv);
        int level = LEVEL_FULL;
        if (probe_count(o, argv, box, LEVEL_OFF, gpu_env) > 0) {
            level = LEVEL_OFF;
            for (int l = LEVEL_FULL; l < LEVEL_OFF; l++)
                if (probe_count(o, argv, box, l, gpu_env) > 0) {
                    level = l;
                    break;
                }
        }
        levels[python] = level;
        if (level != LEVEL_FULL) /* once per kind: the user should know the isolation is weaker */
            rl_log_warn("kernel evaluator: %s worker sandbox %s%s", python ? "Python" : "native",
                        level == LEVEL_OFF ? "" : "weakened", level_notes[level]);
        if (lock_fd >= 0) close(lock_fd); /* drops the lock */
    }
    int level = levels[python];
    pthread_mutex_unlock(&level_lock);
    return level;
}

void rl_kworker_describe(const rl_kenv_opts *o, char *out, size_t size)
{
    if (o->no_sandbox) {
        snprintf(out, size, "off");
        return;
    }
    char base[160];
    rl_ksandbox_describe(base, sizeof base);
    pthread_mutex_lock(&level_lock);
    int worst = levels[0] > levels[1] ? levels[0] : levels[1];
    pthread_mutex_unlock(&level_lock);
    if (worst == LEVEL_OFF) snprintf(out, size, "%s", level_notes[LEVEL_OFF]);
    else snprintf(out, size, "%s%s", base, worst > 0 ? level_notes[worst] : "");
}

/* The lock file of GPU dev (and its turnstile FILE.gate), created here so that the sandboxed
 * worker only opens it: $TMPDIR/rlc-gpu-<dev>.lock. 1 when it is there. */
static int gpu_lock_file(const char *dev, char *lock_path, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    int len = snprintf(lock_path, size, "%s/rlc-gpu-%s.lock", tmp && *tmp ? tmp : "/tmp", dev && *dev ? dev : "0");
    for (int i = len - 1; i > 0 && lock_path[i] != '/'; i--)
        if (lock_path[i] == ' ' || lock_path[i] == ',') lock_path[i] = '_';
    int fd = open(lock_path, O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
    char gate[PATH_MAX + 8]; /* the turnstile of a waiting timed run (worker.cu's gpu_lock) */
    snprintf(gate, sizeof gate, "%s.gate", lock_path);
    int gate_fd = open(gate, O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
    if (gate_fd >= 0) close(gate_fd);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

/* Not level_lock: a calibration holds that for its probes (seconds), and every candidate asks. */
static pthread_mutex_t claim_lock = PTHREAD_MUTEX_INITIALIZER;
static int calibration_claimed[2];

int rl_kworker_calibration_claim(const rl_kenv_opts *o, int python)
{
    if (o->no_sandbox) return 0;
    pthread_mutex_lock(&claim_lock);
    int claim = !calibration_claimed[python];
    calibration_claimed[python] = 1;
    pthread_mutex_unlock(&claim_lock);
    return claim; /* rl_kworker_calibrate does nothing when the level is known by then */
}

void rl_kworker_calibrate(const rl_kenv_opts *o, const rl_kworker_box *box)
{
    if (o->no_sandbox || !box) return;
    int python = !box->spec.no_fork;
    pthread_mutex_lock(&level_lock);
    int known = levels[python] >= 0;
    pthread_mutex_unlock(&level_lock);
    if (known) return;
    const char *dev = o->gpu_acquire ? o->gpu_acquire(o->gpu_ctx) : o->devices;
    char gpu_env[64] = "", lock_path[PATH_MAX];
    if (dev) snprintf(gpu_env, sizeof gpu_env, "CUDA_VISIBLE_DEVICES=%s", dev);
    int have_lock = gpu_lock_file(dev, lock_path, sizeof lock_path);
    sandbox_level(o, box, python, gpu_env[0] ? gpu_env : NULL, have_lock ? lock_path : NULL);
    if (o->gpu_acquire) o->gpu_release(o->gpu_ctx, dev);
}

void rl_kworker_run(const rl_kenv_opts *o, char *const argv[], const char *input, const char *nonce,
                       double timeout_s, const char *const *extra_env, int use_gpu, int timed, const char *what,
                       const rl_kworker_box *box, cJSON *res)
{
    char gpu_env[64] = "", home_env[PATH_MAX + 8], tmp_env[PATH_MAX + 8], preload[2 * PATH_MAX];
    rl_kproc_opts po = {0};
    po.timeout_s = timeout_s;
    po.max_stdout = 1 << 20;
    po.max_stderr = 16384;
    po.fsize_limit = (size_t)64 << 20;
    po.stdin_data = input;
    po.stdin_len = strlen(input);
    po.nice = use_gpu ? 0 : RL_KPROC_BUILD_NICE; /* a build-only run compiles */
    int n_env = 0;
    for (int i = 0; extra_env && extra_env[i] && i < RL_KPROC_MAX_ENV - 1; i++) po.env_set[n_env++] = extra_env[i];
    /* Without the GPU (a build-only run): no device visible, and no pool slot taken, so such
     * runs overlap freely with the one timed worker per GPU. */
    double t_ask = rl_time_now();
    const char *dev = !use_gpu ? "" : o->gpu_acquire ? o->gpu_acquire(o->gpu_ctx) : o->devices;
    double t_got = rl_time_now();
    if (dev && n_env < RL_KPROC_MAX_ENV) {
        snprintf(gpu_env, sizeof gpu_env, "CUDA_VISIBLE_DEVICES=%s", dev);
        po.env_set[n_env++] = gpu_env;
    }
    /* The GPU's lock file (worker.cu, kernelbench_worker.py: correctness shared, timing
     * exclusive), created here so that the sandboxed worker only opens it. */
    char lock_path[PATH_MAX], *args[80];
    int n_args = 0, have_lock = 0;
    for (; argv[n_args] && n_args < 76; n_args++) args[n_args] = argv[n_args];
    if (use_gpu && gpu_lock_file(dev, lock_path, sizeof lock_path)) {
        args[n_args++] = "--gpu-lock";
        args[n_args++] = lock_path;
        have_lock = 1;
    }
    args[n_args] = NULL;
    rl_kproc_result pr;
    rl_err err;
    rl_ksandbox *sb = NULL;
    int level = box && !o->no_sandbox && use_gpu
                    ? sandbox_level(o, box, !box->spec.no_fork, gpu_env[0] ? gpu_env : NULL, have_lock ? lock_path : NULL)
                    : LEVEL_FULL;
    if (box && !o->no_sandbox && level != LEVEL_OFF) {
        /* $HOME and the temporary directory are the private one: what a candidate writes
         * there (caches, temporary files) goes away with it. */
        snprintf(home_env, sizeof home_env, "HOME=%s", box->spec.write_dirs[0]);
        snprintf(tmp_env, sizeof tmp_env, "TMPDIR=%s", box->spec.write_dirs[0]);
        if (n_env + 2 <= RL_KPROC_MAX_ENV) po.env_set[n_env++] = home_env, po.env_set[n_env++] = tmp_env;
        /* the driver's thread names (kenv_preload.c), in any run that may touch the GPU */
        if (use_gpu && n_env < RL_KPROC_MAX_ENV && rl_kworker_preload(o, NULL, preload, sizeof preload))
            po.env_set[n_env++] = preload;
        rl_ksandbox_spec spec = box->spec;
        apply_level(&spec, level);
        if (rl_ksandbox_prepare(&spec, &sb, &err)) {
            if (use_gpu && o->gpu_acquire) o->gpu_release(o->gpu_ctx, dev);
            rl_kworker_set_status(res, "error", err.msg);
            return;
        }
        po.sandbox = sb;
    }
    int run_rc = rl_kproc_run(args, &po, &pr, &err);
    rl_ksandbox_free(sb);
    if (use_gpu && o->gpu_acquire) o->gpu_release(o->gpu_ctx, dev);
    if (use_gpu) { /* throughput: waiting for a GPU slot, and holding it (docs/kernel-env.md) */
        cJSON_AddNumberToObject(res, "gpu_wait_seconds", t_got - t_ask);
        cJSON_AddNumberToObject(res, "gpu_slot_seconds", rl_time_now() - t_got);
    }
    if (run_rc) {
        rl_kworker_set_status(res, "error", err.msg);
        return;
    }
    cJSON_AddNumberToObject(res, "worker_seconds", pr.seconds);
    if (pr.exited && pr.exit_code == 125 && !strncmp(pr.err, "sandbox:", 8)) {
        rl_kworker_set_status(res, "error", pr.err); /* the sandbox could not be entered: not the candidate's fault */
        rl_kproc_result_free(&pr);
        return;
    }
    read_worker(res, &pr, &po, nonce, timed, argv[0], what);
    rl_kproc_result_free(&pr);
}

void rl_kworker_nonce(char *out, size_t size)
{
    snprintf(out, size, "%016" PRIx64, urandom64());
}
