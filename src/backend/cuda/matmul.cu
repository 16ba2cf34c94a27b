/* matmul.cu — linear layers through cuBLASLt: operands in the act dtype (bf16, or fp32 in the
 * fp32 mode of small models), fp32 accumulation (CUBLAS_COMPUTE_32F: no TF32 in the fp32 mode,
 * so it matches the CPU reference to fp32 rounding); act-dtype outputs for activations, fp32
 * outputs accumulated with beta = 1 for weight gradients.
 *
 * Row-major tensors are column-major transposes, so out[m,n] = in[m,k] @ W[n,k]^T is the
 * column-major D[n x m] = W^T-view(op T) * in-view(op N). rl_cuda_gemm builds the matmul
 * descriptor, the three layouts and the heuristic's first algorithm once per shape and keeps
 * them (a small linear cache: a model has a handful of distinct shapes). The bias epilogue
 * adds the bias in the forward product's own pass; the residual form reads the residual
 * stream as cuBLASLt's C (D = A B + C), so the stream is never copied first. In place
 * (out = residual) cuBLASLt can round twice (Qwen3-0.6B's o and down products at 65-256 rows,
 * and o at 17-64: 1 bf16 ulp off the product apart in ~30% of the outputs), so an in-place call
 * gives cuBLASLt a copy of the residual as C (the model's inference stream keeps the two apart
 * anyway: model/activations.c). dbias is a column-sum kernel.
 *
 * Forward products of at most 8 rows (a decode step of a few sequences) are matrix-vector
 * products bound by reading the weight: they run our own kernel (gemv.cu: the whole weight in
 * flight at once, bias and residual added in the same pass); cuBLASLt's kernels for such shapes
 * reach about half the bandwidth. 9..16 rows run gemm_rows.cu's tensor-core kernel (the weight
 * slices copied before the programmatic-launch wait); more rows, cuBLASLt. A product followed by
 * an RMSNorm (rl_matmul_residual_rmsnorm_fwd) at 17..64 rows leaves its split-k partials in fp32
 * for rmsnorm.cu's kernel, which sums them and normalises in one pass.
 * That kernel is bf16's; the fp32 mode (tiny models, where the weight read costs nothing) takes
 * cuBLASLt at every m. Deterministic mode (ctx->deterministic) runs every forward product through
 * matmul_det.cu's batch-invariant kernel instead (the backward keeps cuBLASLt). */
#include "backend/cuda/common.cuh"

#include <stdlib.h>
#include <string.h>

#define MAX_PLANS 128

struct rl_cuda_matmul_plan {
    int trans_a, trans_b, rows, cols, inner, lda, ldb, ldd, has_bias, beta_zero;
    int batch; /* > 1: gemm_ksplit's strided batch over slices of the inner dimension */
    uint32_t align_a, align_b, align_d, align_bias; /* byte alignment the algorithm may assume */
    cudaDataType_t d_type, ab_type;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
};

static void plan_destroy(rl_cuda_matmul_plan *p)
{
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    if (p->la) cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb) cublasLtMatrixLayoutDestroy(p->lb);
    if (p->ld) cublasLtMatrixLayoutDestroy(p->ld);
}

void rl_cuda_gemm_plans_free(rl_cuda_state *st)
{
    for (int i = 0; i < st->n_plans; i++) plan_destroy(&st->plans[i]);
    free(st->plans);
    st->plans = NULL;
    st->n_plans = 0;
}

static int plan_build(rl_ctx *ctx, rl_cuda_matmul_plan *p)
{
    rl_cuda_state *st = rl_cuda_st(ctx);
    cublasOperation_t ta = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (p->has_bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bias_type = p->ab_type;
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                    sizeof bias_type));
    }
    /* Stored shapes: A is (rows x inner) after op, so stored inner x rows when transposed. */
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->la, p->ab_type, p->trans_a ? p->inner : p->rows,
                                            p->trans_a ? p->rows : p->inner, p->lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lb, p->ab_type, p->trans_b ? p->cols : p->inner,
                                            p->trans_b ? p->inner : p->cols, p->ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->ld, p->d_type, p->rows, p->cols, p->ldd));
    if (p->batch > 1) { /* slice s of A and B starts s * inner elements on; D s is the s-th rows x cols */
        int32_t count = p->batch;
        int64_t step_ab = p->inner, step_d = (int64_t)p->ldd * p->cols;
        cublasLtMatrixLayout_t abd[3] = {p->la, p->lb, p->ld};
        for (int i = 0; i < 3; i++) {
            int64_t step = i < 2 ? step_ab : step_d;
            CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(abd[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
            CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(abd[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &step,
                                                          sizeof step));
        }
    }
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                            &st->workspace_bytes, sizeof st->workspace_bytes);
    /* Activation products (bf16 out): split-K only with fp32 partials. The in-place and
     * output-type schemes sum the partial products in bf16 (one rounding per split: 3x the error
     * of one fp32 sum, seen in test_matmul's odd_accumulate); the compute-type scheme keeps them
     * in the fp32 workspace and rounds once, in its reduction kernel. Split-K itself cannot go:
     * a decode step's 64-row products have a handful of output tiles, and without splits they
     * fill a few of the 132 SMs (the GRPO step went from 0.97 s to 1.73 s). */
    uint32_t fp32_partials = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    uint32_t reduction = p->d_type == CUDA_R_16BF ? fp32_partials
                         : p->batch > 1           ? (uint32_t)CUBLASLT_REDUCTION_SCHEME_NONE /* measured so */
                                                  : (uint32_t)CUBLASLT_REDUCTION_SCHEME_MASK;
    const struct { cublasLtMatmulPreferenceAttributes_t attr; uint32_t value; } aligns[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p->align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p->align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p->align_d},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p->align_d},
        {CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reduction},
    };
    for (int i = 0; i < 5 && s == CUBLAS_STATUS_SUCCESS; i++)
        s = cublasLtMatmulPreferenceSetAttribute(pref, aligns[i].attr, &aligns[i].value, sizeof aligns[i].value);
    cublasLtMatmulHeuristicResult_t result;
    int n_results = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(st->lt, p->desc, p->la, p->lb, p->ld, p->ld, pref, 1, &result,
                                           &n_results);
    cublasLtMatmulPreferenceDestroy(pref);
    CUBLAS_CHECK(s);
    if (n_results == 0)
        return rl_err_set(&ctx->err, "cuBLASLt: no algorithm for %dx%dx%d (transa %d transb %d)", p->rows,
                          p->cols, p->inner, p->trans_a, p->trans_b);
    p->algo = result.algo;
    return 0;
}

static rl_cuda_matmul_plan *plan_get(rl_ctx *ctx, const rl_cuda_matmul_plan *key)
{
    rl_cuda_state *st = rl_cuda_st(ctx);
    for (int i = 0; i < st->n_plans; i++) {
        rl_cuda_matmul_plan *p = &st->plans[i];
        if (p->trans_a == key->trans_a && p->trans_b == key->trans_b && p->rows == key->rows &&
            p->cols == key->cols && p->inner == key->inner && p->lda == key->lda && p->ldb == key->ldb &&
            p->ldd == key->ldd && p->has_bias == key->has_bias && p->batch == key->batch && p->d_type == key->d_type &&
            p->ab_type == key->ab_type &&
            p->beta_zero == key->beta_zero && p->align_a == key->align_a && p->align_b == key->align_b &&
            p->align_d == key->align_d && p->align_bias == key->align_bias)
            return p;
    }
    if (!st->plans) {
        st->plans = (rl_cuda_matmul_plan *)calloc(MAX_PLANS, sizeof *st->plans);
        if (!st->plans) {
            rl_err_oom(&ctx->err, "cuBLASLt plan cache", MAX_PLANS * sizeof *st->plans);
            return NULL;
        }
    }
    if (st->n_plans == MAX_PLANS) { /* full: start over (shapes of a new model or batch size) */
        for (int i = 0; i < st->n_plans; i++) plan_destroy(&st->plans[i]);
        memset(st->plans, 0, MAX_PLANS * sizeof *st->plans);
        st->n_plans = 0;
    }
    rl_cuda_matmul_plan *p = &st->plans[st->n_plans];
    *p = *key;
    p->desc = NULL;
    p->la = p->lb = p->ld = NULL;
    if (plan_build(ctx, p) != 0) {
        plan_destroy(p);
        memset(p, 0, sizeof *p);
        return NULL;
    }
    st->n_plans++;
    return p;
}

/* Largest power of two (at most 256) that divides the address: plans are keyed on it, since an
 * algorithm chosen for 256-byte aligned operands may refuse offset pointers. */
static uint32_t ptr_align(const void *p)
{
    uintptr_t a = (uintptr_t)p | 256;
    return (uint32_t)(a & (~a + 1));
}

static int gemm_run(rl_ctx *ctx, int trans_a, int trans_b, int rows, int cols, int inner, int batch, float alpha,
                    const void *a, int lda, const void *b, int ldb, float beta, const void *c, void *d, int ldd,
                    cudaDataType_t d_type, const void *bias)
{
    if (rows == 0 || cols == 0) return 0;
    rl_cuda_state *st = rl_cuda_st(ctx);
    rl_cuda_matmul_plan key;
    memset(&key, 0, sizeof key);
    key.trans_a = trans_a;
    key.trans_b = trans_b;
    key.rows = rows;
    key.cols = cols;
    key.inner = inner;
    key.lda = lda;
    key.ldb = ldb;
    key.ldd = ldd;
    key.has_bias = bias != NULL;
    key.beta_zero = beta == 0.0f;
    key.batch = batch;
    key.d_type = d_type;
    key.ab_type = rl_cuda_act_type(ctx);
    key.align_a = ptr_align(a);
    key.align_b = ptr_align(b);
    if (!c) c = d;
    key.align_d = ptr_align(d) < ptr_align(c) ? ptr_align(d) : ptr_align(c);
    key.align_bias = bias ? ptr_align(bias) : 0;
    if (batch > 1) { /* every slice's operands: no more aligned than the steps between them */
        uint32_t step_ab = ptr_align((const void *)(uintptr_t)((size_t)inner * rl_dtype_size(ctx->act_dtype)));
        uint32_t step_d = ptr_align((const void *)(uintptr_t)((size_t)ldd * cols * (d_type == CUDA_R_32F ? 4 : 2)));
        key.align_a = key.align_a < step_ab ? key.align_a : step_ab;
        key.align_b = key.align_b < step_ab ? key.align_b : step_ab;
        key.align_d = key.align_d < step_d ? key.align_d : step_d;
    }
    rl_cuda_matmul_plan *p = plan_get(ctx, &key);
    if (!p) return -1;
    if (bias)
        CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    CUBLAS_CHECK(cublasLtMatmul(st->lt, p->desc, &alpha, a, p->la, b, p->lb, &beta, c, p->ld, d, p->ld, &p->algo,
                                st->workspace, st->workspace_bytes, st->stream));
    return 0;
}

int rl_cuda_gemm(rl_ctx *ctx, int trans_a, int trans_b, int rows, int cols, int inner, float alpha,
                 const void *a, int lda, const void *b, int ldb, float beta, const void *c, void *d, int ldd,
                 cudaDataType_t d_type, const void *bias)
{
    return gemm_run(ctx, trans_a, trans_b, rows, cols, inner, 1, alpha, a, lda, b, ldb, beta, c, d, ldd, d_type, bias);
}

/* part[s][m, n] = in[m, s kc .. (s + 1) kc) @ weight[n, s kc ..]^T in fp32, kc = k / splits: a
 * few-row product's split-k partials left for the kernel after it to sum (one strided-batched
 * cuBLASLt call; at 64 rows faster than cuBLASLt's own split-k, whose sum is a kernel of its
 * own: docs/benchmarks.md, "The RMSNorm in the product's split-k sum"). */
static int gemm_ksplit(rl_ctx *ctx, float *part, const void *in, const void *weight, int m, int n, int k, int splits)
{
    return gemm_run(ctx, 1, 0, n, m, k / splits, splits, 1.0f, weight, k, in, k, 0.0f, NULL, part, n, CUDA_R_32F,
                    NULL);
}

/* The sum over rows of dout[row, col] per slice of rows (blockIdx.y), one thread per column; the
 * slices' partials are added to dbias in slice order (rl_cuda_add_partials: the same bits every
 * run, which float atomics would not give). */
template <typename T>
__global__ void bias_grad_kernel(float *partial, const T *dout, int m, int n, int rows_per_slice)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= n) return;
    int r0 = blockIdx.y * rows_per_slice, r1 = min(r0 + rows_per_slice, m);
    float acc = 0.0f;
    for (int r = r0; r < r1; r++) acc += rl_tof(dout[(size_t)r * n + col]);
    partial[(size_t)blockIdx.y * n + col] = acc;
}

extern "C" int rl_cuda_matmul_fwd(rl_ctx *ctx, void *out, const void *in, const void *weight, const void *bias,
                                  int m, int n, int k, int accumulate)
{
    if (m == 0) return 0;
    if (ctx->deterministic)
        return rl_cuda_gemm_det(ctx, out, 0, accumulate ? out : NULL, in, weight, bias, m, n, k, 1.0f);
    int ran;
    if (rl_cuda_gemv(ctx, out, accumulate ? out : NULL, in, weight, bias, m, n, k, &ran)) return -1;
    if (ran) return 0;
    return rl_cuda_gemm(ctx, 1, 0, n, m, k, 1.0f, weight, k, in, k, accumulate ? 1.0f : 0.0f, NULL, out, n,
                        rl_cuda_act_type(ctx), bias);
}

extern "C" int rl_cuda_matmul_residual_fwd(rl_ctx *ctx, void *out, const void *residual, const void *in,
                                           const void *weight, int m, int n, int k)
{
    if (m == 0) return 0;
    if (ctx->deterministic) return rl_cuda_gemm_det(ctx, out, 0, residual, in, weight, NULL, m, n, k, 1.0f);
    int ran;
    if (rl_cuda_gemv(ctx, out, residual, in, weight, NULL, m, n, k, &ran)) return -1;
    if (ran) return 0;
    if (out == residual) { /* cuBLASLt in place can round twice: C from a copy */
        size_t bytes = (size_t)m * n * (rl_cuda_f32(ctx) ? sizeof(float) : sizeof(bf16));
        void *copy = rl_cuda_scratch(ctx, bytes);
        if (!copy) return -1;
        CUDA_CHECK(cudaMemcpyAsync(copy, residual, bytes, cudaMemcpyDeviceToDevice, rl_cuda_st(ctx)->stream));
        residual = copy;
    }
    return rl_cuda_gemm(ctx, 1, 0, n, m, k, 1.0f, weight, k, in, k, 1.0f, residual, out, n, rl_cuda_act_type(ctx),
                        NULL);
}

extern "C" int rl_cuda_matmul_bwd(rl_ctx *ctx, void *din, float *dweight, float *dbias, const void *dout,
                                  const void *in, const void *weight, int m, int n, int k, int accumulate_din)
{
    if (m == 0) return 0;
    /* din^T[k x m] = W-view[k x n] * dout-view[n x m] */
    if (din && rl_cuda_gemm(ctx, 0, 0, k, m, n, 1.0f, weight, k, dout, n, accumulate_din ? 1.0f : 0.0f, NULL, din, k,
                           rl_cuda_act_type(ctx), NULL))
        return -1;
    /* dW^T[k x n] += in-view[k x m] * (dout-view[n x m])^T */
    if (dweight && rl_cuda_gemm(ctx, 0, 1, k, n, m, 1.0f, in, k, dout, n, 1.0f, NULL, dweight, k, CUDA_R_32F, NULL))
        return -1;
    if (dbias) {
        int slices = (m + 255) / 256;
        dim3 grid((n + 255) / 256, slices);
        cudaStream_t st = rl_cuda_st(ctx)->stream;
        float *partial = (float *)rl_cuda_scratch(ctx, (size_t)slices * n * sizeof(float));
        if (!partial) return -1;
        if (rl_cuda_f32(ctx))
            bias_grad_kernel<float><<<grid, 256, 0, st>>>(partial, (const float *)dout, m, n, 256);
        else
            bias_grad_kernel<bf16><<<grid, 256, 0, st>>>(partial, (const bf16 *)dout, m, n, 256);
        LAUNCH_CHECK();
        if (rl_cuda_add_partials(ctx, dbias, partial, slices, n)) return -1;
    }
    return 0;
}

/* Past the few-row folds (rl_fold_rows) and up to 64 rows, in bf16's fast mode: the product's
 * split-k partials (gemm_ksplit, slices of about 512) and one kernel that sums them with the
 * residual, rounds out once and normalises it (rmsnorm.cu). Elsewhere the two ops. */
#define KSPLIT_MAX_M 64 /* measured there (a decode step of the GRPO step); more rows, the two ops */

extern "C" int rl_cuda_matmul_residual_rmsnorm_fwd(rl_ctx *ctx, void *out, void *xn, float *rstd, const void *residual,
                                                   const void *in, const void *weight, const void *norm_weight,
                                                   float eps, int m, int n, int k)
{
    if (m == 0) return 0;
    int splits = k / 512 < 2 ? 2 : k / 512 > RL_CUDA_SUM_MAX_SPLITS ? RL_CUDA_SUM_MAX_SPLITS : k / 512;
    if (m > rl_cuda_fold_rows(ctx) && m <= KSPLIT_MAX_M && !rl_cuda_f32(ctx) && !ctx->deterministic &&
        k % (8 * splits) == 0 && rl_cuda_rmsnorm_sum_takes(n)) {
        float *part = (float *)rl_cuda_scratch(ctx, (size_t)splits * m * n * sizeof(float));
        if (!part) return -1;
        if (gemm_ksplit(ctx, part, in, weight, m, n, k, splits)) return -1;
        return rl_cuda_rmsnorm_sum_fwd(ctx, out, xn, rstd, residual, part, splits, norm_weight, m, n, eps);
    }
    if (rl_cuda_matmul_residual_fwd(ctx, out, residual, in, weight, m, n, k)) return -1;
    return rl_cuda_rmsnorm_fwd(ctx, xn, rstd, out, norm_weight, m, n, eps);
}
