/* kdiag.h — which layer of the worker sandbox (ksandbox.h) keeps the GPU driver from starting
 * (`rlc kernel-eval --sandbox-diag`). Runs the GPU probe of each worker kind (the native
 * worker's --count-devices, the Python worker's torch one-liner: kworker.h) under a list of
 * variants at once: no sandbox, the full one, each layer alone, the full one less each layer or
 * rule, and the full one widened (every path writable, $HOME readable). A variant that sees
 * fewer GPUs than no sandbox names the layer; the probe's stderr (the CUDA error, and the
 * failing system calls when a tracer such as tools/kenv_trace.c is preloaded) says what it
 * refused. No strace needed: the device machines have none. */
#ifndef RL_REWARD_KENV_KDIAG_H
#define RL_REWARD_KENV_KDIAG_H

#include <stdio.h>

#include "core/error.h"
#include "reward/kernel_env/kenv.h"

/* Writes one line per (kind, variant) to out, then a verdict line per kind. preload: a shared
 * object put in the probes' LD_PRELOAD (NULL: none); python 0 skips the Python kind. Returns 0
 * when the full sandbox sees every GPU that no sandbox sees (for each kind probed), 1 when it
 * does not, -1 with err when the diagnosis could not run. */
int rl_kdiag_run(const rl_kenv_opts *o, const char *preload, int python, FILE *out, rl_err *err);

#endif
