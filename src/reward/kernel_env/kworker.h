/* kworker.h — one run of a kernel-environment worker (rlc-kernel-worker or
 * kernelbench_worker.py) for kenv.c: its sandbox (ksandbox.h: the private directories, what it
 * may read), the GPU it gets from the pool (or none, for a build-only run) with that GPU's lock
 * file passed as --gpu-lock, the limited child (kproc.h), and its verdict read back into the
 * result object: the status, failure and measurements of the last stdout line that carries the
 * run's nonce, or a failure of the candidate when it crashed, hung, flooded or printed no valid
 * result. */
#ifndef RL_REWARD_KENV_KWORKER_H
#define RL_REWARD_KENV_KWORKER_H

#include <cjson/cJSON.h>
#include <limits.h>
#include <stddef.h>

#include "reward/kernel_env/kenv.h"
#include "reward/kernel_env/ksandbox.h"

/* The sandbox of one run: spec plus the storage its read paths point into. */
typedef struct rl_kworker_box {
    rl_ksandbox_spec spec;
    char paths[RL_KSANDBOX_MAX_PATHS][PATH_MAX];
    int n;
} rl_kworker_box;

/* Writes only in private_dir (also the run's HOME and TMPDIR) and build_dir (may be NULL);
 * reads anywhere but $HOME, where the rlc tree, the module cache, the working directory, the
 * task and, for python, the interpreter's prefix, PYTHONPATH and ~/.local/lib stay readable;
 * the native worker (python 0) may start no process; CPU time 4 x cpu_s. */
void rl_kworker_box_init(rl_kworker_box *b, const rl_kenv_opts *o, const char *private_dir, const char *build_dir,
                         const char *task, int python, double cpu_s);
/* Adds path less its last up components (cut before symlinks are resolved) to the readable paths. */
void rl_kworker_box_read(rl_kworker_box *b, const char *path, int up);

/* Runs argv with input on stdin (its first line the nonce) and up to RL_KPROC_MAX_ENV - 5
 * extra "NAME=VALUE" entries (NULL-terminated), in box (NULL or o->no_sandbox: none), on a GPU
 * of the pool when use_gpu (else with no GPU visible), and reads the verdict into res; timed:
 * a status ok must carry the timings. what names the program in messages. */
void rl_kworker_run(const rl_kenv_opts *o, char *const argv[], const char *input, const char *nonce, double timeout_s,
                    const char *const *extra_env, int use_gpu, int timed, const char *what, const rl_kworker_box *box,
                    cJSON *res);

/* The sandbox level of a worker kind (box's: the Python worker when it may fork) is found on
 * its first GPU run (kworker.c: the calibration, ~2 x a worker's start-up under the GPU's lock).
 * rl_kworker_calibrate finds it now instead, with box, on a GPU slot of the pool (taken and
 * given back; o->devices outside a pool), so that a caller can overlap it with the first
 * compiles; nothing when the level is known or o->no_sandbox. rl_kworker_calibration_claim
 * returns 1 to the first caller per kind and process (that one calibrates, e.g. in a thread),
 * else 0, at once: it never waits for a calibration in progress. */
int rl_kworker_calibration_claim(const rl_kenv_opts *o, int python);
void rl_kworker_calibrate(const rl_kenv_opts *o, const rl_kworker_box *box);

/* The sandbox as applied in this process, for a result's "sandbox" field: the layers this
 * machine gives, less those the GPU driver could not start under (calibrated on the first
 * worker run of each kind: see kworker.c), or "off". */
void rl_kworker_describe(const rl_kenv_opts *o, char *out, size_t size);

/* "LD_PRELOAD=..." into out: build/librlc-kenv-preload.so beside o->worker (kenv_preload.c:
 * the CUDA driver's thread names under Landlock), then extra (may be NULL), then the caller's
 * LD_PRELOAD. Returns 1 when the shim is there (else out holds only the rest). */
int rl_kworker_preload(const rl_kenv_opts *o, const char *extra, char *out, size_t size);

/* The GPU probe of a worker kind (python 0: `worker --count-devices`; 1: a torch one-liner),
 * each printing the number of devices on which a context, an allocation and a kernel or memset
 * worked; argv[3] is NULL. */
void rl_kworker_probe_argv(const rl_kenv_opts *o, int python, char *argv[4]);

/* Sets "status" and "failure" (NULL: null) of a result object. */
void rl_kworker_set_status(cJSON *res, const char *status, const char *failure);
/* A fresh random nonce (hex). */
void rl_kworker_nonce(char *out, size_t size);

#endif
