/* gemm_rows.cu — forward products of 9..16 rows (a decode step of a dozen sequences) on tensor
 * cores, with gemv.cu's folds (RMSNorm of the input, SwiGLU of gate|up, bias, residual), bf16
 * only, fast mode only (deterministic mode runs matmul_det.cu). gemv.cu sends its products of
 * more than GEMV_MAX_M rows here. The kernel is written for up to 128 rows (16 * MT, MT a
 * template parameter) and was correct there, but from 17 rows on it lost to cuBLASLt in the
 * decode graph (docs/benchmarks.md, "An own few-row tensor-core product ... (i10-rows)"), so
 * only MT = 1 is built and ROWS_MAX_M is 16.
 *
 * Such a product is bound by reading its weight (4-12 MB for Qwen3-0.6B's layers) once. The
 * idea, as in gemv.cu: the weight is never written during a decode step, so a block copies its
 * whole weight slice into shared memory BEFORE the programmatic-dependent-launch wait, while the
 * kernel before it (RMSNorm, attention, the previous product) is still running; only the input
 * rows wait for it. cuBLASLt's kernels cannot do that.
 *  - Tiles: the output is cut into BN-column tiles (BN = 32 * NT: 64, 128 or 192) and k into
 *    `splits` slices of kc (a multiple of 64); a block owns one (tile, slice), the grid is one
 *    wave on the multiprocessors (host: rows_choose picks BN and splits for the shape). A block
 *    moves BN x kc weight bytes from memory and 16*MT x kc input bytes from the L2; wide tiles
 *    keep the second small (the failed earlier attempt re-read all input rows per few weight rows).
 *  - Copies: cp.async 16-byte pieces, weight slice before the wait, input slice after it, both
 *    into 64-column chunks XOR-swizzled by row (mma.cuh's swz) for ldmatrix.
 *  - Arithmetic: 4 warps, warp w owns the tile's columns [w * 8NT, (w + 1) * 8NT) for all 16*MT
 *    rows; mma.sync m16n8k16 bf16 with fp32 accumulation, k in order.
 *  - Splits combine in a FIXED order: the splits of a tile are one thread-block cluster; each
 *    block puts its fp32 partial tile in shared memory, and after a cluster barrier block r sums
 *    its share of the elements over the cluster's blocks in split order (DSMEM), adds bias and
 *    residual in fp32 and rounds once. Sampled tokens never depend on timing.
 *  - RMSNorm: the block stages bf16(x * norm_weight) and sums its slice's squares per row (a
 *    fixed lane order); the splits' sums meet in the cluster sum and the tile is scaled by
 *    rsqrt(ss / k + eps) there. The op's xn and rstd outputs are computed apart, a warp per row
 *    with rmsnorm.cu's lane order and rounding (the same bits as rl_rmsnorm_fwd), by warps spread
 *    over the grid. So the product differs from "RMSNorm, then the product" in the last bits of
 *    the rounding of xn (within bf16 tolerance), while xn and rstd are those of the op.
 *  - SwiGLU: gate and up slices are staged and combined in place (swiglu.cu's expression, the
 *    same bf16 act); the blocks of tile 0 write their act slices out.
 * Shapes the kernel does not take (m outside 9..ROWS_MAX_M, k or the stride not a multiple of
 * 8, misaligned rows, RMSNorm rows over 2048, no tiling whose clusters all fit at once) return
 * *ran = 0. */
#include "backend/cuda/rows.cuh"
#include "backend/cuda/mma.cuh"

#include <cooperative_groups.h>
#include <string.h>

namespace cg = cooperative_groups;

#define ROWS_MIN_M 9
#define ROWS_MAX_M 16 /* measured: past 16 rows cuBLASLt's products won in the decode graph */
#define ROWS_THREADS 128
#define ROWS_MAX_SPLITS 16            /* cluster size (over 8: non-portable, sm_90 allows 16) */
#define ROWS_SMEM_MAX (110 * 1024)    /* dynamic shared memory per block: 2 blocks fit an SM */
#define ROWS_NORM_MAX_K 2048          /* rmsnorm.cu's warp-per-row path (VEC_MAX_DIM) */

/* One row of the op's RMSNorm outputs, as rmsnorm_fwd_vec_kernel computes it (lane order,
 * expressions and rounding), by one warp. */
__device__ __forceinline__ void rows_norm_row(const rl_rows_args &a, int row, int lane)
{
    int n_chunks = a.k >> 3;
    const uint4 *xr = (const uint4 *)(a.x + (size_t)row * a.x_stride), *wr = (const uint4 *)a.norm_weight;
    uint4 xu[8], wu[8];
#pragma unroll
    for (int q = 0; q < 8; q++) {
        int c = lane + 32 * q;
        if (c < n_chunks) {
            xu[q] = xr[c];
            wu[q] = wr[c];
        }
    }
    float ss = 0.0f;
#pragma unroll
    for (int q = 0; q < 8; q++) {
        int c = lane + 32 * q;
        if (c < n_chunks) {
            float v[8];
            rl_unpack_bf16x8(xu[q], v);
#pragma unroll
            for (int j = 0; j < 8; j++) ss += v[j] * v[j];
        }
    }
    ss = rl_warp_sum(ss);
    float r = rsqrtf(ss / a.k + a.eps);
    if (lane == 0 && a.rstd_out) a.rstd_out[row] = r;
    if (!a.x_out) return;
    uint4 *o = (uint4 *)(a.x_out + (size_t)row * a.k);
#pragma unroll
    for (int q = 0; q < 8; q++) {
        int c = lane + 32 * q;
        if (c < n_chunks) {
            float v[8], w[8];
            rl_unpack_bf16x8(xu[q], v);
            rl_unpack_bf16x8(wu[q], w);
#pragma unroll
            for (int j = 0; j < 8; j++) v[j] = v[j] * r * w[j];
            uint4 u;
            __nv_bfloat162 *h = (__nv_bfloat162 *)&u;
#pragma unroll
            for (int j = 0; j < 4; j++) h[j] = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]);
            o[c] = u;
        }
    }
}

/* Piece p (16 bytes) of row r of a slice of kc columns: its place in the chunked, swizzled tile
 * of `rows` rows. */
__device__ __forceinline__ int rows_at(int r, int p, int rows)
{
    return (p >> 3) * rows * 64 + swz<64>(r, (p & 7) * 8);
}

/* The piece ROWS_THREADS after (r, p) in row-major order of rows of `pieces` pieces. */
__device__ __forceinline__ void rows_next(int &r, int &p, int pieces)
{
    p += ROWS_THREADS;
    while (p >= pieces) {
        p -= pieces;
        r++;
    }
}

template <int MT, int NT>
__global__ void __launch_bounds__(ROWS_THREADS) gemm_rows_kernel(rl_rows_args a, int m, int mode)
{
    constexpr int MP = 16 * MT, BN = 32 * NT;
    extern __shared__ __align__(128) unsigned char rows_dyn[];
    __shared__ float ss_part[MP];
    cg::cluster_group cluster = cg::this_cluster();
    int split = blockIdx.x, n0 = blockIdx.y * BN, k0 = split * a.kc;
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int pieces = a.kc >> 3; /* 16-byte pieces of a row of the slice */
    bf16 *ws = (bf16 *)rows_dyn, *xs = ws + (size_t)BN * a.kc;
    bf16 *us = xs + (size_t)MP * a.kc, *nws = us + (mode == RL_ROWS_SWIGLU ? (size_t)MP * a.kc : 0);

    /* before the wait: the weight slice (and the norm weight's), read by nothing else */
    int r0 = tid / pieces, p0 = tid - r0 * pieces; /* a thread's first piece; then ROWS_THREADS on */
    for (int r = r0, p = p0; r < BN; rows_next(r, p, pieces)) {
        int kk = k0 + p * 8;
        bool ok = n0 + r < a.n && kk < a.k;
        cp_async16(ws + rows_at(r, p, BN), a.weight + (ok ? (size_t)(n0 + r) * a.k + kk : 0), ok);
    }
    if (mode == RL_ROWS_RMSNORM)
        for (int p = tid; p < pieces; p += ROWS_THREADS) {
            bool ok = k0 + p * 8 < a.k;
            cp_async16(nws + p * 8, a.norm_weight + (ok ? k0 + p * 8 : 0), ok);
        }
    cp_async_commit();
    rl_pdl_begin();

    for (int r = r0, p = p0; r < MP; rows_next(r, p, pieces)) {
        int kk = k0 + p * 8;
        bool ok = r < m && kk < a.k;
        size_t off = ok ? (size_t)r * a.x_stride + kk : 0;
        cp_async16(xs + rows_at(r, p, MP), a.x + off, ok);
        if (mode == RL_ROWS_SWIGLU) cp_async16(us + rows_at(r, p, MP), a.up + off, ok);
    }
    cp_async_commit();
    if (mode == RL_ROWS_RMSNORM) { /* the op's xn and rstd, a warp per row over the grid */
        int n_warps = gridDim.x * gridDim.y * (ROWS_THREADS / 32);
        for (int row = (blockIdx.y * gridDim.x + blockIdx.x) * (ROWS_THREADS / 32) + warp; row < m; row += n_warps)
            rows_norm_row(a, row, lane);
    }
    cp_async_wait<0>();
    __syncthreads();

    if (mode == RL_ROWS_RMSNORM) {
        for (int r = warp; r < MP; r += ROWS_THREADS / 32) {
            float ss = 0.0f;
            for (int p = lane; p < pieces; p += 32) {
                uint4 *px = (uint4 *)(xs + rows_at(r, p, MP));
                float v[8], w[8];
                rl_unpack_bf16x8(*px, v);
                rl_unpack_bf16x8(*(const uint4 *)(nws + p * 8), w);
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    ss += v[j] * v[j];
                    v[j] *= w[j];
                }
                uint4 u;
                __nv_bfloat162 *h = (__nv_bfloat162 *)&u;
#pragma unroll
                for (int j = 0; j < 4; j++) h[j] = __floats2bfloat162_rn(v[2 * j], v[2 * j + 1]);
                *px = u;
            }
            ss = rl_warp_sum(ss);
            if (lane == 0) ss_part[r] = ss;
        }
    } else if (mode == RL_ROWS_SWIGLU) {
        bool writer = blockIdx.y == 0 && a.x_out != NULL;
        for (int r = r0, p = p0; r < MP; rows_next(r, p, pieces)) {
            int kk = k0 + p * 8;
            uint4 *px = (uint4 *)(xs + rows_at(r, p, MP));
            float g[8], u[8];
            rl_unpack_bf16x8(*px, g);
            rl_unpack_bf16x8(*(const uint4 *)(us + rows_at(r, p, MP)), u);
            uint4 o;
            __nv_bfloat162 *h = (__nv_bfloat162 *)&o;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                float g0 = g[2 * j], g1 = g[2 * j + 1];
                h[j] = __floats2bfloat162_rn(g0 * (1.0f / (1.0f + expf(-g0))) * u[2 * j],
                                             g1 * (1.0f / (1.0f + expf(-g1))) * u[2 * j + 1]);
            }
            *px = o;
            if (writer && r < m && kk < a.k) *(uint4 *)(a.x_out + (size_t)r * a.k + kk) = o;
        }
    }
    if (mode != RL_ROWS_PLAIN) __syncthreads();

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
    int wcol = warp * NT * 8, n_chunks = a.kc >> 6;
    for (int c = 0; c < n_chunks; c++) {
        const bf16 *wt = ws + (size_t)c * BN * 64, *xt = xs + (size_t)c * MP * 64;
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            uint32_t af[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                ldmatrix_x4(af[mt],
                            xt + swz<64>(mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, kk * 16 + (lane >> 4) * 8));
#pragma unroll
            for (int np = 0; np < NT / 2; np++) {
                uint32_t b[4];
                ldmatrix_x4(b, wt + swz<64>(wcol + np * 16 + (lane & 7) + ((lane >> 4) << 3),
                                            kk * 16 + ((lane >> 3) & 1) * 8));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    mma16816(acc[mt][2 * np], af[mt], b[0], b[1]);
                    mma16816(acc[mt][2 * np + 1], af[mt], b[2], b[3]);
                }
            }
        }
    }
    __syncthreads(); /* the slices are read: the partial tile takes their place */
    float *part = (float *)rows_dyn; /* [MP][BN] */
    int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            int col = wcol + nt * 8 + 2 * t, row = mt * 16 + g;
            *(float2 *)(part + row * BN + col) = make_float2(acc[mt][nt][0], acc[mt][nt][1]);
            *(float2 *)(part + (row + 8) * BN + col) = make_float2(acc[mt][nt][2], acc[mt][nt][3]);
        }
    cluster.sync();

    /* block `split` of the cluster: every (splits * threads)-th group of 4 outputs. A thread
     * issues its residual and bias loads and all the splits' DSMEM loads before it sums (a
     * loop that waited on each load in turn cost several microseconds), then adds in split order. */
    int n_splits = gridDim.x;
    for (int i4 = split * ROWS_THREADS + tid; i4 < m * (BN / 4); i4 += n_splits * ROWS_THREADS) {
        int r = i4 / (BN / 4), col = (i4 - r * (BN / 4)) * 4;
        float add[4];
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int j = n0 + col + e;
            add[e] = 0.0f;
            if (j < a.n && a.bias) add[e] += rl_b2f(a.bias[j]);
            if (j < a.n && a.residual) add[e] += rl_b2f(a.residual[(size_t)r * a.n + j]);
        }
        float y[4] = {0.0f, 0.0f, 0.0f, 0.0f}, ss = 0.0f;
        for (int q0 = 0; q0 < n_splits; q0 += 8) { /* 8 splits' loads in flight at a time */
            float4 v[8];
            float ssq[8];
#pragma unroll
            for (int q = 0; q < 8; q++)
                if (q0 + q < n_splits) {
                    v[q] = *(const float4 *)(cluster.map_shared_rank(part, q0 + q) + r * BN + col);
                    ssq[q] = mode == RL_ROWS_RMSNORM ? cluster.map_shared_rank(ss_part, q0 + q)[r] : 0.0f;
                }
#pragma unroll
            for (int q = 0; q < 8; q++)
                if (q0 + q < n_splits) {
                    y[0] += v[q].x;
                    y[1] += v[q].y;
                    y[2] += v[q].z;
                    y[3] += v[q].w;
                    ss += ssq[q];
                }
        }
        float scale = mode == RL_ROWS_RMSNORM ? rsqrtf(ss / a.k + a.eps) : 1.0f;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int j = n0 + col + e;
            if (j < a.n) a.out[(size_t)r * a.n + j] = rl_f2b(y[e] * scale + add[e]);
        }
    }
    cluster.sync(); /* no block leaves while another reads its partial */
}

typedef void (*rows_kernel_fn)(rl_rows_args, int, int);

static rows_kernel_fn rows_kernel(int mt, int nt)
{
    switch (mt * 10 + nt) { /* MT > 1 (17..128 rows, measured slower than cuBLASLt) not built */
    case 12: return gemm_rows_kernel<1, 2>;
    case 14: return gemm_rows_kernel<1, 4>;
    case 16: return gemm_rows_kernel<1, 6>;
    default: return NULL;
    }
}

typedef struct rows_plan {
    int mt, nt, splits, kc, tiles;
    size_t smem;
} rows_plan;

/* Dynamic shared memory of a block: the slices (weight, input, up or norm weight), or the
 * partial tile after them, whichever is larger. */
static size_t rows_smem(int mode, int mt, int nt, int kc)
{
    size_t mp = 16 * (size_t)mt, bn = 32 * (size_t)nt;
    size_t slices = (bn + mp * (mode == RL_ROWS_SWIGLU ? 2 : 1)) * kc * 2 + (mode == RL_ROWS_RMSNORM ? kc * 2 : 0);
    size_t part = mp * bn * 4;
    return slices > part ? slices : part;
}

static cudaError_t rows_config(cudaLaunchConfig_t *cfg, cudaLaunchAttribute attr[2], rows_kernel_fn kernel,
                               const rows_plan &p, cudaStream_t stream)
{
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)p.smem);
    if (e == cudaSuccess && p.splits > 8)
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    attr[1].id = cudaLaunchAttributeClusterDimension;
    attr[1].val.clusterDim.x = (unsigned)p.splits;
    attr[1].val.clusterDim.y = 1;
    attr[1].val.clusterDim.z = 1;
    *cfg = cudaLaunchConfig_t{};
    cfg->gridDim = dim3((unsigned)p.splits, (unsigned)p.tiles);
    cfg->blockDim = dim3(ROWS_THREADS);
    cfg->dynamicSmemBytes = p.smem;
    cfg->stream = stream;
    cfg->attrs = attr;
    cfg->numAttrs = 2;
    return e;
}

/* The tile width and split count: among the tilings whose clusters are all resident at once
 * (one wave; asked of the occupancy calculator), the least bytes copied per multiprocessor
 * (weight and input slices of its blocks), then the most blocks. Accumulators per thread
 * (MT * NT * 4) at most 96. */
static int rows_choose(int mode, int mt, int n, int k, int n_sms, cudaStream_t stream, rows_plan *best)
{
    static const int nts[] = {2, 4, 6};
    double best_load = 0;
    *best = (rows_plan){0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 3; i++) {
        int nt = nts[i];
        rows_kernel_fn kernel = rows_kernel(mt, nt);
        if (!kernel || mt * nt * 4 > 96) continue;
        int bn = 32 * nt, tiles = (n + bn - 1) / bn;
        for (int splits = 1; splits <= ROWS_MAX_SPLITS; splits *= 2) {
            int kc = ((k + splits - 1) / splits + 63) / 64 * 64;
            if ((splits - 1) * kc >= k) continue;
            rows_plan p = {mt, nt, splits, kc, tiles, rows_smem(mode, mt, nt, kc)};
            if (p.smem > ROWS_SMEM_MAX) continue;
            cudaLaunchConfig_t cfg;
            cudaLaunchAttribute attr[2];
            int clusters = 0;
            if (rows_config(&cfg, attr, kernel, p, stream) != cudaSuccess ||
                cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) != cudaSuccess) {
                cudaGetLastError(); /* a tiling the device refuses is not a candidate */
                continue;
            }
            if (clusters < tiles) continue;
            int blocks = tiles * splits, per_sm = (blocks + n_sms - 1) / n_sms;
            /* bytes per multiprocessor: weight and input slices, and the fp32 partial tile that
             * the cluster sum reads back */
            double load = (double)per_sm * ((double)(bn + 16 * mt) * kc * 2 + 16.0 * mt * bn * 4);
            int best_blocks = best->tiles * best->splits;
            if (!best->tiles || load < best_load || (load == best_load && blocks > best_blocks)) {
                *best = p;
                best_load = load;
            }
        }
    }
    return best->tiles > 0;
}

/* The plan of a shape (rows rounded up to 16, 32, 64 or 128), chosen once per context and kept
 * (a model has a few shapes). */
static int rows_plan_get(rl_cuda_state *st, int mode, int m, int n, int k, rows_plan *p)
{
    int mt = m <= 16 ? 1 : m <= 32 ? 2 : m <= 64 ? 4 : 8;
    int key[4] = {mode, mt, n, k};
    for (int i = 0; i < st->n_rows_plans; i++)
        if (!memcmp(st->rows_plans[i].key, key, sizeof key)) {
            const int *v = st->rows_plans[i].plan;
            if (!v[0]) return 0;
            *p = (rows_plan){v[0], v[1], v[2], v[3], v[4], rows_smem(mode, v[0], v[1], v[3])};
            return 1;
        }
    int ok = rows_choose(mode, mt, n, k, st->n_sms > 0 ? st->n_sms : 1, st->stream, p);
    int slot = st->n_rows_plans < 32 ? st->n_rows_plans++
                                     : (int)(((unsigned)mt * 31u + (unsigned)n + (unsigned)k) % 32u);
    memcpy(st->rows_plans[slot].key, key, sizeof key);
    int v[5] = {ok ? p->mt : 0, p->nt, p->splits, p->kc, p->tiles};
    memcpy(st->rows_plans[slot].plan, v, sizeof v);
    return ok;
}

static int aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* ctx.h's rl_fold_rows: the few-row folds (gemv.cu to GEMV_MAX_M, then this file) are bf16's
 * fast mode. */
extern "C" int rl_cuda_fold_rows(const rl_ctx *ctx)
{
    return rl_cuda_f32(ctx) || ctx->deterministic ? 0 : ROWS_MAX_M;
}

int rl_cuda_gemm_rows(rl_ctx *ctx, int mode, rl_rows_args a, int m, int *ran)
{
    *ran = 0;
    if (rl_cuda_f32(ctx) || ctx->deterministic || m < ROWS_MIN_M || m > ROWS_MAX_M || a.k % 8 || a.x_stride % 8)
        return 0;
    if (mode == RL_ROWS_RMSNORM && a.k > ROWS_NORM_MAX_K) return 0;
    if (!aligned16(a.x) || !aligned16(a.weight) || (a.up && !aligned16(a.up)) ||
        (a.norm_weight && !aligned16(a.norm_weight)) || (a.x_out && !aligned16(a.x_out)))
        return 0;
    rl_cuda_state *st = rl_cuda_st(ctx);
    rows_plan p;
    if (!rows_plan_get(st, mode, m, a.n, a.k, &p)) return 0;
    rows_kernel_fn kernel = rows_kernel(p.mt, p.nt);
    a.kc = p.kc;
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute attr[2];
    CUDA_CHECK(rows_config(&cfg, attr, kernel, p, st->stream));
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, a, m, mode));
    LAUNCH_CHECK();
    *ran = 1;
    return 0;
}
