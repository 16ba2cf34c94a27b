/* wk.h — shared declarations of the kernel-environment worker (build/rlc-kernel-worker).
 *
 * The worker is a separate program: the one place outside src/backend/cuda that includes CUDA
 * headers. It reads a flat plan of the task on stdin (written by src/reward/kernel_env/kspec.c
 * from spec.json), dlopens the reference and candidate modules, runs the protocol of
 * docs/kernel-env.md and prints one JSON object on stdout. This header holds the plan, the
 * device buffers and the device helpers (wk_kernels.cu); worker.cu holds the protocol. */
#ifndef RL_KENV_WK_H
#define RL_KENV_WK_H

#include <stddef.h>
#include <stdint.h>

#include "rl_kernel.h"

enum wk_dtype { WK_F32 = 0, WK_F16 = 1, WK_BF16 = 2, WK_I32 = 3 };
enum wk_adv { /* bit mask of special values an input may hold */
    WK_ADV_SIGNED_ZERO = 1, WK_ADV_INF = 2, WK_ADV_NAN = 4, WK_ADV_DENORMAL = 8,
    WK_ADV_HUGE = 16, WK_ADV_TINY = 32
};

typedef struct wk_tensor {
    int dtype;
    int is_output;
    int mutable_;
    int dist_uniform;     /* 0 normal(p0 = mean, p1 = std), 1 uniform[p0 = low, p1 = high] */
    double p0, p1;
    int adv_mask;
    double atol, rtol;    /* outputs */
    int rank;
    int shape[RL_KERNEL_MAX_DIMS]; /* >= 0: a constant; < 0: -(dim index + 1) */
} wk_tensor;

#define WK_MAX_DIMSETS 32
typedef struct wk_plan {
    int n_dims, n_inputs, n_outputs, n_dimsets;
    int64_t dimsets[WK_MAX_DIMSETS][RL_KERNEL_MAX_DIMS]; /* the last one is the timed size */
    wk_tensor inputs[RL_KERNEL_MAX_TENSORS], outputs[RL_KERNEL_MAX_TENSORS];
} wk_plan;

size_t wk_dtype_size(int dtype);
/* Elements of t at dimension values dims. */
size_t wk_numel(const wk_tensor *t, const int64_t *dims);

/* A device buffer with guard regions of WK_GUARD bytes on both sides; ptr is what the module
 * sees. cap is the payload capacity (largest size over the plan). */
#define WK_GUARD ((size_t)65536)
typedef struct wk_buf {
    unsigned char *base;
    unsigned char *ptr;
    size_t cap;
} wk_buf;

int wk_buf_alloc(wk_buf *b, size_t cap);
void wk_buf_free(wk_buf *b);
/* Fills both guards and the unused tail [bytes, cap) with the byte value g. */
void wk_guard_fill(const wk_buf *b, size_t bytes, unsigned char g);
/* Number of guard bytes (including the unused tail past bytes) that differ from g. Syncs. */
uint64_t wk_guard_count_bad(const wk_buf *b, size_t bytes, unsigned char g);

/* Fills n elements with the NaN sentinel of dtype (unwritten-element detection). */
void wk_poison(void *p, size_t n, int dtype);
uint32_t wk_sentinel_bits(int dtype);

/* Random fill from the tensor's distribution, keyed by seed (counter-based: element i is a
 * function of (seed, i)). */
void wk_fill_random(void *p, size_t n, const wk_tensor *t, uint64_t seed);
/* Replaces about 1/64 of the elements, and the first and last, with special values from the
 * mask. */
void wk_sprinkle_special(void *p, size_t n, int dtype, int mask, uint64_t seed);
/* Every element set to value (converted to dtype). */
void wk_fill_const(void *p, size_t n, int dtype, double value);

/* Order-independent 64-bit hash of bytes (device reduction). Syncs. */
uint64_t wk_hash(const void *p, size_t bytes);

/* Counts elements of cand that fail against ref with the tolerance rule of docs/kernel-env.md
 * (scale = RMS of ref). Launches on stream 0 and accumulates into *d_bad (device counter). */
void wk_compare_async(const void *cand, const void *ref, size_t n, int dtype, double atol_s,
                      double rtol, unsigned long long *d_bad);

/* Full comparison on the device (syncs): bad elements (failing the rule or still holding the
 * sentinel), the first bad index, the largest |c - r| / bound and |c - r| over finite pairs,
 * and the scale used (RMS of the finite reference values, 1 if 0). */
typedef struct wk_cmp {
    unsigned long long bad, first_bad;
    double max_ratio, max_abs, scale;
} wk_cmp;
int wk_compare(const void *cand, const void *ref, size_t n, int dtype, double atol, double rtol, wk_cmp *out);
/* RMS of the finite elements (1 if there are none or all are 0). Syncs. */
double wk_rms(const void *p, size_t n, int dtype);

/* Host side of the same rule: converts element i of a dtype array to double. */
double wk_load(const void *p, size_t i, int dtype);
uint32_t wk_bits(const void *p, size_t i, int dtype);
/* 1 if candidate value c passes against reference r with absolute bound atol_s. */
int wk_elem_ok(double c, double r, double atol_s, double rtol, int dtype);

/* Writes bytes of the L2 flush buffer. */
void wk_flush_l2(void *flush, size_t bytes, int round);

/* --profile (wk_profile.cu): one call of fn with CUPTI activity records on; out gets each kernel
 * it launched (demangled name, launches, GPU ms summed). -1 with why when CUPTI is missing or
 * the call failed. */
#include <string>
#include <vector>
typedef int (*rl_kernel_fn)(const rl_kernel_args *);
struct wk_prof_kernel {
    std::string name;
    int calls;
    double ms;
};
int wk_profile_call(rl_kernel_fn fn, const rl_kernel_args *a, std::vector<wk_prof_kernel> &out, char *why, size_t size);

/* JSON output (wk_json.cu): a quoted, escaped string; printf-formatted text (at most 511 bytes). */
void wk_json_str(std::vector<char> &out, const char *s);
void wk_jprintf(std::vector<char> &out, const char *fmt, ...);

/* The per-GPU lock of --gpu-lock FILE (wk_lock.cu): shared for correctness work, exclusive for
 * timing (op LOCK_SH / LOCK_EX); a no-op when no lock was opened. */
int wk_gpu_lock_open(const char *path); /* 0, or -1 with errno */
void wk_gpu_lock(int op);
int wk_gpu_lock_held(void);

#endif
