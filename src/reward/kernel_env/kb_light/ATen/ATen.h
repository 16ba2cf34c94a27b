/* kb_light/ATen/ATen.h — device pass: the stand-in of torch/types.h (rlc/device_torch.h), so
 * that CUDA text including ATen/ATen.h does not bring the declarations it replaces; host
 * passes: rlc/host_torch.h when the worker wrote the candidate's operator list (torch's own
 * ATen.h in per-operator mode, the operators the text names; kb_light/torch/types.h), else
 * torch's own header. */
#pragma once
#if defined(__CUDA_ARCH__)
#include <rlc/device_torch.h>
#elif __has_include(<rlc_kb_ops.h>)
#include <rlc/host_torch.h>
#else
#include_next <ATen/ATen.h>
#endif
