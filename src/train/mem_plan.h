/* mem_plan.h — the memory one rank needs to train a model, from its config alone, before
 * anything is loaded: so a run that cannot fit is refused with the numbers (needed against
 * available, part by part, and the GPU count that would fit) instead of failing half-way.
 *
 * With Psi parameters, N ranks and ZeRO stage z (train/dp.h), per rank on CUDA:
 *   working weights  2 Psi          bf16, every rank has all of them
 *   fp32 masters     4 Psi / N'     N' = N under ZeRO 1 and 2, else 1
 *   AdamW moments    8 Psi / N'
 *   fp32 gradients   4 Psi, or 4 Psi / N under ZeRO 2
 * which is what ZeRO's paper predicts for this mix of dtypes (its 2 + 2 + 12 bytes become
 * 2 + 4 + 12 here: rlc keeps fp32 gradients); rlc adds the ZeRO 2 region buffers (one sized for
 * the embedding or lm_head, two for layers), the activations for --max-tokens, and a
 * workspace allowance (cuBLASLt, NCCL, scratch), a frozen KL reference (bf16 weights only on
 * CUDA) and PPO's value model. On the CPU the masters are the working
 * weights (4 Psi, never sharded). Generation's key/value cache is not counted: PPO releases it
 * for the update and makes the activations only then (ppo.c), so its step needs the larger of
 * the two; GRPO keeps a step's cache (a few GiB for 64 x 400 tokens of Qwen3-0.6B) beside it. */
#ifndef RL_TRAIN_MEM_PLAN_H
#define RL_TRAIN_MEM_PLAN_H

#include <stddef.h>

#include "backend/ctx.h"
#include "core/error.h"
#include "engine/generate.h"
#include "io/config.h"
#include "model/model.h"

typedef struct rl_mem_plan {
    rl_model_config cfg;
    int world, zero, cuda, max_tokens, with_reference;
    rl_dtype act; /* the activations' and working weights' dtype (ctx->act_dtype) */
    rl_acts_mode mode;
    double n_params;
    size_t weights, master, moments, grads; /* as ZeRO counts */
    size_t buckets, acts, workspace, reference; /* what rlc adds; reference: a frozen copy (KL) */
    size_t value;                               /* PPO's value model (rl_mem_plan_add_value) */
    size_t engine, kv;                          /* an RL trainer's engine: its step buffers, and the KV
                                                   pool's share of the peak (rl_mem_plan_add_engine) */
    size_t zero_total, total;
} rl_mem_plan;

void rl_mem_plan_make(rl_mem_plan *p, const rl_model_config *cfg, rl_backend_kind backend, rl_dtype act, int world,
                      int zero, int max_tokens, rl_acts_mode mode, int with_reference);
/* Adds a PPO value model of value_cfg: its weights, masters, moments and gradients (sharded as
 * the plan's --zero shards the policy's, with its own ZeRO-2 region buffers; on one rank the
 * policy's gradient buffer serves both, so only what the value model has beyond it), and its own
 * activations unless it has the planned model's shape (then it shares them). */
void rl_mem_plan_add_value(rl_mem_plan *p, const rl_model_config *value_cfg);
/* Adds an RL trainer's generation engine of options eng (made once, kept for the run): its step
 * buffers (inference activations for eng->max_num_batched_tokens tokens and fp32 logits for
 * eng->max_num_seqs rows), and its KV pool of kv_bytes (0 when not known yet, e.g. before the
 * prompts are read): whole when the trainer keeps it beside its activations (GRPO), else only
 * what it exceeds the activations by (releases_pool: PPO frees it for the update). */
void rl_mem_plan_add_engine(rl_mem_plan *p, const rl_engine_options *eng, size_t kv_bytes, int releases_pool);
/* Refuses (err) when the plan exceeds the free memory of ctx's device; CPU contexts pass. */
int rl_mem_plan_check(const rl_mem_plan *p, rl_ctx *ctx, rl_err *err);
/* "81.9 GiB as ZeRO counts (weights 15.3, masters 15.3, moments 30.5, gradients 15.3) + ..." */
void rl_mem_plan_describe(const rl_mem_plan *p, char *out, size_t size);

#endif
