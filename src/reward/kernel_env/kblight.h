/* kblight.h — the light torch headers of KernelBench builds' nvcc step (kb_light/,
 * docs/kernel-env.md "Throughput"). load_inline puts torch/types.h before every CUDA source and
 * most candidates include torch/extension.h there, so nvcc parses ATen (and with extension.h
 * torch's whole C++ frontend and pybind11) in each of its three front ends: cicc (the device
 * pass), cudafe++ and the host g++. The build-only run of a candidate whose text names
 * torch/extension.h or cpp_extension gets NVCC_PREPEND_FLAGS=-I<kb_light> (beside
 * kernelbench_worker.py), where torch/extension.h is torch/types.h alone in every pass, and
 * torch/types.h (with ATen/ATen.h and torch/torch.h) is, in the device pass only, a stand-in
 * (kb_light/rlc/device_torch.h: torch's at::Tensor and light c10 headers, the op functions
 * declared); the host passes get torch's own declarations, in per-operator mode with only the
 * operators the text names when the worker wrote their list (kb_light/rlc/host_torch.h,
 * kb_hostops.py; the result's "light_host" says which), else torch's own header. The worker then gets --light-check: a build whose
 * two passes made different kernels (kb_kernelcheck.py) is reported and its objects removed.
 * When that build fails or mismatches, or its kernels fail to launch in the GPU run ("invalid
 * device function"), the original text is built again without the light headers (kenv.c), and
 * the GPU run never gets them (it finds the build done, or builds the original): the light
 * headers never decide a verdict. */
#ifndef RL_REWARD_KENV_KBLIGHT_H
#define RL_REWARD_KENV_KBLIGHT_H

#include <stddef.h>

#include "reward/kernel_env/kenv.h"

/* Fills env ("NVCC_PREPEND_FLAGS=-I<dir>", then the caller's NVCC_PREPEND_FLAGS) and dir (the
 * kb_light directory, for the sandbox's readable paths) and returns 1 when the light headers
 * apply: not o->kb_no_light, source names torch/extension.h or cpp_extension,
 * kb_light/torch/extension.h is beside o->kb_worker and its path has no blank or quote (nvcc
 * splits the variable on blanks). Else 0. */
int rl_kblight_env(const rl_kenv_opts *o, const char *source, size_t len, char *env, size_t env_size, char *dir,
                   size_t dir_size);

#endif
