/* sampler.cu — one token per row, each row with its own parameters (rl_sample_row, device
 * memory): temperature, top-k, top-p, min-p, then a Philox draw; the recipe of
 * backend/cpu/sampler.c, so both backends pick the same token for the same (seed, step, row)
 * up to rounding at a knife edge (sums in double, in another order than the CPU's).
 *
 * With z = logits / temperature (1 for greedy), zmax its maximum and e_i = exp(z_i - zmax) in
 * double:
 *  1. stats (every row): the vocabulary is cut into chunks of SAMPLE_CHUNK ids, one block
 *     each, so that even one row reads at the whole GPU's bandwidth. A block keeps its chunk
 *     in registers and writes the chunk's max, its first argmax and sum exp(z - chunk max)
 *     (each exp in fp32, within 2 ulp, the sum in double: a chunk's mass to ~1e-7, which moves
 *     a draw only at a knife edge, like the rounding below).
 *  2. pick (one block per row): the chunk stats give zmax, argmax and the total
 *     sum_c sum_c * exp(zmax_c - zmax), so logsumexp without another pass (warp 0 reads the
 *     stats and takes the exps one chunk per lane, then adds them in chunk order). Greedy takes the
 *     argmax. Plain temperature sampling (no filter) walks the chunk totals to the chunk where
 *     the running sum passes u * total and searches only that chunk: two reads of a row in all.
 *     Only rows with a filter read the row again, several times:
 *      - top-k: the k-th largest z by a 16-ary search over order-preserving 32-bit keys of z
 *        (8 passes, each counting the keys at or above 15 candidates; no sort); tokens with
 *        z >= it survive (ties kept).
 *      - top-p: walking survivors by decreasing z (ties by increasing id), a token is kept
 *        while the mass before it is < top_p * total. With G(x) = sum of e over surviving keys
 *        > x, keys above x* are kept and keys below dropped, x* being the smallest key with
 *        G(x*) < top_p * total (16-ary search again, on G); ties at x* are kept in id order
 *        while the running mass stays below.
 *      - min-p: drop e < min_p.
 *     The draw: u from the first word of Philox4x32-10 (key = seed, counter = (step, 0, row,
 *     0)); walking kept tokens by increasing id, the first whose running sum of e exceeds
 *     u * (kept sum) is chosen. The walk: each warp sums a contiguous id range, the block
 *     scans the warp totals, and the warp whose range holds the crossing walks it 32 ids at a
 *     time with a warp prefix sum.
 * logp = z[token] - logsumexp(z) over the whole vocabulary (greedy: temperature 1).
 * In the pick, e is computed by exp_nonpos (a branch-free double exp within 2 ulp, several
 * times cheaper than the library's): the CPU's glibc exp and it differ in the last bits only,
 * which moves a draw only at a knife edge. */
#include "backend/cuda/common.cuh"

#include <limits.h>

/* 4,096 ids a chunk: 38 a row, so one row's stats pass spreads over 38 blocks (batch 1: 6.4 us
 * where 8,192-id chunks took 12.2) and the pick searches half as many ids; a 64-row step's
 * 2,432 chunks take two waves (21.0 us where 8,192 took 24.1 in one). 2,048 made the pick's
 * serial walk over 75 chunk totals cost what its shorter search saved (docs/benchmarks.md). */
#define SAMPLE_CHUNK 4096
/* the stats pass: blocks of 128 threads, 10 resident per SM (256-thread blocks holding their
 * 32 logits a thread in registers were slower) */
#define STATS_THREADS 128
#define STATS_BLOCKS_PER_SM 10
#define STATS_PER_THREAD (SAMPLE_CHUNK / STATS_THREADS)
#define STATS_BATCH 8
#define PICK_THREADS 512
#define PICK_WARPS (PICK_THREADS / 32)

typedef struct chunk_stat {
    float zmax;
    int arg;
    double sum; /* sum of exp(z - zmax) over the chunk */
} chunk_stat;

__device__ __forceinline__ float inv_temperature(const rl_sample_row &p)
{
    return p.temperature > 0.0f ? 1.0f / p.temperature : 1.0f;
}

/* Order-preserving key of a float (-0 as +0, as the CPU's comparisons see them). */
__device__ __forceinline__ uint32_t float_key(float f)
{
    uint32_t u = __float_as_uint(f == 0.0f ? 0.0f : f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* Philox4x32-10, as core/rng.c. */
__device__ uint32_t philox_first_word(uint64_t seed, uint32_t step, uint32_t row)
{
    uint32_t c0 = step, c1 = 0, c2 = row, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c0;
}

/* exp(d) for d <= 0 in double: d = k ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, fdlibm's
 * split, so k ln2_hi is exact), exp(r) by its Taylor series to r^13 (truncation below 5e-18),
 * times 2^k built in the exponent bits. Below -708 (2^k no longer normal) it gives 0, where
 * glibc gives a subnormal: no row's mass changes by that. */
__device__ __forceinline__ double exp_nonpos(double d)
{
    if (!(d >= -708.0)) return 0.0;
    double k = rint(d * 1.4426950408889634);
    double r = fma(-k, 6.93147180369123816490e-01, d);
    r = fma(-k, 1.90821492927058770002e-10, r);
    double p = 1.6059043836821613e-10; /* 1/13! */
    p = fma(p, r, 2.0876756987868100e-09);
    p = fma(p, r, 2.5052108385441720e-08);
    p = fma(p, r, 2.7557319223985893e-07);
    p = fma(p, r, 2.7557319223985888e-06);
    p = fma(p, r, 2.4801587301587302e-05);
    p = fma(p, r, 1.9841269841269841e-04);
    p = fma(p, r, 1.3888888888888889e-03);
    p = fma(p, r, 8.3333333333333332e-03);
    p = fma(p, r, 4.1666666666666664e-02);
    p = fma(p, r, 1.6666666666666666e-01);
    p = fma(p, r, 0.5);
    p = fma(p, r, 1.0);
    p = fma(p, r, 1.0);
    return p * __longlong_as_double((long long)(1023 + (int)k) << 52);
}

/* (z, id) with the larger z, ties to the lower id; NaN never wins. */
__device__ __forceinline__ void better(float &bz, int &bi, float z, int i)
{
    if (z > bz || (z == bz && i < bi)) {
        bz = z;
        bi = i;
    }
}

__device__ __forceinline__ void warp_best(float &bz, int &bi)
{
    for (int o = 16; o > 0; o >>= 1) {
        float oz = __shfl_xor_sync(0xffffffffu, bz, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        better(bz, bi, oz, oi);
    }
}

__global__ void __launch_bounds__(STATS_THREADS, STATS_BLOCKS_PER_SM)
    sample_stats_kernel(chunk_stat *stats, const float *logits, const rl_sample_row *rows, int vocab, int n_chunks)
{
    rl_pdl_begin();
    __shared__ float sh_z[STATS_THREADS / 32];
    __shared__ int sh_i[STATS_THREADS / 32];
    int c = blockIdx.x, row = blockIdx.y, tid = threadIdx.x;
    float inv_t = inv_temperature(rows[row]);
    const float *x = logits + (size_t)row * vocab;
    int lo = c * SAMPLE_CHUNK + tid, hi = min(vocab, c * SAMPLE_CHUNK + SAMPLE_CHUNK);
    /* two passes over the chunk, STATS_BATCH loads in flight at a time: the max, then the sum
     * (the second reads what the first brought into the L1) */
    float bz = -INFINITY;
    int bi = INT_MAX;
    for (int k0 = 0; k0 < STATS_PER_THREAD; k0 += STATS_BATCH) {
        float z[STATS_BATCH];
#pragma unroll
        for (int k = 0; k < STATS_BATCH; k++) {
            int i = lo + (k0 + k) * STATS_THREADS;
            z[k] = i < hi ? x[i] * inv_t : -INFINITY;
        }
#pragma unroll
        for (int k = 0; k < STATS_BATCH; k++)
            if (lo + (k0 + k) * STATS_THREADS < hi) better(bz, bi, z[k], lo + (k0 + k) * STATS_THREADS);
    }
    warp_best(bz, bi);
    if ((tid & 31) == 0) {
        sh_z[tid >> 5] = bz;
        sh_i[tid >> 5] = bi;
    }
    __syncthreads();
    bz = sh_z[0];
    bi = sh_i[0];
    for (int w = 1; w < STATS_THREADS / 32; w++) better(bz, bi, sh_z[w], sh_i[w]);
    /* fp32 exps (expf: within 2 ulp) summed in double: this pass reads every logit, and its
     * double exps made it compute-bound (65 us of a 64-row decode step, 39 MB read) */
    double sum = 0.0;
    if (bz != -INFINITY)
        for (int k0 = 0; k0 < STATS_PER_THREAD; k0 += STATS_BATCH) {
            float z[STATS_BATCH];
#pragma unroll
            for (int k = 0; k < STATS_BATCH; k++) {
                int i = lo + (k0 + k) * STATS_THREADS;
                z[k] = i < hi ? x[i] * inv_t - bz : -INFINITY;
            }
#pragma unroll
            for (int k = 0; k < STATS_BATCH; k++)
                if (z[k] >= -708.0f) sum += (double)expf(z[k]);
        }
    sum = rl_block_sum_d(sum);
    if (tid == 0) stats[(size_t)row * n_chunks + c] = chunk_stat{bz, bi, sum};
}

/* What the pick block knows of its row. */
struct row_ctx {
    const float *x; /* the row's logits */
    float inv_t, zmax;
    int vocab;
    /* filters: survivors have key >= kth; with top-p, keys > xstar or == xstar below tie_cut */
    uint32_t kth, xstar;
    int use_p, tie_cut;
    float min_p;
};

__device__ __forceinline__ float zval(const row_ctx &r, int i) { return r.x[i] * r.inv_t; }
__device__ __forceinline__ double eval(const row_ctx &r, float z) { return exp_nonpos((double)z - r.zmax); }

enum { KEEP_ALL = 0, KEEP_FILTERED = 1, KEEP_TIES = 2 };

/* Mass of token i under the selection `what` (0 when not selected). */
__device__ __forceinline__ double kept_mass(const row_ctx &r, int i, int what)
{
    float z = zval(r, i);
    if (what == KEEP_ALL) return eval(r, z);
    uint32_t k = float_key(z);
    if (k < r.kth) return 0.0;
    if (what == KEEP_TIES) return k == r.xstar ? eval(r, z) : 0.0;
    if (r.use_p && !(k > r.xstar || (k == r.xstar && i < r.tie_cut))) return 0.0;
    double e = eval(r, z);
    return r.min_p > 0.0f && e < (double)r.min_p ? 0.0 : e;
}

/* Each warp's contiguous share of ids [lo, hi) (a multiple of 32 long). */
__device__ __forceinline__ void warp_share(int lo, int hi, int warp, int *wlo, int *whi)
{
    int len = ((hi - lo + PICK_WARPS - 1) / PICK_WARPS + 31) & ~31;
    *wlo = min(hi, lo + warp * len);
    *whi = min(hi, *wlo + len);
}

/* Per-warp sums of the selected mass over [lo, hi) into wsum[]; returns the block total. */
__device__ double range_sums(const row_ctx &r, int lo, int hi, int what, double *wsum)
{
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wlo, whi;
    warp_share(lo, hi, warp, &wlo, &whi);
    double s = 0.0;
    for (int i = wlo + lane; i < whi; i += 32) s += kept_mass(r, i, what);
    s = rl_warp_sum_d(s);
    __syncthreads();
    if (lane == 0) wsum[warp] = s;
    __syncthreads();
    double total = 0.0;
    for (int w = 0; w < PICK_WARPS; w++) total += wsum[w];
    return total;
}

/* The first selected id i in [lo, hi) whose running mass (from `before`, in id order) passes
 * target: before + mass(<= i) > target (at_least: >= target). wsum from range_sums over the
 * same range. Returns -1 when none does; *last_sel the last selected id of the warp share
 * where the walk ended (-1 when nothing is selected). */
__device__ int range_find(const row_ctx &r, int lo, int hi, int what, const double *wsum, double before,
                          double target, int at_least, int *last_sel)
{
    __shared__ int sh_warp, sh_found, sh_last;
    __shared__ double sh_before;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
        double run = before;
        int w_cross = -1, w_last = -1;
        for (int w = 0; w < PICK_WARPS; w++) {
            if (wsum[w] <= 0.0) continue;
            w_last = w;
            if (at_least ? run + wsum[w] >= target : run + wsum[w] > target) {
                w_cross = w;
                break;
            }
            run += wsum[w];
        }
        sh_warp = w_cross >= 0 ? w_cross : w_last;
        sh_before = w_cross >= 0 ? run : run - (w_last >= 0 ? wsum[w_last] : 0.0);
        sh_found = -1;
        sh_last = -1;
    }
    __syncthreads();
    if (warp == sh_warp) {
        int wlo, whi;
        warp_share(lo, hi, warp, &wlo, &whi);
        double run = sh_before;
        int found = -1, last = -1;
        for (int base = wlo; base < whi && found < 0; base += 32) {
            int i = base + lane;
            double e = i < whi ? kept_mass(r, i, what) : 0.0;
            bool sel = e > 0.0;
            double incl = e;
            for (int o = 1; o < 32; o <<= 1) {
                double y = __shfl_up_sync(0xffffffffu, incl, o);
                if (lane >= o) incl += y;
            }
            double cum = run + incl;
            bool hit = e > 0.0 && (at_least ? cum >= target : cum > target);
            unsigned hits = __ballot_sync(0xffffffffu, hit), sels = __ballot_sync(0xffffffffu, sel);
            if (hits) found = base + __ffs(hits) - 1;
            if (sels) last = base + 31 - __clz(sels);
            run += __shfl_sync(0xffffffffu, incl, 31);
        }
        if (lane == 0) {
            sh_found = found;
            sh_last = last;
        }
    }
    __syncthreads();
    *last_sel = sh_last;
    return sh_found;
}

/* Block sums of NV per-thread values (double or int) into out[0 .. NV). */
template <typename T, int NV>
__device__ void block_sums(T (&v)[NV], T *out)
{
    __shared__ T part[PICK_WARPS][NV];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int b = 0; b < NV; b++) {
        T x = v[b];
        for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
        v[b] = x;
    }
    __syncthreads();
    if (lane == 0)
#pragma unroll
        for (int b = 0; b < NV; b++) part[warp][b] = v[b];
    __syncthreads();
#pragma unroll
    for (int b = 0; b < NV; b++) {
        T x = 0;
        for (int w = 0; w < PICK_WARPS; w++) x += part[w][b];
        out[b] = x;
    }
}

/* The k-th largest key: the largest x with count(key >= x) >= k, 4 bits per pass. */
__device__ uint32_t top_k_key(const row_ctx &r, int k)
{
    uint32_t lo = 0;
    for (int shift = 28; shift >= 0; shift -= 4) {
        int cnt[15];
#pragma unroll
        for (int b = 0; b < 15; b++) cnt[b] = 0;
        for (int i = threadIdx.x; i < r.vocab; i += PICK_THREADS) {
            uint32_t key = float_key(zval(r, i));
#pragma unroll
            for (int b = 0; b < 15; b++) cnt[b] += key >= (lo | ((uint32_t)(b + 1) << shift));
        }
        int tot[15];
        block_sums<int, 15>(cnt, tot);
        int pick = 0;
#pragma unroll
        for (int b = 0; b < 15; b++)
            if (tot[b] >= k) pick = b + 1;
        lo |= (uint32_t)pick << shift;
    }
    return lo;
}

/* The largest key x with G(x) = mass of survivors with key > x at least ptot (the top-p
 * threshold is x + 1). */
__device__ uint32_t top_p_below(const row_ctx &r, double ptot)
{
    uint32_t below = 0;
    for (int shift = 28; shift >= 0; shift -= 4) {
        double g[15];
#pragma unroll
        for (int b = 0; b < 15; b++) g[b] = 0.0;
        for (int i = threadIdx.x; i < r.vocab; i += PICK_THREADS) {
            float z = zval(r, i);
            uint32_t key = float_key(z);
            if (key < r.kth) continue;
            double e = eval(r, z);
#pragma unroll
            for (int b = 0; b < 15; b++)
                if (key > (below | ((uint32_t)(b + 1) << shift))) g[b] += e;
        }
        double tot[15];
        block_sums<double, 15>(g, tot);
        int pick = 0;
#pragma unroll
        for (int b = 0; b < 15; b++)
            if (tot[b] >= ptot) pick = b + 1;
        below |= (uint32_t)pick << shift;
    }
    return below;
}

/* Chunk c's share of the row's mass, sum_c exp(zmax_c - zmax) (0 for an empty chunk or c past
 * the end). */
__device__ __forceinline__ double chunk_mass(const chunk_stat *st, int c, int n_chunks, float zmax)
{
    if (c >= n_chunks || st[c].zmax == -INFINITY) return 0.0;
    return st[c].sum * exp_nonpos((double)st[c].zmax - zmax);
}

__global__ void __launch_bounds__(PICK_THREADS) sample_pick_kernel(int32_t *tokens, float *logp, const float *logits,
                                                                   const chunk_stat *stats,
                                                                   const rl_sample_row *rows, int vocab,
                                                                   int n_chunks)
{
    __shared__ double wsum[PICK_WARPS];
    __shared__ float sh_zmax;
    __shared__ int sh_arg, sh_chunk;
    __shared__ double sh_total, sh_before;
    int row = blockIdx.x, tid = threadIdx.x;
    const rl_sample_row p = rows[row];
    const chunk_stat *st = stats + (size_t)row * n_chunks;
    row_ctx r;
    r.x = logits + (size_t)row * vocab;
    r.inv_t = inv_temperature(p);
    r.vocab = vocab;
    r.kth = 0;
    r.xstar = 0;
    r.use_p = 0;
    r.tie_cut = INT_MAX;
    r.min_p = p.min_p;
    bool plain = (p.top_k <= 0 || p.top_k >= vocab) && !(p.top_p < 1.0f) && !(p.min_p > 0.0f);
    float u = (float)(philox_first_word(p.seed, p.step, p.row) >> 8) * (1.0f / 16777216.0f);
    /* the row's parameters and its draw do not come from the stats kernel: read before the wait */
    rl_pdl_begin();
    if (tid < 32) {
        /* warp 0: the chunks' masses in parallel (one lane per chunk), then every lane walks
         * them in chunk order (shuffled from their lanes), so the sums are those of a serial
         * loop over the chunks */
        float zmax = -INFINITY;
        int arg = INT_MAX;
        for (int c = tid; c < n_chunks; c += 32) better(zmax, arg, st[c].zmax, st[c].arg);
        warp_best(zmax, arg);
        double total = 0.0;
        for (int c0 = 0; c0 < n_chunks; c0 += 32) {
            double w = chunk_mass(st, c0 + tid, n_chunks, zmax);
            for (int j = 0; j < min(32, n_chunks - c0); j++) {
                double wj = __shfl_sync(0xffffffffu, w, j);
                if (zmax != -INFINITY) total += wj;
            }
        }
        /* plain sampling: the chunk where the running total passes u * total (rounding may
         * leave none: then the last chunk with mass) */
        int chunk = -1, last = n_chunks - 1;
        double before = 0.0, last_before = 0.0, target = u * total;
        for (int c0 = 0; c0 < n_chunks && chunk < 0; c0 += 32) {
            double w = chunk_mass(st, c0 + tid, n_chunks, zmax);
            for (int j = 0; j < min(32, n_chunks - c0); j++) {
                double wj = __shfl_sync(0xffffffffu, w, j);
                if (wj <= 0.0) continue;
                if (before + wj > target) {
                    chunk = c0 + j;
                    break;
                }
                last = c0 + j;
                last_before = before;
                before += wj;
            }
        }
        if (tid == 0) {
            sh_zmax = zmax;
            sh_arg = arg == INT_MAX ? 0 : arg;
            sh_total = total;
            sh_chunk = chunk >= 0 ? chunk : last;
            sh_before = chunk >= 0 ? before : last_before;
        }
    }
    __syncthreads();
    r.zmax = sh_zmax;
    int argmax = sh_arg;
    double total = sh_total, lse = (double)r.zmax + log(total);
    int token = argmax;
    if (p.temperature > 0.0f) {
        int lo = 0, hi = vocab, last;
        double before = 0.0, target;
        int what = KEEP_ALL;
        if (plain) {
            lo = sh_chunk * SAMPLE_CHUNK;
            hi = min(vocab, lo + SAMPLE_CHUNK);
            before = sh_before;
            target = u * total;
            range_sums(r, lo, hi, KEEP_ALL, wsum);
        } else {
            if (p.top_k > 0 && p.top_k < vocab) r.kth = top_k_key(r, p.top_k);
            if (p.top_p < 1.0f) {
                double surv = 0.0;
                for (int i = tid; i < vocab; i += PICK_THREADS) {
                    float z = zval(r, i);
                    if (float_key(z) >= r.kth) surv += eval(r, z);
                }
                surv = rl_block_sum_d(surv);
                double ptot = (double)p.top_p * surv;
                r.xstar = top_p_below(r, ptot) + 1;
                double g_star = 0.0;
                for (int i = tid; i < vocab; i += PICK_THREADS) {
                    float z = zval(r, i);
                    uint32_t key = float_key(z);
                    if (key >= r.kth && key > r.xstar) g_star += eval(r, z);
                }
                g_star = rl_block_sum_d(g_star);
                /* ties at x* in id order: kept while the mass before them is below ptot, so
                 * up to and including the first whose running mass reaches it */
                range_sums(r, 0, vocab, KEEP_TIES, wsum);
                int cut = range_find(r, 0, vocab, KEEP_TIES, wsum, g_star, ptot, 1, &last);
                r.use_p = 1;
                r.tie_cut = cut >= 0 ? cut + 1 : INT_MAX;
            }
            what = KEEP_FILTERED;
            double kept = range_sums(r, 0, vocab, KEEP_FILTERED, wsum);
            target = u * kept;
        }
        int found = range_find(r, lo, hi, what, wsum, before, target, 0, &last);
        token = found >= 0 ? found : last >= 0 ? last : argmax;
    }
    if (tid == 0) {
        tokens[row] = token;
        logp[row] = (float)((double)zval(r, token) - lse);
    }
}

extern "C" int rl_cuda_sample(rl_ctx *ctx, int32_t *tokens, float *logp, float *logits, int n_rows, int vocab,
                              const rl_sample_row *rows)
{
    /* The rows' parameters are device memory: their ranges are the caller's to check
     * (rl_sample_row_check; the engine does, per request). */
    if (n_rows == 0) return 0;
    /* this launcher's own limit: the stats grid has one y block per row */
    ARG_CHECK(n_rows <= 65535, "n_rows %d is more than 65535, the most the CUDA sampler takes", n_rows);
    int n_chunks = (vocab + SAMPLE_CHUNK - 1) / SAMPLE_CHUNK;
    chunk_stat *stats = (chunk_stat *)rl_cuda_scratch(ctx, (size_t)n_rows * n_chunks * sizeof(chunk_stat));
    if (!stats) return -1;
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    CUDA_CHECK(rl_launch_pdl(sample_stats_kernel, dim3((unsigned)n_chunks, (unsigned)n_rows), dim3(STATS_THREADS), 0, st,
                             stats, (const float *)logits, rows, vocab, n_chunks));
    LAUNCH_CHECK();
    CUDA_CHECK(rl_launch_pdl(sample_pick_kernel, dim3((unsigned)n_rows), dim3(PICK_THREADS), 0, st, tokens, logp,
                             (const float *)logits, (const chunk_stat *)stats, rows, vocab, n_chunks));
    LAUNCH_CHECK();
    return 0;
}
