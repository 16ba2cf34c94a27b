/* kb_light/rlc/host_torch.h — torch/types.h for nvcc's HOST passes (cudafe++ and the host
 * compiler) of a KernelBench candidate's build-only run (kb_light/torch/types.h;
 * docs/kernel-env.md, "Throughput"). Every declaration is torch's own, so the host code and the
 * module's ABI are torch's: torch/types.h's includes in torch's per-operator mode
 * (AT_PER_OPERATOR_HEADERS, what torch's own build uses), that is ATen/ATen.h without
 * ATen/Functions.h and ATen/NativeFunctions.h (every operator), torch's variable factories
 * (torch::empty, torch::zeros, ... exactly as torch/types.h gives them, with the ~50
 * per-operator headers they need) and autograd's Variable; then the per-operator headers
 * (ATen/ops/<name>.h) of the identifiers the candidate's text names, which the worker writes
 * into rlc_kb_ops.h in a directory of the build (kernelbench_worker.py, NVCC_PREPEND_FLAGS);
 * then torch/types.h's own torch:: names; AT_PER_OPERATOR_HEADERS is defined for these
 * includes only. Left out: the other operators (ATen/Functions.h), ATen/NativeFunctions.h
 * (at::native::) and torch/library.h (TORCH_LIBRARY, torch::Library, custom classes: ~3 of
 * the ~8 seconds this header saves). A text naming a macro that only those define is given
 * torch's own header (kb_hostops.TORCH_ONLY_MACROS), so that no #ifdef sees a difference; a
 * text that needs anything else fails to build with it and is built again
 * with torch's header (kenv.c). */
#pragma once
#define RLC_KB_LIGHT_HOST 1 /* tests/reward/kernel_env/kb_host_pass.py checks it */
#ifndef AT_PER_OPERATOR_HEADERS /* torch's headers in per-operator mode, here only */
#define AT_PER_OPERATOR_HEADERS
#define RLC_KB_PER_OPERATOR_HERE
#endif
#include <ATen/Context.h>
#include <ATen/Device.h>
#include <ATen/DeviceGuard.h>
#include <ATen/DimVector.h>
#include <ATen/Dispatch.h>
#include <ATen/Formatting.h>
#include <ATen/NamedTensor.h>
#include <ATen/ScalarOps.h>
#include <ATen/Tensor.h>
#include <ATen/TensorGeometry.h>
#include <ATen/TensorIndexing.h>
#include <ATen/TensorOperators.h>
#include <ATen/Version.h>
#include <ATen/core/ATenGeneral.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Reduction.h>
#include <ATen/core/Scalar.h>
#include <ATen/core/UnsafeFromTH.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>
#include <c10/core/Allocator.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/Layout.h>
#include <c10/core/Storage.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/Exception.h>

#include <optional>

#include <torch/csrc/autograd/generated/variable_factories.h>
#include <torch/csrc/autograd/variable.h>

#include <rlc_kb_ops.h>

#include <rlc/torch_names.h>

#ifdef RLC_KB_PER_OPERATOR_HERE /* headers the text includes next are as torch/types.h leaves them */
#undef AT_PER_OPERATOR_HEADERS
#undef RLC_KB_PER_OPERATOR_HERE
#endif
