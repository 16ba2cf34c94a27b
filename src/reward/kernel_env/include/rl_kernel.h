/* rl_kernel.h — the one entry point every kernel-environment module implements.
 *
 * A task's reference.cu and every candidate .cu define rl_kernel() with C linkage. The
 * evaluator compiles each into a shared object with nvcc, dlopens it in a child process and
 * calls it with device pointers it allocated. The entry point launches its work on the legacy
 * default stream (stream 0) and returns 0, or non-zero on error; it need not synchronize (the
 * evaluator synchronizes the whole device after every call). Buffers are allocated by the
 * evaluator for every call; inputs must not be written unless the task marks them mutable.
 * Tensors are dense, row-major, in the order of spec.json's "inputs" / "outputs"; dims[] holds
 * the values of spec.json's "dims" in order. This header is C and C++ (nvcc) compatible and
 * includes no CUDA header. */
#ifndef RL_KERNEL_H
#define RL_KERNEL_H

#include <stdint.h>

#define RL_KERNEL_MAX_TENSORS 8
#define RL_KERNEL_MAX_DIMS 8

typedef struct rl_kernel_args {
    int n_inputs, n_outputs, n_dims;
    const void *inputs[RL_KERNEL_MAX_TENSORS];
    void *outputs[RL_KERNEL_MAX_TENSORS];
    int64_t dims[RL_KERNEL_MAX_DIMS];
} rl_kernel_args;

#ifdef __cplusplus
extern "C"
#endif
    int
    rl_kernel(const rl_kernel_args *args);

#endif
