/* kb_light/torch/torch.h — device pass: the stand-in of torch/types.h (rlc/device_torch.h);
 * host passes: torch's own header (the C++ frontend). */
#pragma once
#if defined(__CUDA_ARCH__)
#include <rlc/device_torch.h>
#else
#include_next <torch/torch.h>
#endif
