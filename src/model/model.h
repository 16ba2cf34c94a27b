/* model.h — the decoder-only transformer (Qwen3; Qwen2 and Llama by config flags): parameters,
 * forward to per-token log-probs, backward into one gradient buffer, and the paged forward the
 * generation engine drives (keys and values in the engine's block pool).
 *
 * Parameters. Every tensor of the checkpoint (rl_config_tensor_specs order) has an entry in
 * m->params with its HF name, shape and offset (in elements) into ONE contiguous fp32 buffer
 * m->master in backend memory. m->grads (fp32, after rl_model_enable_grads) and the trainer's
 * AdamW moments use the same layout, so optimizer code runs over the buffers as flat arrays.
 * The forward reads m->working, in ctx->act_dtype with the same element offsets: where that is
 * fp32 (the CPU, and CUDA's fp32 mode for small models: backend/ctx.h) it IS m->master; on CUDA in
 * bf16 a bf16 copy that rl_adamw_step refreshes (pass rl_model_working_copy(m) as its `working`
 * argument) or rl_model_refresh_working rewrites from the masters. Creating a model is what
 * settles a CUDA context's auto precision (rl_ctx_pick_act_dtype, from its parameter count).
 * Tied embeddings: there is no lm_head entry; the lm_head reads model.embed_tokens.weight and
 * its gradient adds into that tensor's gradient.
 *
 * Log-prob alignment (used everywhere: forward, backward, CLI). For a packed batch of
 * sequences, logp[t] = log p(tokens[t] | the tokens of its sequence before t), i.e. aligned
 * with the token it scores; logp[t] = 0 at the first token of every sequence (nothing
 * predicts it). A trainer masks completion tokens with the same index it uses for the tokens.
 *
 * Value models (config.h: a one-label score head instead of the lm_head; PPO's critic). The
 * training forward and backward are the same calls: where a causal LM writes logp[t], a value
 * model writes values[t] = score(hidden state of token t - 1) (+ bias), i.e. the value of the
 * state in which token t was chosen, aligned like log-probs (0 at each sequence's first token;
 * inv_temperature is ignored, entropy must be NULL), and rl_model_backward takes dvalues.
 * A value model does not generate (rl_model_forward_paged refuses it).
 *
 * Activations live in an rl_acts (activations.c): one backend allocation planned for a maximum
 * token count and a mode, so that the forward never allocates. Training mode keeps what the
 * backward needs for every layer; checkpoint mode keeps only each layer's input and recomputes
 * the layer during the backward; inference mode keeps nothing beyond one layer's scratch.
 * An rl_acts belongs to one model and may be freed and re-created at will (e.g. released
 * during generation).
 *
 * Data parallelism (train/dp.h) changes two things, both invisible to a single-rank run:
 * gradient hooks (rl_grad_hooks) see each region of the flat layout when the backward starts
 * and finishes writing its gradients, and may hand out the memory they go to; and the fp32
 * masters may be sharded (rl_model_shard_master: m->master then holds only elements
 * [master_lo, master_lo + master_count), the working copy stays whole).
 *
 * Not thread-safe: one model and its acts are used by one thread at a time. */
#ifndef RL_MODEL_MODEL_H
#define RL_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/ctx.h"
#include "core/error.h"
#include "io/config.h"

typedef struct rl_param {
    char name[96];     /* HF tensor name */
    int n_dims;        /* 1 or 2 */
    int64_t shape[2];  /* [out, in] for linear weights */
    size_t offset;     /* elements from the start of master / grads / working */
    size_t count;      /* elements */
    int weight_decay;  /* 1 for matrices (projections, embeddings), 0 for norms and biases */
} rl_param;

/* Element offsets of one layer's tensors; SIZE_MAX where the architecture has none. */
typedef struct rl_layer_offsets {
    size_t attn_norm, q, k, v, o, q_bias, k_bias, v_bias, q_norm, k_norm;
    size_t mlp_norm, gate, up, down;
} rl_layer_offsets;

typedef struct rl_model {
    rl_model_config config;
    rl_ctx *ctx; /* not owned */
    rl_param *params;
    int n_params;
    size_t n_elems;            /* elements in each of master, grads, working */
    float *master;             /* fp32 master weights (backend) */
    float *grads;              /* fp32 gradients (backend), NULL until rl_model_enable_grads */
    int grads_borrowed;        /* grads is the caller's (rl_model_use_grads): not freed with m */
    void *working;             /* ctx->act_dtype weights the forward reads (== master on CPU) */
    rl_layer_offsets *layers;  /* [n_layers] */
    size_t embed, final_norm, lm_head; /* lm_head == embed when tied; SIZE_MAX in a value model */
    size_t score, score_bias;  /* a value model's head (config.h); SIZE_MAX where absent */
    float *inv_freq;           /* RoPE inverse frequencies [head_dim / 2] (backend) */
    size_t master_lo, master_count; /* the elements master holds: 0 and n_elems unless sharded */
    const struct rl_grad_hooks *grad_hooks; /* NULL: gradients go to grads, nobody is told */
    int fused_qkv;             /* q, k, v weights adjacent (no biases): one product in inference */
    int fused_gate_up;         /* gate, up weights adjacent: one product in inference */
} rl_model;

/* ---- creation, loading, saving ---------------------------------------------------------- */

/* Loads dir/config.json and the safetensors checkpoint in dir (any of fp32/fp16/bf16), after
 * checking the tensors against rl_config_tensor_specs (names, shapes, nothing extra). */
int rl_model_load(rl_model *m, rl_ctx *ctx, const char *dir, rl_err *err);

/* A value model (see "Value models" above) from dir: dir's own when it is one (a trained reward
 * or value model), else dir's causal LM with its lm_head dropped and a new
 * <Arch>ForTokenClassification head (score.weight and score.bias) of zeros: every value starts
 * at 0 and the first updates move the head alone (the trunk's gradient is the head's weight). */
int rl_model_load_value(rl_model *m, rl_ctx *ctx, const char *dir, rl_err *err);

/* A freshly initialised model as transformers initialises one: every linear and embedding
 * weight ~ normal(0, 0.02), biases 0, RMSNorm weights 1. Deterministic in seed. */
int rl_model_init_random(rl_model *m, rl_ctx *ctx, const rl_model_config *cfg, uint64_t seed,
                         rl_err *err);

/* Writes dir/config.json and dir/model.safetensors (tensors stored as dtype: RL_F32 or
 * RL_BF16; config torch_dtype set to match) that transformers' from_pretrained loads. The
 * masters must not be sharded. */
int rl_model_save(const rl_model *m, const char *dir, rl_dtype dtype, rl_err *err);
/* The same from a host copy of all n_elems master weights (e.g. gathered from ranks). */
int rl_model_save_host(const rl_model *m, const float *master, const char *dir, rl_dtype dtype, rl_err *err);

/* Only the parameter table and offsets of a model of cfg, no buffers (ctx NULL): what
 * rl_model_save_host needs to write a checkpoint from host copies. Freed by rl_model_free. */
int rl_model_table(rl_model *m, const rl_model_config *cfg, rl_err *err);

/* Safe on a model whose load or init failed (it is left zeroed). */
void rl_model_free(rl_model *m);

/* A frozen model (a KL reference: forward only) drops its fp32 masters where the forward reads
 * a separate working copy (CUDA: only the bf16 weights stay); a no-op on the CPU. It can then
 * not be trained, saved or sharded. */
void rl_model_freeze(rl_model *m);

/* Allocates m->grads (zeroed); a no-op when already there. */
int rl_model_enable_grads(rl_model *m, rl_err *err);
int rl_model_zero_grads(rl_model *m, rl_err *err);
/* Points m's gradients at grads (backend, at least m->n_elems fp32, zeroed; the caller's, freed
 * by it after m stops using it) and frees m's own: models whose backwards and updates never
 * interleave (PPO's policy and value model: each update zeroes what its backward wrote) then
 * share one buffer. NULL gives m no gradients (rl_model_enable_grads makes its own again). */
void rl_model_use_grads(rl_model *m, float *grads);

/* The separate working copy to refresh after the masters change, or NULL when the forward
 * reads the masters directly (CPU). This is rl_adamw_step's `working` argument. */
static inline void *rl_model_working_copy(const rl_model *m)
{
    return m->working == (void *)m->master ? NULL : m->working;
}
/* Rewrites the working weights from the masters (after the masters were changed by anything
 * other than rl_adamw_step with rl_model_working_copy). A no-op on the CPU. */
int rl_model_refresh_working(rl_model *m, rl_err *err);

/* Keeps only elements [lo, lo + count) of the fp32 masters (a data-parallel rank updates its
 * shard; train/dp.c all-gathers the working copy). Needs a separate working copy (CUDA); the
 * CPU forward reads the masters themselves. */
int rl_model_shard_master(rl_model *m, size_t lo, size_t count, rl_err *err);

/* Index into m->params of the tensor named name, or -1. */
int rl_model_find_param(const rl_model *m, const char *name);

/* ---- activations ------------------------------------------------------------------------- */

typedef enum {
    RL_ACTS_INFER,           /* forward only (log-probs, paged generation) */
    RL_ACTS_TRAIN,           /* forward keeps everything the backward reads */
    RL_ACTS_TRAIN_CHECKPOINT /* keeps each layer's input; the backward recomputes the layer */
} rl_acts_mode;

typedef struct rl_acts rl_acts;

/* Bytes rl_acts_create would allocate for a model of cfg with activations of act_dtype (0 when
 * the planning tables cannot be allocated): for memory estimates before loading anything. (In
 * inference mode an upper bound: a layout that does not fuse q, k, v takes less.) */
size_t rl_acts_plan_bytes(const rl_model_config *cfg, rl_dtype act_dtype, int max_tokens, rl_acts_mode mode);
/* Plans and allocates the activations for batches of at most max_tokens tokens. */
int rl_acts_create(rl_acts **out, const rl_model *m, int max_tokens, rl_acts_mode mode,
                   rl_err *err);
void rl_acts_free(rl_acts *a);
/* Hands training-mode activations to another model of the same shape (layers, widths, heads;
 * the vocabulary and the head may differ), e.g. PPO's policy and value model, which never hold
 * a batch at the same time: the last forward's batch is forgotten. */
int rl_acts_share(rl_acts *a, const rl_model *m, rl_err *err);
/* Bytes of backend memory the activations hold. */
size_t rl_acts_bytes(const rl_acts *a);

/* ---- training forward / backward --------------------------------------------------------- */

/* Forward over a packed batch: tokens (host) [n_tokens], cu_seqlens (host) [n_seqs + 1]
 * (cu_seqlens[0] = 0, last = n_tokens <= the acts' max_tokens, no empty sequence, none longer
 * than the config's max_position_embeddings); positions restart at 0 in each sequence. Logits are scaled by inv_temperature before the softmax.
 * Writes logp (backend, [n_tokens], aligned as described at the top) and, when entropy is not
 * NULL, entropy[t] (backend) = entropy of the distribution token t was drawn from (0 at each
 * sequence's first token). In a training mode the acts then hold this batch for
 * rl_model_backward. */
int rl_model_forward(rl_model *m, rl_acts *a, const int32_t *tokens, const int32_t *cu_seqlens,
                     int n_seqs, float inv_temperature, float *logp, float *entropy,
                     rl_err *err);

/* rl_model_forward where sequences may continue another one of the batch, whose rows then run
 * once for all of them (GRPO's samples of one prompt: the prompt without its last token once,
 * each sample as [last prompt token, its completion]). prefix_of (host, [n_seqs]): -1, or the
 * index p < s of a sequence with no prefix itself; sequence s then attends to all of p's keys
 * before its own (causally) and its positions start at p's length, so its rows get the values of
 * p's tokens followed by s's as one sequence (p + s at most max_position_embeddings). Log-probs
 * and entropies stay per sequence: 0 at s's first token, and p's last row has no target. The
 * key slabs (p's rows copied once per continuation) must fit the acts' max_tokens rows. The
 * backward adds each continuation's gradient into p's rows. */
int rl_model_forward_shared(rl_model *m, rl_acts *a, const int32_t *tokens, const int32_t *cu_seqlens,
                            const int32_t *prefix_of, int n_seqs, float inv_temperature, float *logp, float *entropy,
                            rl_err *err);

/* Backward of sum_t dlogp[t] * logp[t] for the batch of the last rl_model_forward on a
 * (training-mode acts): dlogp (backend, [n_tokens], same alignment; entries at sequence starts
 * are ignored). Gradients are ADDED to m->grads (micro-batches accumulate), or to where the
 * gradient hooks say. */
int rl_model_backward(rl_model *m, rl_acts *a, const float *dlogp, rl_err *err);
/* The same for sum_t dlogp[t] logp[t] + dentropy[t] entropy[t] (an entropy bonus: PPO's
 * entropy_coef), dentropy (backend, [n_tokens], aligned as entropy; NULL: none). The forward
 * must have computed the entropies (entropy not NULL); a value model has none. */
int rl_model_backward_entropy(rl_model *m, rl_acts *a, const float *dlogp, const float *dentropy, rl_err *err);

/* ---- a value head on a causal LM (PPO's shared-trunk critic) ---------------------------------- */

/* A one-label score head on a causal LM's final hidden state (the normed x_L its lm_head reads),
 * kept outside the model's parameters (the trainer owns it): weight [hidden_size] and bias [1]
 * (may be NULL) in ctx->act_dtype, as the forward reads them; dweight [hidden_size] and dbias [1]
 * fp32 gradients the backward ADDS to. */
typedef struct rl_value_head {
    const void *weight, *bias;
    float *dweight, *dbias;
} rl_value_head;

/* rl_model_forward of a causal LM that also writes values (backend, [n_tokens], aligned as a
 * value model's: values[t] = head(hidden state of token t - 1), 0 at each sequence's first
 * token) when head is not NULL. logp NULL (with a head, no entropy): the lm_head is not run and
 * the acts keep no batch to differentiate (old values without log-probs). */
int rl_model_forward_value(rl_model *m, rl_acts *a, const int32_t *tokens, const int32_t *cu_seqlens, int n_seqs,
                           float inv_temperature, float *logp, float *entropy, const rl_value_head *head,
                           float *values, rl_err *err);
/* rl_model_backward_entropy plus sum_t dvalues[t] values[t] through head (NULL or dvalues NULL:
 * none): the head's gradients into head->dweight / dbias, its gradient wrt the hidden state
 * added to the lm_head's, so the trunk gets both in one backward. */
int rl_model_backward_value(rl_model *m, rl_acts *a, const float *dlogp, const float *dentropy,
                            const rl_value_head *head, const float *dvalues, rl_err *err);

/* ---- gradient hooks ---------------------------------------------------------------------- */

/* The backward writes the gradients region by region; in the order it finishes them: region 0
 * the tail (final norm and, untied, lm_head), regions 1 .. n_layers the layers from the last
 * to the first, region n_layers + 1 the embedding. Each is a contiguous range of the flat
 * layout; together they cover it. */
typedef struct rl_grad_region {
    size_t offset, count;
} rl_grad_region;

/* Fills regions[0 .. n_layers + 2) in that order. */
void rl_model_grad_regions(const rl_model *m, rl_grad_region *regions);

typedef struct rl_grad_hooks {
    void *user;
    /* Where the gradient of flat element `offset` lives (fp32, backend): asked for the first
     * element of each tensor the backward writes, inside a region between its begin and end.
     * NULL: m->grads + offset. */
    float *(*at)(void *user, size_t offset);
    /* Called before the backward first writes into region r, and after it last wrote there.
     * With tied embeddings the lm_head writes into the embedding's region first, so region
     * n_layers + 1 begins before region 0 and ends last. */
    int (*begin)(void *user, int region, rl_err *err);
    int (*end)(void *user, int region, rl_err *err);
} rl_grad_hooks;

/* ---- paged forward for generation --------------------------------------------------------- */

/* What the model needs of the engine's KV block pool (engine/kv_pool.h owns it): one backend
 * allocation, block-major. Block b holds, for every layer l, that layer's keys then values of
 * block_size tokens: element offset of (block b, layer l, K or V, row r, kv head h, dim d) is
 *   b * block_stride + (2 l + kv) * block_size * n_kv_heads * head_dim
 *     + (r * n_kv_heads + h) * head_dim + d,
 * block_stride = n_layers * 2 * block_size * n_kv_heads * head_dim (ctx->act_dtype elements),
 * so a whole block (all layers) is one contiguous range. */
typedef struct rl_kv_pool_view {
    void *base;
    size_t block_stride;
    int block_size, n_blocks;
} rl_kv_pool_view;

/* One step's batch. Every pointer is backend memory filled by the engine (the forward reads
 * none of it on the host). Sequence s has new tokens cu_seqlens_q[s] .. cu_seqlens_q[s + 1]
 * at positions positions[t], written to pool slots slots[t] (block * block_size + offset; < 0:
 * not written, a padding row), and attends to its seqlens_k[s] cached tokens (including the new
 * ones) through its block table row; seqlens_k[s] = 0 marks a padding row of a CUDA-graph
 * bucket. max_seqlen_q / max_seqlen_k bound the lengths (a captured decode step passes the
 * capacity). */
typedef struct rl_paged_batch {
    int n_tokens, n_seqs;                      /* decode graph: n_tokens == n_seqs == bucket */
    const int32_t *tokens, *positions, *slots; /* [n_tokens] */
    const int32_t *cu_seqlens_q;               /* [n_seqs + 1] */
    const int32_t *seqlens_k;                  /* [n_seqs] */
    const int32_t *block_tables;               /* [n_seqs, max_blocks] */
    int max_blocks, max_seqlen_q, max_seqlen_k;
    const int32_t *logit_rows;                 /* [n_logits]: token rows whose next-token logits are wanted (may repeat) */
    int n_logits;
    const int32_t *share_lead, *share_len, *share_count; /* shared-prefix runs (rl_paged_kv) or NULL */
    int max_share;
} rl_paged_batch;

/* Appends the batch's keys and values to the pool and writes fp32 logits [n_logits, vocab] of
 * the logit rows. Needs inference-mode acts planned for at least n_tokens tokens and n_logits
 * rows. Host work depends on nothing in backend memory and allocates nothing, so a decode step
 * can be captured as a graph (after one un-captured run of the same shape). */
int rl_model_forward_paged(rl_model *m, rl_acts *a, const rl_kv_pool_view *pool,
                           const rl_paged_batch *b, float *logits, rl_err *err);

/* logp[i] (backend) = log softmax(logits_i * inv_temperature)[targets[i]] for the first n_rows
 * logit rows of the last rl_model_forward_paged on a, with targets (backend) [n_rows], computed
 * by the op the training forward scores tokens with (rl_lm_head_logprobs_fwd): with
 * ctx->deterministic the engine's log-probs are then the trainer's, bit for bit. */
int rl_model_paged_logprobs(rl_model *m, rl_acts *a, const int32_t *targets, int n_rows,
                            float inv_temperature, float *logp, rl_err *err);

#endif
