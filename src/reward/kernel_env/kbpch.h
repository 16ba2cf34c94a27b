/* kbpch.h — the precompiled torch/extension.h of KernelBench builds (docs/kernel-env.md,
 * "Throughput"). Each load_inline build compiles a main.cpp whose first line includes
 * torch/extension.h, about 20 CPU seconds of header parsing; the first KernelBench build of an
 * rlc process runs kb_pch.py (beside kernelbench_worker.py; trusted, outside the sandbox,
 * no candidate code) once, unless its directory is already ready, and every candidate build
 * then runs with CXX=kb_cxx.sh, which has g++ load the PCH. */
#ifndef RL_REWARD_KENV_KBPCH_H
#define RL_REWARD_KENV_KBPCH_H

#include <stddef.h>

#include "reward/kernel_env/kenv.h"

/* Fills cxx_env ("CXX=<kb_cxx.sh>") and pch_env ("RLC_KB_PCH=<dir>") and returns 1 when the
 * PCH is ready (building it on the first call of the process; other threads wait), 0 when it is
 * off (o->kb_no_pch) or could not be built (said once on stderr; builds then go as before).
 * The PCH's directory is what follows "RLC_KB_PCH=" (the sandbox must let the build read it). */
int rl_kbpch_env(const rl_kenv_opts *o, char *cxx_env, size_t cxx_size, char *pch_env, size_t pch_size);

#endif
