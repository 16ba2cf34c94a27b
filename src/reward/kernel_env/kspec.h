/* kspec.h — a kernel task's spec.json, parsed and checked, and the flat plan given to the
 * worker.
 *
 * The format is documented in docs/kernel-env.md. This is the one parser of spec.json: the
 * worker (a separate CUDA program) reads the plan written by rl_kspec_write_plan, a few lines
 * of numbers, so the JSON is validated in one place with messages that name the file and the
 * field. Limits follow rl_kernel.h: at most 8 dims, inputs and outputs. */
#ifndef RL_REWARD_KENV_KSPEC_H
#define RL_REWARD_KENV_KSPEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"

#define RL_KSPEC_MAX 8
#define RL_KSPEC_MAX_TRIALS 31

typedef enum { RL_KDT_F32 = 0, RL_KDT_F16 = 1, RL_KDT_BF16 = 2, RL_KDT_I32 = 3 } rl_kdtype;
/* The dtypes' names in spec.json and protocol.json, indexed by rl_kdtype. */
extern const char *const rl_kdtype_names[4];

/* Special-value kinds (bit i = entry i of rl_kspec_adversarial_names). */
extern const char *const rl_kspec_adversarial_names[6];

/* Things a task forbids (bits). */
enum { RL_KFORBID_STREAMS = 1, RL_KFORBID_GRAPHS = 2, RL_KFORBID_LIBRARY = 4, RL_KFORBID_THREADS = 8 };
/* Libraries (bits). */
enum { RL_KLIB_CUBLAS = 1, RL_KLIB_CUDNN = 2 };

typedef struct rl_ktensor {
    char name[64];
    rl_kdtype dtype;
    int rank;
    int shape[RL_KSPEC_MAX]; /* >= 0 constant extent; < 0: dim -(s+1) */
    int dist_uniform;        /* 0: normal(p0 mean, p1 std); 1: uniform [p0 low, p1 high] */
    double p0, p1;
    int adversarial;         /* bit mask */
    int mutable_;
} rl_ktensor;

/* The default tolerance of each dtype (indexed by rl_kdtype), from protocol.json (kproto.h). */
typedef struct rl_ktol {
    double atol[4], rtol[4];
} rl_ktol;

typedef struct rl_kspec {
    char dir[1024];
    char name[128];
    char category[64];
    char kernelbench[256];
    int n_dims, n_inputs, n_outputs, n_trials;
    char dim_names[RL_KSPEC_MAX][64];
    int64_t dims[RL_KSPEC_MAX];                        /* timed size */
    int64_t trial_dims[RL_KSPEC_MAX_TRIALS][RL_KSPEC_MAX];
    rl_ktensor inputs[RL_KSPEC_MAX], outputs[RL_KSPEC_MAX];
    double atol, rtol;   /* < 0: the dtype default, per output */
    int forbid;          /* RL_KFORBID_* */
    int library;         /* RL_KLIB_* */
} rl_kspec;

/* Reads and checks <dir>/spec.json (and that reference.cu exists). */
int rl_kspec_load(rl_kspec *spec, const char *dir, rl_err *err);
/* Parses spec text; what names it in messages. */
int rl_kspec_parse(rl_kspec *spec, const char *text, size_t len, const char *what, rl_err *err);
/* The tolerance of an output: the spec's, or the protocol's default for the dtype. */
void rl_kspec_tolerance(const rl_kspec *spec, const rl_ktol *def, rl_kdtype dtype, double *atol, double *rtol);
/* Writes the worker's plan (format in worker/worker.cu) into buf, each output with its
 * tolerance (def: the protocol's defaults by dtype); -1 if it does not fit. */
int rl_kspec_write_plan(const rl_kspec *spec, const rl_ktol *def, char *buf, size_t size, rl_err *err);

#endif
