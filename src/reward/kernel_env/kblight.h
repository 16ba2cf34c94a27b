/* kblight.h — the lighter torch/extension.h of KernelBench builds' nvcc step (docs/kernel-env.md,
 * "Throughput"). KernelBench candidates include torch/extension.h in the CUDA text they give
 * load_inline, so nvcc parses torch's whole C++ frontend and pybind11 three times (the device
 * front end cicc, cudafe++, the host g++): measured on an H200, 71 of a build's ~95 CPU seconds
 * went to cuda.cu, 37 with torch/types.h alone (what load_inline puts first anyway). The
 * build-only run of a candidate whose text names torch/extension.h gets
 * NVCC_PREPEND_FLAGS=-I<kb_light> (beside kernelbench_worker.py), whose torch/extension.h
 * includes torch/types.h alone; when that build fails, the original text is built again
 * (kenv.c), and the GPU run never gets it (it finds the build done, or builds the original):
 * what compiles only with the full header, the full header compiles. */
#ifndef RL_REWARD_KENV_KBLIGHT_H
#define RL_REWARD_KENV_KBLIGHT_H

#include <stddef.h>

#include "reward/kernel_env/kenv.h"

/* Fills env ("NVCC_PREPEND_FLAGS=-I<dir>", then the caller's NVCC_PREPEND_FLAGS) and dir (the
 * kb_light directory, for the sandbox's readable paths) and returns 1 when the light header
 * applies: not o->kb_no_light, source names torch/extension.h, kb_light/torch/extension.h is
 * beside o->kb_worker and its path has no blank or quote (nvcc splits the variable on blanks).
 * Else 0. */
int rl_kblight_env(const rl_kenv_opts *o, const char *source, size_t len, char *env, size_t env_size, char *dir,
                   size_t dir_size);

#endif
