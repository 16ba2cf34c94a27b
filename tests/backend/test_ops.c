/* test_ops.c — the argument checks of backend/ops.c: every rule of every op refuses with its
 * exact message ("rl_<op>: <what> <value> <problem>"), a refused op leaves its outputs alone, and
 * an op with no work accepts NULL buffers. (The values the CPU reference checks inside tensors,
 * ids or cu_seqlens, are tested with their families.) */
#include <math.h>

#include "op_fixture.h"

#define REFUSED(call, want) fx_expect_refused(&ctx, (call), want)
#define ACCEPTED(call) cr_expect_eq((call), 0, "%s: %s", #call, ctx.err.msg)

Test(ops, embedding)
{
    rl_ctx ctx = fx_cpu();
    float a[8] = {0};
    int32_t ids[2] = {0, 1};
    REFUSED(rl_embedding_fwd(&ctx, a, ids, a, -1, 4), "rl_embedding_fwd: n_tokens -1 is negative");
    REFUSED(rl_embedding_fwd(&ctx, a, ids, a, 2, 0), "rl_embedding_fwd: dim 0 is less than 1");
    REFUSED(rl_embedding_fwd(&ctx, a, ids, NULL, 2, 4), "rl_embedding_fwd: table is NULL");
    REFUSED(rl_embedding_bwd(&ctx, NULL, ids, a, 2, 4), "rl_embedding_bwd: dtable is NULL");
    ACCEPTED(rl_embedding_fwd(&ctx, NULL, NULL, NULL, 0, 4));
}

Test(ops, rmsnorm)
{
    rl_ctx ctx = fx_cpu();
    float a[4] = {1, 2, 3, 4}, r[2] = {1, 1};
    REFUSED(rl_rmsnorm_fwd(&ctx, a, r, a, a, 2, 0, 1e-6f), "rl_rmsnorm_fwd: dim 0 is less than 1");
    REFUSED(rl_rmsnorm_fwd(&ctx, a, r, a, a, 2, 2, -1.0f), "rl_rmsnorm_fwd: eps -1 is outside [0, inf)");
    REFUSED(rl_rmsnorm_fwd(&ctx, a, r, a, a, 2, 2, NAN), "rl_rmsnorm_fwd: eps nan is outside [0, inf)");
    REFUSED(rl_rmsnorm_fwd(&ctx, a, NULL, a, a, 2, 2, 1e-6f), "rl_rmsnorm_fwd: rstd is NULL");
    REFUSED(rl_rmsnorm_bwd(&ctx, a, NULL, a, a, a, NULL, 2, 2, 0), "rl_rmsnorm_bwd: rstd is NULL");
    REFUSED(rl_rmsnorm_bwd(&ctx, a, NULL, a, a, NULL, r, 2, 2, 0), "rl_rmsnorm_bwd: weight is NULL");
    float dw[2] = {0};
    ACCEPTED(rl_rmsnorm_bwd(&ctx, NULL, dw, a, a, NULL, r, 2, 2, 0)); /* dweight only: no weight needed */
}

Test(ops, rope)
{
    rl_ctx ctx = fx_cpu();
    float a[6] = {0}, f[3] = {1, 1, 1};
    int32_t pos[1] = {0};
    REFUSED(rl_rope_fwd(&ctx, a, pos, f, 1, 1, 5), "rl_rope_fwd: head_dim 5 is not even");
    REFUSED(rl_rope_fwd(&ctx, a, pos, f, 1, 1, 0), "rl_rope_fwd: head_dim 0 is less than 2");
    REFUSED(rl_rope_fwd(&ctx, a, pos, f, 1, 0, 6), "rl_rope_fwd: n_heads 0 is less than 1");
    REFUSED(rl_rope_bwd(&ctx, a, NULL, f, 1, 1, 6), "rl_rope_bwd: positions is NULL");
    ACCEPTED(rl_rope_bwd(&ctx, NULL, NULL, NULL, 0, 1, 6));
}

Test(ops, attention)
{
    rl_ctx ctx = fx_cpu();
    float a[64], lse[8];
    tu_poison(a, 64);
    int32_t cu[3] = {0, 2, 6};
    REFUSED(rl_attention_fwd(&ctx, a, lse, a, a, a, cu, cu, NULL, 2, 4, 4, 12, 5, 2, 1.0f, 1),
            "rl_attention_fwd: n_heads 12 is not a multiple of n_kv_heads 5");
    REFUSED(rl_attention_fwd(&ctx, a, lse, a, a, a, cu, cu, NULL, -1, 4, 4, 2, 1, 2, 1.0f, 1),
            "rl_attention_fwd: n_seqs -1 is negative");
    REFUSED(rl_attention_fwd(&ctx, a, lse, a, a, a, cu, cu, NULL, 2, 4, 4, 2, 0, 2, 1.0f, 1),
            "rl_attention_fwd: n_kv_heads 0 is less than 1");
    REFUSED(rl_attention_fwd(&ctx, a, lse, a, a, a, cu, cu, NULL, 2, -1, 4, 2, 1, 2, 1.0f, 1),
            "rl_attention_fwd: max_seqlen_q -1 is negative");
    REFUSED(rl_attention_fwd(&ctx, a, lse, a, a, a, cu, NULL, NULL, 2, 4, 4, 2, 1, 2, 1.0f, 1),
            "rl_attention_fwd: cu_seqlens_k is NULL");
    REFUSED(rl_attention_fwd(&ctx, a, lse, a, a, NULL, cu, cu, NULL, 2, 4, 4, 2, 1, 2, 1.0f, 1),
            "rl_attention_fwd: v is NULL");
    for (int i = 0; i < 64; i++) cr_expect(isnan(a[i]), "a refused op wrote element %d", i);
    REFUSED(rl_attention_bwd(&ctx, a, a, NULL, a, a, lse, a, a, a, cu, cu, 2, 4, 4, 2, 1, 2, 1.0f, 1),
            "rl_attention_bwd: dv is NULL");
    REFUSED(rl_attention_bwd(&ctx, a, a, a, a, a, lse, a, a, a, NULL, cu, 2, 4, 4, 2, 1, 2, 1.0f, 1),
            "rl_attention_bwd: cu_seqlens_q is NULL");
    REFUSED(rl_attention_bwd(&ctx, a, a, a, a, a, lse, a, a, a, cu, NULL, 2, 4, 4, 2, 1, 2, 1.0f, 1),
            "rl_attention_bwd: cu_seqlens_k is NULL");
    REFUSED(rl_attention_bwd(&ctx, a, a, a, a, a, lse, a, a, a, cu, cu, 2, 4, -1, 2, 1, 2, 1.0f, 1),
            "rl_attention_bwd: max_seqlen_k -1 is negative");
    REFUSED(rl_attention_bwd(&ctx, a, a, a, a, a, lse, a, a, a, cu, cu, 2, 4, 4, 3, 2, 2, 1.0f, 1),
            "rl_attention_bwd: n_heads 3 is not a multiple of n_kv_heads 2");
    ACCEPTED(rl_attention_fwd(&ctx, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 4, 4, 2, 1, 2, 1.0f, 1));
}

Test(ops, swiglu)
{
    rl_ctx ctx = fx_cpu();
    float a[8] = {0};
    REFUSED(rl_swiglu_fwd(&ctx, a, a, a, 1, 4, 3), "rl_swiglu_fwd: in_stride 3 is less than dim 4");
    REFUSED(rl_swiglu_fwd(&ctx, a, a, a, -2, 4, 4), "rl_swiglu_fwd: n_rows -2 is negative");
    REFUSED(rl_swiglu_bwd(&ctx, a, NULL, a, a, a, 1, 4, 4), "rl_swiglu_bwd: dup is NULL");
}

Test(ops, matmul)
{
    rl_ctx ctx = fx_cpu();
    float a[4] = {1, 2, 3, 4}, dw[4] = {0};
    REFUSED(rl_matmul_fwd(&ctx, a, a, a, NULL, -1, 2, 2, 0), "rl_matmul_fwd: m -1 is negative");
    REFUSED(rl_matmul_fwd(&ctx, a, a, a, NULL, 1, 2, 0, 0), "rl_matmul_fwd: k 0 is less than 1");
    REFUSED(rl_matmul_fwd(&ctx, a, NULL, a, NULL, 1, 2, 2, 0), "rl_matmul_fwd: in is NULL");
    REFUSED(rl_matmul_bwd(&ctx, a, NULL, NULL, a, a, NULL, 1, 2, 2, 0), "rl_matmul_bwd: weight is NULL");
    REFUSED(rl_matmul_bwd(&ctx, NULL, dw, NULL, a, NULL, a, 1, 2, 2, 0), "rl_matmul_bwd: in is NULL");
    REFUSED(rl_matmul_bwd(&ctx, NULL, NULL, NULL, NULL, a, a, 1, 2, 2, 0), "rl_matmul_bwd: dout is NULL");
    ACCEPTED(rl_matmul_fwd(&ctx, NULL, NULL, NULL, NULL, 0, 2, 2, 0));
    ACCEPTED(rl_matmul_bwd(&ctx, NULL, dw, NULL, a, a, NULL, 1, 2, 2, 0)); /* dweight only: no weight needed */
}

Test(ops, fused_products)
{
    rl_ctx ctx = fx_cpu();
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, r[2];
    REFUSED(rl_rmsnorm_matmul_fwd(&ctx, a, a, r, a, a, 1e-6f, a, NULL, -1, 2, 2), "rl_rmsnorm_matmul_fwd: m -1 is negative");
    REFUSED(rl_rmsnorm_matmul_fwd(&ctx, a, a, r, a, a, -1.0f, a, NULL, 1, 2, 2),
            "rl_rmsnorm_matmul_fwd: eps -1 is outside [0, inf)");
    REFUSED(rl_rmsnorm_matmul_fwd(&ctx, a, a, NULL, a, a, 1e-6f, a, NULL, 1, 2, 2), "rl_rmsnorm_matmul_fwd: rstd is NULL");
    REFUSED(rl_rmsnorm_matmul_fwd(&ctx, a, a, r, a, NULL, 1e-6f, a, NULL, 1, 2, 2),
            "rl_rmsnorm_matmul_fwd: norm_weight is NULL");
    REFUSED(rl_swiglu_matmul_residual_fwd(&ctx, a, a, a, a, a, 1, a, 1, 2, 2),
            "rl_swiglu_matmul_residual_fwd: in_stride 1 is less than k 2");
    REFUSED(rl_swiglu_matmul_residual_fwd(&ctx, a, NULL, a, a, a, 2, a, 1, 2, 2),
            "rl_swiglu_matmul_residual_fwd: act is NULL");
    REFUSED(rl_swiglu_matmul_residual_fwd(&ctx, a, a, a, a, a, 2, a, 1, 0, 2),
            "rl_swiglu_matmul_residual_fwd: n 0 is less than 1");
    ACCEPTED(rl_rmsnorm_matmul_fwd(&ctx, NULL, NULL, NULL, NULL, NULL, 1e-6f, NULL, NULL, 0, 2, 2));
    ACCEPTED(rl_swiglu_matmul_residual_fwd(&ctx, NULL, NULL, NULL, NULL, NULL, 2, NULL, 0, 2, 2));
    REFUSED(rl_matmul_residual_rmsnorm_fwd(&ctx, a, a, r, a, a, a, a, -1.0f, 1, 2, 2),
            "rl_matmul_residual_rmsnorm_fwd: eps -1 is outside [0, inf)");
    REFUSED(rl_matmul_residual_rmsnorm_fwd(&ctx, a, a, r, a, a, a, NULL, 1e-6f, 1, 2, 2),
            "rl_matmul_residual_rmsnorm_fwd: norm_weight is NULL");
    REFUSED(rl_matmul_residual_rmsnorm_fwd(&ctx, a, a, r, a, a, a, a, 1e-6f, 1, 0, 2),
            "rl_matmul_residual_rmsnorm_fwd: n 0 is less than 1");
    ACCEPTED(rl_matmul_residual_rmsnorm_fwd(&ctx, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1e-6f, 0, 2, 2));
}

Test(ops, elementwise)
{
    rl_ctx ctx = fx_cpu();
    float a[2] = {1, 2};
    double out;
    REFUSED(rl_add(&ctx, a, NULL, 2), "rl_add: x is NULL");
    REFUSED(rl_sumsq(&ctx, NULL, a, 2), "rl_sumsq: out is NULL");
    REFUSED(rl_sumsq(&ctx, &out, NULL, 2), "rl_sumsq: x is NULL");
    REFUSED(rl_scale(&ctx, NULL, 2.0f, 2), "rl_scale: x is NULL");
    ACCEPTED(rl_add(&ctx, NULL, NULL, 0));
    ACCEPTED(rl_sumsq(&ctx, &out, NULL, 0));
}

Test(ops, lm_head)
{
    rl_ctx ctx = fx_cpu();
    float h[4] = {1, 2, 3, 4}, w[6] = {0}, logp[2], lse[2], dh[4];
    int32_t tgt[2] = {0, 1};
    REFUSED(rl_lm_head_logprobs_fwd(&ctx, logp, lse, NULL, h, w, tgt, 2, 2, 0, 1.0f),
            "rl_lm_head_logprobs_fwd: vocab 0 is less than 1");
    REFUSED(rl_lm_head_logprobs_fwd(&ctx, logp, lse, NULL, h, w, NULL, 2, 2, 3, 1.0f),
            "rl_lm_head_logprobs_fwd: targets is NULL");
    REFUSED(rl_lm_head_logprobs_bwd(&ctx, dh, NULL, logp, NULL, h, w, tgt, lse, NULL, 2, 2, 3, 1.0f),
            "rl_lm_head_logprobs_bwd: dweight is NULL");
    float dw[6] = {0};
    REFUSED(rl_lm_head_logprobs_bwd(&ctx, dh, dw, logp, logp, h, w, tgt, lse, NULL, 2, 2, 3, 1.0f),
            "rl_lm_head_logprobs_bwd: entropy is NULL");
    REFUSED(rl_lm_head_logits(&ctx, logp, h, w, 1, 0, 3), "rl_lm_head_logits: dim 0 is less than 1");
    REFUSED(rl_lm_head_logits(&ctx, NULL, h, w, 1, 2, 3), "rl_lm_head_logits: logits is NULL");
    ACCEPTED(rl_lm_head_logits(&ctx, NULL, NULL, NULL, 0, 2, 3));
}

Test(ops, sample)
{
    rl_ctx ctx = fx_cpu();
    float logits[3] = {1, 2, 3}, logp[1];
    int32_t tok[1] = {-7};
    rl_sample_row row = {.temperature = 1.0f, .top_p = 1.0f};
    REFUSED(rl_sample(&ctx, tok, logp, logits, -1, 3, &row), "rl_sample: n_rows -1 is negative");
    REFUSED(rl_sample(&ctx, tok, logp, logits, 1, 0, &row), "rl_sample: vocab 0 is less than 1");
    REFUSED(rl_sample(&ctx, NULL, logp, logits, 1, 3, &row), "rl_sample: tokens is NULL");
    REFUSED(rl_sample(&ctx, tok, logp, logits, 1, 3, NULL), "rl_sample: rows is NULL");
    cr_expect_eq(tok[0], -7, "a refused sample wrote a token");
    ACCEPTED(rl_sample(&ctx, NULL, NULL, NULL, 0, 3, NULL));
}

/* ---- the paged KV cache and the decode step ---- */

Test(ops, kv_cache_write)
{
    rl_ctx ctx = fx_cpu();
    float pool[2 * 2 * 4 * 3], k[4 * 3] = {0}, v[4 * 3] = {0};
    int32_t slots[1] = {1};
    rl_paged_kv kv = {.k = pool, .v = pool + 4 * 3, .block_stride = 2 * 4 * 3, .block_size = 4};
    REFUSED(rl_kv_cache_write(&ctx, NULL, k, v, slots, 1, 1, 3), "rl_kv_cache_write: kv is NULL");
    REFUSED(rl_kv_cache_write(&ctx, &kv, k, v, slots, -1, 1, 3), "rl_kv_cache_write: n_tokens -1 is negative");
    REFUSED(rl_kv_cache_write(&ctx, &kv, k, v, slots, 1, 0, 3), "rl_kv_cache_write: n_kv_heads 0 is less than 1");
    REFUSED(rl_kv_cache_write(&ctx, &kv, k, v, slots, 1, 3, 3),
            "rl_kv_cache_write: kv->block_stride 24 is less than a block's 4 rows of 3 x 3");
    REFUSED(rl_kv_cache_write(&ctx, &kv, k, NULL, slots, 1, 1, 3), "rl_kv_cache_write: v is NULL");
    kv.block_size = 0;
    REFUSED(rl_kv_cache_write(&ctx, &kv, k, v, slots, 1, 1, 3), "rl_kv_cache_write: kv->block_size 0 is less than 1");
    kv.block_size = 4;
    kv.v = NULL;
    REFUSED(rl_kv_cache_write(&ctx, &kv, k, v, slots, 1, 1, 3), "rl_kv_cache_write: kv->v is NULL");
    kv.v = pool + 4 * 3;
    ACCEPTED(rl_kv_cache_write(&ctx, &kv, NULL, NULL, NULL, 0, 1, 3));
}

Test(ops, paged_attention_fwd)
{
    rl_ctx ctx = fx_cpu();
    float pool[2 * 4 * 3], q[2 * 3], out[2 * 3];
    int32_t tables[1] = {0}, cu[2] = {0, 1}, seqlens[1] = {1};
    rl_paged_kv kv = {.k = pool, .v = pool + 4 * 3, .block_stride = 2 * 4 * 3, .block_size = 4,
                      .block_tables = tables, .max_blocks = 1};
    REFUSED(rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 1, 1, 4, 3, 2, 3, 1.0f),
            "rl_paged_attention_fwd: n_heads 3 is not a multiple of n_kv_heads 2");
    REFUSED(rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, -1, 1, 4, 2, 1, 3, 1.0f),
            "rl_paged_attention_fwd: n_seqs -1 is negative");
    REFUSED(rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 1, 5, 4, 2, 1, 3, 1.0f),
            "rl_paged_attention_fwd: max_seqlen_k 4 is less than max_seqlen_q 5 (keys include the queries)");
    REFUSED(rl_paged_attention_fwd(&ctx, out, q, &kv, cu, NULL, 1, 1, 4, 2, 1, 3, 1.0f),
            "rl_paged_attention_fwd: seqlens_k is NULL");
    REFUSED(rl_paged_attention_fwd(&ctx, out, NULL, &kv, cu, seqlens, 1, 1, 4, 2, 1, 3, 1.0f),
            "rl_paged_attention_fwd: q is NULL");
    REFUSED(rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 1, 1, 4, 4, 4, 3, 1.0f),
            "rl_paged_attention_fwd: kv->block_stride 24 is less than a block's 4 rows of 4 x 3");
    kv.max_blocks = 0;
    REFUSED(rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 1, 1, 4, 2, 1, 3, 1.0f),
            "rl_paged_attention_fwd: kv->max_blocks 0 is less than 1");
    kv.block_tables = NULL;
    REFUSED(rl_paged_attention_fwd(&ctx, out, q, &kv, cu, seqlens, 1, 1, 4, 2, 1, 3, 1.0f),
            "rl_paged_attention_fwd: kv->block_tables is NULL");
    ACCEPTED(rl_paged_attention_fwd(&ctx, NULL, NULL, &kv, NULL, NULL, 0, 1, 4, 2, 1, 3, 1.0f));
}

Test(ops, gather_rows)
{
    rl_ctx ctx = fx_cpu();
    float in[4] = {0}, out[4];
    int32_t rows[1] = {0};
    REFUSED(rl_gather_rows(&ctx, out, in, rows, -1, 4), "rl_gather_rows: n_rows -1 is negative");
    REFUSED(rl_gather_rows(&ctx, out, in, rows, 1, 0), "rl_gather_rows: dim 0 is less than 1");
    REFUSED(rl_gather_rows(&ctx, out, in, NULL, 1, 4), "rl_gather_rows: rows is NULL");
    ACCEPTED(rl_gather_rows(&ctx, NULL, NULL, NULL, 0, 4));
}

Test(ops, decode_advance)
{
    rl_ctx ctx = fx_cpu();
    int32_t tok[1] = {0}, pos[1] = {0}, len[1] = {1}, slot[1] = {0}, sampled[1] = {3}, tables[2] = {0, 1};
    rl_sample_row rows[1] = {{.temperature = 1.0f, .top_p = 1.0f}};
    REFUSED(rl_decode_advance(&ctx, tok, pos, len, slot, rows, sampled, tables, 2, 4, -1),
            "rl_decode_advance: n_rows -1 is negative");
    REFUSED(rl_decode_advance(&ctx, tok, pos, len, slot, rows, sampled, tables, 0, 4, 1),
            "rl_decode_advance: max_blocks 0 is less than 1");
    REFUSED(rl_decode_advance(&ctx, tok, pos, len, slot, rows, sampled, tables, 2, 0, 1),
            "rl_decode_advance: block_size 0 is less than 1");
    REFUSED(rl_decode_advance(&ctx, tok, pos, len, slot, rows, NULL, tables, 2, 4, 1),
            "rl_decode_advance: sampled is NULL");
    cr_expect(tok[0] == 0 && pos[0] == 0 && len[0] == 1, "a refused advance changed the state");
    ACCEPTED(rl_decode_advance(&ctx, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 2, 4, 0));
}

Test(ops, adamw_step)
{
    rl_ctx ctx = fx_cpu();
    float p[2] = {1, 2}, g[2] = {1, 1}, m[2] = {0}, v[2] = {0};
    rl_adamw_params ap = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .step = 0, .grad_scale = 1};
    REFUSED(rl_adamw_step(&ctx, p, NULL, g, m, v, 2, &ap), "rl_adamw_step: step 0 is less than 1 (steps count from 1)");
    ap.step = 1;
    ap.beta1 = 1.0f;
    REFUSED(rl_adamw_step(&ctx, p, NULL, g, m, v, 2, &ap), "rl_adamw_step: beta1 1 is outside [0, 1)");
    ap.beta1 = 0.9f;
    ap.beta2 = -0.5f;
    REFUSED(rl_adamw_step(&ctx, p, NULL, g, m, v, 2, &ap), "rl_adamw_step: beta2 -0.5 is outside [0, 1)");
    ap.beta2 = 0.999f;
    REFUSED(rl_adamw_step(&ctx, p, NULL, NULL, m, v, 2, &ap), "rl_adamw_step: grad is NULL");
    REFUSED(rl_adamw_step(&ctx, p, NULL, g, m, v, 2, NULL), "rl_adamw_step: params is NULL");
    cr_expect(p[0] == 1 && p[1] == 2 && m[0] == 0 && v[0] == 0, "a refused step changed the weights or moments");
}

Test(ops, policy_loss)
{
    rl_ctx ctx = fx_cpu();
    float a[2] = {-1, -1}, w[2] = {1, 1}, d[2];
    double stats[RL_LOSS_N_STATS];
    rl_policy_loss_params pp = {.clip_low = 0.2f, .clip_high = 0.2f, .kl_beta = 0.1f};
    REFUSED(rl_policy_loss(&ctx, d, stats, a, a, NULL, a, w, 2, &pp),
            "rl_policy_loss: ref_logp is NULL, but kl_beta 0.1 needs it");
    pp.clip_low = 1.5f;
    REFUSED(rl_policy_loss(&ctx, d, stats, a, a, a, a, w, 2, &pp), "rl_policy_loss: clip_low 1.5 is outside [0, 1]");
    pp.clip_low = 0.2f;
    pp.clip_high = -1.0f;
    REFUSED(rl_policy_loss(&ctx, d, stats, a, a, a, a, w, 2, &pp), "rl_policy_loss: clip_high -1 is outside [0, inf)");
    pp.clip_high = 0.2f;
    REFUSED(rl_policy_loss(&ctx, d, NULL, a, a, a, a, w, 2, &pp), "rl_policy_loss: stats is NULL");
    REFUSED(rl_policy_loss(&ctx, d, stats, a, a, a, a, NULL, 2, &pp), "rl_policy_loss: weight is NULL");
    REFUSED(rl_policy_loss(&ctx, d, stats, a, a, a, a, w, -1, &pp), "rl_policy_loss: n_tokens -1 is negative");
    pp.kl_beta = 0;
    ACCEPTED(rl_policy_loss(&ctx, d, stats, a, a, NULL, a, w, 2, &pp)); /* no KL: no reference needed */
}
