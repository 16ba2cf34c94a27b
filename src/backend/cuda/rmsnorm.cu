/* rmsnorm.cu — RMSNorm forward and backward, statistics in fp32.
 *
 * Backward, with r = rstd and g = dout * weight:
 *   dx = r * g - x * r^3 * mean(g * x)      dweight += sum over rows of dout * x * r
 * Fast path (dim a multiple of 8, at most VEC_MAX_DIM, 16-byte aligned tensors: every hidden
 * and head-dim norm of the models): one warp per row with 16-byte loads, so that the many short
 * rows of the q/k head norms (T * heads rows of head_dim) keep every lane busy; the forward
 * loads the row and the weight together, in blocks of 2 warps when there are few rows. The backward
 * runs a grid of a few blocks per multiprocessor; each warp strides over rows keeping its
 * dweight partial sums in registers (columns lane*8.. + 256 k), the block adds its warps' sums
 * in warp order (through shared memory) and writes one partial row.
 * General path (any dim; and every dim in the fp32 mode, where the fast path's bf16 packing does
 * not apply): forward one block per row; backward blocks of ROWS_PER_BLOCK rows with the dweight
 * partials in shared memory, one partial row per block. Both templated over the act dtype.
 * The partial rows are added to dweight in block order (rl_cuda_add_partials): no float
 * atomics, so the weight gradient has the same bits every run. */
#include "backend/cuda/common.cuh"

#define THREADS 256
#define ROWS_PER_BLOCK 32
#define VEC_WARPS 8                 /* warps per block on the fast path */
#define VEC_FEW_WARPS 2             /* forward with fewer than VEC_WARPS rows per multiprocessor */
#define VEC_MAX_CHUNKS 8            /* 8-element chunks per lane */
#define VEC_MAX_DIM (32 * 8 * VEC_MAX_CHUNKS)
#define VEC_BLOCKS_PER_SM 2         /* backward grid */
#define RMSNORM_BWD_MAX_SMEM (200 * 1024) /* bytes of dweight partials per block (sm_90: 227 KiB) */
#define RMSNORM_BWD_MAX_BLOCKS 4096      /* general path: rows per block grow past this many blocks */


__device__ __forceinline__ uint4 pack8(const float *f)
{
    uint4 u;
    __nv_bfloat162 *h = (__nv_bfloat162 *)&u;
#pragma unroll
    for (int j = 0; j < 4; j++) h[j] = __floats2bfloat162_rn(f[2 * j], f[2 * j + 1]);
    return u;
}

/* One warp per row; C = chunks of 8 elements per lane (dim <= 256 * C). */
template <int C>
__global__ void rmsnorm_fwd_vec_kernel(bf16 *out, float *rstd, const bf16 *x, const bf16 *weight, int n_rows,
                                       int dim, float eps)
{
    rl_pdl_begin();
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= n_rows) return;
    int n_chunks = dim >> 3;
    const uint4 *xr = (const uint4 *)(x + (size_t)row * dim);
    const uint4 *wr = (const uint4 *)weight;
    uint4 xu[C], wu[C];
    /* the row and the weight requested together: one memory round trip before the sum */
#pragma unroll
    for (int k = 0; k < C; k++) {
        int c = lane + 32 * k;
        if (c < n_chunks) {
            xu[k] = xr[c];
            wu[k] = wr[c];
        }
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < C; k++) {
        int c = lane + 32 * k;
        if (c < n_chunks) {
            float v[8];
            rl_unpack_bf16x8(xu[k], v);
#pragma unroll
            for (int j = 0; j < 8; j++) ss += v[j] * v[j];
        }
    }
    ss = rl_warp_sum(ss);
    float r = rsqrtf(ss / dim + eps);
    if (lane == 0) rstd[row] = r;
    uint4 *o = (uint4 *)(out + (size_t)row * dim);
#pragma unroll
    for (int k = 0; k < C; k++) {
        int c = lane + 32 * k;
        if (c < n_chunks) {
            float v[8], w[8];
            rl_unpack_bf16x8(xu[k], v);
            rl_unpack_bf16x8(wu[k], w);
#pragma unroll
            for (int j = 0; j < 8; j++) v[j] = v[j] * r * w[j];
            o[c] = pack8(v);
        }
    }
}

template <int C>
__global__ void rmsnorm_bwd_vec_kernel(bf16 *dx, float *dw_partial, const bf16 *dout, const bf16 *x,
                                       const bf16 *weight, const float *rstd, int n_rows, int dim,
                                       int accumulate_dx)
{
    extern __shared__ float dw_warp[]; /* [VEC_WARPS][dim] */
    int lane = threadIdx.x & 31, n_chunks = dim >> 3;
    int n_warps = gridDim.x * VEC_WARPS;
    const uint4 *wr = (const uint4 *)weight;
    float dw[C][8];
#pragma unroll
    for (int k = 0; k < C; k++)
#pragma unroll
        for (int j = 0; j < 8; j++) dw[k][j] = 0.0f;
    for (int row = blockIdx.x * VEC_WARPS + (threadIdx.x >> 5); row < n_rows; row += n_warps) {
        const uint4 *xr = (const uint4 *)(x + (size_t)row * dim), *gr = (const uint4 *)(dout + (size_t)row * dim);
        uint4 *dxr = (uint4 *)(dx + (size_t)row * dim);
        float r = rstd[row], dot = 0.0f;
        uint4 xu[C], gu[C];
#pragma unroll
        for (int k = 0; k < C; k++) {
            int c = lane + 32 * k;
            if (c < n_chunks) {
                float xv[8], gv[8], w[8];
                xu[k] = xr[c];
                gu[k] = gr[c];
                rl_unpack_bf16x8(xu[k], xv);
                rl_unpack_bf16x8(gu[k], gv);
                rl_unpack_bf16x8(wr[c], w);
#pragma unroll
                for (int j = 0; j < 8; j++) dot += gv[j] * w[j] * xv[j];
            }
        }
        dot = rl_warp_sum(dot);
        float cc = dot / dim * r * r * r;
#pragma unroll
        for (int k = 0; k < C; k++) {
            int c = lane + 32 * k;
            if (c < n_chunks) {
                float xv[8], gv[8], w[8], d[8], old[8];
                rl_unpack_bf16x8(xu[k], xv);
                rl_unpack_bf16x8(gu[k], gv);
                rl_unpack_bf16x8(wr[c], w);
                if (accumulate_dx) rl_unpack_bf16x8(dxr[c], old);
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    d[j] = r * gv[j] * w[j] - xv[j] * cc;
                    if (accumulate_dx) d[j] += old[j];
                    dw[k][j] += gv[j] * xv[j] * r;
                }
                dxr[c] = pack8(d);
            }
        }
    }
    float *mine = dw_warp + (size_t)(threadIdx.x >> 5) * dim;
#pragma unroll
    for (int k = 0; k < C; k++) {
        int c = lane + 32 * k;
        if (c < n_chunks)
#pragma unroll
            for (int j = 0; j < 8; j++) mine[8 * c + j] = dw[k][j];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        float acc = dw_warp[i];
        for (int w = 1; w < VEC_WARPS; w++) acc += dw_warp[(size_t)w * dim + i];
        dw_partial[(size_t)blockIdx.x * dim + i] = acc;
    }
}

/* Chunks per lane for the fast path, or 0 when it does not apply. */
static int vec_chunks(int dim, const void *a, const void *b, const void *c, const void *d)
{
    if (dim % 8 || dim > VEC_MAX_DIM) return 0;
    if (((uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d) & 15) return 0;
    int chunks = (dim / 8 + 31) / 32;
    return chunks <= 1 ? 1 : chunks <= 2 ? 2 : chunks <= 4 ? 4 : 8;
}

template <typename T>
__global__ void rmsnorm_fwd_kernel(T *out, float *rstd, const T *x, const T *weight, int dim, float eps)
{
    size_t row = blockIdx.x;
    const T *xr = x + row * dim;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        float v = rl_tof(xr[i]);
        ss += v * v;
    }
    ss = rl_block_sum(ss);
    float r = rsqrtf(ss / dim + eps);
    if (threadIdx.x == 0) rstd[row] = r;
    T *o = out + row * dim;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) o[i] = rl_fromf<T>(rl_tof(xr[i]) * r * rl_tof(weight[i]));
}

template <typename T>
__global__ void rmsnorm_bwd_kernel(T *dx, float *dw_partial, const T *dout, const T *x, const T *weight,
                                   const float *rstd, int n_rows, int dim, int accumulate_dx, int rows_per_block)
{
    extern __shared__ float dw_part[];
    for (int i = threadIdx.x; i < dim; i += blockDim.x) dw_part[i] = 0.0f;
    int row0 = blockIdx.x * rows_per_block;
    int row1 = min(row0 + rows_per_block, n_rows);
    for (int row = row0; row < row1; row++) {
        const T *xr = x + (size_t)row * dim, *gr = dout + (size_t)row * dim;
        float r = rstd[row];
        float dot = 0.0f;
        for (int i = threadIdx.x; i < dim; i += blockDim.x) dot += rl_tof(gr[i]) * rl_tof(weight[i]) * rl_tof(xr[i]);
        dot = rl_block_sum(dot);
        float c = dot / dim * r * r * r;
        T *dxr = dx + (size_t)row * dim;
        for (int i = threadIdx.x; i < dim; i += blockDim.x) {
            float xv = rl_tof(xr[i]), gv = rl_tof(gr[i]);
            float d = r * gv * rl_tof(weight[i]) - xv * c;
            if (accumulate_dx) d += rl_tof(dxr[i]);
            dxr[i] = rl_fromf<T>(d);
            dw_part[i] += gv * xv * r;
        }
    }
    for (int i = threadIdx.x; i < dim; i += blockDim.x) dw_partial[(size_t)blockIdx.x * dim + i] = dw_part[i];
}

template <typename T>
static int rmsnorm_bwd_general(rl_ctx *ctx, void *dx, float *dweight, const void *dout, const void *x,
                               const void *weight, const float *rstd, int n_rows, int dim, int accumulate_dx)
{
    size_t smem = (size_t)dim * sizeof(float);
    if (smem > 48 * 1024)
        CUDA_CHECK(cudaFuncSetAttribute(rmsnorm_bwd_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
    int per_block = ROWS_PER_BLOCK;
    while ((n_rows + per_block - 1) / per_block > RMSNORM_BWD_MAX_BLOCKS) per_block *= 2;
    int blocks = (n_rows + per_block - 1) / per_block;
    float *partial = (float *)rl_cuda_scratch(ctx, (size_t)blocks * dim * sizeof(float));
    if (!partial) return -1;
    rmsnorm_bwd_kernel<T><<<blocks, THREADS, smem, rl_cuda_st(ctx)->stream>>>(
        (T *)dx, partial, (const T *)dout, (const T *)x, (const T *)weight, rstd, n_rows, dim, accumulate_dx,
        per_block);
    LAUNCH_CHECK();
    return rl_cuda_add_partials(ctx, dweight, partial, blocks, dim);
}

/* rl_cuda_rmsnorm_sum_fwd: one block per row, 4 columns a thread in each of C passes of 1024.
 * The weight is read before the programmatic-launch wait (no kernel of a step writes it), every
 * partial requested before the first is summed; out = bf16(residual + (p0 + p1 + ...)), and
 * the squares of out as stored summed over the block (rl_block_sum). */
#define SUM_THREADS 256
#define SUM_MAX_PASSES 4
template <int C>
__global__ void __launch_bounds__(SUM_THREADS) rmsnorm_sum_kernel(bf16 *out, bf16 *xn, float *rstd,
                                                                  const bf16 *residual, const float *part, int splits,
                                                                  const bf16 *weight, int m, int n, float eps)
{
    int row = blockIdx.x, t = threadIdx.x;
    float w[C][4], v[C][4];
#pragma unroll
    for (int c = 0; c < C; c++) {
        int col = c * 4 * SUM_THREADS + 4 * t;
        if (col < n) {
            uint2 u = *(const uint2 *)(weight + col);
            float2 a = __bfloat1622float2(*(const __nv_bfloat162 *)&u.x), b = __bfloat1622float2(*(const __nv_bfloat162 *)&u.y);
            w[c][0] = a.x, w[c][1] = a.y, w[c][2] = b.x, w[c][3] = b.y;
        }
    }
    rl_pdl_begin();
    float ss = 0.0f;
#pragma unroll
    for (int c = 0; c < C; c++) {
        int col = c * 4 * SUM_THREADS + 4 * t;
        if (col >= n) continue;
        size_t at = (size_t)row * n + col;
        float4 p[RL_CUDA_SUM_MAX_SPLITS];
#pragma unroll
        for (int s = 0; s < RL_CUDA_SUM_MAX_SPLITS; s++)
            if (s < splits) p[s] = __ldcg((const float4 *)(part + (size_t)s * m * n + at));
        uint2 ru = *(const uint2 *)(residual + at);
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int s = 0; s < RL_CUDA_SUM_MAX_SPLITS; s++)
            if (s < splits) acc.x += p[s].x, acc.y += p[s].y, acc.z += p[s].z, acc.w += p[s].w;
        float2 a = __bfloat1622float2(*(const __nv_bfloat162 *)&ru.x), b = __bfloat1622float2(*(const __nv_bfloat162 *)&ru.y);
        __nv_bfloat162 h0 = __floats2bfloat162_rn(a.x + acc.x, a.y + acc.y), h1 = __floats2bfloat162_rn(b.x + acc.z, b.y + acc.w);
        uint2 hu;
        hu.x = *(const uint32_t *)&h0, hu.y = *(const uint32_t *)&h1;
        *(uint2 *)(out + at) = hu;
        float2 f0 = __bfloat1622float2(h0), f1 = __bfloat1622float2(h1);
        v[c][0] = f0.x, v[c][1] = f0.y, v[c][2] = f1.x, v[c][3] = f1.y;
#pragma unroll
        for (int j = 0; j < 4; j++) ss += v[c][j] * v[c][j];
    }
    ss = rl_block_sum(ss);
    float r = rsqrtf(ss / n + eps);
    if (t == 0) rstd[row] = r;
#pragma unroll
    for (int c = 0; c < C; c++) {
        int col = c * 4 * SUM_THREADS + 4 * t;
        if (col >= n) continue;
        __nv_bfloat162 o0 = __floats2bfloat162_rn(v[c][0] * r * w[c][0], v[c][1] * r * w[c][1]);
        __nv_bfloat162 o1 = __floats2bfloat162_rn(v[c][2] * r * w[c][2], v[c][3] * r * w[c][3]);
        uint2 ou;
        ou.x = *(const uint32_t *)&o0, ou.y = *(const uint32_t *)&o1;
        *(uint2 *)(xn + (size_t)row * n + col) = ou;
    }
}

int rl_cuda_rmsnorm_sum_takes(int n) { return n % 4 == 0 && n <= 4 * SUM_THREADS * SUM_MAX_PASSES; }

int rl_cuda_rmsnorm_sum_fwd(rl_ctx *ctx, void *out, void *xn, float *rstd, const void *residual, const float *part,
                            int splits, const void *norm_weight, int m, int n, float eps)
{
    ARG_CHECK(rl_cuda_rmsnorm_sum_takes(n) && splits >= 1 && splits <= RL_CUDA_SUM_MAX_SPLITS,
              "n %d or splits %d is outside the summing RMSNorm's range", n, splits);
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    int passes = (n + 4 * SUM_THREADS - 1) / (4 * SUM_THREADS);
    bf16 *o = (bf16 *)out, *x = (bf16 *)xn;
    const bf16 *res = (const bf16 *)residual, *w = (const bf16 *)norm_weight;
    cudaError_t e;
    switch (passes) {
    case 1: e = rl_launch_pdl(rmsnorm_sum_kernel<1>, dim3(m), dim3(SUM_THREADS), 0, st, o, x, rstd, res, part, splits, w, m, n, eps); break;
    case 2: e = rl_launch_pdl(rmsnorm_sum_kernel<2>, dim3(m), dim3(SUM_THREADS), 0, st, o, x, rstd, res, part, splits, w, m, n, eps); break;
    default: e = rl_launch_pdl(rmsnorm_sum_kernel<4>, dim3(m), dim3(SUM_THREADS), 0, st, o, x, rstd, res, part, splits, w, m, n, eps);
    }
    CUDA_CHECK(e);
    LAUNCH_CHECK();
    return 0;
}

extern "C" int rl_cuda_rmsnorm_fwd(rl_ctx *ctx, void *out, float *rstd, const void *x, const void *weight,
                                   int n_rows, int dim, float eps)
{
    if (n_rows == 0) return 0;
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    if (rl_cuda_f32(ctx)) {
        rmsnorm_fwd_kernel<float><<<n_rows, THREADS, 0, st>>>((float *)out, rstd, (const float *)x,
                                                              (const float *)weight, dim, eps);
        LAUNCH_CHECK();
        return 0;
    }
    int chunks = vec_chunks(dim, out, x, weight, x);
    /* few rows (a decode step's hidden norms: 64 rows made 8 blocks): small blocks, so the rows
     * spread over as many multiprocessors as there are rows */
    int warps = n_rows >= VEC_WARPS * rl_cuda_st(ctx)->n_sms ? VEC_WARPS : VEC_FEW_WARPS;
    unsigned blocks = (unsigned)((n_rows + warps - 1) / warps);
    dim3 tpb(32 * warps);
    bf16 *o = (bf16 *)out;
    const bf16 *xi = (const bf16 *)x, *w = (const bf16 *)weight;
    cudaError_t e = cudaSuccess;
    switch (chunks) {
    case 1: e = rl_launch_pdl(rmsnorm_fwd_vec_kernel<1>, dim3(blocks), tpb, 0, st, o, rstd, xi, w, n_rows, dim, eps); break;
    case 2: e = rl_launch_pdl(rmsnorm_fwd_vec_kernel<2>, dim3(blocks), tpb, 0, st, o, rstd, xi, w, n_rows, dim, eps); break;
    case 4: e = rl_launch_pdl(rmsnorm_fwd_vec_kernel<4>, dim3(blocks), tpb, 0, st, o, rstd, xi, w, n_rows, dim, eps); break;
    case 8: e = rl_launch_pdl(rmsnorm_fwd_vec_kernel<8>, dim3(blocks), tpb, 0, st, o, rstd, xi, w, n_rows, dim, eps); break;
    default: rmsnorm_fwd_kernel<bf16><<<n_rows, THREADS, 0, st>>>(o, rstd, xi, w, dim, eps);
    }
    CUDA_CHECK(e);
    LAUNCH_CHECK();
    return 0;
}

template <int C>
static cudaError_t bwd_vec(unsigned blocks, size_t smem, cudaStream_t st, void *dx, float *partial, const void *dout,
                           const void *x, const void *weight, const float *rstd, int n_rows, int dim, int accumulate_dx)
{
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(rmsnorm_bwd_vec_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)smem);
        if (e != cudaSuccess) return e;
    }
    rmsnorm_bwd_vec_kernel<C><<<blocks, 32 * VEC_WARPS, smem, st>>>((bf16 *)dx, partial, (const bf16 *)dout,
                                                                   (const bf16 *)x, (const bf16 *)weight, rstd, n_rows,
                                                                   dim, accumulate_dx);
    return cudaGetLastError();
}

extern "C" int rl_cuda_rmsnorm_bwd(rl_ctx *ctx, void *dx, float *dweight, const void *dout, const void *x,
                                   const void *weight, const float *rstd, int n_rows, int dim,
                                   int accumulate_dx)
{
    /* This kernel's own limit: dweight's partial sums of a row stay in shared memory. */
    size_t smem = (size_t)dim * sizeof(float);
    ARG_CHECK(smem <= RMSNORM_BWD_MAX_SMEM, "dim %d is more than %d, the most the CUDA RMSNorm backward takes", dim,
              (int)(RMSNORM_BWD_MAX_SMEM / sizeof(float)));
    if (n_rows == 0) return 0;
    cudaStream_t st = rl_cuda_st(ctx)->stream;
    int chunks = rl_cuda_f32(ctx) ? 0 : vec_chunks(dim, dx, dout, x, weight);
    if (chunks) {
        int dev = 0, n_sm = 0;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev));
        unsigned blocks = rl_cuda_blocks((size_t)n_rows, VEC_WARPS, (unsigned)(n_sm * VEC_BLOCKS_PER_SM));
        float *partial = (float *)rl_cuda_scratch(ctx, (size_t)blocks * dim * sizeof(float));
        if (!partial) return -1;
        size_t warp_smem = (size_t)VEC_WARPS * dim * sizeof(float);
        cudaError_t e;
        switch (chunks) {
        case 1: e = bwd_vec<1>(blocks, warp_smem, st, dx, partial, dout, x, weight, rstd, n_rows, dim, accumulate_dx); break;
        case 2: e = bwd_vec<2>(blocks, warp_smem, st, dx, partial, dout, x, weight, rstd, n_rows, dim, accumulate_dx); break;
        case 4: e = bwd_vec<4>(blocks, warp_smem, st, dx, partial, dout, x, weight, rstd, n_rows, dim, accumulate_dx); break;
        default: e = bwd_vec<8>(blocks, warp_smem, st, dx, partial, dout, x, weight, rstd, n_rows, dim, accumulate_dx);
        }
        CUDA_CHECK(e);
        LAUNCH_CHECK();
        return rl_cuda_add_partials(ctx, dweight, partial, (int)blocks, dim);
    }
    return RL_ACT_CALL(ctx, rmsnorm_bwd_general, (ctx, dx, dweight, dout, x, weight, rstd, n_rows, dim, accumulate_dx));
}
