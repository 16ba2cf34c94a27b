/* acts_internal.h — the layout of rl_acts, shared by activations.c (planning) and qwen3.c
 * (forward, backward, cached forward). Not part of the model's interface.
 *
 * All buffers are pieces of one backend allocation. Shapes, with T = max_tokens, D = hidden,
 * H/KV = query/kv heads, hd = head_dim, I = intermediate:
 *   x[l]        [T, D]  input of layer l; x[n_layers] is the last layer's output
 *   per layer   xn1 [T, D], rstd1 [T], q_raw [T, H*hd], k_raw [T, KV*hd] (qk_norm only),
 *               q_rstd [T*H], k_rstd [T*KV] (qk_norm only), q [T, H*hd], k, v [T, KV*hd]
 *               (after norm and RoPE), attn [T, H*hd], lse [T*H], h [T, D] (residual after
 *               attention), xn2 [T, D], rstd2 [T], gate, up, act [T, I]
 * INFER mode adds what the paged forward (generation) needs: the fused products qkv
 * [T, (H + 2 KV) hd] (when m->fused_qkv) and gate_up [T, 2 I] (gate and up then are the two
 * halves of gate_up for the unfused forward), the row lists that split qkv into q, k, v (built
 * once here, so the forward uploads nothing), and gather [T, D] for the logit rows.
 * The per-layer set splits in two:
 *   kept        q_raw, k_raw (q, k when there is no qk_norm: RoPE rotates them in place),
 *               v, attn, lse, h, gate, up: costly to remake (matmuls, attention)
 *   remade      xn1, rstd1, xn2, rstd2, act, and with qk_norm q, k, q_rstd, k_rstd: one
 *               RMSNorm / RoPE / SwiGLU forward from x[l], h, q_raw, k_raw, gate and up
 * Modes: TRAIN gives every layer its own x and kept set but ONE remade set, which each layer's
 * forward overwrites and layer_bwd refills with the same forward ops (so bit-identical values)
 * just before reading it; on Qwen3-0.6B in bf16 that keeps 28,736 bytes per token and layer
 * (x 2,048 + kept 26,688) instead of 45,224. CHECKPOINT gives each layer its own x but one
 * shared set for the rest (the backward re-runs the whole layer); INFER shares everything: every
 * x[l] is one buffer and h another (the residual stream goes x -> h -> x, never added to in
 * place; activations.c says why).
 * So after a forward the remade set holds the last layer's values only; nothing outside
 * qwen3.c reads the per-layer buffers. */
#ifndef RL_MODEL_ACTS_INTERNAL_H
#define RL_MODEL_ACTS_INTERNAL_H

#include <stdint.h>

#include "model/model.h"

typedef struct rl_layer_acts {
    void *xn1, *q_raw, *k_raw, *q, *k, *v, *attn, *h, *xn2, *gate, *up, *act;
    float *rstd1, *q_rstd, *k_rstd, *lse, *rstd2;
} rl_layer_acts;

struct rl_acts {
    const rl_model *model;
    rl_acts_mode mode;
    int max_tokens;
    void *base; /* the one backend allocation */
    size_t bytes;

    void **x;              /* [n_layers + 1] */
    rl_layer_acts *layers; /* [n_layers] */
    void *xf;              /* final norm output [T, D] */
    float *rstd_f;         /* [T] */
    float *head_lse, *logp_next, *entropy_next; /* [T] each; row t scores token t + 1 */
    int32_t *tokens, *positions, *targets;      /* [T] each (backend) */
    int32_t *cu_q;                              /* [T + 1] (backend) */
    /* shared prefixes (rl_model_forward_shared): each sequence's key slab is its prefix's rows then
     * its own, copied by kmap [T] into kx, vx [T, KV*hd] (cu_k [T + 1] its slab offsets); kinv
     * lists, per row, the slab rows that copy it (offsets [T + 1], rows [T]) for the dk/dv sums of
     * dkx, dvx [T, KV*hd] (training modes) */
    void *kx, *vx, *dkx, *dvx;
    int32_t *kmap, *cu_k, *kinv_off, *kinv_rows; /* backend */

    /* backward scratch (training modes only) */
    void *dres, *dxn, *dattn, *dq, *dk, *dv, *dq_raw, *dk_raw, *dgate, *dup, *dact;
    float *dlogp_next, *dentropy_next, *dvalues_next;

    /* generation only (INFER mode) */
    void *gather;                        /* logit rows gathered for the lm_head [T, D] */
    void *qkv, *gate_up;                 /* fused products (qkv NULL unless m->fused_qkv) */
    int32_t *split_q, *split_k, *split_v; /* rows of qkv seen as [T (H + 2 KV), hd] holding
                                            q [T H], k [T KV], v [T KV] in token order */
    int n_logits;                        /* logit rows of the last paged forward */

    /* host mirrors [T + 1] of the batch being run */
    int32_t *host_positions, *host_targets, *host_cu, *host_kmap, *host_cu_k, *host_kinv_off, *host_kinv_rows;

    /* the batch of the last rl_model_forward (what rl_model_backward differentiates) */
    int n_tokens, n_seqs, max_seqlen;
    int n_kx, max_seqlen_k; /* slab rows (0: no shared prefix) and the longest slab */
    float inv_temperature;
    int have_batch;
    int have_entropy; /* the forward wrote entropy_next (rl_model_backward_entropy needs it) */
};

#endif
