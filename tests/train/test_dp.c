/* test_dp.c — data-parallel training on CPU ranks (real processes joined through the
 * rendezvous and the CPU communicator) against one rank on the same global batch:
 *   - the gradient N ranks apply equals the one-rank gradient (lr 0: the first AdamW moment
 *     is (1 - beta1) x gradient; read from the checkpoint, which also tests its gathering),
 *     under ZeRO 0, 1 and 2, on 2 and 3 ranks;
 *   - after several updates the weights agree with one rank within fp32 reordering, the
 *     losses per step agree, and every rank holds bit-identical weights;
 *   - a checkpoint written by 2 ranks under ZeRO 2 resumes on 3 ranks (ZeRO 1) and on 1 rank
 *     and continues as the uninterrupted one-rank run does;
 *   - GRPO on 2 ranks: the step's reward statistics are the whole step's (equal to one rank
 *     taking both ranks' prompts), and the ranks stay identical while learning (also REINFORCE++,
 *     whose batch-wide normalisation now spans the ranks). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "dist/ranks.h"
#include "io/safetensors.h"
#include "train/dp.h"
#include "train/grpo.h"
#include "train/sft.h"

#define MODEL_DIR "tests/fixtures/models/qwen3-tiny-tied"
#define MAX_STEPS 8

static char tmp[64];

static void make_tmp(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/rlc-dp-XXXXXX");
    cr_assert(mkdtemp(tmp));
}

static void remove_tmp(void)
{
    rl_err err;
    rl_remove_tree(tmp, &err);
}

TestSuite(dp, .init = make_tmp, .fini = remove_tmp);

/* ---- SFT ---------------------------------------------------------------------------------------- */

typedef struct sft_job {
    int use_dp, zero, grad_accum, steps;
    double lr;
    const char *resume, *save; /* checkpoint directories, or NULL */
    const char *tag;           /* names the output files */
} sft_job;

static int32_t ids[12][20];
static rl_sft_example ex[12];

static void make_data(int vocab)
{
    rl_rng rng;
    rl_rng_init(&rng, 11);
    for (int i = 0; i < 12; i++) {
        int n = 5 + (7 * i) % 11;
        for (int k = 0; k < n; k++) ids[i][k] = (int32_t)rl_rng_below(&rng, (uint32_t)vocab);
        ex[i] = (rl_sft_example){ids[i], n, 2};
    }
}

static void out_path(char *path, size_t size, const char *tag, const char *what, int rank)
{
    snprintf(path, size, "%s/%s.%s.%d", tmp, tag, what, rank);
}

static int write_file(tr_rank *me, const char *path, const void *data, size_t bytes)
{
    rl_err err;
    if (rl_file_write_atomic(path, data, bytes, &err)) return tr_fail(me, "%s", err.msg);
    return 0;
}

static int sft_rank(tr_rank *me, void *user)
{
    const sft_job *j = user;
    rl_ctx ctx;
    rl_model m;
    rl_dist d = {0};
    rl_dp *dp = NULL;
    rl_sft t;
    rl_err err;
    if (rl_ctx_create(&ctx, RL_BACKEND_CPU, 1, &err) || rl_model_load(&m, &ctx, j->resume ? j->resume : MODEL_DIR, &err))
        return tr_fail(me, "%s", err.msg);
    ctx.n_threads = 1;
    make_data(m.config.vocab_size);
    if (j->use_dp && (rl_dist_init(&d, &me->cfg, &ctx, "test=sft\n", &err) || rl_dp_create(&dp, d.comm, j->zero, &err)))
        return tr_fail(me, "dist: %s", err.msg);
    rl_sft_config c = rl_sft_defaults();
    c.max_tokens = 24;
    c.grad_accum = j->grad_accum;
    c.optim.schedule = (rl_lr_schedule){RL_LR_COSINE, j->lr, 1, 6, 0.1};
    c.optim.max_grad_norm = j->lr > 0 ? 1.0 : 0;
    c.optim.dp = dp;
    if (rl_sft_create(&t, &m, ex, 12, &c, &err) || (j->resume && rl_sft_resume(&t, j->resume, &err)))
        return tr_fail(me, "create: %s", err.msg);
    double losses[MAX_STEPS] = {0};
    for (int s = 0; s < j->steps; s++) {
        rl_step_stats st;
        if (rl_sft_step(&t, &st, &err)) return tr_fail(me, "step %d: %s", s + 1, err.msg);
        losses[s] = st.loss;
    }
    if (j->save && rl_sft_save(&t, j->save, NULL, NULL, &err)) return tr_fail(me, "save: %s", err.msg);
    char path[256];
    out_path(path, sizeof path, j->tag, "weights", me->rank);
    if (write_file(me, path, m.master, m.n_elems * sizeof(float))) return 1;
    out_path(path, sizeof path, j->tag, "losses", me->rank);
    if (write_file(me, path, losses, sizeof losses)) return 1;
    rl_sft_free(&t);
    rl_dp_free(dp);
    if (j->use_dp && rl_dist_finish(&d, 1, &err)) return tr_fail(me, "finish: %s", err.msg);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
    return 0;
}

static float *read_floats(const char *tag, const char *what, int rank, size_t *n)
{
    char path[256];
    out_path(path, sizeof path, tag, what, rank);
    char *data;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(path, &data, &len, &err), 0, "%s", err.msg);
    *n = len / sizeof(float);
    return (float *)data;
}

static void run_job(int world, sft_job *j)
{
    tr_result res;
    tr_run(world, NULL, sft_rank, j, &res);
    for (int r = 0; r < world; r++) cr_assert_eq(res.status[r], 0, "%s rank %d: %s", j->tag, r, res.msg[r]);
}

/* The largest |a - b| over the largest |b|. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d == d)) return INFINITY;
        worst = d > worst ? d : worst;
        scale = fabs(b[i]) > scale ? fabs(b[i]) : scale;
    }
    return worst / scale;
}

static float *exp_avg(const char *dir, size_t *n)
{
    char path[300];
    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    rl_safetensors *st;
    rl_err err;
    cr_assert_eq(rl_safetensors_open(&st, path, &err), 0, "%s", err.msg);
    const rl_st_tensor *t = rl_safetensors_find(st, "exp_avg");
    cr_assert(t);
    *n = (size_t)rl_st_tensor_numel(t);
    float *g = malloc(*n * sizeof *g);
    rl_safetensors_to_f32(t, g);
    rl_safetensors_close(st);
    return g;
}

Test(dp, ranks_apply_the_one_rank_gradient)
{
    char ref_dir[128], dir[128];
    snprintf(ref_dir, sizeof ref_dir, "%s/ref-grad", tmp);
    sft_job ref = {0, 0, 6, 1, 0.0, NULL, ref_dir, "ref"};
    run_job(1, &ref);
    size_t n;
    float *want = exp_avg(ref_dir, &n);
    int worlds[2] = {2, 3};
    for (int w = 0; w < 2; w++)
        for (int zero = 0; zero <= 2; zero++) {
            snprintf(dir, sizeof dir, "%s/grad-%d-%d", tmp, worlds[w], zero);
            sft_job j = {1, zero, 6 / worlds[w], 1, 0.0, NULL, dir, "grad"};
            run_job(worlds[w], &j);
            size_t m;
            float *got = exp_avg(dir, &m);
            cr_assert_eq(m, n);
            double d = rel_diff(got, want, n);
            printf("gradient, %d ranks, ZeRO %d: largest difference %.2e of the largest element\n", worlds[w], zero, d);
            cr_assert(d < 1e-5, "%d ranks, ZeRO %d: gradient differs from one rank's by %.2e", worlds[w], zero, d);
            free(got);
        }
    free(want);
}

/* All ranks hold identical weights; rank 0's match the reference within tol; losses agree. */
static void check_against(const char *tag, int world, const char *ref_tag, int steps, double tol)
{
    size_t n, k;
    float *ref_w = read_floats(ref_tag, "weights", 0, &n), *ref_l = read_floats(ref_tag, "losses", 0, &k);
    for (int r = 0; r < world; r++) {
        float *w = read_floats(tag, "weights", r, &k);
        cr_assert_eq(k, n);
        if (r > 0) {
            float *w0 = read_floats(tag, "weights", 0, &k);
            cr_assert(memcmp(w, w0, n * sizeof *w) == 0, "%s: rank %d's weights differ from rank 0's", tag, r);
            free(w0);
        }
        double d = rel_diff(w, ref_w, n);
        if (r == 0) printf("%s: weights after %d steps differ from one rank's by %.2e\n", tag, steps, d);
        cr_assert(d < tol, "%s rank %d: weights differ from one rank's by %.2e", tag, r, d);
        free(w);
    }
    float *l = read_floats(tag, "losses", 0, &k);
    for (int s = 0; s < steps; s++)
        cr_assert(fabs(l[s] - ref_l[s]) <= 1e-5 * fabs(ref_l[s]), "%s step %d: loss %.9g, one rank %.9g", tag, s + 1,
                  l[s], ref_l[s]);
    free(l);
    free(ref_w);
    free(ref_l);
}

Test(dp, ranks_train_like_one_rank)
{
    sft_job ref = {0, 0, 6, 4, 1e-3, NULL, NULL, "ref4"};
    run_job(1, &ref);
    sft_job z0 = {1, 0, 3, 4, 1e-3, NULL, NULL, "z0"};
    run_job(2, &z0);
    check_against("z0", 2, "ref4", 4, 1e-5);
    sft_job z2 = {1, 2, 2, 4, 1e-3, NULL, NULL, "z2"};
    run_job(3, &z2);
    check_against("z2", 3, "ref4", 4, 1e-5);
}

Test(dp, checkpoint_resumes_on_other_rank_counts)
{
    char half[128];
    snprintf(half, sizeof half, "%s/half", tmp);
    sft_job ref = {0, 0, 6, 4, 1e-3, NULL, NULL, "full"};
    run_job(1, &ref);
    sft_job first = {1, 2, 3, 2, 1e-3, NULL, half, "first"};
    run_job(2, &first);
    sft_job on3 = {1, 1, 2, 2, 1e-3, half, NULL, "on3"};
    run_job(3, &on3);
    check_against("on3", 3, "full", 0, 1e-5);
    sft_job on1 = {0, 0, 6, 2, 1e-3, half, NULL, "on1"};
    run_job(1, &on1);
    check_against("on1", 1, "full", 0, 1e-5);
}

/* ---- GRPO --------------------------------------------------------------------------------------- */

typedef struct grpo_job {
    int use_dp, zero, prompts, steps;
    const char *reward, *tag;
    int reinforce_pp; /* --variant reinforce_pp: advantages normalised over every rank's tokens */
} grpo_job;

static int grpo_rank(tr_rank *me, void *user)
{
    const grpo_job *j = user;
    rl_ctx ctx;
    rl_model m;
    rl_tokenizer *tok;
    rl_reward *reward;
    rl_dist d = {0};
    rl_dp *dp = NULL;
    rl_grpo t;
    rl_err err;
    rl_model_config cfg;
    if (rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err) || rl_tok_load(&tok, "examples/demo/tokenizer.json", &err) ||
        rl_config_load(&cfg, MODEL_DIR "/config.json", &err))
        return tr_fail(me, "%s", err.msg);
    ctx.n_threads = 1;
    cfg.vocab_size = rl_tok_vocab_size(tok);
    if (rl_model_init_random(&m, &ctx, &cfg, 5, &err) || rl_reward_create(&reward, j->reward, NULL, &err))
        return tr_fail(me, "%s", err.msg);
    static int32_t pids[8][6];
    rl_grpo_prompt prompts[8];
    cJSON *fields[8];
    for (int i = 0; i < 8; i++) {
        for (int k = 0; k < 3 + i % 3; k++) pids[i][k] = 40 + 7 * i + k;
        fields[i] = cJSON_CreateObject();
        cJSON_AddNumberToObject(fields[i], "level", i % 3 == 0 ? 3 : 1);
        prompts[i] = (rl_grpo_prompt){pids[i], 3 + i % 3, "prompt", "1", fields[i]};
    }
    if (j->use_dp && (rl_dist_init(&d, &me->cfg, &ctx, "test=grpo\n", &err) || rl_dp_create(&dp, d.comm, j->zero, &err)))
        return tr_fail(me, "dist: %s", err.msg);
    rl_grpo_config c = rl_grpo_defaults();
    c.prompts_per_step = j->prompts;
    c.group_size = 4;
    c.gen.max_new_tokens = 4;
    c.max_tokens = 24;
    c.optim.schedule.peak = 5e-3;
    c.optim.dp = dp;
    if (j->reinforce_pp) rl_grpo_variant(&c, RL_GRPO_VARIANT_REINFORCE_PP, 0);
    if (rl_grpo_create(&t, &m, NULL, tok, reward, prompts, 8, &c, &err)) return tr_fail(me, "create: %s", err.msg);
    double stats[MAX_STEPS][2] = {{0}};
    for (int s = 0; s < j->steps; s++) {
        rl_step_stats st;
        if (rl_grpo_step(&t, &st, &err)) return tr_fail(me, "step %d: %s", s + 1, err.msg);
        stats[s][0] = st.reward_mean;
        stats[s][1] = st.reward_std;
        if (!isfinite(st.loss) || !isfinite(st.kl)) return tr_fail(me, "step %d: loss %g kl %g", s + 1, st.loss, st.kl);
    }
    char path[256];
    out_path(path, sizeof path, j->tag, "weights", me->rank);
    if (write_file(me, path, m.master, m.n_elems * sizeof(float))) return 1;
    out_path(path, sizeof path, j->tag, "rewards", me->rank);
    if (write_file(me, path, stats, sizeof stats)) return 1;
    rl_grpo_free(&t);
    rl_dp_free(dp);
    if (j->use_dp && rl_dist_finish(&d, 1, &err)) return tr_fail(me, "finish: %s", err.msg);
    for (int i = 0; i < 8; i++) cJSON_Delete(fields[i]);
    rl_reward_free(reward);
    rl_tok_free(tok);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
    return 0;
}

Test(dp, grpo_statistics_are_the_whole_steps)
{
    /* the fake reward pays 3 for a prompt of level 3 and 0.25 otherwise, whatever is sampled */
    grpo_job one = {0, 0, 4, 3, "cmd:sh tests/reward/fake_reward.sh ok", "g1", 0};
    tr_result res;
    tr_run(1, NULL, grpo_rank, &one, &res);
    cr_assert_eq(res.status[0], 0, "%s", res.msg[0]);
    grpo_job two = {1, 1, 2, 3, "cmd:sh tests/reward/fake_reward.sh ok", "g2", 0};
    tr_run(2, NULL, grpo_rank, &two, &res);
    for (int r = 0; r < 2; r++) cr_assert_eq(res.status[r], 0, "rank %d: %s", r, res.msg[r]);
    size_t k;
    double *a = (double *)read_floats("g1", "rewards", 0, &k), *b = (double *)read_floats("g2", "rewards", 0, &k);
    int varied = 0;
    for (int s = 0; s < 3; s++) {
        cr_assert(fabs(a[2 * s] - b[2 * s]) < 1e-12 && fabs(a[2 * s + 1] - b[2 * s + 1]) < 1e-9,
                  "step %d: reward mean/std %g/%g on one rank, %g/%g on two", s + 1, a[2 * s], a[2 * s + 1], b[2 * s],
                  b[2 * s + 1]);
        varied |= a[2 * s + 1] > 0;
    }
    cr_assert(varied, "the reward must vary within a step for the check to mean anything");
    free(a);
    free(b);
}

Test(dp, grpo_ranks_stay_identical_while_learning)
{
    grpo_job jobs[2] = {{1, 2, 2, 3, "regex:[aeiou]", "gl", 0}, {1, 1, 2, 3, "regex:[aeiou]", "gr", 1}};
    for (int v = 0; v < 2; v++) { /* GRPO, and REINFORCE++ (batch-wide normalisation) */
        tr_result res;
        tr_run(2, NULL, grpo_rank, &jobs[v], &res);
        for (int r = 0; r < 2; r++) cr_assert_eq(res.status[r], 0, "%s rank %d: %s", jobs[v].tag, r, res.msg[r]);
        size_t n, k;
        float *w0 = read_floats(jobs[v].tag, "weights", 0, &n), *w1 = read_floats(jobs[v].tag, "weights", 1, &k);
        cr_assert_eq(n, k);
        cr_assert(memcmp(w0, w1, n * sizeof *w0) == 0, "%s: the two ranks' weights differ after 3 steps", jobs[v].tag);
        free(w0);
        free(w1);
    }
}
