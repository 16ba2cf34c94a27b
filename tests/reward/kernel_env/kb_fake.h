/* kb_fake.h — options that run KernelBench-format evaluations through the fake Python
 * (tests/fixtures/kernel_env/fake_python.sh, which stands in for the worker and for torch's GPU
 * probe): the protocol's defaults, the given timeouts, a module cache of this process named by
 * tag. Shared by test_kenv_kernelbench.c and test_kb_calibration.c. */
#ifndef RL_TEST_KB_FAKE_H
#define RL_TEST_KB_FAKE_H

#include <stdio.h>
#include <unistd.h>

#include "reward/kernel_env/kenv.h"
#include "test_util.h"

static inline rl_kenv_opts kb_fake_opts(rl_kenv_paths *paths, char *cache, size_t cache_size, const char *tag,
                                        double timeout_s, double compile_timeout_s)
{
    rl_kenv_opts o;
    rl_kenv_opts_default(&o, paths);
    rl_err err;
    cr_assert_eq(rl_kenv_load_protocol(&o, &err), 0, "%s", err.msg);
    o.python = "tests/fixtures/kernel_env/fake_python.sh";
    o.worker = "/nonexistent/rlc-kernel-worker"; /* KernelBench tasks never use it */
    o.proto.timeout_s = timeout_s;
    o.proto.compile_timeout_s = compile_timeout_s;
    snprintf(cache, cache_size, "/tmp/rlc-%s-cache-%d", tag, (int)getpid());
    o.cache_dir = cache;
    return o;
}

#endif
