/* kproto.h — the evaluation protocol's parameters, read from protocol.json.
 *
 * One file holds every number that the native worker and the KernelBench worker share (random
 * trials, warm-up and timed runs, input copies, L2 flush size, the timing spread limit and its
 * repeats, tolerances by dtype) and the limits rlc puts on them (wall time, compile time,
 * watchdog, GPU memory), so that both measure alike. rlc loads it (by default
 * src/reward/kernel_env/protocol.json, found from the executable like the include dir), lets
 * CLI flags override single values, and passes the effective values explicitly to the worker
 * it runs: flags, plus each output's tolerance in the native plan. The workers keep no
 * defaults of their own (kernelbench_worker.py reads the same file when run by hand).
 *
 * Every field is required; a missing, mistyped, out-of-range or unknown field is an error that
 * names the file and the field. A "comment" string is allowed and ignored. */
#ifndef RL_REWARD_KENV_KPROTO_H
#define RL_REWARD_KENV_KPROTO_H

#include <stddef.h>

#include "core/error.h"
#include "reward/kernel_env/kspec.h"

#define RL_KPROTO_MAX_COPIES 8 /* the native worker's buffer sets */

typedef struct rl_kproto {
    int random_trials;          /* random correctness trials at the timed size */
    int warmup, timed;          /* warm-up and timed runs per side */
    int input_copies;           /* input sets rotated during timing */
    double l2_flush_factor;     /* flush buffer = factor x the device's L2 size */
    double max_spread;          /* (p90 - p10) / median above this on either side ... */
    int spread_repeats;         /* ... repeats the timing round up to this often, then `noisy` */
    double ref_slowdown_limit;  /* KernelBench: reference median beside the candidate over its */
    double ref_slowdown_min_ms; /*   solo median above limit x and min_ms more -> `noisy` */
    int watchdog_ms;            /* one call plus synchronize (native worker) */
    int mem_cap_mb;             /* GPU memory a candidate may keep after a call (native) */
    double timeout_s;           /* worker wall time per candidate */
    double compile_timeout_s;   /* nvcc; added to timeout_s for KernelBench (load_inline builds inside) */
    rl_ktol tol;                /* default tolerance by dtype */
} rl_kproto;

/* Parses protocol text; what names it in messages. */
int rl_kproto_parse(rl_kproto *p, const char *text, size_t len, const char *what, rl_err *err);
/* Reads and parses path. */
int rl_kproto_load(rl_kproto *p, const char *path, rl_err *err);
/* Sets one parameter (key as in protocol.json) from text, within the same range the file must
 * respect; what names the source in messages ("--trials"). */
int rl_kproto_set(rl_kproto *p, const char *key, const char *text, const char *what, rl_err *err);

#endif
