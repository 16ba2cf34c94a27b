/* test_params.c — the parameter table and buffer: save -> load round trips (fp32 bit-exact,
 * bf16 exactly rounded), the saved directory passes the loader's validation, random init has
 * transformers' statistics, and broken checkpoints are refused with a message. */
#include <unistd.h>

#include "core/dtype.h"
#include "core/file.h"
#include "model_fixture.h"

static void tmp_dir(char *out, size_t size, const char *tag)
{
    snprintf(out, size, "/tmp/rlc-test-params-%d-%s", (int)getpid(), tag);
}

static void remove_dir(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(params, table_layout)
{
    rl_ctx ctx;
    rl_model m;
    rl_err err = {{0}};
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0);
    cr_assert_eq(rl_model_load(&m, &ctx, "tests/fixtures/models/qwen3-tiny-tied", &err), 0, "%s", err.msg);
    cr_assert_eq(m.working, (void *)m.master, "the CPU forward reads the masters");
    cr_assert_null(rl_model_working_copy(&m));
    cr_assert_eq(rl_model_find_param(&m, "lm_head.weight"), -1, "tied: no lm_head tensor");
    cr_assert_eq(m.lm_head, m.embed);
    size_t end = 0;
    for (int i = 0; i < m.n_params; i++) {
        const rl_param *p = &m.params[i];
        cr_assert_geq(p->offset, end, "%s overlaps the tensor before it", p->name);
        cr_assert_eq(p->count, (size_t)(p->shape[0] * p->shape[1]));
        cr_assert_eq(p->weight_decay, p->n_dims == 2, "%s", p->name);
        end = p->offset + p->count;
    }
    cr_assert_leq(end, m.n_elems);
    cr_assert_eq((size_t)rl_config_param_count(&m.config) <= m.n_elems, 1);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
}

static void round_trip(const char *name, rl_dtype dtype)
{
    rl_ctx ctx;
    rl_model a, b;
    rl_err err = {{0}};
    char dir[256], src[256];
    tmp_dir(dir, sizeof dir, name);
    snprintf(src, sizeof src, "tests/fixtures/models/%s", name);
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0);
    cr_assert_eq(rl_model_load(&a, &ctx, src, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_save(&a, dir, dtype, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load(&b, &ctx, dir, &err), 0, "reloading the saved model: %s", err.msg);
    cr_assert_eq(b.n_elems, a.n_elems);
    cr_assert_eq(b.config.tie_word_embeddings, a.config.tie_word_embeddings);
    cr_assert_eq(b.config.n_layers, a.config.n_layers);
    cr_assert_eq(b.config.torch_dtype, dtype);
    for (size_t i = 0; i < a.n_elems; i++) {
        float want = dtype == RL_F32 ? a.master[i] : rl_bf16_to_f32(rl_f32_to_bf16(a.master[i]));
        cr_assert(memcmp(&b.master[i], &want, sizeof want) == 0, "%s %s: element %zu: %.9g != %.9g",
                  name, rl_dtype_name(dtype), i, b.master[i], want);
    }
    rl_model_free(&a);
    rl_model_free(&b);
    rl_ctx_free(&ctx);
    remove_dir(dir);
}

Test(params, save_load_round_trip_f32)
{
    round_trip("qwen3-tiny-tied", RL_F32);
    round_trip("qwen3-tiny-untied", RL_F32);
    round_trip("qwen2-tiny", RL_F32);
}

Test(params, save_load_round_trip_bf16)
{
    round_trip("qwen3-tiny-untied", RL_BF16);
    round_trip("qwen3-tiny-sharded", RL_BF16); /* loaded from shards + index, saved as one file */
}

Test(params, random_init_statistics)
{
    rl_ctx ctx;
    rl_model m, again;
    rl_model_config cfg;
    rl_err err = {{0}};
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0);
    cr_assert_eq(rl_config_load(&cfg, "tests/fixtures/models/qwen2-tiny/config.json", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_init_random(&m, &ctx, &cfg, 7, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_init_random(&again, &ctx, &cfg, 7, &err), 0, "%s", err.msg);
    cr_assert(memcmp(m.master, again.master, m.n_elems * sizeof(float)) == 0, "init must be deterministic");
    for (int i = 0; i < m.n_params; i++) {
        const rl_param *p = &m.params[i];
        const float *x = m.master + p->offset;
        double sum = 0, sumsq = 0;
        for (size_t j = 0; j < p->count; j++) {
            sum += x[j];
            sumsq += (double)x[j] * x[j];
        }
        double mean = sum / p->count, sd = sqrt(sumsq / p->count - mean * mean);
        if (p->n_dims == 2) {
            cr_assert(fabs(mean) < 0.005 && fabs(sd - 0.02) < 0.003, "%s: mean %g sd %g", p->name, mean, sd);
        } else if (strstr(p->name, "norm")) {
            cr_assert(mean == 1.0 && sd == 0.0, "%s: norms start at 1", p->name);
        } else {
            cr_assert(sumsq == 0.0, "%s: biases start at 0", p->name);
        }
    }
    rl_model_free(&m);
    rl_model_free(&again);
    rl_ctx_free(&ctx);
}

Test(params, broken_checkpoints_are_refused)
{
    rl_ctx ctx;
    rl_model m;
    rl_err err = {{0}};
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0);
    cr_assert_eq(rl_model_load(&m, &ctx, "tests/fixtures/no-such-model", &err), -1);
    cr_assert(strstr(err.msg, "no-such-model"), "%s", err.msg);

    /* A checkpoint whose config says more layers than the tensors hold. */
    char dir[256], path[512];
    tmp_dir(dir, sizeof dir, "broken");
    rl_model good;
    cr_assert_eq(rl_model_load(&good, &ctx, "tests/fixtures/models/qwen3-tiny-tied", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_save(&good, dir, RL_F32, &err), 0, "%s", err.msg);
    rl_model_config cfg = good.config;
    cfg.n_layers += 1;
    snprintf(path, sizeof path, "%s/config.json", dir);
    cr_assert_eq(rl_config_save(&cfg, path, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load(&m, &ctx, dir, &err), -1);
    cr_assert(strstr(err.msg, "model.layers.2."), "message must name the missing tensor: %s", err.msg);
    rl_model_free(&good);
    rl_ctx_free(&ctx);
    remove_dir(dir);
}

/* The parallel fill (each element its own Philox block) gives the one sequential stream: every
 * matrix, in table order, is 0.02 x the next normals of rl_rng seeded with the seed. */
Test(params, random_init_is_the_sequential_stream)
{
    rl_ctx ctx;
    rl_model m;
    rl_model_config cfg;
    rl_err err = {{0}};
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 4, &err), 0);
    cr_assert_eq(rl_config_load(&cfg, "tests/fixtures/models/qwen3-tiny-untied/config.json", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_init_random(&m, &ctx, &cfg, 11, &err), 0, "%s", err.msg);
    rl_rng rng;
    rl_rng_init(&rng, 11);
    size_t differ = 0;
    for (int i = 0; i < m.n_params; i++) {
        const rl_param *p = &m.params[i];
        for (size_t j = 0; p->n_dims == 2 && j < p->count; j++) {
            float want = 0.02f * rl_rng_normal(&rng);
            differ += memcmp(&want, m.master + p->offset + j, sizeof want) != 0;
        }
    }
    cr_assert_eq(differ, 0, "%zu weights differ from the sequential stream", differ);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
}
