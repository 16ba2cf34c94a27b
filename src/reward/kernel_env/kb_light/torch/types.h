/* kb_light/torch/types.h — what nvcc's DEVICE pass (cicc, __CUDA_ARCH__ defined) gets for
 * torch/types.h in the build-only run of a KernelBench candidate (kblight.h, docs/kernel-env.md
 * "Throughput"): rlc/device_torch.h, torch's at::Tensor and its light c10 headers with the op
 * functions declared, not ATen/Functions.h and the autograd factories. The host passes
 * (cudafe++, the host compiler) get torch's own header, so the module's code and ABI are
 * torch's; the device pass only has to instantiate the same kernels, which the build-only run
 * checks (kb_kernelcheck.py). */
#pragma once
#if defined(__CUDA_ARCH__)
#include <rlc/device_torch.h>
#else
#include_next <torch/types.h>
#endif
