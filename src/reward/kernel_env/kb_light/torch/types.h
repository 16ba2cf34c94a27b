/* kb_light/torch/types.h — what nvcc gets for torch/types.h in the build-only run of a
 * KernelBench candidate (kblight.h, docs/kernel-env.md "Throughput"). DEVICE pass (cicc,
 * __CUDA_ARCH__ defined): rlc/device_torch.h, torch's at::Tensor and its light c10 headers with
 * the op functions declared, not ATen/Functions.h and the autograd factories. HOST passes
 * (cudafe++, the host compiler), when the worker wrote the candidate's operator list
 * (rlc_kb_ops.h, kb_hostops.py): rlc/host_torch.h, torch's own declarations in its
 * per-operator mode, only the operators the text names; else torch's own header. Either way
 * every declaration the host code sees is torch's, so the module's code and ABI are torch's;
 * the device pass only has to instantiate the same kernels, which the build-only run checks
 * (kb_kernelcheck.py). */
#pragma once
#if defined(__CUDA_ARCH__)
#include <rlc/device_torch.h>
#elif __has_include(<rlc_kb_ops.h>)
#include <rlc/host_torch.h>
#else
#include_next <torch/types.h>
#endif
