/* kbpch.h — the precompiled torch/extension.h of KernelBench builds (docs/kernel-env.md,
 * "Throughput"). Each load_inline build compiles a main.cpp whose first line includes
 * torch/extension.h, about 20 CPU seconds of header parsing; the first KernelBench build of an
 * rlc process starts kb_pch.py (beside kernelbench_worker.py; trusted, outside the sandbox,
 * no candidate code) in the background, unless its directory is already ready (about 50 s
 * once per machine, three g++ at once); builds that start before it is ready parse the headers
 * as before, later ones run with CXX=kb_cxx.sh, which has g++ load the PCH. */
#ifndef RL_REWARD_KENV_KBPCH_H
#define RL_REWARD_KENV_KBPCH_H

#include <stddef.h>

#include "reward/kernel_env/kenv.h"

/* Fills cxx_env ("CXX=<kb_cxx.sh>"), pch_env ("RLC_KB_PCH=<dir>") and real_env
 * ("RLC_KB_CXX=<$CXX>" when CXX is set, else "": the compiler load_inline would have run, which
 * kb_cxx.sh runs, so that the PCH kb_pch.py built with it fits) and returns 1 when the PCH is ready, 0 while it is being built (the first call of the process starts that), when it
 * is off (o->kb_no_pch) or could not be built (said once on stderr). A candidate's build and
 * GPU runs must use one answer (the same CXX keeps ninja's commands, or the GPU run rebuilds).
 * The PCH's directory is what follows "RLC_KB_PCH=" (the sandbox must let the build read it). */
int rl_kbpch_env(const rl_kenv_opts *o, char *cxx_env, size_t cxx_size, char *pch_env, size_t pch_size, char *real_env,
                 size_t real_size);

/* Waits up to timeout_s for a PCH being built; 1 if it is ready (tests, benchmarks). */
int rl_kbpch_wait(double timeout_s);

#endif
