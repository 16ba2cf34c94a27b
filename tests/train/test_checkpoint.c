/* test_checkpoint.c — checkpoints: 4 uninterrupted SFT steps and 2 steps + save + a fresh
 * process state loaded from the checkpoint + 2 steps give bit-identical weights and moments;
 * the directory holds an HF model with the tokenizer files copied; broken state files are
 * refused with messages naming the file and field. */
#include <string.h>
#include <unistd.h>

#include "backend/ctx.h"
#include "core/file.h"
#include "train/sft.h"
#include "test_util.h"

#define MODEL_DIR "tests/fixtures/models/qwen3-tiny-tied"

static int32_t ids[6][16];
static rl_sft_example ex[6];

static void make_data(int vocab)
{
    rl_rng rng;
    rl_rng_init(&rng, 11);
    for (int i = 0; i < 6; i++) {
        int n = 6 + 2 * i;
        for (int k = 0; k < n; k++) ids[i][k] = (int32_t)rl_rng_below(&rng, (uint32_t)vocab);
        ex[i] = (rl_sft_example){ids[i], n, 2};
    }
}

static rl_sft_config config(void)
{
    rl_sft_config c = rl_sft_defaults();
    c.max_tokens = 20; /* uneven packing: the data position matters */
    c.grad_accum = 1;
    c.optim.schedule = (rl_lr_schedule){RL_LR_COSINE, 3e-3, 1, 4, 0};
    return c;
}

static void run(const char *model_dir, const char *resume, int steps, const char *save, float **weights,
                float **moments, size_t *n)
{
    rl_ctx ctx;
    rl_model m;
    rl_sft t;
    rl_err err;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load(&m, &ctx, model_dir, &err), 0, "%s", err.msg);
    make_data(m.config.vocab_size);
    rl_sft_config c = config();
    cr_assert_eq(rl_sft_create(&t, &m, ex, 6, &c, &err), 0, "%s", err.msg);
    if (resume) cr_assert_eq(rl_sft_resume(&t, resume, &err), 0, "%s", err.msg);
    for (int s = 0; s < steps; s++) {
        rl_step_stats st;
        cr_assert_eq(rl_sft_step(&t, &st, &err), 0, "%s", err.msg);
    }
    if (save) {
        cJSON *opt = cJSON_CreateObject();
        cJSON_AddStringToObject(opt, "trainer", "sft");
        cr_assert_eq(rl_sft_save(&t, save, opt, MODEL_DIR, &err), 0, "%s", err.msg);
        cJSON_Delete(opt);
    }
    *n = m.n_elems;
    *weights = malloc(*n * sizeof(float));
    *moments = malloc(2 * *n * sizeof(float));
    memcpy(*weights, m.master, *n * sizeof(float));
    memcpy(*moments, t.optim.m, 2 * *n * sizeof(float));
    rl_sft_free(&t);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
}

Test(checkpoint, resume_is_bit_exact)
{
    char dir[] = "/tmp/rlc-ckpt-XXXXXX";
    cr_assert(mkdtemp(dir));
    char ck[256];
    snprintf(ck, sizeof ck, "%s/step2", dir);
    float *w_full, *m_full, *w_half, *m_half, *w_res, *m_res;
    size_t n;
    run(MODEL_DIR, NULL, 4, NULL, &w_full, &m_full, &n);
    run(MODEL_DIR, NULL, 2, ck, &w_half, &m_half, &n);
    run(ck, ck, 2, NULL, &w_res, &m_res, &n);
    size_t diff = 0, diff_m = 0, moved = 0;
    for (size_t i = 0; i < n; i++) {
        diff += memcmp(&w_full[i], &w_res[i], sizeof(float)) != 0;
        moved += w_full[i] != w_half[i];
    }
    for (size_t i = 0; i < 2 * n; i++) diff_m += memcmp(&m_full[i], &m_res[i], sizeof(float)) != 0;
    cr_assert(moved > n / 2, "the last two steps changed only %zu of %zu weights", moved, n);
    cr_assert_eq(diff, 0, "%zu of %zu weights differ after resume", diff, n);
    cr_assert_eq(diff_m, 0, "%zu of %zu moments differ after resume", diff_m, 2 * n);
    /* the checkpoint is an HF directory with the tokenizer-side files copied */
    const char *files[] = {"config.json", "model.safetensors", "optimizer.safetensors",
                           "trainer_state.json", "generation_config.json"};
    for (int i = 0; i < 5; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s/%s", ck, files[i]);
        cr_assert(rl_file_exists(p), "missing %s", p);
    }
    /* saving again over an existing checkpoint replaces it and leaves no temporaries */
    float *w2, *m2;
    run(ck, ck, 1, ck, &w2, &m2, &n);
    rl_train_state st;
    cJSON *opt;
    rl_err err;
    cr_assert_eq(rl_checkpoint_load_state(ck, &st, &opt, &err), 0, "%s", err.msg);
    cr_assert_eq(st.step, 3);
    cr_assert_str_eq(cJSON_GetObjectItem(opt, "trainer")->valuestring, "sft");
    cJSON_Delete(opt);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", ck, (long)getpid());
    cr_assert(!rl_file_exists(tmp));
    snprintf(tmp, sizeof tmp, "%s.old.%ld", ck, (long)getpid());
    cr_assert(!rl_file_exists(tmp));
    free(w_full), free(m_full), free(w_half), free(m_half), free(w_res), free(m_res), free(w2), free(m2);
    cr_assert_eq(rl_remove_tree(dir, &err), 0, "%s", err.msg);
    cr_assert(!rl_file_exists(dir));
}

Test(checkpoint, broken_state_files)
{
    char dir[] = "/tmp/rlc-ckpt-XXXXXX";
    cr_assert(mkdtemp(dir));
    char p[300];
    snprintf(p, sizeof p, "%s/trainer_state.json", dir);
    rl_err err;
    rl_train_state st;
    const char *bad[][2] = {
        {"{\"step\": 1, \"epoch\": 0, \"data_pos\": 0}", "'rng'"},
        {"{\"step\": 1, \"epoch\": 0}", "data_pos"},
        {"{\"step\": 1, \"epoch\": 0, \"data_pos\": 0, \"rng\": {\"seed\": \"zz\", \"counter\": \"0x1\", "
         "\"buf\": [0,0,0,0], \"buf_used\": 4}}", "rng.seed must be a hex number"},
        {"{\"step\": -1, \"epoch\": 0, \"data_pos\": 0, \"rng\": {\"seed\": \"0x1\", \"counter\": \"0x1\", "
         "\"buf\": [0,0,0,0], \"buf_used\": 4}}", "must be >= 0"},
        {"{\"step\": 1, \"epoch\": 0, \"data_pos\": 0, \"rng\": {\"seed\": \"0x1\", \"counter\": \"0x1\", "
         "\"buf\": [0,0,0,-5], \"buf_used\": 4}}", "rng.buf[3]"},
        {"{\"step\": 1,", "trainer_state.json"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(rl_file_write_atomic(p, bad[i][0], strlen(bad[i][0]), &err), 0);
        cr_assert_eq(rl_checkpoint_load_state(dir, &st, NULL, &err), -1, "case %zu accepted", i);
        cr_assert(strstr(err.msg, bad[i][1]) && strstr(err.msg, "trainer_state.json"), "case %zu: %s", i, err.msg);
    }
    cr_assert_eq(rl_remove_tree(dir, &err), 0, "%s", err.msg);
}
