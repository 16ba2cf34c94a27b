/* kpool.h — the kernel environment's GPU pool: many candidates scored at once over the GPUs the
 * worker sees.
 *
 * Threads each take the next piece of work from a feed (in order, one at a time), do it
 * (typically: read a request, rl_kenv_pool_eval, write the result) and take the next, until the
 * feed is empty. A candidate's compile (nvcc; KernelBench: the build-only run) runs in its
 * thread on the CPU once one of `jobs` compile slots is free; then its worker run waits for a
 * free slot on a GPU (up to o->gpu_workers per GPU), pinned to it by CUDA_VISIBLE_DEVICES (the entries of the parent's
 * CUDA_VISIBLE_DEVICES, else 0..n-1). Workers on one GPU share it for correctness trials;
 * their timing is exclusive by the GPU's lock file (kenv.h), so no two candidates are ever
 * timed, or checked, while one of them is being timed.
 *
 * While compile slots idle and no candidate waits for one (the end of a batch, when the last
 * candidates are compiled and queue for the GPUs), each idle compile slot (a core) may be a GPU
 * slot more, up to o->gpu_workers_idle per GPU (0: twice gpu_workers; -1: no more than
 * gpu_workers): a worker run is CPU work too (Python, torch's import, CUDA's set-up), and the
 * queue of a batch's last compiles would otherwise drain on gpu_workers cores while the others
 * idle. Timing stays exclusive by the lock however many workers share the GPU. */
#ifndef RL_REWARD_KENV_KPOOL_H
#define RL_REWARD_KENV_KPOOL_H

#include "reward/kernel_env/kenv.h"

#define RL_KPOOL_MAX_GPUS 16
#define RL_KPOOL_MAX_JOBS 64
#define RL_KPOOL_MAX_THREADS 256

typedef struct rl_kenv_pool rl_kenv_pool;

/* The GPU slots of one GPU (kpool.c's rule above): per_gpu, plus up to idle_extra while
 * build_waiting is 0 and building < max_build, one per idle compile slot (shared over n_gpus). */
int rl_kpool_slots(int per_gpu, int idle_extra, int n_gpus, int building, int max_build, int build_waiting);

/* GPUs the worker sees (runs `worker --count-devices`; if that fails, asks torch through
 * o->python); 0 when none or both fail. */
int rl_kenv_count_gpus(const rl_kenv_opts *o);

/* A pool over n_gpus GPUs (0: rl_kenv_count_gpus; at most RL_KPOOL_MAX_GPUS) for the options
 * o (kept by pointer: they must outlive the pool). -1 with err when no GPU is found. */
int rl_kenv_pool_create(rl_kenv_pool **pool, const rl_kenv_opts *o, int n_gpus, rl_err *err);
/* A training rank's pool: the GPU at ordinal among those the worker sees (the rank's own), then
 * those from first_free on (no rank trains there; the GPU lock keeps timing exclusive among the
 * ranks sharing them), never the GPU of another rank, which may be training while this rank
 * evaluates. -1 with err when ordinal is not a GPU the worker sees. */
int rl_kenv_pool_create_on(rl_kenv_pool **pool, const rl_kenv_opts *o, int ordinal, int first_free, rl_err *err);
void rl_kenv_pool_free(rl_kenv_pool *pool);
int rl_kenv_pool_gpus(const rl_kenv_pool *pool);

/* rl_kenv_eval with the worker run on a free GPU of the pool; safe from any number of threads. */
int rl_kenv_pool_eval(rl_kenv_pool *pool, const char *task, const char *source, size_t len, rl_kenv_result *res,
                      rl_err *err);

typedef struct rl_kenv_feed {
    void *user;
    /* The next piece of work, or NULL at the end; called by one thread at a time. */
    void *(*next)(void *user);
    /* Does one piece of work, in a pool thread, concurrently with the others. */
    void (*run)(void *user, rl_kenv_pool *pool, void *work);
} rl_kenv_feed;

/* Runs the feed until it is empty, jobs compiles at once (0: two per GPU slot or one per online
 * core, whichever is more; at most RL_KPOOL_MAX_JOBS), on 2 x jobs + 2 per GPU slot threads: the
 * candidates beyond the compiling ones wait for a GPU (or are checked and timed) holding no
 * core, so compiles go on while the GPUs drain their queue. */
void rl_kenv_pool_run(rl_kenv_pool *pool, int jobs, const rl_kenv_feed *feed);

#endif
