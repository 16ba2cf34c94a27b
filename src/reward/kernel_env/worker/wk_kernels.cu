/* wk_kernels.cu — device helpers of the worker: guarded buffers, poison, random and special
 * inputs, hashes and the tolerance comparison (one rule, used on host and device).
 *
 * Random inputs are counter-based (splitmix64 of seed and index), so a buffer of any size is
 * filled in one launch and the same (seed, index) always gives the same value. Everything runs
 * on the legacy default stream, as the modules under test do. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <string.h>

#include "wk.h"

#define WK_THREADS 256

size_t wk_dtype_size(int dtype)
{
    return dtype == WK_F16 || dtype == WK_BF16 ? 2 : 4;
}

size_t wk_numel(const wk_tensor *t, const int64_t *dims)
{
    size_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= (size_t)(t->shape[i] >= 0 ? t->shape[i] : dims[-t->shape[i] - 1]);
    return n;
}

static unsigned grid_for(size_t n)
{
    size_t blocks = (n + WK_THREADS - 1) / WK_THREADS;
    if (blocks > 65535u * 8u) blocks = 65535u * 8u;
    return blocks ? (unsigned)blocks : 1u;
}

/* Reductions (hashes, sums, counts, maxima) run grid-stride loops on at most this many blocks
 * and combine each warp's values before one atomic per warp: one atomic per thread on one
 * address (tens of millions for a 64 MB input) took ~10 ms a call, and the timed phase makes
 * a dozen such calls per iteration. */
static unsigned grid_reduce(size_t n)
{
    unsigned g = grid_for(n);
    return g < 2048u ? g : 2048u;
}

/* Warp-wide sum / min / max; every lane of the warp must call (after its loop). */
__device__ static inline unsigned long long warp_sum(unsigned long long v)
{
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ static inline double warp_sum(double v)
{
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ static inline unsigned long long warp_min(unsigned long long v)
{
    for (int o = 16; o; o >>= 1) {
        unsigned long long w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w < v ? w : v;
    }
    return v;
}
__device__ static inline float warp_max(float v)
{
    for (int o = 16; o; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
#define LANE0 ((threadIdx.x & 31u) == 0)

int wk_buf_alloc(wk_buf *b, size_t cap)
{
    b->cap = (cap + 255) & ~(size_t)255;
    if (cudaMalloc((void **)&b->base, b->cap + 2 * WK_GUARD) != cudaSuccess) return -1;
    b->ptr = b->base + WK_GUARD;
    return 0;
}

void wk_buf_free(wk_buf *b)
{
    if (b->base) cudaFree(b->base);
    b->base = b->ptr = NULL;
}

void wk_guard_fill(const wk_buf *b, size_t bytes, unsigned char g)
{
    cudaMemsetAsync(b->base, g, WK_GUARD, 0);
    cudaMemsetAsync(b->ptr + bytes, g, b->cap - bytes + WK_GUARD, 0);
}

__global__ void count_ne_kernel(const unsigned char *p, size_t n, unsigned char g,
                                unsigned long long *bad)
{
    unsigned long long local = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        local += p[i] != g;
    local = warp_sum(local);
    if (LANE0 && local) atomicAdd(bad, local);
}

uint64_t wk_guard_count_bad(const wk_buf *b, size_t bytes, unsigned char g)
{
    static unsigned long long *d_bad; /* kept, as wk_hash's */
    unsigned long long h_bad = 0;
    if (!d_bad && cudaMalloc(&d_bad, sizeof *d_bad) != cudaSuccess) d_bad = NULL;
    if (!d_bad) return ~0ull;
    cudaMemsetAsync(d_bad, 0, sizeof *d_bad, 0);
    count_ne_kernel<<<grid_reduce(WK_GUARD), WK_THREADS>>>(b->base, WK_GUARD, g, d_bad);
    size_t tail = b->cap - bytes + WK_GUARD;
    count_ne_kernel<<<grid_reduce(tail), WK_THREADS>>>(b->ptr + bytes, tail, g, d_bad);
    cudaMemcpy(&h_bad, d_bad, sizeof h_bad, cudaMemcpyDeviceToHost);
    return h_bad;
}

uint32_t wk_sentinel_bits(int dtype)
{
    switch (dtype) {
    case WK_F16: return 0x7e5au;
    case WK_BF16: return 0x7fdau;
    default: return 0x7fc0deadu;
    }
}

__global__ void fill32_kernel(uint32_t *p, size_t n, uint32_t v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

__global__ void fill16_kernel(uint16_t *p, size_t n, uint16_t v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

void wk_poison(void *p, size_t n, int dtype)
{
    uint32_t s = wk_sentinel_bits(dtype);
    if (wk_dtype_size(dtype) == 2) fill16_kernel<<<grid_for(n), WK_THREADS>>>((uint16_t *)p, n, (uint16_t)s);
    else fill32_kernel<<<grid_for(n), WK_THREADS>>>((uint32_t *)p, n, s);
}

__host__ __device__ static inline uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__device__ static inline double unit(uint64_t h)
{
    return ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

__device__ static inline void store(void *p, size_t i, int dtype, double v)
{
    switch (dtype) {
    case WK_F32: ((float *)p)[i] = (float)v; break;
    case WK_F16: ((__half *)p)[i] = __float2half_rn((float)v); break;
    case WK_BF16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v); break;
    default: ((int32_t *)p)[i] = (int32_t)v; break;
    }
}

__global__ void random_kernel(void *p, size_t n, int dtype, int uniform, double p0, double p1,
                              uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t h1 = mix64(seed ^ mix64(2 * i)), h2 = mix64(seed ^ mix64(2 * i + 1));
        double v;
        if (dtype == WK_I32) {
            int64_t lo = (int64_t)p0, span = (int64_t)p1 - lo + 1;
            v = (double)(lo + (int64_t)(h1 % (uint64_t)(span > 0 ? span : 1)));
        } else if (uniform) {
            v = p0 + (p1 - p0) * unit(h1);
        } else {
            v = p0 + p1 * sqrt(-2.0 * log(unit(h1))) * cos(6.283185307179586 * unit(h2));
        }
        store(p, i, dtype, v);
    }
}

void wk_fill_random(void *p, size_t n, const wk_tensor *t, uint64_t seed)
{
    random_kernel<<<grid_for(n), WK_THREADS>>>(p, n, t->dtype, t->dist_uniform, t->p0, t->p1, seed);
}

__device__ static double special_value(int kind, int dtype, int negative)
{
    double huge = dtype == WK_F16 ? 6.0e4 : 1.0e30, tiny = dtype == WK_F16 ? 1.0e-4 : 1.0e-30;
    double denormal = dtype == WK_F16 ? 1.0e-6 : 1.0e-40;
    double v;
    switch (kind) {
    case 0: v = 0.0; break;
    case 1: v = INFINITY; break;
    case 2: v = NAN; break;
    case 3: v = denormal; break;
    case 4: v = huge; break;
    default: v = tiny; break;
    }
    return negative ? -v : v;
}

__global__ void sprinkle_kernel(void *p, size_t n, int dtype, int mask, uint64_t seed)
{
    int kinds[6], n_kinds = 0;
    for (int k = 0; k < 6; k++)
        if (mask & (1 << k)) kinds[n_kinds++] = k;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t h = mix64(seed ^ mix64(i));
        if (i != 0 && i != n - 1 && (h & 63) != 0) continue;
        store(p, i, dtype, special_value(kinds[(h >> 8) % n_kinds], dtype, (int)((h >> 16) & 1)));
    }
}

void wk_sprinkle_special(void *p, size_t n, int dtype, int mask, uint64_t seed)
{
    if (!mask || dtype == WK_I32) return;
    sprinkle_kernel<<<grid_for(n), WK_THREADS>>>(p, n, dtype, mask, seed);
}

__global__ void const_kernel(void *p, size_t n, int dtype, double value)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        store(p, i, dtype, value);
}

void wk_fill_const(void *p, size_t n, int dtype, double value)
{
    const_kernel<<<grid_for(n), WK_THREADS>>>(p, n, dtype, value);
}

__global__ void hash_kernel(const unsigned char *p, size_t bytes, unsigned long long *out)
{
    unsigned long long local = 0;
    size_t words = bytes / 4;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x)
        local += mix64(((uint64_t)((const uint32_t *)p)[i] << 32) ^ i);
    if (threadIdx.x == 0 && blockIdx.x == 0)
        for (size_t i = words * 4; i < bytes; i++) local += mix64(((uint64_t)p[i] << 40) ^ i);
    local = warp_sum(local); /* a sum mod 2^64: the same hash whatever the order */
    if (LANE0) atomicAdd(out, local);
}

uint64_t wk_hash(const void *p, size_t bytes)
{
    static unsigned long long *d; /* kept: a cudaFree per call would synchronize the device */
    unsigned long long h = 0;
    if (!d && cudaMalloc(&d, sizeof *d) != cudaSuccess) d = NULL;
    if (!d) return 0;
    cudaMemsetAsync(d, 0, sizeof *d, 0);
    hash_kernel<<<grid_reduce(bytes / 4 + 1), WK_THREADS>>>((const unsigned char *)p, bytes, d);
    cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
    return h;
}

__host__ __device__ static inline double load_elem(const void *p, size_t i, int dtype)
{
    switch (dtype) {
    case WK_F32: return ((const float *)p)[i];
    case WK_F16: return __half2float(((const __half *)p)[i]);
    case WK_BF16: return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    default: return ((const int32_t *)p)[i];
    }
}

__host__ __device__ static inline uint32_t bits_elem(const void *p, size_t i, int dtype)
{
    return dtype == WK_F16 || dtype == WK_BF16 ? ((const uint16_t *)p)[i] : ((const uint32_t *)p)[i];
}

__host__ __device__ static inline int elem_ok(double c, double r, double atol_s, double rtol, int dtype)
{
    if (dtype == WK_I32) return c == r;
    if (r != r) return c != c;
    if (isinf(r)) return c == r;
    if (c != c || isinf(c)) return 0;
    return fabs(c - r) <= atol_s + rtol * fabs(r);
}

double wk_load(const void *p, size_t i, int dtype) { return load_elem(p, i, dtype); }
uint32_t wk_bits(const void *p, size_t i, int dtype) { return bits_elem(p, i, dtype); }
int wk_elem_ok(double c, double r, double atol_s, double rtol, int dtype)
{
    return elem_ok(c, r, atol_s, rtol, dtype);
}

__global__ void compare_kernel(const void *cand, const void *ref, size_t n, int dtype,
                               double atol_s, double rtol, uint32_t sentinel,
                               unsigned long long *bad)
{
    unsigned long long local = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        local += bits_elem(cand, i, dtype) == sentinel ||
                 !elem_ok(load_elem(cand, i, dtype), load_elem(ref, i, dtype), atol_s, rtol, dtype);
    local = warp_sum(local);
    if (LANE0 && local) atomicAdd(bad, local);
}

void wk_compare_async(const void *cand, const void *ref, size_t n, int dtype, double atol_s,
                      double rtol, unsigned long long *d_bad)
{
    compare_kernel<<<grid_reduce(n), WK_THREADS>>>(cand, ref, n, dtype, atol_s, rtol,
                                                wk_sentinel_bits(dtype), d_bad);
}

__global__ void sumsq_kernel(const void *p, size_t n, int dtype, double *sum, unsigned long long *count)
{
    double local = 0;
    unsigned long long k = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double v = load_elem(p, i, dtype);
        if (isfinite(v)) {
            local += v * v;
            k++;
        }
    }
    local = warp_sum(local);
    k = warp_sum(k);
    if (LANE0 && k) {
        atomicAdd(sum, local);
        atomicAdd(count, k);
    }
}

typedef struct cmp_dev {
    double sum;
    unsigned long long count, bad, first_bad;
    unsigned int max_ratio_bits, max_abs_bits;
} cmp_dev;

static cmp_dev *cmp_scratch(void)
{
    static cmp_dev *d;
    if (!d && cudaMalloc(&d, sizeof *d) != cudaSuccess) d = NULL;
    return d;
}

double wk_rms(const void *p, size_t n, int dtype)
{
    cmp_dev *d = cmp_scratch(), h;
    if (!d) return 1.0;
    cudaMemsetAsync(d, 0, sizeof *d, 0);
    sumsq_kernel<<<grid_reduce(n), WK_THREADS>>>(p, n, dtype, &d->sum, &d->count);
    cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
    return h.count && h.sum > 0 ? sqrt(h.sum / (double)h.count) : 1.0;
}

__global__ void compare_stats_kernel(const void *cand, const void *ref, size_t n, int dtype, double atol_s,
                                     double rtol, uint32_t sentinel, cmp_dev *o)
{
    unsigned long long bad = 0, first = ~0ull;
    float max_ratio = 0, max_abs = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double c = load_elem(cand, i, dtype), r = load_elem(ref, i, dtype);
        if (bits_elem(cand, i, dtype) == sentinel || !elem_ok(c, r, atol_s, rtol, dtype)) {
            bad++;
            if (i < first) first = i;
        } else if (isfinite(c) && isfinite(r)) {
            double d = fabs(c - r), bound = atol_s + rtol * fabs(r);
            max_abs = fmaxf(max_abs, (float)d);
            if (bound > 0) max_ratio = fmaxf(max_ratio, (float)(d / bound));
        }
    }
    bad = warp_sum(bad);
    first = warp_min(first);
    max_ratio = warp_max(max_ratio);
    max_abs = warp_max(max_abs);
    if (LANE0 && bad) {
        atomicAdd(&o->bad, bad);
        atomicMin(&o->first_bad, first);
    }
    /* non-negative floats order as their bits do */
    if (LANE0 && max_ratio > 0) atomicMax(&o->max_ratio_bits, __float_as_uint(max_ratio));
    if (LANE0 && max_abs > 0) atomicMax(&o->max_abs_bits, __float_as_uint(max_abs));
}

int wk_compare(const void *cand, const void *ref, size_t n, int dtype, double atol, double rtol, wk_cmp *out)
{
    cmp_dev *d = cmp_scratch(), h;
    if (!d) return -1;
    out->scale = wk_rms(ref, n, dtype);
    cudaMemsetAsync(d, 0, sizeof *d, 0);
    cudaMemsetAsync(&d->first_bad, 0xff, sizeof d->first_bad, 0);
    compare_stats_kernel<<<grid_reduce(n), WK_THREADS>>>(cand, ref, n, dtype, atol * out->scale, rtol,
                                                      wk_sentinel_bits(dtype), d);
    if (cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) return -1;
    float r, a;
    memcpy(&r, &h.max_ratio_bits, sizeof r);
    memcpy(&a, &h.max_abs_bits, sizeof a);
    out->bad = h.bad;
    out->first_bad = h.first_bad;
    out->max_ratio = r;
    out->max_abs = a;
    return 0;
}

void wk_flush_l2(void *flush, size_t bytes, int round)
{
    cudaMemsetAsync(flush, round & 0xff, bytes, 0);
}
