/* mma.cuh — building blocks of the tensor-core kernels (attention_mma*.cu): mma.sync
 * m16n8k16 bf16 with fp32 accumulation, ldmatrix (plain and transposed), cp.async 16-byte
 * copies, and the XOR swizzle of [rows x D] bf16 tiles in shared memory.
 *
 * Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16"): with g = lane / 4 and
 * t = lane % 4, the accumulator holds (row g, cols 2t, 2t+1) and (row g+8, same cols); the A
 * fragment of a 16x16 tile is (g, 2t..) (g+8, 2t..) (g, 2t+8..) (g+8, 2t+8..), so two adjacent
 * accumulator tiles re-pack into one A fragment without moving data between lanes. */
#ifndef RL_BACKEND_CUDA_MMA_CUH
#define RL_BACKEND_CUDA_MMA_CUH

#include "backend/cuda/common.cuh"

#define MMA_THREADS 128 /* 4 warps per block in every attention_mma kernel */

/* Element (r, c) of a [rows x D] bf16 tile, 16-byte chunks XOR-swizzled by row so ldmatrix's
 * eight row addresses hit distinct banks. */
template <int D>
__device__ __forceinline__ int swz(int r, int c)
{
    return r * D + ((((c >> 3) ^ (r & 7))) << 3) + (c & 7);
}

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
                 "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *(uint32_t *)&v;
}

/* Copies rows [r0, r0 + ROWS) of a token-major tensor (row stride `stride` elements) into a
 * swizzled tile; rows at or past n_valid are zero-filled. */
template <int D, int ROWS_, int NTHREADS = MMA_THREADS>
__device__ __forceinline__ void load_tile_async(bf16 *tile, const bf16 *src, int r0, int n_valid, size_t stride)
{
    constexpr int CHUNKS = D / 8;
    for (int idx = threadIdx.x; idx < ROWS_ * CHUNKS; idx += NTHREADS) {
        int r = idx / CHUNKS, ch = idx % CHUNKS;
        bool valid = r0 + r < n_valid;
        const bf16 *g = src + (size_t)(valid ? r0 + r : 0) * stride + ch * 8;
        cp_async16(tile + swz<D>(r, ch * 8), g, valid);
    }
}

/* c[16 x 8*NT] += A[16 x D] * T^T for a swizzled tile T [8*NT rows x D] (B not transposed:
 * T's rows are the output columns). A comes from registers af[D/16][4]. */
template <int D, int NT>
__device__ __forceinline__ void mma_a_regs_tile_t(float c[NT][4], const uint32_t (*af)[4], const bf16 *tile)
{
    int lane = threadIdx.x & 31;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
        for (int np = 0; np < NT / 2; np++) {
            uint32_t b[4];
            ldmatrix_x4(b, tile + swz<D>(np * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 16 + ((lane >> 3) & 1) * 8));
            mma16816(c[2 * np], af[kk], b[0], b[1]);
            mma16816(c[2 * np + 1], af[kk], b[2], b[3]);
        }
}

/* The same with A read from rows [a_row0, a_row0 + 16) of a swizzled tile. */
template <int D, int NT>
__device__ __forceinline__ void mma_a_smem_tile_t(float c[NT][4], const bf16 *a_tile, int a_row0, const bf16 *tile)
{
    int lane = threadIdx.x & 31;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        uint32_t a[4];
        ldmatrix_x4(a, a_tile + swz<D>(a_row0 + (lane & 7) + ((lane >> 3) & 1) * 8, kk * 16 + (lane >> 4) * 8));
#pragma unroll
        for (int np = 0; np < NT / 2; np++) {
            uint32_t b[4];
            ldmatrix_x4(b, tile + swz<D>(np * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 16 + ((lane >> 3) & 1) * 8));
            mma16816(c[2 * np], a, b[0], b[1]);
            mma16816(c[2 * np + 1], a, b[2], b[3]);
        }
    }
}

/* c[16 x D] += P[16 x 8*NT] * T where P is an accumulator array (rounded to bf16 here) and T a
 * swizzled tile [8*NT rows x D] (B transposed through ldmatrix.trans). */
template <int D, int NT>
__device__ __forceinline__ void mma_p_tile(float c[D / 8][4], const float p[NT][4], const bf16 *tile)
{
    int lane = threadIdx.x & 31;
#pragma unroll
    for (int kp = 0; kp < NT / 2; kp++) {
        uint32_t a[4] = {pack_bf16(p[2 * kp][0], p[2 * kp][1]), pack_bf16(p[2 * kp][2], p[2 * kp][3]),
                         pack_bf16(p[2 * kp + 1][0], p[2 * kp + 1][1]), pack_bf16(p[2 * kp + 1][2], p[2 * kp + 1][3])};
#pragma unroll
        for (int dp = 0; dp < D / 16; dp++) {
            uint32_t b[4];
            ldmatrix_x4_trans(b, tile + swz<D>(kp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, dp * 16 + (lane >> 4) * 8));
            mma16816(c[2 * dp], a, b[0], b[1]);
            mma16816(c[2 * dp + 1], a, b[2], b[3]);
        }
    }
}

#endif
