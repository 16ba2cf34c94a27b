/* dp.h — data-parallel training of one model over the ranks of a communicator (dist/comm.h),
 * with the optimizer state sharded as ZeRO does (Rajbhandari et al. 2020, "ZeRO: Memory
 * Optimizations Toward Training Trillion Parameter Models").
 *
 * Every rank holds the whole model's working weights and runs its share of each step's
 * micro-batches; the trainers (sft.c, grpo.c) split the step's global batch, so N ranks with
 * per-rank batch B compute the gradient of the same global batch as one rank with batch N x B.
 * The flat parameter layout (model.h) is cut into `world` contiguous shards, rank r owning
 * [shard[r], shard[r+1]) (64-element aligned). Then, by --zero:
 *   0  gradients all-reduced; every rank keeps all fp32 masters and AdamW moments and applies
 *      the same update (identical inputs give identical weights);
 *   1  each region's gradients reduced to the ranks owning its elements; a rank keeps moments
 *      (and, on CUDA, fp32 masters) for its shard only, updates it, and the working weights
 *      are all-gathered (bf16 on CUDA; on the CPU the masters are the working weights);
 *   2  as 1, and the gradients are sharded too: the backward writes each region into a
 *      region-sized buffer (two for the layers, alternating, one for the largest of embedding
 *      and lm_head), reduced to the owners as soon as the region is done, into fp32 shard
 *      accumulators. The full-size gradient buffer never exists.
 * Reductions are issued from the model's gradient hooks as each region of the backward ends,
 * so on CUDA they run on NCCL's stream while the backward goes on with the next layer. Under
 * ZeRO 0 and 1 they are issued only in the backward of a rank's last micro-batch of the update
 * (the earlier ones accumulate locally); under ZeRO 2 in every backward, and ranks with fewer
 * micro-batches in an update add zero contributions at the step so every rank issues the same
 * collectives.
 *
 * A NULL rl_dp everywhere means one rank, with the plain single-process behaviour. */
#ifndef RL_TRAIN_DP_H
#define RL_TRAIN_DP_H

#include <stddef.h>

#include "core/error.h"
#include "dist/comm.h"
#include "model/model.h"
#include "train/optim.h"

typedef struct rl_dp rl_dp;

int rl_dp_create(rl_dp **out, rl_comm *comm, int zero, rl_err *err);
void rl_dp_free(rl_dp *dp);

int rl_dp_rank(const rl_dp *dp);  /* 0 for NULL */
int rl_dp_world(const rl_dp *dp); /* 1 for NULL */
int rl_dp_zero(const rl_dp *dp);

/* What a trainer calls where a single-rank run enables and zeroes gradients: plans the
 * shards for m, installs the gradient hooks, shards the masters (ZeRO >= 1 on CUDA) and
 * allocates gradients (full under ZeRO 0 and 1, the shard and region buffers under ZeRO 2).
 * With dp NULL: rl_model_enable_grads + rl_model_zero_grads. The model must outlive dp's use. */
int rl_dp_prepare(rl_dp *dp, rl_model *m, rl_err *err);
/* Before the backwards of one optimizer update: how many this rank will run. */
int rl_dp_begin_update(rl_dp *dp, int n_micro, rl_err *err);
/* Sums x over the ranks (host values: losses, counts, statistics); a no-op for NULL. */
int rl_dp_sum(rl_dp *dp, double *x, int n, rl_err *err);
/* The largest x over the ranks, likewise. */
int rl_dp_max(rl_dp *dp, double *x, int n, rl_err *err);
/* 1 when any rank has flag set (e.g. a Ctrl-C, so all stop after the same step). */
int rl_dp_any(rl_dp *dp, int flag, int *out, rl_err *err);

/* For the optimizer (optim.c): the elements it keeps moments for, and its step. */
int rl_dp_moment_range(const rl_dp *dp, size_t n_elems, size_t *lo, size_t *hi, rl_err *err);
int rl_dp_step(rl_dp *dp, rl_optim *o, double grad_scale, rl_optim_stats *stats, rl_err *err);

/* For checkpoints (checkpoint.c), collective: rank 0 receives host copies of all n_elems master
 * weights and of both moments (m then v, 2 x n_elems); the other ranks send their shards and get
 * NULLs. Free with free(). */
int rl_dp_gather(rl_dp *dp, const rl_optim *o, float **master, float **moments, rl_err *err);

#endif
