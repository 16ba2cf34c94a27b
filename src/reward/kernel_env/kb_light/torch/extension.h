/* kb_light/torch/extension.h — the torch/extension.h that nvcc finds first in the build-only run
 * of a KernelBench candidate (kblight.h, docs/kernel-env.md "Throughput"): ATen and the torch::
 * tensor factories (torch/types.h, which load_inline puts before every CUDA source anyway)
 * without the rest of the C++ frontend (torch/all.h) and pybind11 (torch/python.h), which CUDA
 * text that only launches kernels on tensors does not use. A candidate that needs more fails
 * to build with it and is built again with the original header. */
#pragma once
#include <torch/types.h>
