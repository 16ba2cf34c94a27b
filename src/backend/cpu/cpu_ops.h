/* cpu_ops.h — the CPU backend: rl_cpu_<name> for every op of ops.h, same parameters and meaning
 * (fp32 everywhere, host memory, OpenMP), declared from ops.h's list. Called through
 * backend/ops.c after its argument checks; the GPU tests call these directly as the reference. */
#ifndef RL_BACKEND_CPU_OPS_H
#define RL_BACKEND_CPU_OPS_H

#include "backend/ops.h"

#define RL_OPDEF(name, params, args) int rl_cpu_##name params;
#include "backend/ops.h"

#endif
