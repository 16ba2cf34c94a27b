/* kstatic.h — cheap static checks of a candidate's CUDA source, before it is compiled.
 *
 * The source is first stripped of comments and string literals (lines, and so line numbers,
 * are kept; #include lines keep their text), then scanned for identifiers that call the
 * library being replaced, create streams, events or graphs, start host threads, load
 * libraries, control the persisting L2, reset the device or exit; and for global or static
 * buffers that persist across calls. Which findings are fatal is in docs/kernel-env.md: the
 * ones that the task forbids, plus dlopen, L2 persistence and device resets; static buffers
 * are reported only (the dynamic protocol catches their misuse).
 *
 * KernelBench candidates are Python (rl_kstatic_check_py): the Python code, with comments and
 * string literals blanked, is scanned for creating CUDA streams, events or graphs, changing
 * torch's numeric settings (TF32, reduced-precision reductions, matmul precision, cuDNN
 * flags), threads and subprocesses, ctypes, and reaching into the worker's interpreter
 * (sys, gc, frames, object internals, getattr/setattr/exec, the clock, files); the string
 * literals that look like C++/CUDA (load_inline sources) go through the C checks above, plus
 * the Python C API and pybind11's import/exec/eval there. All Python findings but
 * global_state are fatal (numeric settings are measured fairly by the worker instead). */
#ifndef RL_REWARD_KENV_KSTATIC_H
#define RL_REWARD_KENV_KSTATIC_H

#include <stddef.h>

#include "reward/kernel_env/kspec.h"

#define RL_KSTATIC_MAX 32

typedef struct rl_kfinding {
    char check[32];
    int fatal;
    int line;
    char detail[160];
} rl_kfinding;

typedef struct rl_kstatic {
    int n, n_fatal, dropped; /* dropped: findings past RL_KSTATIC_MAX */
    rl_kfinding items[RL_KSTATIC_MAX];
} rl_kstatic;

/* Scans source (len bytes) under the task's forbid / library settings. Never fails. */
void rl_kstatic_check(const char *source, size_t len, int forbid, int library, rl_kstatic *out);

/* Scans a Python candidate (ModelNew) and the C++/CUDA in its string literals. forbid: as in
 * the spec (RL_KFORBID_*; library does not apply). Never fails. */
void rl_kstatic_check_py(const char *source, size_t len, int forbid, rl_kstatic *out);

/* Copies source with comments and string/char literals replaced by spaces (newlines kept).
 * dst has room for len + 1 bytes. Exposed for tests. */
void rl_kstatic_strip(const char *source, size_t len, char *dst);

#endif
