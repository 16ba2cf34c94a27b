/* ops.h — every operation the model, engine and trainers use; declared once, implemented twice:
 * backend/cpu (plain C, fp32, OpenMP: the readable reference) and backend/cuda (bf16 storage,
 * fp32 accumulation; or fp32 storage for small models, ctx.h's precision). backend/ops.c checks
 * the arguments and sends each op to ctx->kind.
 *
 * Conventions (see ctx.h for dtypes and memory):
 *  - `void *` tensors are in ctx->act_dtype; `float *` are fp32; `int32_t *` are token ids,
 *    positions or offsets. All pointers are backend memory unless marked (host).
 *  - Row-major. Token-major activations: [n_tokens, dim]; attention q is [n_tokens, n_heads,
 *    head_dim], k and v [n_tokens, n_kv_heads, head_dim].
 *  - Activation gradients are overwritten unless the op says "adds". Weight gradients (fp32)
 *    are always added to (+=), so micro-batches accumulate.
 *  - A packed batch is several sequences laid end to end; cu_seqlens[s] is where sequence s
 *    starts (n_seqs + 1 entries, cu_seqlens[0] = 0, last = n_tokens). No padding anywhere.
 *  - Pointers may be NULL only where the op says so, or when the op has no work (zero tokens,
 *    rows or elements).
 *  - Every op returns 0, or -1 with the reason in ctx->err, always as
 *    "rl_<op>: <what> <value> <problem>", e.g. "rl_attention_fwd: n_heads 12 is not a multiple
 *    of n_kv_heads 5". Callers with their own rl_err take it over with RL_TRY_OP (ctx.h).
 *
 * How the list works. Each op is one entry below,
 *     RL_OPDEF(name, (parameters), (arguments))
 * with its documentation above it: the op is int rl_<name>(parameters); the arguments name the
 * same parameters in the same order (the preprocessor cannot derive one list from the other).
 * Included plainly, this file declares the rl_<name> functions. Three files define RL_OPDEF
 * and include it again to make the rest from the same entries:
 *     backend/cpu/cpu_ops.h    declares int rl_cpu_<name>(parameters);
 *     backend/cuda/cuda_ops.h  declares int rl_cuda_<name>(parameters);  (C linkage)
 *     backend/ops.c            defines rl_<name>: check_<name>(arguments), then the backend's
 *                              function, and puts "rl_<name>: " in front of any failure.
 * So no signature is written twice, and a backend that lacks an op, or has it with other
 * parameters, does not compile.
 *
 * To add an op:
 *  1. Here: its parameter struct, if it has one, in the types section (inside the include
 *     guard); its entry in the list, with a doc comment that says the shapes, which pointers may
 *     be NULL and what is overwritten or added to. The first parameter is always rl_ctx *ctx.
 *  2. backend/ops.c: static int check_<name>(same parameters), next to the checks of its family:
 *     every shape, count, range and NULL rule of the doc comment, written with the helpers there
 *     so the message has the one format. (Forgetting it fails the build: ops.c calls it.)
 *  3. backend/cpu/<family>.c: int rl_cpu_<name>(...), the fp32 reference; backend/cuda/
 *     <family>.cu: extern "C" int rl_cuda_<name>(...), its launcher. Both may assume that the
 *     checks passed; a backend checks only what is its own limit (say why next to it) and what
 *     only it can read (the CPU reference checks values in its inputs, e.g. ids).
 *  4. Tests: tests/backend/test_<family>.c (the CPU op against a fixture made by tools/, and
 *     bad arguments refused with their message), tests/gpu/test_<family>.c (CUDA against CPU on
 *     random inputs at awkward shapes). */
#ifndef RL_BACKEND_OPS_H
#define RL_BACKEND_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "backend/ctx.h"

/* ---- parameter structs of the ops below ----------------------------------------------------- */

/* What one row of rl_sample draws with. */
typedef struct rl_sample_row {
    float temperature; /* 0 = greedy (argmax; ties to the lowest id) */
    int top_k;         /* 0 = off */
    float top_p;       /* 1 = off */
    float min_p;       /* 0 = off: drop tokens with p < min_p * p_max */
    uint64_t seed;     /* Philox key */
    uint32_t row;      /* Philox counter word 2: the completion's index in its call */
    uint32_t step;     /* Philox counter words 0-1: the token's index in its completion */
} rl_sample_row;

/* 0 when a row's filters can be sampled with (temperature 0 or finite with a finite inverse,
 * top_k >= 0, top_p in (0, 1], min_p in [0, 1]), else -1 with "<what> <value> <problem>" in err.
 * rl_sample's rows are backend memory, which its argument checks do not read: whoever fills them
 * on the host checks them with this (the engine, per request), and the CPU reference as it reads
 * them. */
int rl_sample_row_check(const rl_sample_row *row, rl_err *err);

/* One layer's view of the paged KV pool (the generation engine's block pool, engine/kv_pool.h).
 * Block b holds, for token rows r < block_size of that block, the layer's keys at
 * k + b * block_stride + r * n_kv_heads * head_dim (values likewise from v). */
typedef struct rl_paged_kv {
    void *k, *v;                 /* the layer's K and V of block 0 */
    size_t block_stride;         /* elements from a block to the next */
    int block_size;              /* tokens per block */
    const int32_t *block_tables; /* [n_seqs, max_blocks]: physical block ids */
    int max_blocks;              /* row length of block_tables */
    /* Shared prefixes, for rl_paged_attention_fwd (NULL: none; backend memory, [n_seqs] each):
     * the sequences share_lead[s] .. share_lead[s] + share_count[share_lead[s]] - 1 form a run
     * (s among them; share_count is 0 off a run's lead) whose tables begin with the same blocks
     * (the samples of one prompt), and the first share_len[s] keys of s (the run's one value,
     * at most seqlens_k[s] - 1; 0: s shares nothing) are read through the lead's table. Each
     * sequence of a run has one query. Same results as without (the keys are the same): a
     * backend may read a run's shared keys once for all of it (cascade attention); the CPU op
     * reads them through the lead's table, the CUDA kernels ignore the runs for now. */
    const int32_t *share_lead, *share_len, *share_count;
    int max_share; /* bound of share_count */
} rl_paged_kv;

/* rl_adamw_step's hyper-parameters. */
typedef struct rl_adamw_params {
    float lr, beta1, beta2, eps, weight_decay;
    int step;         /* 1-based, for bias correction */
    float grad_scale; /* gradients are multiplied by this first (clipping, 1/accumulation) */
} rl_adamw_params;

/* rl_policy_loss's clipping and KL weight. */
typedef struct rl_policy_loss_params {
    float clip_low;  /* ratio clipped to [1 - clip_low, 1 + clip_high] (DAPO: clip-higher) */
    float clip_high;
    float kl_beta;   /* weight of the k3 KL estimate to the reference; 0 = off */
} rl_policy_loss_params;

/* Slots of rl_policy_loss's stats. */
enum { RL_LOSS_STAT_LOSS, RL_LOSS_STAT_KL, RL_LOSS_STAT_CLIPPED, RL_LOSS_STAT_RATIO, RL_LOSS_N_STATS };

#endif /* the list below is outside the guard: it is read once per RL_OPDEF */

#ifndef RL_OPDEF
#define RL_OPDEF(name, params, args) int rl_##name params;
#endif

/* ---- embedding: out[t] = table[ids[t]] ---------------------------------------------------- */
RL_OPDEF(embedding_fwd, (rl_ctx *ctx, void *out, const int32_t *ids, const void *table, int n_tokens, int dim),
         (ctx, out, ids, table, n_tokens, dim))
/* dtable[ids[t]] += dout[t] (fp32, adds; repeated ids accumulate). */
RL_OPDEF(embedding_bwd, (rl_ctx *ctx, float *dtable, const int32_t *ids, const void *dout, int n_tokens, int dim),
         (ctx, dtable, ids, dout, n_tokens, dim))

/* ---- RMSNorm: out = x * rstd * weight, rstd = 1/sqrt(mean(x^2) + eps) per row --------------- */
/* rstd [n_rows] fp32 is saved for the backward. Statistics in fp32 (as transformers does). */
RL_OPDEF(rmsnorm_fwd, (rl_ctx *ctx, void *out, float *rstd, const void *x, const void *weight, int n_rows, int dim,
                       float eps),
         (ctx, out, rstd, x, weight, n_rows, dim, eps))
/* dx = (overwrite, or adds when accumulate_dx) gradient wrt x; dweight += sum over rows. The
 * add form folds the residual stream's gradient into the same pass. dx or dweight may be NULL to
 * skip it (weight is needed only for dx). */
RL_OPDEF(rmsnorm_bwd, (rl_ctx *ctx, void *dx, float *dweight, const void *dout, const void *x, const void *weight,
                       const float *rstd, int n_rows, int dim, int accumulate_dx),
         (ctx, dx, dweight, dout, x, weight, rstd, n_rows, dim, accumulate_dx))

/* ---- rotary position embedding, Qwen/Llama split-half form (rotate_half) --------------------- */
/* In place on x [n_tokens, n_heads, head_dim] (head_dim even): for i < head_dim/2, angle =
 * positions[t] * inv_freq[i]; (x[i], x[i + half]) <- (x[i] cos - x[i+half] sin,
 * x[i+half] cos + x[i] sin). inv_freq [head_dim/2] fp32 comes from the config (theta, Llama 3
 * scaling) via the model. */
RL_OPDEF(rope_fwd, (rl_ctx *ctx, void *x, const int32_t *positions, const float *inv_freq, int n_tokens, int n_heads,
                    int head_dim),
         (ctx, x, positions, inv_freq, n_tokens, n_heads, head_dim))
/* In place on dx: the transpose of the rotation (rotation by -angle). */
RL_OPDEF(rope_bwd, (rl_ctx *ctx, void *dx, const int32_t *positions, const float *inv_freq, int n_tokens, int n_heads,
                    int head_dim),
         (ctx, dx, positions, inv_freq, n_tokens, n_heads, head_dim))

/* ---- attention: softmax(q k^T * scale) v, packed variable-length, GQA ----------------------- */
/* Flash-attention varlen semantics. Query sequence s is rows cu_seqlens_q[s] ..
 * cu_seqlens_q[s+1] of q (cu_seqlens_q[0] = 0); its keys are rows cu_seqlens_k[s] ..
 * cu_seqlens_k[s] + len_k of k/v, where len_k = seqused_k ? seqused_k[s] : cu_seqlens_k[s+1] -
 * cu_seqlens_k[s]. So cu_seqlens_k (non-decreasing, cu_seqlens_k[0] >= 0; rows before it are not
 * read) cuts k/v into slabs, and seqused_k (may be NULL; 0 <= seqused_k[s] <= slab length) lets a
 * KV cache slab be longer than what is filled. Causal masks bottom-right aligned: query i of
 * a sequence with len_q queries sees keys j <= len_k - len_q + i (training: len_q == len_k;
 * decode: one query sees every cached key). Query head h reads kv head h / (n_heads /
 * n_kv_heads), so n_heads is a multiple of n_kv_heads. Writes out [total_q, n_heads, head_dim]
 * and lse [total_q, n_heads] fp32 (natural log of the softmax denominator of the scaled scores,
 * saved for the backward). max_seqlen_q and max_seqlen_k bound the query lengths and len_k (not
 * the slab lengths); CUDA sizes its grid with them. */
RL_OPDEF(attention_fwd, (rl_ctx *ctx, void *out, float *lse, const void *q, const void *k, const void *v,
                         const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k, const int32_t *seqused_k,
                         int n_seqs, int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads,
                         int head_dim, float scale, int causal),
         (ctx, out, lse, q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, n_seqs, max_seqlen_q, max_seqlen_k,
          n_heads, n_kv_heads, head_dim, scale, causal))
/* Gradients wrt q, k, v (overwritten; dk/dv sum over the query heads sharing a kv head) of the
 * forward with the same arguments: queries cut by cu_seqlens_q, keys by cu_seqlens_k (each
 * sequence's key slab, cu_seqlens_k[0] = 0, no seqused_k), causal bottom-right as the forward.
 * Training passes one cu_seqlens for both; a sequence that continues a shared prefix has its
 * queries alone and the prefix's keys then its own in its slab (model.h, shared prefixes). Key
 * rows no query sees get dk = dv = 0; so do queries that see no key (dq). */
RL_OPDEF(attention_bwd, (rl_ctx *ctx, void *dq, void *dk, void *dv, const void *dout, const void *out,
                         const float *lse, const void *q, const void *k, const void *v, const int32_t *cu_seqlens_q,
                         const int32_t *cu_seqlens_k, int n_seqs, int max_seqlen_q, int max_seqlen_k, int n_heads,
                         int n_kv_heads, int head_dim, float scale, int causal),
         (ctx, dq, dk, dv, dout, out, lse, q, k, v, cu_seqlens_q, cu_seqlens_k, n_seqs, max_seqlen_q, max_seqlen_k,
          n_heads, n_kv_heads, head_dim, scale, causal))

/* ---- SwiGLU: out = silu(gate) * up --------------------------------------------------------- */
/* gate and up rows are in_stride (>= dim) elements apart (dim for separate buffers, 2*dim when
 * they are the two halves of one fused gate_up product). out is [n_rows, dim] contiguous. */
RL_OPDEF(swiglu_fwd, (rl_ctx *ctx, void *out, const void *gate, const void *up, int n_rows, int dim, int in_stride),
         (ctx, out, gate, up, n_rows, dim, in_stride))
/* dgate, dup use the same in_stride layout as gate and up (may be one fused buffer). */
RL_OPDEF(swiglu_bwd, (rl_ctx *ctx, void *dgate, void *dup, const void *dout, const void *gate, const void *up,
                      int n_rows, int dim, int in_stride),
         (ctx, dgate, dup, dout, gate, up, n_rows, dim, in_stride))

/* ---- linear layer (torch.nn.Linear layout): out[m, n] = in[m, k] @ weight[n, k]^T + bias --- */
/* m >= 0 rows, n and k >= 1. bias [n] may be NULL. accumulate: out += instead of out =. */
RL_OPDEF(matmul_fwd, (rl_ctx *ctx, void *out, const void *in, const void *weight, const void *bias, int m, int n,
                      int k, int accumulate),
         (ctx, out, in, weight, bias, m, n, k, accumulate))
/* out[m, n] = residual[m, n] + in[m, k] @ weight[n, k]^T (out may be residual): a linear layer
 * added to the residual stream in one pass (no copy of the stream first). */
RL_OPDEF(matmul_residual_fwd, (rl_ctx *ctx, void *out, const void *residual, const void *in, const void *weight, int m,
                               int n, int k),
         (ctx, out, residual, in, weight, m, n, k))
/* The RMSNorm before a product and the product in one op: xn = rmsnorm(x) with norm_weight and
 * eps, written to xn [m, k] and rstd [m] exactly as rl_rmsnorm_fwd writes them, and out[m, n] =
 * xn @ weight[n, k]^T (+ bias [n], may be NULL), as rl_matmul_fwd. One op so that a backend can
 * normalise the few input rows of a decode step inside the product's pass over its weight. */
RL_OPDEF(rmsnorm_matmul_fwd, (rl_ctx *ctx, void *out, void *xn, float *rstd, const void *x, const void *norm_weight,
                              float eps, const void *weight, const void *bias, int m, int n, int k),
         (ctx, out, xn, rstd, x, norm_weight, eps, weight, bias, m, n, k))
/* SwiGLU and the product after it in one op: act = silu(gate) * up ([m, k], gate and up rows
 * in_stride >= k elements apart), written to act as rl_swiglu_fwd writes it, and out[m, n] =
 * residual[m, n] + act @ weight[n, k]^T as rl_matmul_residual_fwd (out may be residual). */
RL_OPDEF(swiglu_matmul_residual_fwd, (rl_ctx *ctx, void *out, void *act, const void *residual, const void *gate,
                                      const void *up, int in_stride, const void *weight, int m, int n, int k),
         (ctx, out, act, residual, gate, up, in_stride, weight, m, n, k))
/* A product added to the residual stream and the RMSNorm after it in one op: out[m, n] =
 * residual[m, n] + in[m, k] @ weight[n, k]^T as rl_matmul_residual_fwd (out may be residual),
 * then xn [m, n] and rstd [m] = the RMSNorm of out with norm_weight [n] and eps, as
 * rl_rmsnorm_fwd computes it from out as stored. One op so that a backend can normalise inside
 * the product's split-k sum: an inference forward of more rows than rl_fold_rows (ctx.h) makes
 * each layer's MLP norm and the next layer's input norm this way. */
RL_OPDEF(matmul_residual_rmsnorm_fwd, (rl_ctx *ctx, void *out, void *xn, float *rstd, const void *residual,
                                       const void *in, const void *weight, const void *norm_weight, float eps, int m,
                                       int n, int k),
         (ctx, out, xn, rstd, residual, in, weight, norm_weight, eps, m, n, k))
/* din[m, k] = dout @ weight (adds when accumulate_din); dweight[n, k] += dout^T @ in;
 * dbias[n] += column sums of dout. Any of din, dweight, dbias may be NULL to skip it. */
RL_OPDEF(matmul_bwd, (rl_ctx *ctx, void *din, float *dweight, float *dbias, const void *dout, const void *in,
                      const void *weight, int m, int n, int k, int accumulate_din),
         (ctx, din, dweight, dbias, dout, in, weight, m, n, k, accumulate_din))

/* ---- elementwise ----------------------------------------------------------------------------- */
/* y += x over n elements (act dtype). */
RL_OPDEF(add, (rl_ctx *ctx, void *y, const void *x, size_t n), (ctx, y, x, n))

/* ---- lm_head + log-softmax, chunked over the vocabulary ------------------------------------- */
/* For each token t: z = (hidden[t] @ weight^T) * inv_temperature over the vocabulary (never a
 * [n_tokens x vocab] buffer: chunks of the vocabulary with an online log-sum-exp);
 * lse[t] = logsumexp(z); logp[t] = z[targets[t]] - lse[t]; entropy[t] = -sum p log p (entropy
 * may be NULL). targets[t] < 0 marks a token with no target: logp[t] = 0. */
RL_OPDEF(lm_head_logprobs_fwd, (rl_ctx *ctx, float *logp, float *lse, float *entropy, const void *hidden,
                                const void *weight, const int32_t *targets, int n_tokens, int dim, int vocab,
                                float inv_temperature),
         (ctx, logp, lse, entropy, hidden, weight, targets, n_tokens, dim, vocab, inv_temperature))
/* Backward of sum_t dlogp[t] * logp[t] + dentropy[t] * entropy[t] over the tokens with a target:
 * with p = softmax(z) and H = entropy[t], dz = dlogp[t] (onehot(target) - p) - dentropy[t] p
 * (log p + H) (dH/dz_j = -p_j (log p_j + H)), then dhidden[t] = inv_temperature * dz @ weight
 * (overwritten), dweight += inv_temperature * dz^T @ hidden. Uses the lse and entropy saved by
 * the forward; recomputes the logits chunk by chunk. dentropy NULL: no entropy term (entropy may
 * then be NULL too). */
RL_OPDEF(lm_head_logprobs_bwd, (rl_ctx *ctx, void *dhidden, float *dweight, const float *dlogp, const float *dentropy,
                                const void *hidden, const void *weight, const int32_t *targets, const float *lse,
                                const float *entropy, int n_tokens, int dim, int vocab, float inv_temperature),
         (ctx, dhidden, dweight, dlogp, dentropy, hidden, weight, targets, lse, entropy, n_tokens, dim, vocab,
          inv_temperature))
/* Full fp32 logits for a few rows (the last position of each sequence while generating). */
RL_OPDEF(lm_head_logits, (rl_ctx *ctx, float *logits, const void *hidden, const void *weight, int n_rows, int dim,
                          int vocab),
         (ctx, logits, hidden, weight, n_rows, dim, vocab))

/* ---- value head (a value model's score, config.h) ------------------------------------------- */
/* values[r] = hidden[r] . weight + (bias ? bias[0] : 0), fp32 accumulation: weight [dim] and
 * bias [1] (may be NULL) in the act dtype, values [n_rows] fp32. */
RL_OPDEF(value_head_fwd, (rl_ctx *ctx, float *values, const void *hidden, const void *weight, const void *bias,
                          int n_rows, int dim),
         (ctx, values, hidden, weight, bias, n_rows, dim))
/* Backward of sum_r dvalues[r] * values[r]: dhidden[r] = dvalues[r] * weight (overwritten; may
 * be NULL), dweight += sum_r dvalues[r] * hidden[r] (may be NULL), dbias[0] += sum_r dvalues[r]
 * (may be NULL). */
RL_OPDEF(value_head_bwd, (rl_ctx *ctx, void *dhidden, float *dweight, float *dbias, const float *dvalues,
                          const void *hidden, const void *weight, int n_rows, int dim),
         (ctx, dhidden, dweight, dbias, dvalues, hidden, weight, n_rows, dim))

/* ---- sampling --------------------------------------------------------------------------------- */
/* One token per row of logits [n_rows, vocab] (fp32; may be modified as scratch), with the
 * parameters of rows[r] (backend [n_rows]). Filters in the order temperature, top-k, top-p,
 * min-p, then draws with Philox(key = seed, counter = (step, 0, row, 0)), so CPU and CUDA draw
 * the same uniform for the same (seed, step, row). logp[r] is the log-probability of the chosen
 * token under softmax(logits / temperature) before truncation (what the trainer recomputes;
 * greedy: temperature 1). The rows' values are the caller's to check (rl_sample_row_check). */
RL_OPDEF(sample, (rl_ctx *ctx, int32_t *tokens, float *logp, float *logits, int n_rows, int vocab,
                  const rl_sample_row *rows),
         (ctx, tokens, logp, logits, n_rows, vocab, rows))

/* ---- paged KV cache (rl_paged_kv above) -------------------------------------------------------- */
/* Scatters the keys/values of n_tokens new tokens into the pool: token t goes to slot
 * slots[t] = block * block_size + offset (slots[t] < 0: skipped, e.g. padding rows of a
 * CUDA-graph bucket). k, v: [n_tokens, n_kv_heads, head_dim]. kv (host) is read, not written
 * through: the pool's memory is. */
RL_OPDEF(kv_cache_write, (rl_ctx *ctx, const rl_paged_kv *kv, const void *k, const void *v, const int32_t *slots,
                          int n_tokens, int n_kv_heads, int head_dim),
         (ctx, kv, k, v, slots, n_tokens, n_kv_heads, head_dim))
/* Attention of new queries against the paged cache (their keys/values already written there).
 * Sequence s has query rows cu_seqlens_q[s] .. cu_seqlens_q[s+1] and seqlens_k[s] keys (its
 * cached context INCLUDING the new tokens), at block_tables[s * max_blocks + i] for key
 * positions [i * block_size, (i+1) * block_size). Causal, bottom-right aligned: query i of a
 * sequence with len_q queries sees keys j <= seqlens_k[s] - len_q + i. GQA: query head h reads
 * kv head h / (n_heads / n_kv_heads). out [total_q, n_heads, head_dim]. max_seqlen_q and
 * max_seqlen_k are upper bounds (a CUDA graph passes the capacity: kernels take the real
 * lengths from seqlens_k). seqlens_k[s] == 0 marks an inactive row (graph padding): its
 * outputs are zeros. kv (host) as for rl_kv_cache_write. */
RL_OPDEF(paged_attention_fwd, (rl_ctx *ctx, void *out, const void *q, const rl_paged_kv *kv,
                               const int32_t *cu_seqlens_q, const int32_t *seqlens_k, int n_seqs, int max_seqlen_q,
                               int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim, float scale),
         (ctx, out, q, kv, cu_seqlens_q, seqlens_k, n_seqs, max_seqlen_q, max_seqlen_k, n_heads, n_kv_heads,
          head_dim, scale))

/* A generation step's q and k preparation and KV write in one pass. For token t: q_out[t, h] =
 * rope(rmsnorm(q[t, h]) * q_norm) for each query head h (each head's own RMSNorm over head_dim,
 * Qwen3's q_norm; no norm when q_norm is NULL), the same for each kv head of k with k_norm, and
 * that key with v[t] written into the pool at slots[t] (rl_kv_cache_write's layout; slots[t] < 0:
 * nothing). q rows are q_stride elements apart, k and v rows kv_stride (one fused q|k|v
 * product: both (n_heads + 2 n_kv_heads) * head_dim). The same values as rl_rmsnorm_fwd,
 * rl_rope_fwd and rl_kv_cache_write run one after another. q_norm and k_norm are both given or
 * both NULL. */
RL_OPDEF(qk_norm_rope_cache_fwd, (rl_ctx *ctx, void *q_out, const rl_paged_kv *kv, const void *q, const void *k,
                                  const void *v, size_t q_stride, size_t kv_stride, const void *q_norm,
                                  const void *k_norm, float eps, const int32_t *positions, const float *inv_freq,
                                  const int32_t *slots, int n_tokens, int n_heads, int n_kv_heads, int head_dim),
         (ctx, q_out, kv, q, k, v, q_stride, kv_stride, q_norm, k_norm, eps, positions, inv_freq, slots, n_tokens,
          n_heads, n_kv_heads, head_dim))
/* A generation step's attention with its q/k preparation folded in: rl_qk_norm_rope_cache_fwd
 * (q_out, the pool at slots) then rl_paged_attention_fwd(out, q_out, ...), the same values
 * (the CPU op runs the two). The CUDA backend runs one kernel for decode batches of a few
 * sequences (max_seqlen_q 1, n_tokens == n_seqs, token s the last key of sequence s: its slot is
 * key seqlens_k[s] - 1), else the two ops. Token rows t of q/k/v belong to the sequences as
 * cu_seqlens_q says (n_tokens = cu_seqlens_q[n_seqs]). */
RL_OPDEF(qk_norm_rope_attention_fwd, (rl_ctx *ctx, void *out, void *q_out, const rl_paged_kv *kv, const void *q,
                                      const void *k, const void *v, size_t q_stride, size_t kv_stride,
                                      const void *q_norm, const void *k_norm, float eps, const int32_t *positions,
                                      const float *inv_freq, const int32_t *slots, int n_tokens,
                                      const int32_t *cu_seqlens_q, const int32_t *seqlens_k, int n_seqs,
                                      int max_seqlen_q, int max_seqlen_k, int n_heads, int n_kv_heads, int head_dim,
                                      float scale),
         (ctx, out, q_out, kv, q, k, v, q_stride, kv_stride, q_norm, k_norm, eps, positions, inv_freq, slots,
          n_tokens, cu_seqlens_q, seqlens_k, n_seqs, max_seqlen_q, max_seqlen_k, n_heads, n_kv_heads, head_dim,
          scale))
/* out[i] = in[rows[i]] for i < n_rows (rows of dim act-dtype elements; rows may repeat). */
RL_OPDEF(gather_rows, (rl_ctx *ctx, void *out, const void *in, const int32_t *rows, int n_rows, int dim),
         (ctx, out, in, rows, n_rows, dim))
/* The sum over gathered copies (the backward of gather_rows with repeats): out[i] = the sum of
 * in[rows[j]] for j in [offsets[i], offsets[i + 1]), i < n_rows (rows of dim act-dtype elements,
 * summed in fp32 in the order of rows and rounded once; offsets[0] = 0; an empty range gives 0;
 * out must not overlap in). */
RL_OPDEF(sum_rows, (rl_ctx *ctx, void *out, const void *in, const int32_t *offsets, const int32_t *rows, int n_rows,
                    int dim),
         (ctx, out, in, offsets, rows, n_rows, dim))
/* The decode state's advance after a sampled step, for each active row i < n_rows
 * (seqlens_k[i] > 0): tokens[i] = sampled[i]; positions[i] += 1; seqlens_k[i] += 1;
 * rows[i].step += 1; slots[i] = block_tables[i * max_blocks + positions[i] / block_size] *
 * block_size + positions[i] % block_size. Inactive rows are left as they are. So the block
 * holding position p + 1 must be in block_tables before the step that advances a row from p. */
RL_OPDEF(decode_advance, (rl_ctx *ctx, int32_t *tokens, int32_t *positions, int32_t *seqlens_k, int32_t *slots,
                          rl_sample_row *rows, const int32_t *sampled, const int32_t *block_tables, int max_blocks,
                          int block_size, int n_rows),
         (ctx, tokens, positions, seqlens_k, slots, rows, sampled, block_tables, max_blocks, block_size, n_rows))

/* ---- optimizer and gradient norm ------------------------------------------------------------ */
/* AdamW (Loshchilov & Hutter; decoupled decay): on n fp32 master weights with fp32 moments m, v.
 * param -= lr * (mhat / (sqrt(vhat) + eps) + weight_decay * param). params (host): step >= 1,
 * beta1 and beta2 in [0, 1). When working is not NULL it receives the updated weights in
 * ctx->act_dtype (the bf16 copy the CUDA forward reads; NULL on the CPU and in CUDA's fp32 mode,
 * where the masters are the working weights). */
RL_OPDEF(adamw_step, (rl_ctx *ctx, float *param, void *working, const float *grad, float *m, float *v, size_t n,
                      const rl_adamw_params *params),
         (ctx, param, working, grad, m, v, n, params))
/* *out (host) = sum of x[i]^2 in double precision. */
RL_OPDEF(sumsq, (rl_ctx *ctx, double *out, const float *x, size_t n), (ctx, out, x, n))
/* x *= s over n fp32 elements. */
RL_OPDEF(scale, (rl_ctx *ctx, float *x, float s, size_t n), (ctx, x, s, n))

/* ---- GRPO / DAPO / Dr. GRPO clipped policy loss, forward and backward fused ------------------ */
/* Per token i with weight[i] != 0: r = exp(logp - old_logp); s = min(r A, clip(r) A) with
 * A = advantage[i]; kl = exp(ref - logp) - (ref - logp) - 1 (k3, Schulman 2020);
 * loss = sum_i weight[i] * (-s + kl_beta * kl). weight carries the mask and the normalisation
 * (1/|o| per sequence, or 1/total tokens). dlogp[i] = d loss / d logp[i] (0 where weight is 0).
 * params (host): clip_low in [0, 1], clip_high >= 0; ref_logp may be NULL when kl_beta is 0.
 * stats (host, RL_LOSS_N_STATS): loss, and weight-averaged kl, clipped fraction, ratio. */
RL_OPDEF(policy_loss, (rl_ctx *ctx, float *dlogp, double *stats, const float *logp, const float *old_logp,
                       const float *ref_logp, const float *advantage, const float *weight, int n_tokens,
                       const rl_policy_loss_params *params),
         (ctx, dlogp, stats, logp, old_logp, ref_logp, advantage, weight, n_tokens, params))

#undef RL_OPDEF
