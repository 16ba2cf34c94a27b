/* generate.h — the generation engine: prompts in, completions (ids, text, per-token log-probs)
 * out, on either backend.
 *
 * rl_engine_generate runs all its requests together, like vLLM's LLM.generate: a paged KV cache
 * (kv_pool.h) shared through a block manager with prefix sharing (block_manager.h), a scheduler
 * with continuous batching, chunked prefill and preemption by recompute (scheduler.h), and a
 * runner that executes each step, decode steps from device-resident state replayed as CUDA
 * graphs (runner.h). Results come back in input order, and each can be handed to a callback as
 * soon as it finishes.
 *
 * Sampling goes through rl_sample with Philox(seed, counter = (step, row)), where step is the
 * index of the token in its completion and row the completion's index in the call (or, for a
 * request with its own parameters, the `sample` it names): a completion depends only on (model,
 * prompt, its parameters, seed, row), never on the other requests or on how the engine batched,
 * preempted or shared them.
 *
 * A completion ends at an end-of-sequence id (the config's eos ids plus the tokenizer's end
 * tokens for its chat template, rl_tok_eos_ids: <|im_end|>, <|endoftext|> or Llama's
 * <|eot_id|>, <|end_of_text|>, <|eom_id|>; the id is kept in ids and logprobs, its text
 * is not in text; ignore_eos turns this off), when a stop string appears in the decoded text
 * (ids and logprobs keep every sampled token, including the one that completed the stop string;
 * text is cut just before the stop string, as vLLM does), or after max_new_tokens, or when
 * prompt + completion reach the engine's max_model_len (both "length"). Sampled ids the
 * tokenizer does not have (the padding rows of a model's vocabulary) are kept in ids but have
 * no text.
 *
 * Deterministic mode (ctx->deterministic, backend/ctx.h): the log-prob of each sampled token is
 * computed by the training forward's own op on batch-invariant kernels, so it equals what
 * rl_model_forward gives the finished sequence, bit for bit; the requests of a call then share
 * one temperature. */
#ifndef RL_ENGINE_GENERATE_H
#define RL_ENGINE_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "backend/ops.h"
#include "core/error.h"
#include "io/tokenizer.h"
#include "model/model.h"

#define RL_ENGINE_MAX_EOS 16

typedef struct rl_sample_params {
    float temperature; /* 0 = greedy */
    int top_k;         /* 0 = off */
    float top_p;       /* 1 = off */
    float min_p;       /* 0 = off */
} rl_sample_params;

typedef struct rl_gen_params {
    rl_sample_params sample;
    int max_new_tokens;       /* >= 1 */
    uint64_t seed;
    const char *const *stop;  /* stop strings (need a tokenizer); may be NULL */
    int n_stop;
    int ignore_eos;           /* 1: eos ids do not end a completion */
} rl_gen_params;

/* Defaults: temperature 1, no truncation, 256 new tokens, seed 0, no stop strings. */
rl_gen_params rl_gen_params_default(void);

typedef struct rl_gen_prompt {
    const int32_t *ids;           /* host */
    int n_ids;
    const rl_gen_params *params;  /* this request's own parameters, or NULL for the call's */
    int sample;                   /* with params: its Philox row (e.g. the index among a request's n
                                     samples, so that it draws the same in any batch) */
} rl_gen_prompt;

typedef enum { RL_FINISH_LENGTH = 0, RL_FINISH_EOS = 1, RL_FINISH_STOP = 2 } rl_finish_reason;

typedef struct rl_gen_result {
    int32_t *ids;     /* the sampled tokens (malloc'd) */
    float *logprobs;  /* [n_ids]: log-prob of each under the unmodified softmax(logits / T) */
    int n_ids;
    char *text;       /* NUL-terminated UTF-8 (malloc'd); NULL when the engine has no tokenizer */
    size_t text_len;
    rl_finish_reason finish;
    char *error;      /* malloc'd: why this request was refused (then nothing else is set) */
} rl_gen_result;

/* "length", "eos", "stop". */
const char *rl_finish_name(rl_finish_reason finish);

typedef struct rl_engine_options {
    int max_num_seqs;              /* sequences running at once (default 256) */
    int max_num_batched_tokens;    /* tokens per step, >= max_num_seqs (default 8192) */
    double gpu_memory_utilization; /* fraction of the free memory the KV pool may take (default 0.9) */
    int block_size;                /* tokens per KV block (default 16) */
    int n_blocks;                  /* > 0: exactly this many blocks instead of the budget */
    int max_model_len;             /* prompt + completion at most; 0: max_position_embeddings */
    int prefix_sharing;            /* group forks and the prefix cache (default 1) */
    int graphs;                    /* capture decode steps as graphs where the backend can (default 1) */
    int pad_decode;                /* pad decode steps to graph bucket sizes without graphs too (tests) */
    int cascade;                   /* shared-prefix runs of decode rows for the attention (rl_bm_share_runs;
                                      the CPU op reads a run's prompt keys through its lead's table; the
                                      CUDA kernels ignore runs: a cascade kernel measured slower,
                                      docs/benchmarks.md; default 0) */
    int pool_seqs, pool_seq_len;   /* > 0 (training): the pool holds what pool_seqs sequences of
                                      pool_seq_len tokens can use (rl_engine_pool_blocks), the memory
                                      fraction only capping it; 0: the fraction's pool (CUDA) */
} rl_engine_options;

rl_engine_options rl_engine_options_default(void);

/* A trainer's engine options: base (NULL: the defaults) with the pool sized by what one step can
 * use, n_seqs sequences (prompts x group) of at most seq_len tokens (longest prompt + max new
 * tokens), instead of a fraction of the free memory: a GRPO step of 64 x 400 tokens needs about
 * 3 GB of KV cache, not the 55 GB that 0.9 of an H100's free memory gives, and the rest stays
 * free for the update. `rlc generate` keeps the fraction (vLLM's rule). */
rl_engine_options rl_engine_options_for_training(const rl_engine_options *base, int n_seqs, int seq_len);

/* The blocks of a pool sized by need (opt->pool_seqs > 0): every sequence's tokens rounded up to
 * whole blocks, plus one block per sequence of headroom (the copy-on-write of a shared partial
 * prompt block and the prefix cache's blocks); 0 when opt sizes by the memory fraction. */
long rl_engine_pool_blocks(const rl_engine_options *opt);

typedef struct rl_engine rl_engine;

/* An engine over a loaded model (not owned; it must outlive the engine). tok may be NULL: no
 * text, no stop strings, eos ids from the config only. opt NULL: the defaults. The KV pool
 * and the step buffers are made by the first rl_engine_generate and kept (the pool then takes
 * its share of the memory left by everything made before it, e.g. a trainer's state), and so is
 * the prefix cache: after the weights change, rl_engine_reset_prefix_cache. */
int rl_engine_create(rl_engine **out, rl_model *m, const rl_tokenizer *tok, const rl_engine_options *opt,
                     rl_err *err);
void rl_engine_free(rl_engine *e);

/* Forgets the prefix cache: call it when the model's weights change (a trainer's update), since
 * cached keys and values were computed with the old ones (as vLLM's reset_prefix_cache). */
void rl_engine_reset_prefix_cache(rl_engine *e);

/* Frees the KV pool, and with it the prefix cache and the captured decode graphs, until the next
 * rl_engine_generate makes it again (a trainer's pool, rl_engine_options_for_training, comes
 * back the same size): a trainer's update then has that memory (PPO releases it after each
 * rollout, so its peak is the larger of the pool and the training activations, not their sum).
 * rl_engine_stats_get still reports the released pool's size. */
void rl_engine_release_pool(rl_engine *e);

/* The end-of-sequence ids the engine stops on. */
int rl_engine_eos_ids(const rl_engine *e, const int32_t **ids);

/* Called as each result is complete (refused requests first), with the request's index. */
typedef void (*rl_gen_done_fn)(void *user, int index, const rl_gen_result *result);

/* Generates one completion per prompt into results[0 .. n) (each freed with
 * rl_gen_result_free, also after a failure). A request that cannot run (empty prompt, ids
 * outside the vocabulary, no room under max_model_len, bad parameters, longer than the whole
 * KV pool) gets results[i].error and the others still run; the call then returns -1 with err
 * naming the first such request. When the call itself fails (a backend error), it returns -1
 * and every result that did not finish carries that error. So after any call each result is
 * either complete or has an error. on_done may be NULL. */
int rl_engine_generate(rl_engine *e, const rl_gen_prompt *prompts, int n, const rl_gen_params *params,
                       rl_gen_result *results, rl_gen_done_fn on_done, void *user, rl_err *err);

void rl_gen_result_free(rl_gen_result *r);

/* What the last rl_engine_generate did, and the pool it had. */
typedef struct rl_engine_stats {
    int n_blocks, block_size;
    size_t pool_bytes, runner_bytes;
    long steps, decode_steps, graph_replays, mixed_steps;
    long prompt_tokens;   /* prompt positions computed (group sharing and the prefix cache save some) */
    long cached_tokens;   /* prompt positions found in the prefix cache */
    long generated_tokens;
    long preemptions, forks, cow_copies;
    long shared_keys;     /* decode keys read once for a run of samples sharing a prompt, not by each */
    int peak_blocks;      /* most blocks held by sequences at once */
} rl_engine_stats;

void rl_engine_stats_get(const rl_engine *e, rl_engine_stats *s);

#endif
