"""t_matmul.py — task tables: matmul variants: cuBLAS (pedantic fp32) baselines, diag and triangular."""
from common import HEAD, LAUNCH_OK, CUBLAS, WORKSPACE

BLAS_HEAD = HEAD.replace('#include <cuda_runtime.h>\n', '#include <cublas_v2.h>\n#include <cuda_runtime.h>\n')
NORMAL = dict(kind="normal", mean=0.0, std=1.0)
GEMM_TOL = dict(atol=1e-4, rtol=1e-5)

def gemm_cu(name, doc, setup, call):
    return f'''/* reference.cu — {name}: {doc}
 *
 * Baseline: cuBLAS, fp32 in pedantic math mode (no TF32). cuBLAS is column-major: a row-major
 * [r, c] matrix is its column-major transpose, so row-major C = A B is computed as the
 * column-major C^T = B^T A^T, swapping the operands. */
{BLAS_HEAD}{CUBLAS}
extern "C" int rl_kernel(const rl_kernel_args *args)
{{
{setup}
    const float one = 1.0f, zero = 0.0f;
    cublasHandle_t h = blas();
    if (!h) return -1;
    return {call} == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}}
'''

def mm(name, desc, math, kb, dims, trials, ins, outs, setup, call, doc, tol=GEMM_TOL):
    return dict(name=name, category="matmul", description=desc, math=math, kernelbench=kb,
                dims=dims, trial_dims=trials, inputs=ins, outputs=outs, tolerance=tol,
                forbid=["streams", "graphs", "library", "threads"], library=["cublas"],
                cu=gemm_cu(name, doc, setup, call), baseline="cuBLAS fp32 (pedantic math, no TF32)")

def f32(name, shape, dist=NORMAL):
    return dict(name=name, dtype="f32", shape=shape, dist=dist, adversarial=[])

def out(name, shape):
    return dict(name=name, dtype="f32", shape=shape)

MNK = '''    int m = (int)args->dims[0], n = (int)args->dims[1], k = (int)args->dims[2];
    const float *a = (const float *)args->inputs[0], *b = (const float *)args->inputs[1];
    float *c = (float *)args->outputs[0];'''

DIAG = f'''/* reference.cu — diag_matmul: C = diag(a) B, i.e. row i of B scaled by a[i], float32.
 *
 * Baseline: what the operation is (a row scaling; nobody forms the diagonal matrix): one block
 * row per matrix row chunk, float4 loads and stores when the row length allows, coalesced. */
{HEAD}{LAUNCH_OK}
__global__ void scale_rows_vec4_kernel(const float *__restrict__ a, const float4 *__restrict__ b, float4 *__restrict__ c, int64_t cols4)
{{
    int64_t row = blockIdx.y;
    float s = a[row];
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < cols4; j += (int64_t)gridDim.x * blockDim.x) {{
        float4 v = b[row * cols4 + j];
        v.x *= s;
        v.y *= s;
        v.z *= s;
        v.w *= s;
        c[row * cols4 + j] = v;
    }}
}}

__global__ void scale_rows_kernel(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c, int64_t cols)
{{
    int64_t row = blockIdx.y;
    float s = a[row];
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < cols; j += (int64_t)gridDim.x * blockDim.x)
        c[row * cols + j] = s * b[row * cols + j];
}}

extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    int64_t n = args->dims[0], m = args->dims[1];
    const float *a = (const float *)args->inputs[0], *b = (const float *)args->inputs[1];
    float *c = (float *)args->outputs[0];
    if (n > 65535) return -1;
    if (n == 0 || m == 0) return 0;
    const int threads = 256;
    int vec = m % 4 == 0 && (((uintptr_t)b | (uintptr_t)c) & 15) == 0;
    int64_t per_row = vec ? m / 4 : m, bx = (per_row + threads - 1) / threads;
    dim3 grid((unsigned)(bx < 64 ? bx : 64), (unsigned)n);
    if (vec)
        scale_rows_vec4_kernel<<<grid, threads>>>(a, (const float4 *)b, (float4 *)c, m / 4);
    else
        scale_rows_kernel<<<grid, threads>>>(a, b, c, m);
    return launch_status();
}}
'''

TRIU = f'''/* reference.cu — triangular_matmul: C = triu(A) triu(B) for float32 [n, n] matrices; only the
 * upper triangles (diagonal included) of A and B are read, the entries below the diagonal hold
 * garbage and must be ignored. The product of upper-triangular matrices is upper triangular.
 *
 * Baseline: copy triu(B) into scratch with zeros below (one coalesced kernel), then cuBLAS
 * STRMM, fp32 pedantic (no TF32), which reads only A's triangle and does half a GEMM's work.
 * Row-major triu(A) is column-major lower-triangular A^T, so C^T = triu(B)^T A^T is a
 * right-side lower-triangular multiply. */
{BLAS_HEAD}{LAUNCH_OK}{CUBLAS}{WORKSPACE}
__global__ void copy_upper_kernel(const float *__restrict__ b, float *__restrict__ t, int64_t n)
{{
    int64_t row = blockIdx.y;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += (int64_t)gridDim.x * blockDim.x)
        t[row * n + j] = j >= row ? b[row * n + j] : 0.0f;
}}

extern "C" int rl_kernel(const rl_kernel_args *args)
{{
    int64_t n = args->dims[0];
    const float *a = (const float *)args->inputs[0], *b = (const float *)args->inputs[1];
    float *c = (float *)args->outputs[0];
    if (n > 65535) return -1;
    if (n == 0) return 0;
    float *t = workspace((size_t)(n * n));
    cublasHandle_t h = blas();
    if (!t || !h) return -1;
    int64_t bx = (n + 255) / 256;
    copy_upper_kernel<<<dim3((unsigned)(bx < 64 ? bx : 64), (unsigned)n), 256>>>(b, t, n);
    if (launch_status()) return -1;
    const float one = 1.0f;
    return cublasStrmm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, (int)n,
                       (int)n, &one, a, (int)n, t, (int)n, c, (int)n) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}}
'''

def tasks():
    t = []
    t.append(mm("matmul_square", "Square float32 matrix product C = A B.", "C[i, j] = sum_k A[i, k] B[k, j]",
                "level1/1_Square_matrix_multiplication_.py", [("n", 4096)], [[1], [7], [33], [129], [1000]],
                [f32("A", ["n", "n"]), f32("B", ["n", "n"])], [out("C", ["n", "n"])],
                '''    int n = (int)args->dims[0];
    const float *a = (const float *)args->inputs[0], *b = (const float *)args->inputs[1];
    float *c = (float *)args->outputs[0];''',
                "cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n)",
                "C = A B for square float32 [n, n] matrices."))
    t.append(mm("matmul_tall_skinny", "Float32 product of a tall-skinny [m, k] and a wide [k, n] matrix, k small (an outer-product-like GEMM, bound by writing C).",
                "C[i, j] = sum_k A[i, k] B[k, j]", "level1/9_Tall_skinny_matrix_multiplication_.py",
                [("m", 8192), ("n", 4096), ("k", 32)], [[1, 1, 1], [7, 5, 3], [1000, 33, 17], [129, 1025, 31]],
                [f32("A", ["m", "k"]), f32("B", ["k", "n"])], [out("C", ["m", "n"])], MNK,
                "cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n)",
                "C = A B, A [m, k] tall and skinny, B [k, n], k small.", tol=dict(atol=1e-5, rtol=1e-5)))
    t.append(mm("matmul_transposed_a", "Float32 matrix product with the first operand stored transposed: C = A^T B, A stored [k, m].",
                "C[i, j] = sum_k A[k, i] B[k, j]", "level1/16_Matmul_with_transposed_A.py",
                [("m", 2048), ("n", 2048), ("k", 4096)], [[1, 1, 1], [7, 5, 3], [33, 65, 129], [100, 1, 1000]],
                [f32("A", ["k", "m"]), f32("B", ["k", "n"])], [out("C", ["m", "n"])], MNK,
                "cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, n, m, k, &one, b, n, a, m, &zero, c, n)",
                "C = A^T B with A stored [k, m], B [k, n]."))
    t.append(mm("matmul_transposed_b", "Float32 matrix product with the second operand stored transposed: C = A B^T, B stored [n, k] (as a linear layer's weight).",
                "C[i, j] = sum_k A[i, k] B[j, k]", "level1/17_Matmul_with_transposed_B.py",
                [("m", 2048), ("n", 2048), ("k", 4096)], [[1, 1, 1], [7, 5, 3], [33, 65, 129], [100, 1, 1000]],
                [f32("A", ["m", "k"]), f32("B", ["n", "k"])], [out("C", ["m", "n"])], MNK,
                "cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, b, k, a, k, &zero, c, n)",
                "C = A B^T with A [m, k], B stored [n, k]."))
    t.append(mm("matmul_batched", "Batched float32 matrix product C[b] = A[b] B[b].",
                "C[b, i, j] = sum_k A[b, i, k] B[b, k, j]", "level1/3_Batched_matrix_multiplication.py",
                [("batch", 32), ("m", 512), ("n", 1024), ("k", 1024)], [[1, 1, 1, 1], [3, 7, 5, 3], [2, 33, 65, 129], [5, 100, 17, 1000]],
                [f32("A", ["batch", "m", "k"]), f32("B", ["batch", "k", "n"])], [out("C", ["batch", "m", "n"])],
                '''    int batch = (int)args->dims[0], m = (int)args->dims[1], n = (int)args->dims[2], k = (int)args->dims[3];
    const float *a = (const float *)args->inputs[0], *b = (const float *)args->inputs[1];
    float *c = (float *)args->outputs[0];''',
                "cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, (long long)k * n, a, k,\n                                     (long long)m * k, &zero, c, n, (long long)m * n, batch)",
                "C[b] = A[b] B[b] over a batch of float32 matrices (strided batched GEMM)."))
    t.append(mm("matvec", "Float32 matrix-vector product y = A x, A [m, k].",
                "y[i] = sum_k A[i, k] x[k]", "level1/4_Matrix_vector_multiplication_.py",
                [("m", 2048), ("k", 16384)], [[1, 1], [7, 5], [33, 1000], [1000, 33], [3, 70001]],
                [f32("A", ["m", "k"]), f32("x", ["k"])], [out("y", ["m"])],
                '''    int m = (int)args->dims[0], k = (int)args->dims[1];
    const float *a = (const float *)args->inputs[0], *x = (const float *)args->inputs[1];
    float *y = (float *)args->outputs[0];''',
                "cublasSgemv(h, CUBLAS_OP_T, k, m, &one, a, k, x, 1, &zero, y, 1)",
                "y = A x for a float32 [m, k] matrix, memory-bound (cuBLAS SGEMV)."))
    t.append(mm("matmul_large_k", "Float32 matrix product with a small output and a very long inner dimension: C = A B, A [m, k], B [k, n], k >> m, n.",
                "C[i, j] = sum_k A[i, k] B[k, j]", "level1/6_Matmul_with_large_K_dimension_.py",
                [("m", 256), ("n", 256), ("k", 131072)], [[1, 1, 1], [7, 5, 3], [33, 17, 10007], [64, 65, 65537]],
                [f32("A", ["m", "k"]), f32("B", ["k", "n"])], [out("C", ["m", "n"])], MNK,
                "cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c, n)",
                "C = A B with k much larger than m and n (cuBLAS picks split-K).", tol=dict(atol=1e-4, rtol=1e-5)))
    t.append(dict(name="diag_matmul", category="matmul",
                  description="Product of a diagonal matrix, given as its diagonal a [n], with a float32 [n, m] matrix: C = diag(a) B.",
                  math="C[i, j] = a[i] * B[i, j]", kernelbench="level1/12_Matmul_with_diagonal_matrices_.py",
                  dims=[("n", 4096), ("m", 8192)], trial_dims=[[1, 1], [3, 5], [7, 1024], [1000, 33], [2, 4099]],
                  inputs=[dict(name="a", dtype="f32", shape=["n"], dist=NORMAL, adversarial=["signed_zero", "inf", "nan"]),
                          dict(name="B", dtype="f32", shape=["n", "m"], dist=NORMAL, adversarial=["signed_zero", "inf", "nan"])],
                  outputs=[out("C", ["n", "m"])], tolerance=dict(atol=1e-6, rtol=1e-6),
                  forbid=["streams", "graphs", "threads"], library=[], cu=DIAG,
                  baseline="row-scaling kernel, float4, coalesced (never forms diag(a))"))
    t.append(dict(name="triangular_matmul", category="matmul",
                  description="Product of two upper-triangular float32 [n, n] matrices, C = triu(A) triu(B). Only the upper triangles (diagonal included) of A and B may be read: the entries below their diagonals hold random values that are not part of the matrices. C is upper triangular: write zeros below its diagonal.",
                  math="C[i, j] = sum_{i <= k <= j} A[i, k] B[k, j] for i <= j, and C[i, j] = 0 for i > j",
                  kernelbench="level1/14_Matmul_for_upper_triangular_matrices.py",
                  dims=[("n", 4096)], trial_dims=[[1], [2], [7], [33], [129], [1000]],
                  inputs=[f32("A", ["n", "n"]), f32("B", ["n", "n"])], outputs=[out("C", ["n", "n"])],
                  tolerance=GEMM_TOL, forbid=["streams", "graphs", "library", "threads"], library=["cublas"], cu=TRIU,
                  baseline="triu(B) copy kernel + cuBLAS STRMM fp32 pedantic"))
    return t
