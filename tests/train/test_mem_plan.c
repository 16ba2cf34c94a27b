/* test_mem_plan.c — the memory plan: ZeRO's per-rank figures for the real Qwen3-8B
 * configuration (18 bytes per parameter on one GPU, 2 + 16 / N under ZeRO 2), the activation
 * estimate equal to what the activations really allocate, and a CPU context never refused. */
#include <string.h>

#include "train/mem_plan.h"
#include "engine/kv_pool.h"
#include "train/grpo.h"
#include "train/ppo.h"
#include "test_util.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static rl_model_config load(const char *path)
{
    rl_model_config cfg;
    rl_err err;
    cr_assert_eq(rl_config_load(&cfg, path, &err), 0, "%s", err.msg);
    return cfg;
}

Test(mem_plan, zero_figures_for_qwen3_8b)
{
    rl_model_config cfg = load("bench/configs/qwen3-8b.json");
    rl_mem_plan one, two;
    rl_mem_plan_make(&one, &cfg, RL_BACKEND_CUDA, RL_BF16, 1, 0, 4096, RL_ACTS_TRAIN_CHECKPOINT, 0);
    rl_mem_plan_make(&two, &cfg, RL_BACKEND_CUDA, RL_BF16, 2, 2, 4096, RL_ACTS_TRAIN_CHECKPOINT, 0);
    double psi = one.n_params;
    cr_assert(psi > 8.18e9 && psi < 8.20e9, "Qwen3-8B has 8.19B parameters, the plan counts %.4gB", psi / 1e9);
    cr_assert(fabs((double)one.zero_total - 18 * psi) < 64, "one GPU: %zu bytes, ZeRO counts 18 per parameter", one.zero_total);
    cr_assert(fabs((double)two.zero_total - 10 * psi) < 64, "ZeRO 2 on 2: %zu bytes, 2 + 16 / 2 per parameter", two.zero_total);
    /* region buffers: the untied lm_head plus norm, and two layers */
    double embed = 151936.0 * 4096, layer = (psi - 2 * embed - 4096) / 36;
    cr_assert(fabs((double)two.buckets - 4 * (embed + 4096 + 2 * layer)) < 64);
    cr_assert(one.buckets == 0 && one.acts > 0 && one.workspace > 0);
    cr_assert(one.total > 140 * GIB && two.total < 100 * GIB, "one GPU %.1f GiB, two %.1f GiB", one.total / GIB,
              two.total / GIB);
    char text[600];
    rl_mem_plan_describe(&two, text, sizeof text);
    printf("Qwen3-8B, 2 GPUs, ZeRO 2: %s\n", text);
    cr_assert(strstr(text, "on 2 ranks with --zero 2"), "%s", text);
}

Test(mem_plan, activation_estimate_is_what_the_activations_allocate)
{
    rl_ctx ctx;
    rl_model m;
    rl_err err;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load(&m, &ctx, "tests/fixtures/models/qwen3-tiny-tied", &err), 0, "%s", err.msg);
    rl_acts_mode modes[3] = {RL_ACTS_INFER, RL_ACTS_TRAIN, RL_ACTS_TRAIN_CHECKPOINT};
    for (int i = 0; i < 3; i++) {
        rl_acts *a;
        cr_assert_eq(rl_acts_create(&a, &m, 77, modes[i], &err), 0, "%s", err.msg);
        cr_assert_eq(rl_acts_plan_bytes(&m.config, RL_F32, 77, modes[i]), rl_acts_bytes(a), "mode %d", i);
        rl_acts_free(a);
    }
    rl_mem_plan p;
    rl_mem_plan_make(&p, &m.config, RL_BACKEND_CPU, RL_F32, 1, 0, 1 << 20, RL_ACTS_TRAIN, 0);
    cr_assert_eq(rl_mem_plan_check(&p, &ctx, &err), 0, "the CPU is never refused: %s", err.msg);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
}

/* PPO on Qwen3-0.6B: the frozen reference costs its bf16 weights only (2 bytes a parameter on
 * CUDA), and a value model of the policy's shape adds its weights, masters and moments (14 bytes a
 * parameter; no lm_head: the embedding is tied anyway) but neither gradients, whose buffer it
 * shares with the policy on one rank (only its head's are beyond it), nor activations; another
 * shape adds its own activations. With PPO's default micro-batch (4096 tokens) the plan is under
 * issue 11's 24 GiB. */
Test(mem_plan, ppo_reference_and_value_model)
{
    rl_model_config cfg = load("bench/configs/qwen3-0.6b.json"), vcfg = cfg;
    rl_config_as_value(&vcfg, RL_HEAD_TOKEN_CLS);
    rl_mem_plan p;
    int max_tokens = rl_ppo_defaults().max_tokens;
    rl_mem_plan_make(&p, &cfg, RL_BACKEND_CUDA, RL_BF16, 1, 0, max_tokens, RL_ACTS_TRAIN, 1);
    cr_assert(fabs((double)p.reference - 2 * p.n_params) < 64, "reference %zu bytes", p.reference);
    size_t before = p.total;
    rl_mem_plan_add_value(&p, &vcfg);
    double psi_v = (double)rl_config_param_count(&vcfg);
    cr_assert(fabs(psi_v - (p.n_params + cfg.hidden_size + 1)) < 1, "value model: the trunk plus score [1, hidden] + bias");
    cr_assert(fabs((double)p.value - 14 * psi_v - 4 * (psi_v - p.n_params)) < 64, "value model %zu bytes", p.value);
    cr_assert_eq(p.total, before + p.value);
    cr_assert(p.total < 24 * GIB, "PPO plan %.2f GiB", p.total / GIB);
    char text[600];
    rl_mem_plan_describe(&p, text, sizeof text);
    cr_assert(strstr(text, "the KL reference 1.1 + the value model 7.8"), "%s", text);
    printf("Qwen3-0.6B PPO (--max-tokens %d): %s\n", max_tokens, text);
    rl_mem_plan q;
    rl_mem_plan_make(&q, &cfg, RL_BACKEND_CUDA, RL_BF16, 1, 0, 8192, RL_ACTS_TRAIN, 0);
    rl_model_config small = vcfg;
    small.n_layers = 2;
    rl_mem_plan_add_value(&q, &small);
    cr_assert(q.value > 18 * (double)rl_config_param_count(&small), "another shape brings its activations");
    /* on 2 ranks under ZeRO 2 the value model is sharded like the policy: 2 + 16 / 2 bytes per
     * parameter, plus its region buffers */
    rl_mem_plan z;
    rl_mem_plan_make(&z, &cfg, RL_BACKEND_CUDA, RL_BF16, 2, 2, 8192, RL_ACTS_TRAIN, 0);
    rl_mem_plan_add_value(&z, &vcfg);
    cr_assert(z.value > 10 * psi_v - 64 && z.value < 12 * psi_v, "value model on 2 ranks, ZeRO 2: %zu bytes", z.value);
}

/* CUDA's fp32 mode (small models, --precision fp32): no bf16 working copy, the fp32 weights whole
 * on every rank (not sharded as masters), activations and the frozen reference at 4 bytes. */
Test(mem_plan, cuda_fp32_mode)
{
    rl_model_config cfg = load("bench/configs/qwen3-0.6b.json");
    rl_mem_plan b, f;
    rl_mem_plan_make(&b, &cfg, RL_BACKEND_CUDA, RL_BF16, 2, 1, 4096, RL_ACTS_TRAIN, 1);
    rl_mem_plan_make(&f, &cfg, RL_BACKEND_CUDA, RL_F32, 2, 1, 4096, RL_ACTS_TRAIN, 1);
    double psi = f.n_params;
    cr_assert(f.weights == 0 && fabs((double)f.master - 4 * psi) < 64, "fp32: weights %zu, fp32 weights %zu", f.weights,
              f.master);
    cr_assert(fabs((double)b.master - 2 * psi) < 64, "bf16 on 2 ranks, ZeRO 1: masters sharded (%zu)", b.master);
    cr_assert_eq(f.acts, rl_acts_plan_bytes(&cfg, RL_F32, 4096, RL_ACTS_TRAIN));
    cr_assert(f.acts > b.acts * 3 / 2, "fp32 activations %zu vs bf16 %zu", f.acts, b.acts);
    cr_assert(fabs((double)f.reference - 4 * psi) < 64 && fabs((double)b.reference - 2 * psi) < 64);
    char text[600];
    rl_mem_plan_describe(&f, text, sizeof text);
    cr_assert(strstr(text, "fp32 weights") && !strstr(text, "fp32 masters"), "%s", text);
}

/* The engine an RL trainer keeps: its step buffers as the plan counts them are what the runner
 * allocates (inference activations for max_num_batched_tokens, logits for max_num_seqs rows, plus
 * a few KiB of step state), and its KV pool counts whole for GRPO, which keeps it beside the
 * activations, but only beyond the activations for PPO, which releases it for the update. On
 * Qwen3-0.6B with issue 11's step (8 x 8 completions of up to 140 + 256 tokens: a 2.8 GiB pool)
 * the PPO plan stays under 24 GiB. */
Test(mem_plan, engine_buffers_and_kv_pool)
{
    rl_ctx ctx;
    rl_model m;
    rl_err err;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load(&m, &ctx, "tests/fixtures/models/qwen3-tiny-tied", &err), 0, "%s", err.msg);
    rl_engine_options eng = rl_engine_options_default();
    eng.max_num_seqs = 8;
    eng.max_num_batched_tokens = 64;
    rl_engine *e;
    cr_assert_eq(rl_engine_create(&e, &m, NULL, &eng, &err), 0, "%s", err.msg);
    int32_t ids[3] = {1, 2, 3};
    rl_gen_params gp = rl_gen_params_default();
    gp.max_new_tokens = 2;
    rl_gen_prompt pr = {ids, 3, NULL, 0};
    rl_gen_result res = {0};
    cr_assert_eq(rl_engine_generate(e, &pr, 1, &gp, &res, NULL, NULL, &err), 0, "%s", err.msg);
    rl_gen_result_free(&res);
    rl_engine_stats es;
    rl_engine_stats_get(e, &es);
    rl_mem_plan p;
    rl_mem_plan_make(&p, &m.config, RL_BACKEND_CPU, RL_F32, 1, 0, 64, RL_ACTS_TRAIN, 0);
    rl_mem_plan_add_engine(&p, &eng, 0, 0);
    cr_assert(p.engine <= es.runner_bytes && es.runner_bytes - p.engine < 64 * 1024,
              "plan %zu bytes, the runner holds %zu", p.engine, es.runner_bytes);
    rl_engine_free(e);
    rl_model_free(&m);
    rl_ctx_free(&ctx);

    rl_model_config cfg = load("bench/configs/qwen3-0.6b.json"), vcfg = cfg;
    rl_config_as_value(&vcfg, RL_HEAD_TOKEN_CLS);
    rl_engine_options train = rl_engine_options_for_training(NULL, 64, 140 + 256);
    size_t kv = (size_t)rl_engine_pool_blocks(&train) * rl_kv_pool_block_bytes(&cfg, train.block_size, RL_BF16);
    cr_assert(kv > 2.5 * GIB && kv < 3.0 * GIB, "KV pool %.2f GiB", kv / GIB);
    rl_mem_plan ppo, grpo;
    rl_mem_plan_make(&ppo, &cfg, RL_BACKEND_CUDA, RL_BF16, 1, 0, rl_ppo_defaults().max_tokens, RL_ACTS_TRAIN, 1);
    rl_mem_plan_add_value(&ppo, &vcfg);
    rl_mem_plan_add_engine(&ppo, &train, kv, 1);
    rl_mem_plan_make(&grpo, &cfg, RL_BACKEND_CUDA, RL_BF16, 1, 0, rl_grpo_defaults().max_tokens, RL_ACTS_TRAIN, 1);
    rl_mem_plan_add_engine(&grpo, &train, kv, 0);
    cr_assert_eq(ppo.kv, 0, "PPO's 3.3 GiB of activations cover the released pool");
    cr_assert_eq(grpo.kv, kv);
    cr_assert(ppo.total < 24 * GIB, "PPO plan %.2f GiB", ppo.total / GIB);
    char text[800];
    rl_mem_plan_describe(&ppo, text, sizeof text);
    printf("Qwen3-0.6B PPO with its engine: %s\n", text);
    rl_mem_plan_describe(&grpo, text, sizeof text);
    printf("Qwen3-0.6B GRPO with its engine: %s\n", text);
}
