/* task: sgemm_cublas
 * expect: static library_call; link fails
 * call_library.cu — CHEAT: calls cuBLAS, the library the reference uses, instead of
 * writing a kernel. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "rl_kernel.h"

#include <cublas_v2.h>

extern "C" int rl_kernel(const rl_kernel_args *args)
{
    static cublasHandle_t h;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return -1;
    int n = (int)args->dims[0];
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const float *)args->inputs[1], n,
                       (const float *)args->inputs[0], n, &zero, (float *)args->outputs[0], n) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}
