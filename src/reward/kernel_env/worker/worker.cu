/* worker.cu — build/rlc-kernel-worker: runs the evaluation protocol of docs/kernel-env.md for
 * one candidate module against one reference module and prints one JSON object on stdout.
 *
 *   rlc-kernel-worker --ref R.so --cand C.so --trials N --timed N --warmup N --copies K
 *                     --watchdog-ms MS --mem-cap-mb MB --flush-factor F --max-spread S
 *                     --spread-repeats R [--seed S] [--check-only] [--profile] [--gpu-lock FILE]   < plan
 *   rlc-kernel-worker --count-devices
 *
 * The plan (stdin) is the flat form of spec.json written by src/reward/kernel_env/kspec.c, with
 * each output's tolerance. The protocol's parameters are flags, all required: rlc passes the
 * values of protocol.json (kproto.h), so the worker keeps no defaults of its own.
 * Idea: the candidate runs first in every correctness trial on fresh inputs, under poisoned
 * outputs, guard regions, input hashes and a watchdog; timing is host wall time around the call
 * plus a whole-device synchronize, with L2 flushed and fresh inputs drawn before every run
 * (the reference on the same inputs in the same iteration), and every timed output verified. The first failed check ends the run; the JSON names it. */
#include <cuda_runtime.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <errno.h>
#include <pthread.h>
#include <sys/file.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "wk.h"


enum { CK_SETUP, CK_RETURN, CK_IDLE, CK_WRITTEN, CK_RANDOM, CK_ADVERSARIAL, CK_CONSTANT,
       CK_ZERO_PREFIX, CK_INPUTS, CK_GUARDS, CK_THREADS, CK_LIMITS, CK_MEMORY, CK_TIMED,
       CK_AFTER, CK_STABLE, CK_COUNT };
static const char *check_names[CK_COUNT] = {
    "setup", "return_code", "device_idle", "outputs_written", "correct_random",
    "correct_adversarial", "correct_constant", "correct_zero_prefix", "inputs_unchanged",
    "guards", "host_threads", "device_limits", "gpu_memory", "timed_outputs",
    "correct_after_timing", "output_stable"};

#define MAX_COPIES 8

typedef struct stats {
    double median, p10, p90;
    int n;
} stats;

static struct {
    wk_plan plan;
    rl_kernel_fn ref, cand;
    uint64_t seed;
    int trials, timed, warmup, copies, spread_repeats, check_only;
    double watchdog_s, flush_factor, max_spread;
    size_t mem_cap;
    wk_buf cin[RL_KERNEL_MAX_TENSORS], cout[RL_KERNEL_MAX_TENSORS];
    wk_buf rin[RL_KERNEL_MAX_TENSORS], rout[RL_KERNEL_MAX_TENSORS];
    wk_buf tin[MAX_COPIES][RL_KERNEL_MAX_TENSORS];
    uint64_t thash[MAX_COPIES][RL_KERNEL_MAX_TENSORS];
    void *flush;
    size_t flush_bytes, l2_bytes;
    int baseline_threads, trial_no, flush_round;
    int check[CK_COUNT]; /* 0 not run, 1 pass, 2 fail */
    const char *status;
    char failure[1024];
    double max_ratio, max_abs;
    stats ref_ms, cand_ms;
    int noisy, timed_done;
    char device[256];
    char nonce[40];
    int profile;                          /* --profile: per-kernel times after the protocol */
    std::vector<wk_prof_kernel> prof[2];  /* candidate, reference */
    char prof_err[300];
    int prof_done;
    double t0, ph[5], lock_wait; /* phase ends since t0: setup, correctness, timing, post, profile */
} W;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void json_stats(std::vector<char> &out, const char *key, const stats *s)
{
    wk_jprintf(out, ",\"%s\":{\"median\":%.6g,\"p10\":%.6g,\"p90\":%.6g,\"n\":%d}", key, s->median, s->p10, s->p90, s->n);
}

/* The whole result; also called by the watchdog thread just before _exit, so it only reads. */
static void print_result(void)
{
    std::vector<char> out;
    wk_jprintf(out, "{\"nonce\":");
    wk_json_str(out, W.nonce);
    wk_jprintf(out, ",\"status\":");
    wk_json_str(out, W.status);
    wk_jprintf(out, ",\"failure\":");
    if (W.failure[0]) wk_json_str(out, W.failure);
    else wk_jprintf(out, "null");
    wk_jprintf(out, ",\"checks\":{");
    for (int i = 0; i < CK_COUNT; i++)
        wk_jprintf(out, "%s\"%s\":\"%s\"", i ? "," : "", check_names[i],
                W.check[i] == 1 ? "pass" : W.check[i] == 2 ? "fail" : "skip");
    wk_jprintf(out, "},\"trials\":%d,\"max_err_ratio\":%.6g,\"max_abs_err\":%.6g", W.trial_no, W.max_ratio, W.max_abs);
    if (W.timed_done) {
        json_stats(out, "ref_ms", &W.ref_ms);
        json_stats(out, "cand_ms", &W.cand_ms);
        wk_jprintf(out, ",\"speedup\":%.6g,\"noisy\":%s", W.ref_ms.median / W.cand_ms.median, W.noisy ? "true" : "false");
    }
    if (W.prof_done) {
        wk_jprintf(out, ",\"profile\":{");
        if (W.prof_err[0]) {
            wk_jprintf(out, "\"error\":");
            wk_json_str(out, W.prof_err);
        }
        for (int side = 0; side < 2 && !W.prof_err[0]; side++) {
            wk_jprintf(out, "%s\"%s\":[", side ? "," : "", side ? "reference" : "candidate");
            for (size_t i = 0; i < W.prof[side].size() && i < 64; i++) {
                wk_jprintf(out, "%s{\"name\":", i ? "," : "");
                wk_json_str(out, W.prof[side][i].name.substr(0, 300).c_str());
                wk_jprintf(out, ",\"calls\":%d,\"ms\":%.6g}", W.prof[side][i].calls, W.prof[side][i].ms);
            }
            wk_jprintf(out, "]");
        }
        wk_jprintf(out, "}");
    }
    static const char *const phase_names[5] = {"setup", "correctness", "timing", "post", "profile"};
    wk_jprintf(out, ",\"phases\":{\"lock_wait\":%.3f", W.lock_wait); /* where a worker's seconds went */
    for (int i = 0; i < 5; i++)
        if (W.ph[i] > 0) wk_jprintf(out, ",\"%s\":%.3f", phase_names[i], W.ph[i] - (i ? W.ph[i - 1] : W.t0));
    wk_jprintf(out, "}");
    wk_jprintf(out, ",\"device\":");
    wk_json_str(out, W.device);
    wk_jprintf(out, ",\"l2_bytes\":%zu}\n", W.l2_bytes);
    ssize_t off = 0;
    while (off < (ssize_t)out.size()) {
        ssize_t w = write(1, out.data() + off, out.size() - off);
        if (w <= 0) break;
        off += w;
    }
}

static int fail(int check, const char *status, const char *fmt, ...)
{
    W.check[check] = 2;
    W.status = status;
    int n = snprintf(W.failure, sizeof W.failure, "%s: ", check_names[check]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(W.failure + n, sizeof W.failure - n, fmt, ap);
    va_end(ap);
    return -1;
}

static void pass(int check)
{
    if (W.check[check] == 0) W.check[check] = 1;
}

/* Watchdog: a call plus its synchronize must finish before the deadline, else the device is
 * still busy (a persistent kernel, a host loop) and the worker reports and exits. */
static std::atomic<double> g_deadline(0.0);
static const char *g_phase = "";

static void *watchdog_main(void *arg)
{
    (void)arg;
    for (;;) {
        usleep(5000);
        double d = g_deadline.load();
        if (d > 0 && now_s() > d) {
            W.check[CK_IDLE] = 2;
            W.status = "timeout";
            snprintf(W.failure, sizeof W.failure,
                     "device_idle: %s did not return and synchronize within %.1f s (a kernel or host "
                     "work still running)", g_phase, W.watchdog_s);
            print_result();
            _exit(0);
        }
    }
    return NULL;
}

static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* One call plus whole-device synchronize under the watchdog; returns seconds or -1. */
static double timed_call(rl_kernel_fn fn, const rl_kernel_args *a, const char *phase, int *rc,
                         cudaError_t *cerr)
{
    g_phase = phase;
    double t0 = now_s();
    g_deadline.store(t0 + W.watchdog_s);
    *rc = fn(a);
    *cerr = cudaDeviceSynchronize();
    double t1 = now_s();
    g_deadline.store(0.0);
    if (*cerr == cudaSuccess) *cerr = cudaGetLastError();
    return t1 - t0;
}

static void make_args(rl_kernel_args *a, wk_buf *in, wk_buf *out, const int64_t *dims)
{
    memset(a, 0, sizeof *a);
    a->n_inputs = W.plan.n_inputs;
    a->n_outputs = W.plan.n_outputs;
    a->n_dims = W.plan.n_dims;
    for (int i = 0; i < W.plan.n_inputs; i++) a->inputs[i] = in[i].ptr;
    for (int i = 0; i < W.plan.n_outputs; i++) a->outputs[i] = out[i].ptr;
    for (int i = 0; i < W.plan.n_dims; i++) a->dims[i] = dims[i];
}

static size_t tbytes(const wk_tensor *t, const int64_t *dims)
{
    return wk_numel(t, dims) * wk_dtype_size(t->dtype);
}

static uint64_t next_seed(void)
{
    W.seed = W.seed * 6364136223846793005ull + 1442695040888963407ull;
    return W.seed ^ (W.seed >> 29);
}

enum { TRIAL_RANDOM, TRIAL_ADVERSARIAL, TRIAL_CONSTANT, TRIAL_ZERO_PREFIX };
static const char *trial_names[] = {"random", "adversarial", "constant", "zero-prefix"};

static void gen_inputs(wk_buf *dst, const int64_t *dims, int kind)
{
    for (int i = 0; i < W.plan.n_inputs; i++) {
        const wk_tensor *t = &W.plan.inputs[i];
        size_t n = wk_numel(t, dims);
        if (kind == TRIAL_CONSTANT) {
            /* A multiple of 1/8 with few significant bits, so that sums of up to 2^19 copies are
             * exact in fp32: a constant row then has an exact mean, and ops whose result is 0
             * there (layer norm) give exactly 0 rather than amplified rounding noise. */
            double v = t->dist_uniform ? 0.5 * (t->p0 + t->p1) : t->p0 + 0.7 * t->p1;
            v = t->dtype == WK_I32 ? floor(v) : ldexp(round(ldexp(v, 3)), -3);
            wk_fill_const(dst[i].ptr, n, t->dtype, v);
            continue;
        }
        wk_fill_random(dst[i].ptr, n, t, next_seed());
        if (kind == TRIAL_ADVERSARIAL) wk_sprinkle_special(dst[i].ptr, n, t->dtype, t->adv_mask, next_seed());
        if (kind == TRIAL_ZERO_PREFIX) cudaMemsetAsync(dst[i].ptr, 0, (n / 2) * wk_dtype_size(t->dtype), 0);
    }
}

static int check_after_candidate(const char *phase, int rc, cudaError_t cerr, size_t free_before)
{
    if (cerr != cudaSuccess)
        return fail(CK_RETURN, "crash", "%s: CUDA error %s (%s)", phase, cudaGetErrorName(cerr), cudaGetErrorString(cerr));
    if (rc != 0) return fail(CK_RETURN, "incorrect", "%s: rl_kernel returned %d", phase, rc);
    pass(CK_RETURN);
    pass(CK_IDLE);
    size_t free_now = 0, total = 0;
    cudaMemGetInfo(&free_now, &total);
    if (free_before > free_now && free_before - free_now > W.mem_cap)
        return fail(CK_MEMORY, "incorrect", "%s: the candidate holds %zu MB of GPU memory after the call (cap %zu MB)",
                    phase, (free_before - free_now) >> 20, W.mem_cap >> 20);
    pass(CK_MEMORY);
    int threads = count_threads();
    if (threads > W.baseline_threads)
        return fail(CK_THREADS, "cheat", "%s: %d host threads after the call, %d before (a thread outlives the call)",
                    phase, threads, W.baseline_threads);
    pass(CK_THREADS);
    size_t persisting = 1;
    cudaDeviceGetLimit(&persisting, cudaLimitPersistingL2CacheSize);
    if (persisting != 0)
        return fail(CK_LIMITS, "cheat", "%s: the persisting-L2 limit was raised to %zu bytes", phase, persisting);
    pass(CK_LIMITS);
    return 0;
}

/* Compares every output element on the device; on a failure, fetches the first bad element
 * for the message. Fills max_ratio/max_abs. */
static int compare_outputs(wk_buf *cand, wk_buf *ref, const int64_t *dims, int check, const char *what)
{
    for (int o = 0; o < W.plan.n_outputs; o++) {
        const wk_tensor *t = &W.plan.outputs[o];
        size_t n = wk_numel(t, dims), es = wk_dtype_size(t->dtype);
        wk_cmp c;
        if (wk_compare(cand[o].ptr, ref[o].ptr, n, t->dtype, t->atol, t->rtol, &c))
            return fail(CK_SETUP, "error", "%s: the comparison failed (%s)", what, cudaGetErrorName(cudaGetLastError()));
        if (c.max_ratio > W.max_ratio) W.max_ratio = c.max_ratio;
        if (c.max_abs > W.max_abs) W.max_abs = c.max_abs;
        if (!c.bad) continue;
        size_t i = (size_t)c.first_bad;
        unsigned char hc[4] = {0}, hr[4] = {0};
        cudaMemcpy(hc, (unsigned char *)cand[o].ptr + i * es, es, cudaMemcpyDeviceToHost);
        cudaMemcpy(hr, (unsigned char *)ref[o].ptr + i * es, es, cudaMemcpyDeviceToHost);
        if (wk_bits(hc, 0, t->dtype) == wk_sentinel_bits(t->dtype))
            return fail(CK_WRITTEN, "incorrect", "%s: output %d element %zu of %zu was not written (%llu bad elements)",
                        what, o, i, n, c.bad);
        return fail(check, "incorrect", "%s: output %d element %zu of %zu = %.9g, reference %.9g (atol %.3g x scale %.3g, rtol %.3g; %llu bad elements)",
                    what, o, i, n, wk_load(hc, 0, t->dtype), wk_load(hr, 0, t->dtype), t->atol, c.scale, t->rtol, c.bad);
    }
    pass(CK_WRITTEN);
    pass(check);
    return 0;
}

/* One correctness trial: fresh inputs, candidate first (guarded, poisoned), then reference on
 * a pristine copy, then a full comparison. */
static int run_trial(const int64_t *dims, int kind, int check)
{
    char what[200];
    int len = snprintf(what, sizeof what, "trial %d (%s, dims", ++W.trial_no, trial_names[kind]);
    for (int d = 0; d < W.plan.n_dims && len < 150; d++) len += snprintf(what + len, sizeof what - len, " %lld", (long long)dims[d]);
    snprintf(what + len, sizeof what - len, ")");

    gen_inputs(W.rin, dims, kind);
    unsigned char g = (unsigned char)(0x11 + next_seed() % 0xdd);
    uint64_t hin[RL_KERNEL_MAX_TENSORS];
    for (int i = 0; i < W.plan.n_inputs; i++) {
        size_t b = tbytes(&W.plan.inputs[i], dims);
        cudaMemcpy(W.cin[i].ptr, W.rin[i].ptr, b, cudaMemcpyDeviceToDevice);
        wk_guard_fill(&W.cin[i], b, g);
        hin[i] = wk_hash(W.rin[i].ptr, b);
    }
    for (int o = 0; o < W.plan.n_outputs; o++) {
        const wk_tensor *t = &W.plan.outputs[o];
        wk_poison(W.cout[o].ptr, wk_numel(t, dims), t->dtype);
        wk_guard_fill(&W.cout[o], tbytes(t, dims), g);
        wk_poison(W.rout[o].ptr, wk_numel(t, dims), t->dtype);
    }
    cudaDeviceSynchronize();
    /* Free memory is device-wide: with other workers on the GPU (shared lock) the check moves
     * to the exclusive timing phase. */
    size_t free_before = 0, total = 0;
    if (!wk_gpu_lock_held()) cudaMemGetInfo(&free_before, &total);

    rl_kernel_args a;
    int rc;
    cudaError_t cerr;
    make_args(&a, W.cin, W.cout, dims);
    timed_call(W.cand, &a, "candidate", &rc, &cerr);
    if (check_after_candidate(what, rc, cerr, free_before)) return -1;
    for (int i = 0; i < W.plan.n_inputs; i++) {
        size_t b = tbytes(&W.plan.inputs[i], dims);
        if (!W.plan.inputs[i].mutable_ && wk_hash(W.cin[i].ptr, b) != hin[i])
            return fail(CK_INPUTS, "cheat", "%s: input %d was modified by the candidate", what, i);
        uint64_t bad = wk_guard_count_bad(&W.cin[i], b, g);
        if (bad) return fail(CK_GUARDS, "incorrect", "%s: %llu bytes written outside input %d", what, (unsigned long long)bad, i);
    }
    pass(CK_INPUTS);
    for (int o = 0; o < W.plan.n_outputs; o++) {
        uint64_t bad = wk_guard_count_bad(&W.cout[o], tbytes(&W.plan.outputs[o], dims), g);
        if (bad) return fail(CK_GUARDS, "incorrect", "%s: %llu bytes written outside output %d", what, (unsigned long long)bad, o);
    }
    pass(CK_GUARDS);

    make_args(&a, W.rin, W.rout, dims);
    timed_call(W.ref, &a, "reference", &rc, &cerr);
    if (rc != 0 || cerr != cudaSuccess)
        return fail(CK_SETUP, "error", "%s: the reference failed (rc %d, %s)", what, rc, cudaGetErrorName(cerr));
    return compare_outputs(W.cout, W.rout, dims, check, what);
}

static int smallest_dimset(void)
{
    int best = 0;
    double best_n = INFINITY;
    for (int s = 0; s < W.plan.n_dimsets; s++) {
        double n = 1;
        for (int d = 0; d < W.plan.n_dims; d++) n *= (double)W.plan.dimsets[s][d];
        if (n < best_n) { best_n = n; best = s; }
    }
    return best;
}

static int correctness_phase(void)
{
    const int64_t *timed = W.plan.dimsets[W.plan.n_dimsets - 1];
    for (int s = 0; s < W.plan.n_dimsets; s++)
        if (run_trial(W.plan.dimsets[s], TRIAL_RANDOM, CK_RANDOM)) return -1;
    for (int k = 1; k < W.trials; k++)
        if (run_trial(timed, TRIAL_RANDOM, CK_RANDOM)) return -1;
    int adv = 0, zero_ok = 1;
    for (int i = 0; i < W.plan.n_inputs; i++) {
        const wk_tensor *t = &W.plan.inputs[i];
        adv |= t->adv_mask;
        if (t->dist_uniform && (t->p0 > 0 || t->p1 < 0)) zero_ok = 0;
    }
    const int64_t *sizes[2] = {timed, W.plan.dimsets[smallest_dimset()]};
    for (int s = 0; s < 2; s++) {
        if (adv && run_trial(sizes[s], TRIAL_ADVERSARIAL, CK_ADVERSARIAL)) return -1;
        if (run_trial(sizes[s], TRIAL_CONSTANT, CK_CONSTANT)) return -1;
        if (zero_ok && run_trial(sizes[s], TRIAL_ZERO_PREFIX, CK_ZERO_PREFIX)) return -1;
    }
    return 0;
}

static stats summarize(std::vector<double> &ms)
{
    std::sort(ms.begin(), ms.end());
    size_t n = ms.size();
    stats s = {ms[n / 2], ms[n / 10], ms[n - 1 - n / 10], (int)n};
    if (n % 2 == 0) s.median = 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    return s;
}

/* Puts the device into the same state before every timed run: outputs poisoned, persisting L2
 * reset, L2 evicted by writing the flush buffer, all work finished. */
static void prepare_run(wk_buf *out, const int64_t *dims)
{
    for (int o = 0; o < W.plan.n_outputs; o++)
        wk_poison(out[o].ptr, wk_numel(&W.plan.outputs[o], dims), W.plan.outputs[o].dtype);
    cudaCtxResetPersistingL2Cache();
    wk_flush_l2(W.flush, W.flush_bytes, ++W.flush_round);
    cudaDeviceSynchronize();
}

/* One timing round. Every iteration (warm-up included) draws FRESH inputs on the device into
 * the next of the rotating input copies (outside the timed region), gives the reference a
 * pristine copy of them, times both sides on them (the side that goes first alternating) and
 * compares the candidate's output with the reference output of the same iteration. So no timed
 * call ever sees data an earlier call saw: a candidate that memoises outputs keyed on the
 * content of its inputs (or on their addresses) misses every time. */
static int timing_round(const int64_t *dims, unsigned long long *d_bad, stats *ref_s, stats *cand_s)
{
    std::vector<double> tr, tc;
    int total = W.warmup + W.timed;
    for (int i = 0; i < total; i++) {
        int k = i % W.copies;
        gen_inputs(W.tin[k], dims, TRIAL_RANDOM);
        for (int n = 0; n < W.plan.n_inputs; n++) {
            size_t b = tbytes(&W.plan.inputs[n], dims);
            cudaMemcpy(W.rin[n].ptr, W.tin[k][n].ptr, b, cudaMemcpyDeviceToDevice);
            W.thash[k][n] = wk_hash(W.tin[k][n].ptr, b);
        }
        for (int side = 0; side < 2; side++) {
            int is_cand = (side == (i & 1)); /* alternate which side goes first */
            rl_kernel_args a;
            int rc;
            cudaError_t cerr;
            wk_buf *out = is_cand ? W.cout : W.rout;
            make_args(&a, is_cand ? W.tin[k] : W.rin, out, dims);
            prepare_run(out, dims);
            double t = timed_call(is_cand ? W.cand : W.ref, &a, is_cand ? "candidate (timed)" : "reference (timed)", &rc, &cerr);
            if (is_cand) {
                if (check_after_candidate("timing", rc, cerr, 0)) return -1;
            } else if (rc != 0 || cerr != cudaSuccess) {
                return fail(CK_SETUP, "error", "timing: the reference failed (rc %d, %s)", rc, cudaGetErrorName(cerr));
            }
            if (i >= W.warmup) (is_cand ? tc : tr).push_back(t * 1e3);
        }
        for (int o = 0; o < W.plan.n_outputs; o++) {
            const wk_tensor *ot = &W.plan.outputs[o];
            size_t n = wk_numel(ot, dims);
            double scale = wk_rms(W.rout[o].ptr, n, ot->dtype);
            wk_compare_async(W.cout[o].ptr, W.rout[o].ptr, n, ot->dtype, ot->atol * scale, ot->rtol, d_bad);
        }
        for (int n = 0; n < W.plan.n_inputs; n++) {
            size_t b = tbytes(&W.plan.inputs[n], dims);
            if (!W.plan.inputs[n].mutable_ && wk_hash(W.tin[k][n].ptr, b) != W.thash[k][n])
                return fail(CK_INPUTS, "cheat", "timing: input %d (run %d) was modified by the candidate", n, i);
        }
    }
    *ref_s = summarize(tr);
    *cand_s = summarize(tc);
    return 0;
}

static int timing_phase_locked(void);

static int timing_phase(void)
{
    cudaDeviceSynchronize();
    double t = now_s();
    wk_gpu_lock(LOCK_EX);
    W.lock_wait += now_s() - t;
    size_t free0 = 0, free1 = 0, total = 0;
    cudaMemGetInfo(&free0, &total);
    int rc = timing_phase_locked();
    cudaDeviceSynchronize();
    cudaMemGetInfo(&free1, &total);
    wk_gpu_lock(LOCK_SH);
    if (rc == 0 && wk_gpu_lock_held() && free0 > free1 && free0 - free1 > W.mem_cap)
        return fail(CK_MEMORY, "incorrect", "timing: the candidate holds %zu MB more GPU memory after the timed runs (cap %zu MB)",
                    (free0 - free1) >> 20, W.mem_cap >> 20);
    return rc;
}

static int timing_phase_locked(void)
{
    const int64_t *dims = W.plan.dimsets[W.plan.n_dimsets - 1];
    for (int k = 0; k < W.copies; k++)
        for (int i = 0; i < W.plan.n_inputs; i++) wk_guard_fill(&W.tin[k][i], tbytes(&W.plan.inputs[i], dims), 0x5a);
    unsigned long long *d_bad, bad = 0;
    cudaMalloc(&d_bad, sizeof *d_bad);
    cudaMemset(d_bad, 0, sizeof *d_bad);
    for (int o = 0; o < W.plan.n_outputs; o++) wk_guard_fill(&W.cout[o], tbytes(&W.plan.outputs[o], dims), 0x5a);
    /* A round whose spread on either side exceeds the limit is repeated (up to
     * spread_repeats times); still wide after that: noisy. */
    int rc = timing_round(dims, d_bad, &W.ref_ms, &W.cand_ms);
    for (int r = 0; rc == 0; r++) {
        double spread_r = (W.ref_ms.p90 - W.ref_ms.p10) / W.ref_ms.median;
        double spread_c = (W.cand_ms.p90 - W.cand_ms.p10) / W.cand_ms.median;
        W.noisy = spread_r > W.max_spread || spread_c > W.max_spread;
        if (!W.noisy || r >= W.spread_repeats) break;
        rc = timing_round(dims, d_bad, &W.ref_ms, &W.cand_ms);
    }
    if (rc) { cudaFree(d_bad); return -1; }
    cudaMemcpy(&bad, d_bad, sizeof bad, cudaMemcpyDeviceToHost);
    cudaFree(d_bad);
    W.timed_done = 1;
    if (bad) return fail(CK_TIMED, "cheat", "%llu output elements wrong over the timed runs (correct only outside timing)", bad);
    pass(CK_TIMED);
    for (int k = 0; k < W.copies; k++)
        for (int i = 0; i < W.plan.n_inputs; i++)
            if (wk_guard_count_bad(&W.tin[k][i], tbytes(&W.plan.inputs[i], dims), 0x5a))
                return fail(CK_GUARDS, "incorrect", "timing: write outside input %d", i);
    for (int o = 0; o < W.plan.n_outputs; o++)
        if (wk_guard_count_bad(&W.cout[o], tbytes(&W.plan.outputs[o], dims), 0x5a))
            return fail(CK_GUARDS, "incorrect", "timing: write outside output %d", o);
    return 0;
}

/* --profile, after every check passed (it changes no verdict): one more call of each side on
 * fresh inputs at the timed size, alone on the GPU, with CUPTI recording the kernels it
 * launches. */
static void profile_phase(void)
{
    const int64_t *dims = W.plan.dimsets[W.plan.n_dimsets - 1];
    W.prof_done = 1;
    cudaDeviceSynchronize();
    double t = now_s();
    wk_gpu_lock(LOCK_EX);
    W.lock_wait += now_s() - t;
    gen_inputs(W.cin, dims, TRIAL_RANDOM);
    for (int i = 0; i < W.plan.n_inputs; i++)
        cudaMemcpy(W.rin[i].ptr, W.cin[i].ptr, tbytes(&W.plan.inputs[i], dims), cudaMemcpyDeviceToDevice);
    for (int side = 0; side < 2 && !W.prof_err[0]; side++) {
        rl_kernel_args a;
        wk_buf *out = side ? W.rout : W.cout;
        make_args(&a, side ? W.rin : W.cin, out, dims);
        prepare_run(out, dims);
        g_phase = side ? "reference (profiled)" : "candidate (profiled)";
        g_deadline.store(now_s() + W.watchdog_s);
        wk_profile_call(side ? W.ref : W.cand, &a, W.prof[side], W.prof_err, sizeof W.prof_err);
        g_deadline.store(0.0);
    }
    cudaDeviceSynchronize();
    wk_gpu_lock(LOCK_SH);
}

static int post_phase(void)
{
    const int64_t *timed = W.plan.dimsets[W.plan.n_dimsets - 1];
    if (run_trial(W.plan.dimsets[smallest_dimset()], TRIAL_RANDOM, CK_AFTER)) return -1;
    if (run_trial(timed, TRIAL_RANDOM, CK_AFTER)) return -1;
    /* The candidate's output of the last trial must not change once its call has returned. */
    for (int o = 0; o < W.plan.n_outputs; o++) {
        size_t b = tbytes(&W.plan.outputs[o], timed);
        std::vector<unsigned char> h1(b), h2(b);
        cudaMemcpy(h1.data(), W.cout[o].ptr, b, cudaMemcpyDeviceToHost);
        usleep(50000);
        cudaDeviceSynchronize();
        cudaMemcpy(h2.data(), W.cout[o].ptr, b, cudaMemcpyDeviceToHost);
        if (memcmp(h1.data(), h2.data(), b))
            return fail(CK_STABLE, "cheat", "output %d changed 50 ms after the call returned", o);
    }
    pass(CK_STABLE);
    int threads = count_threads();
    if (threads > W.baseline_threads)
        return fail(CK_THREADS, "cheat", "%d host threads at the end, %d before the candidate", threads, W.baseline_threads);
    return 0;
}

/* Plan (stdin), whitespace-separated:
 *   NONCE                       echoed in the result (the parent trusts only that line)
 *   rlplan 1
 *   dims N                      dimsets M   then M lines of N values (the last is timed)
 *   inputs K   then K lines:   dtype mutable uniform p0 p1 adv_mask rank s...
 *   outputs K  then K lines:   dtype atol rtol rank s...
 * where s >= 0 is a constant extent and s < 0 means dim -(s+1). */
static int read_tensor(FILE *f, wk_tensor *t, int is_output)
{
    memset(t, 0, sizeof *t);
    t->is_output = is_output;
    int ok = is_output ? fscanf(f, "%d %lf %lf %d", &t->dtype, &t->atol, &t->rtol, &t->rank) == 4
                       : fscanf(f, "%d %d %d %lf %lf %d %d", &t->dtype, &t->mutable_, &t->dist_uniform, &t->p0,
                                &t->p1, &t->adv_mask, &t->rank) == 7;
    if (!ok || t->dtype < 0 || t->dtype > WK_I32 || t->rank < 0 || t->rank > RL_KERNEL_MAX_DIMS) return -1;
    for (int i = 0; i < t->rank; i++)
        if (fscanf(f, "%d", &t->shape[i]) != 1 || t->shape[i] < -RL_KERNEL_MAX_DIMS) return -1;
    return 0;
}

static int read_plan(FILE *f, wk_plan *p)
{
    int version;
    memset(p, 0, sizeof *p);
    if (fscanf(f, " %39s", W.nonce) != 1) return -1;
    if (fscanf(f, " rlplan %d dims %d dimsets %d", &version, &p->n_dims, &p->n_dimsets) != 3 || version != 1 ||
        p->n_dims < 1 || p->n_dims > RL_KERNEL_MAX_DIMS || p->n_dimsets < 1 || p->n_dimsets > WK_MAX_DIMSETS)
        return -1;
    for (int s = 0; s < p->n_dimsets; s++)
        for (int d = 0; d < p->n_dims; d++)
            if (fscanf(f, "%lld", (long long *)&p->dimsets[s][d]) != 1 || p->dimsets[s][d] < 1) return -1;
    if (fscanf(f, " inputs %d", &p->n_inputs) != 1 || p->n_inputs < 0 || p->n_inputs > RL_KERNEL_MAX_TENSORS) return -1;
    for (int i = 0; i < p->n_inputs; i++)
        if (read_tensor(f, &p->inputs[i], 0)) return -1;
    if (fscanf(f, " outputs %d", &p->n_outputs) != 1 || p->n_outputs < 1 || p->n_outputs > RL_KERNEL_MAX_TENSORS) return -1;
    for (int i = 0; i < p->n_outputs; i++)
        if (read_tensor(f, &p->outputs[i], 1)) return -1;
    for (int i = 0; i < p->n_inputs + p->n_outputs; i++) {
        const wk_tensor *t = i < p->n_inputs ? &p->inputs[i] : &p->outputs[i - p->n_inputs];
        for (int d = 0; d < t->rank; d++)
            if (t->shape[d] < 0 && -t->shape[d] - 1 >= p->n_dims) return -1;
    }
    return 0;
}

static size_t max_bytes(const wk_tensor *t)
{
    size_t m = 0;
    for (int s = 0; s < W.plan.n_dimsets; s++) m = std::max(m, tbytes(t, W.plan.dimsets[s]));
    return m;
}

static rl_kernel_fn load_module(const char *path, const char *what)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) { fail(CK_SETUP, "error", "%s: dlopen %s: %s", what, path, dlerror()); return NULL; }
    rl_kernel_fn fn = (rl_kernel_fn)dlsym(h, "rl_kernel");
    if (!fn) { fail(CK_SETUP, what[0] == 'c' ? "incorrect" : "error", "%s: %s defines no rl_kernel", what, path); return NULL; }
    return fn;
}

static int setup(const char *ref_path, const char *cand_path)
{
    cudaDeviceProp prop;
    cudaError_t ce = cudaGetDeviceProperties(&prop, 0);
    if (ce != cudaSuccess) return fail(CK_SETUP, "error", "no CUDA device (%s: %s)", cudaGetErrorName(ce), cudaGetErrorString(ce));
    snprintf(W.device, sizeof W.device, "%s", prop.name);
    W.l2_bytes = (size_t)prop.l2CacheSize;
    W.flush_bytes = (size_t)(W.flush_factor * (double)W.l2_bytes);
    if (cudaMalloc(&W.flush, W.flush_bytes) != cudaSuccess) return fail(CK_SETUP, "error", "cannot allocate the L2 flush buffer");
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    int ok = 0;
    for (int i = 0; i < W.plan.n_inputs; i++) {
        size_t m = max_bytes(&W.plan.inputs[i]);
        ok |= wk_buf_alloc(&W.cin[i], m) | wk_buf_alloc(&W.rin[i], m);
        for (int k = 0; k < W.copies; k++) ok |= wk_buf_alloc(&W.tin[k][i], tbytes(&W.plan.inputs[i], W.plan.dimsets[W.plan.n_dimsets - 1]));
    }
    for (int o = 0; o < W.plan.n_outputs; o++) {
        size_t m = max_bytes(&W.plan.outputs[o]);
        ok |= wk_buf_alloc(&W.cout[o], m) | wk_buf_alloc(&W.rout[o], m);
    }
    if (ok) return fail(CK_SETUP, "error", "cannot allocate the task's buffers");
    W.ref = load_module(ref_path, "reference");
    if (!W.ref) return -1;
    /* One reference call first, so runtime threads and library handles exist before the
     * thread baseline is taken. */
    const int64_t *dims = W.plan.dimsets[smallest_dimset()];
    gen_inputs(W.rin, dims, TRIAL_RANDOM);
    rl_kernel_args a;
    int rc;
    cudaError_t cerr;
    make_args(&a, W.rin, W.rout, dims);
    timed_call(W.ref, &a, "reference", &rc, &cerr);
    if (rc != 0 || cerr != cudaSuccess) return fail(CK_SETUP, "error", "the reference failed its first call (rc %d, %s)", rc, cudaGetErrorName(cerr));
    W.baseline_threads = count_threads();
    W.cand = load_module(cand_path, "candidate");
    if (!W.cand) return -1;
    pass(CK_SETUP);
    return 0;
}

static uint64_t urandom64(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY);
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
        close(fd);
    }
    return v ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(now_s() * 1e9);
}

int main(int argc, char **argv)
{
    const char *ref = NULL, *cand = NULL;
    uint64_t seed = 0;
    long long mem_cap_mb = -1;
    W.trials = W.timed = W.warmup = W.copies = W.spread_repeats = -1;
    W.watchdog_s = W.flush_factor = W.max_spread = -1;
    W.status = "ok";
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--check-only")) { /* correctness trials only, no timing */
            W.check_only = 1;
            continue;
        }
        if (!strcmp(argv[i], "--profile")) { /* per-kernel times after the protocol */
            W.profile = 1;
            continue;
        }
        if (!strcmp(argv[i], "--count-devices")) {
            /* Also a context, an allocation and a kernel-free operation on the first device:
             * rlc calibrates its sandbox with this count (kworker.c), and a driver that
             * enumerates devices but cannot create a context there must count as none. */
            /* The failing call and its error go to stderr (rlc kernel-eval --sandbox-diag shows them). */
            int n = 0;
            const char *step = "cudaGetDeviceCount";
            cudaError_t ce = cudaGetDeviceCount(&n);
            void *probe = NULL;
            if (ce == cudaSuccess && n > 0) {
                step = "cudaMalloc";
                ce = cudaMalloc(&probe, 1 << 20);
                if (ce == cudaSuccess) step = "cudaMemset", ce = cudaMemset(probe, 0, 1 << 20);
                if (ce == cudaSuccess) step = "cudaDeviceSynchronize", ce = cudaDeviceSynchronize();
            }
            if (ce != cudaSuccess) {
                fprintf(stderr, "rlc-kernel-worker: %s: %s (%s)\n", step, cudaGetErrorName(ce), cudaGetErrorString(ce));
                n = 0;
            }
            if (probe) cudaFree(probe);
            printf("%d\n", n);
            return 0;
        }
        if (!v) { fprintf(stderr, "rlc-kernel-worker: %s needs a value\n", argv[i]); return 2; }
        if (!strcmp(argv[i], "--gpu-lock")) {
            if (wk_gpu_lock_open(v)) { fprintf(stderr, "rlc-kernel-worker: --gpu-lock %s: %s\n", v, strerror(errno)); return 2; }
        }
        else if (!strcmp(argv[i], "--ref")) ref = v;
        else if (!strcmp(argv[i], "--cand")) cand = v;
        else if (!strcmp(argv[i], "--seed")) seed = strtoull(v, NULL, 0);
        else if (!strcmp(argv[i], "--trials")) W.trials = atoi(v);
        else if (!strcmp(argv[i], "--timed")) W.timed = atoi(v);
        else if (!strcmp(argv[i], "--warmup")) W.warmup = atoi(v);
        else if (!strcmp(argv[i], "--copies")) W.copies = atoi(v);
        else if (!strcmp(argv[i], "--watchdog-ms")) W.watchdog_s = atof(v) / 1e3;
        else if (!strcmp(argv[i], "--mem-cap-mb")) mem_cap_mb = atoll(v);
        else if (!strcmp(argv[i], "--flush-factor")) W.flush_factor = atof(v);
        else if (!strcmp(argv[i], "--max-spread")) W.max_spread = atof(v);
        else if (!strcmp(argv[i], "--spread-repeats")) W.spread_repeats = atoi(v);
        else { fprintf(stderr, "rlc-kernel-worker: unknown option %s\n", argv[i]); return 2; }
        i++;
    }
    if (!ref || !cand || W.trials < 1 || W.timed < 3 || W.warmup < 0 || W.copies < 1 || W.copies > MAX_COPIES ||
        !(W.watchdog_s > 0) || mem_cap_mb < 1 || !(W.flush_factor >= 1) || !(W.max_spread > 0) || W.spread_repeats < 0) {
        fprintf(stderr, "rlc-kernel-worker: usage: --ref R.so --cand C.so --trials N>=1 --timed N>=3 --warmup N>=0 "
                        "--copies 1..%d --watchdog-ms MS --mem-cap-mb MB --flush-factor F>=1 --max-spread S>0 "
                        "--spread-repeats R>=0 [--seed S] < plan (rlc passes protocol.json's values)\n", MAX_COPIES);
        return 2;
    }
    W.mem_cap = (size_t)mem_cap_mb << 20;
    W.seed = seed ^ urandom64();
    if (read_plan(stdin, &W.plan)) {
        fail(CK_SETUP, "error", "malformed plan on stdin");
        print_result();
        return 0;
    }
    /* The plan (and its nonce) must not be readable again by the candidate. */
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) {
        dup2(null_fd, 0);
        close(null_fd);
    }
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog_main, NULL);
    W.t0 = now_s();
    wk_gpu_lock(LOCK_SH);
    int ok = setup(ref, cand) == 0;
    W.ph[0] = now_s();
    ok = ok && correctness_phase() == 0;
    W.ph[1] = now_s();
    ok = ok && !W.check_only && timing_phase() == 0;
    W.ph[2] = now_s();
    ok = ok && post_phase() == 0;
    W.ph[3] = now_s();
    if (ok && W.profile) profile_phase(), W.ph[4] = now_s();
    print_result();
    fflush(stdout);
    _exit(0); /* no destructors: a candidate's leftovers must not hang the exit */
}
