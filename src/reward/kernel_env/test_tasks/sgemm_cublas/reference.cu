/* reference.cu — sgemm_cublas: C = A B with cuBLAS in fp32 pedantic mode (no TF32).
 *
 * cuBLAS is column-major: row-major C = A B is column-major C^T = B^T A^T, so the operands
 * are swapped. One handle per process, bound to the legacy default stream. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "rl_kernel.h"

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    static cublasHandle_t handle;
    if (!handle) {
        if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return -1;
        cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);
    }
    int n = (int)args->dims[0];
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const float *)args->inputs[1], n,
                       (const float *)args->inputs[0], n, &zero, (float *)args->outputs[0], n) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}
