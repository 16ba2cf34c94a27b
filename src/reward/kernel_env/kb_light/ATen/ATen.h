/* kb_light/ATen/ATen.h — device pass: the stand-in of torch/types.h (rlc/device_torch.h), so
 * that CUDA text including ATen/ATen.h does not bring the declarations it replaces; host
 * passes: torch's own header. */
#pragma once
#if defined(__CUDA_ARCH__)
#include <rlc/device_torch.h>
#else
#include_next <ATen/ATen.h>
#endif
