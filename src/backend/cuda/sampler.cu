/* sampler.cu — one token per row: temperature, top-k, top-p, min-p, then a Philox draw; the
 * same recipe as backend/cpu/sampler.c, so both backends pick the same token for the same
 * (seed, step, row) up to rounding at a knife edge.
 *
 * One block per row. With z = logits / temperature (written back into logits, which ops.h
 * allows as scratch), zmax and e_i = exp(z_i - zmax) (computed in double, stored fp32):
 *  - top-k: the k-th largest z is found by a bitwise binary search over order-preserving
 *    32-bit keys of z (32 counting passes, no sort); tokens with z >= it survive (ties kept).
 *  - top-p: walking survivors by decreasing z (ties by increasing id), a token is kept while
 *    the mass before it is < top_p * total. All tokens above a threshold key x* are kept, none
 *    below; x* is the smallest survivor key with G(x*) = sum of e over keys > x* below
 *    top_p * total (binary search again); ties at x* are resolved by id with a block scan.
 *  - min-p: drop e < min_p.
 *  - draw: u from the first word of Philox4x32-10 (key = seed, counter = (step, 0, row, 0)),
 *    with each row's own parameters (rl_sample_row, device memory); walking kept tokens by increasing id, the first whose running sum of e exceeds
 *    u * (kept sum) is chosen. Running sums use contiguous per-thread id ranges and an
 *    exclusive scan over threads, all in double.
 * logp = z[token] - logsumexp(z) over the whole vocabulary (greedy: temperature 1). */
#include "backend/cuda/common.cuh"

#define SAMPLE_THREADS 1024

__device__ __forceinline__ uint32_t float_key(float f)
{
    uint32_t u = __float_as_uint(f);
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

__device__ __forceinline__ int block_count(int v)
{
    return (int)rl_block_sum((float)v); /* counts stay far below 2^24 */
}

/* Exclusive scan over threads of one double per thread; also returns the total. */
__device__ double block_exclusive_scan(double v, double *total)
{
    __shared__ double vals[SAMPLE_THREADS];
    __syncthreads();
    vals[threadIdx.x] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        double run = 0.0;
        for (int i = 0; i < (int)blockDim.x; i++) {
            double x = vals[i];
            vals[i] = run;
            run += x;
        }
        *total = run;
    }
    __syncthreads();
    return vals[threadIdx.x];
}

__global__ void sample_kernel(int32_t *tokens, float *logp, float *logits, float *e_buf, int vocab,
                              const rl_sample_row *rows)
{
    __shared__ double sh_total;
    __shared__ float best_z[32];
    __shared__ int best_i[32];
    int row = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const rl_sample_row p = rows[row];
    float *z = logits + (size_t)row * vocab;
    float *e = e_buf + (size_t)row * vocab;
    float inv_t = p.temperature > 0.0f ? 1.0f / p.temperature : 1.0f;

    /* z, zmax and argmax (ties to the lowest id). */
    float bz = -INFINITY;
    int bi = 0x7fffffff;
    for (int i = tid; i < vocab; i += blockDim.x) {
        float v = z[i] * inv_t;
        z[i] = v;
        if (v > bz || (v == bz && i < bi)) {
            bz = v;
            bi = i;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float oz = __shfl_xor_sync(0xffffffffu, bz, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (oz > bz || (oz == bz && oi < bi)) {
            bz = oz;
            bi = oi;
        }
    }
    if (lane == 0) {
        best_z[warp] = bz;
        best_i[warp] = bi;
    }
    __syncthreads();
    if (tid == 0) {
        for (int w = 1; w < (int)(blockDim.x >> 5); w++)
            if (best_z[w] > best_z[0] || (best_z[w] == best_z[0] && best_i[w] < best_i[0])) {
                best_z[0] = best_z[w];
                best_i[0] = best_i[w];
            }
        if (best_i[0] == 0x7fffffff) best_i[0] = 0;
    }
    __syncthreads();
    float zmax = best_z[0];
    int argmax = best_i[0];
    double sum = 0.0;
    for (int i = tid; i < vocab; i += blockDim.x) {
        double x = exp((double)z[i] - zmax);
        e[i] = (float)x;
        sum += x;
    }
    sum = rl_block_sum_d(sum);
    double lse = zmax + log(sum);
    if (p.temperature == 0.0f) {
        if (tid == 0) {
            tokens[row] = argmax;
            logp[row] = (float)(z[argmax] - lse);
        }
        return;
    }

    /* top-k threshold key (0 = keep all). */
    uint32_t kth = 0;
    if (p.top_k > 0 && p.top_k < vocab) {
        for (int bit = 31; bit >= 0; bit--) {
            uint32_t cand = kth | (1u << bit);
            int n = 0;
            for (int i = tid; i < vocab; i += blockDim.x) n += float_key(z[i]) >= cand;
            if (block_count(n) >= p.top_k) kth = cand;
        }
    }
    /* top-p threshold key x* and the last kept id among its ties. */
    uint32_t xstar = 0;
    int tie_cut = 0x7fffffff;
    if (p.top_p < 1.0f) {
        double total = 0.0;
        for (int i = tid; i < vocab; i += blockDim.x)
            if (float_key(z[i]) >= kth) total += e[i];
        total = rl_block_sum_d(total);
        double ptot = (double)p.top_p * total;
        uint32_t below = 0; /* largest key with G(key) >= ptot */
        for (int bit = 31; bit >= 0; bit--) {
            uint32_t cand = below | (1u << bit);
            double g = 0.0;
            for (int i = tid; i < vocab; i += blockDim.x) {
                uint32_t k = float_key(z[i]);
                if (k >= kth && k > cand) g += e[i];
            }
            if (rl_block_sum_d(g) >= ptot) below = cand;
        }
        xstar = below + 1;
        double g_star = 0.0;
        for (int i = tid; i < vocab; i += blockDim.x) {
            uint32_t k = float_key(z[i]);
            if (k >= kth && k > xstar) g_star += e[i];
        }
        g_star = rl_block_sum_d(g_star);
        /* Ties at x* in id order: contiguous id ranges per thread, scanned. */
        int chunk = (vocab + blockDim.x - 1) / blockDim.x, lo = tid * chunk, hi = min(vocab, lo + chunk);
        double mine = 0.0;
        for (int i = lo; i < hi; i++)
            if (float_key(z[i]) == xstar) mine += e[i];
        double before = g_star + block_exclusive_scan(mine, &sh_total);
        __shared__ int sh_drop;
        if (tid == 0) sh_drop = 0x7fffffff;
        __syncthreads();
        for (int i = lo; i < hi; i++) {
            if (float_key(z[i]) != xstar) continue;
            if (before >= ptot) {
                atomicMin(&sh_drop, i);
                break;
            }
            before += e[i];
        }
        __syncthreads();
        tie_cut = sh_drop;
    }

    /* Kept mass, then the draw walking ids in order. */
    bool use_p = p.top_p < 1.0f;
    auto kept_at = [&](int i) {
        uint32_t k = float_key(z[i]);
        if (k < kth) return false;
        if (use_p && !(k > xstar || (k == xstar && i < tie_cut))) return false;
        return !(p.min_p > 0.0f && (double)e[i] < (double)p.min_p);
    };
    int chunk = (vocab + blockDim.x - 1) / blockDim.x, lo = tid * chunk, hi = min(vocab, lo + chunk);
    double mine = 0.0;
    int last_kept = -1;
    for (int i = lo; i < hi; i++)
        if (kept_at(i)) {
            mine += e[i];
            last_kept = i;
        }
    double before = block_exclusive_scan(mine, &sh_total);
    double kept = sh_total;
    float u = (float)(philox_first_word(p.seed, p.step, p.row) >> 8) * (1.0f / 16777216.0f);
    double target = u * kept;
    __shared__ int chosen, last_any;
    if (tid == 0) {
        chosen = 0x7fffffff;
        last_any = -1;
    }
    __syncthreads();
    if (last_kept >= 0) atomicMax(&last_any, last_kept);
    /* before + (running part of mine) ends at exactly before + mine, so a thread whose range
     * holds the crossing finds it. */
    if (mine > 0.0 && before <= target && before + mine > target) {
        double part = 0.0;
        for (int i = lo; i < hi; i++) {
            if (!kept_at(i)) continue;
            part += e[i];
            if (before + part > target) {
                atomicMin(&chosen, i);
                break;
            }
        }
    }
    __syncthreads();
    if (tid == 0) {
        int token = chosen != 0x7fffffff ? chosen : (last_any >= 0 ? last_any : argmax);
        tokens[row] = token;
        logp[row] = (float)(z[token] - lse);
    }
}

extern "C" int rl_cuda_sample(rl_ctx *ctx, int32_t *tokens, float *logp, float *logits, int n_rows, int vocab,
                              const rl_sample_row *rows)
{
    /* The rows' parameters are device memory: their ranges are the caller's to check (the
     * engine does, per request). */
    ARG_CHECK(n_rows >= 0 && vocab > 0, "rl_cuda_sample: bad shape n_rows=%d vocab=%d", n_rows, vocab);
    if (n_rows == 0) return 0;
    ARG_CHECK(rows, "rl_cuda_sample: rows is NULL");
    float *e = (float *)rl_cuda_scratch(ctx, (size_t)n_rows * vocab * sizeof(float));
    if (!e) return -1;
    sample_kernel<<<n_rows, SAMPLE_THREADS, 0, rl_cuda_st(ctx)->stream>>>(tokens, logp, logits, e, vocab, rows);
    LAUNCH_CHECK();
    return 0;
}
