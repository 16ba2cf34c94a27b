/* fuzz_kspec.c — libFuzzer target: any byte string as a kernel task's spec.json, and as a
 * candidate source for the static checks (CUDA and Python).
 *
 * A spec is either refused with a message naming the file, or has every invariant the worker
 * plan relies on (sizes in range, shape entries naming defined dims) and writes a plan. The
 * static checks never fail and report at most RL_KSTATIC_MAX findings with valid lines. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reward/kernel_env/kspec.h"
#include "reward/kernel_env/kstatic.h"

static void check(int ok)
{
    if (!ok) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static rl_kspec spec;
    static rl_kstatic st;
    rl_err err;
    if (rl_kspec_parse(&spec, (const char *)data, size, "spec.json", &err)) {
        check(strncmp(err.msg, "spec.json", 9) == 0);
    } else {
        check(spec.n_dims >= 1 && spec.n_dims <= RL_KSPEC_MAX);
        check(spec.n_inputs >= 0 && spec.n_inputs <= RL_KSPEC_MAX);
        check(spec.n_outputs >= 1 && spec.n_outputs <= RL_KSPEC_MAX);
        check(spec.n_trials >= 0 && spec.n_trials <= RL_KSPEC_MAX_TRIALS);
        for (int i = 0; i < spec.n_inputs + spec.n_outputs; i++) {
            const rl_ktensor *t = i < spec.n_inputs ? &spec.inputs[i] : &spec.outputs[i - spec.n_inputs];
            check(t->rank >= 0 && t->rank <= RL_KSPEC_MAX);
            for (int d = 0; d < t->rank; d++) check(t->shape[d] > 0 || -t->shape[d] - 1 < spec.n_dims);
        }
        static char plan[16384];
        static const rl_ktol tol = {{1e-5, 1e-3, 1e-2, 0}, {1e-5, 1e-3, 1e-2, 0}};
        check(rl_kspec_write_plan(&spec, &tol, plan, sizeof plan, &err) == 0);
        check(strncmp(plan, "rlplan 1\n", 9) == 0);
    }
    int lines = 1;
    for (size_t i = 0; i < size; i++) lines += data[i] == '\n';
    for (int python = 0; python < 2; python++) {
        if (python)
            rl_kstatic_check_py((const char *)data, size, 15, &st);
        else
            rl_kstatic_check((const char *)data, size, 15, 3, &st);
        check(st.n >= 0 && st.n <= RL_KSTATIC_MAX && st.n_fatal <= st.n + st.dropped);
        for (int i = 0; i < st.n; i++) check(st.items[i].line >= 1 && st.items[i].line <= lines);
    }
    return 0;
}
