/* kb_light/rlc/device_torch.h — the stand-in for torch/types.h in nvcc's device pass of a
 * KernelBench candidate's build-only run (kb_light/torch/types.h; docs/kernel-env.md,
 * "Throughput"). The device pass only has to produce the kernels: host functions matter there
 * as far as they instantiate kernels (templates, AT_DISPATCH_*), so it needs the types device
 * code uses and declarations that let the host code parse. What comes from torch itself:
 * at::Tensor as torch declares it (ATen/core/Tensor.h: every method, the accessors), the
 * AT_DISPATCH_* macros with torch's own type lists (ATen/Dispatch.h), c10::Half, c10::BFloat16,
 * the scalar types, TensorOptions, Scalar, TORCH_CHECK, c10's device guards. What is declared
 * here, never defined (the device pass emits no host code): the op and factory functions of
 * ATen/Functions.h and torch's variable factories (about 5 of the 7 CPU seconds torch/types.h
 * costs the device pass) as templates over their arguments, Tensor's arithmetic operators,
 * and the torch:: names of torch/types.h. A candidate that needs anything else fails to build
 * with it and is built again with torch's header; one whose two passes instantiate different
 * kernels is caught by kb_kernelcheck.py and built again too. */
#pragma once
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Scalar.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <optional>
#include <tuple>
#include <vector>

namespace at {
/* f(tensor or sizes, more...) -> Tensor; f({n, m}, ...) (braced sizes) and f({a, b}, ...)
 * (a braced tensor list) need their own overloads: a braced list deduces no template type. */
#define RLC_KB_TENSOR_FN(f)                                 \
    template <class... A> Tensor f(A &&...);                \
    template <class... A> Tensor f(IntArrayRef, A &&...);   \
    template <class... A> Tensor f(TensorList, A &&...);
#define RLC_KB_TENSORS_FN(f)                                          \
    template <class... A> std::vector<Tensor> f(A &&...);             \
    template <class... A> std::vector<Tensor> f(IntArrayRef, A &&...);
/* factories */
RLC_KB_TENSOR_FN(empty) RLC_KB_TENSOR_FN(empty_like) RLC_KB_TENSOR_FN(empty_strided) RLC_KB_TENSOR_FN(zeros)
RLC_KB_TENSOR_FN(zeros_like) RLC_KB_TENSOR_FN(ones) RLC_KB_TENSOR_FN(ones_like) RLC_KB_TENSOR_FN(full)
RLC_KB_TENSOR_FN(full_like) RLC_KB_TENSOR_FN(rand) RLC_KB_TENSOR_FN(rand_like) RLC_KB_TENSOR_FN(randn)
RLC_KB_TENSOR_FN(randn_like) RLC_KB_TENSOR_FN(randint) RLC_KB_TENSOR_FN(arange) RLC_KB_TENSOR_FN(linspace)
RLC_KB_TENSOR_FN(eye) RLC_KB_TENSOR_FN(from_blob) RLC_KB_TENSOR_FN(scalar_tensor) RLC_KB_TENSOR_FN(tensor)
/* element-wise, reductions, shapes, linear algebra, nn functional */
RLC_KB_TENSOR_FN(add) RLC_KB_TENSOR_FN(sub) RLC_KB_TENSOR_FN(mul) RLC_KB_TENSOR_FN(div) RLC_KB_TENSOR_FN(neg)
RLC_KB_TENSOR_FN(pow) RLC_KB_TENSOR_FN(exp) RLC_KB_TENSOR_FN(log) RLC_KB_TENSOR_FN(sqrt) RLC_KB_TENSOR_FN(rsqrt)
RLC_KB_TENSOR_FN(abs) RLC_KB_TENSOR_FN(tanh) RLC_KB_TENSOR_FN(sigmoid) RLC_KB_TENSOR_FN(relu) RLC_KB_TENSOR_FN(gelu)
RLC_KB_TENSOR_FN(silu) RLC_KB_TENSOR_FN(clamp) RLC_KB_TENSOR_FN(clamp_min) RLC_KB_TENSOR_FN(clamp_max)
RLC_KB_TENSOR_FN(where) RLC_KB_TENSOR_FN(maximum) RLC_KB_TENSOR_FN(minimum) RLC_KB_TENSOR_FN(sum)
RLC_KB_TENSOR_FN(mean) RLC_KB_TENSOR_FN(prod) RLC_KB_TENSOR_FN(amax) RLC_KB_TENSOR_FN(amin) RLC_KB_TENSOR_FN(argmax)
RLC_KB_TENSOR_FN(argmin) RLC_KB_TENSOR_FN(softmax) RLC_KB_TENSOR_FN(log_softmax) RLC_KB_TENSOR_FN(matmul)
RLC_KB_TENSOR_FN(mm) RLC_KB_TENSOR_FN(bmm) RLC_KB_TENSOR_FN(addmm) RLC_KB_TENSOR_FN(baddbmm) RLC_KB_TENSOR_FN(linear)
RLC_KB_TENSOR_FN(conv1d) RLC_KB_TENSOR_FN(conv2d) RLC_KB_TENSOR_FN(conv3d) RLC_KB_TENSOR_FN(conv_transpose2d)
RLC_KB_TENSOR_FN(conv_transpose3d) RLC_KB_TENSOR_FN(max_pool2d) RLC_KB_TENSOR_FN(avg_pool2d)
RLC_KB_TENSOR_FN(batch_norm) RLC_KB_TENSOR_FN(layer_norm) RLC_KB_TENSOR_FN(group_norm) RLC_KB_TENSOR_FN(dropout)
RLC_KB_TENSOR_FN(cat) RLC_KB_TENSOR_FN(concat) RLC_KB_TENSOR_FN(stack) RLC_KB_TENSOR_FN(transpose)
RLC_KB_TENSOR_FN(permute) RLC_KB_TENSOR_FN(reshape) RLC_KB_TENSOR_FN(flatten) RLC_KB_TENSOR_FN(squeeze)
RLC_KB_TENSOR_FN(unsqueeze) RLC_KB_TENSOR_FN(narrow) RLC_KB_TENSOR_FN(select) RLC_KB_TENSOR_FN(slice)
RLC_KB_TENSOR_FN(index_select) RLC_KB_TENSOR_FN(gather) RLC_KB_TENSOR_FN(masked_fill) RLC_KB_TENSOR_FN(cumsum)
RLC_KB_TENSOR_FN(contiguous)
RLC_KB_TENSOR_FN(erf) RLC_KB_TENSOR_FN(sin) RLC_KB_TENSOR_FN(cos) RLC_KB_TENSOR_FN(square)
RLC_KB_TENSOR_FN(reciprocal) RLC_KB_TENSOR_FN(sign) RLC_KB_TENSOR_FN(floor) RLC_KB_TENSOR_FN(ceil)
RLC_KB_TENSOR_FN(round) RLC_KB_TENSOR_FN(hardtanh) RLC_KB_TENSOR_FN(leaky_relu) RLC_KB_TENSOR_FN(elu)
RLC_KB_TENSOR_FN(softplus) RLC_KB_TENSOR_FN(mish) RLC_KB_TENSOR_FN(logsumexp) RLC_KB_TENSOR_FN(norm)
RLC_KB_TENSOR_FN(var) RLC_KB_TENSOR_FN(std) RLC_KB_TENSOR_FN(cumprod) RLC_KB_TENSOR_FN(einsum)
RLC_KB_TENSOR_FN(outer) RLC_KB_TENSOR_FN(mv) RLC_KB_TENSOR_FN(dot) RLC_KB_TENSOR_FN(addcmul)
RLC_KB_TENSOR_FN(lerp) RLC_KB_TENSOR_FN(expand) RLC_KB_TENSOR_FN(repeat) RLC_KB_TENSOR_FN(roll)
RLC_KB_TENSOR_FN(flip) RLC_KB_TENSOR_FN(pad) RLC_KB_TENSOR_FN(constant_pad_nd) RLC_KB_TENSOR_FN(tril)
RLC_KB_TENSOR_FN(triu) RLC_KB_TENSOR_FN(scatter) RLC_KB_TENSOR_FN(scatter_add) RLC_KB_TENSOR_FN(index_add)
RLC_KB_TENSOR_FN(masked_select) RLC_KB_TENSOR_FN(nonzero) RLC_KB_TENSOR_FN(isnan) RLC_KB_TENSOR_FN(isinf)
RLC_KB_TENSOR_FN(any) RLC_KB_TENSOR_FN(all) RLC_KB_TENSOR_FN(count_nonzero)
RLC_KB_TENSOR_FN(_softmax)
RLC_KB_TENSOR_FN(mse_loss) RLC_KB_TENSOR_FN(instance_norm) RLC_KB_TENSOR_FN(max_pool1d) RLC_KB_TENSOR_FN(max_pool3d)
RLC_KB_TENSOR_FN(avg_pool1d) RLC_KB_TENSOR_FN(avg_pool3d) RLC_KB_TENSOR_FN(adaptive_avg_pool2d)
RLC_KB_TENSOR_FN(upsample_nearest2d) RLC_KB_TENSOR_FN(upsample_bilinear2d) RLC_KB_TENSOR_FN(embedding)
RLC_KB_TENSOR_FN(scaled_dot_product_attention) RLC_KB_TENSOR_FN(_scaled_mm) RLC_KB_TENSOR_FN(addmv)
RLC_KB_TENSOR_FN(view_as_real) RLC_KB_TENSOR_FN(view_as_complex) RLC_KB_TENSOR_FN(clone)
/* max, min, sort, topk, ... also have overloads that return a tuple (with a dim): declared as
 * returning a Tensor, host code that takes a tuple from them fails to build with the stand-in
 * and is built again with torch's header; a kernel instantiated from such a type is caught by
 * the kernel check. */
RLC_KB_TENSOR_FN(max) RLC_KB_TENSOR_FN(min) RLC_KB_TENSOR_FN(sort) RLC_KB_TENSOR_FN(topk) RLC_KB_TENSOR_FN(median)
RLC_KB_TENSOR_FN(mode) RLC_KB_TENSOR_FN(aminmax) RLC_KB_TENSOR_FN(var_mean) RLC_KB_TENSOR_FN(std_mean)
RLC_KB_TENSORS_FN(split) RLC_KB_TENSORS_FN(chunk) RLC_KB_TENSORS_FN(unbind) RLC_KB_TENSORS_FN(split_with_sizes)
RLC_KB_TENSORS_FN(meshgrid) RLC_KB_TENSORS_FN(tensor_split)
#undef RLC_KB_TENSOR_FN
#undef RLC_KB_TENSORS_FN
template <class... A> bool allclose(A &&...);
/* ATen/DeviceGuard.h's (its IListRef.h alone costs 1.5 CPU seconds) */
std::optional<Device> device_of(const Tensor &);
std::optional<Device> device_of(const std::optional<Tensor> &);
template <class... A> bool equal(A &&...);

/* Tensor's arithmetic and comparison operators (ATen/TensorOperators.h, which includes
 * ATen/Functions.h): with a Tensor on both sides, or a scalar on either. */
#define RLC_KB_OPERATOR(op)                                         \
    Tensor operator op(const Tensor &, const Tensor &);             \
    template <class S> Tensor operator op(const Tensor &, const S &); \
    template <class S> Tensor operator op(const S &, const Tensor &);
RLC_KB_OPERATOR(+) RLC_KB_OPERATOR(-) RLC_KB_OPERATOR(*) RLC_KB_OPERATOR(/) RLC_KB_OPERATOR(%)
RLC_KB_OPERATOR(&) RLC_KB_OPERATOR(|) RLC_KB_OPERATOR(^) RLC_KB_OPERATOR(<) RLC_KB_OPERATOR(>)
RLC_KB_OPERATOR(<=) RLC_KB_OPERATOR(>=) RLC_KB_OPERATOR(==) RLC_KB_OPERATOR(!=)
#undef RLC_KB_OPERATOR
} // namespace at

#include <rlc/torch_names.h>
