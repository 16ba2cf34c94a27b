/* test_shared_prefix.c — rl_model_forward_shared (model.h) on the tiny checkpoints: a batch of
 * one unrelated sequence and three continuations of one prompt, laid out as GRPO lays a group
 * (the prompt without its last token once, each continuation as [last prompt token, its
 * tokens]), gives the log-probs and entropies of the continuations' tokens and the gradients
 * of every parameter that the whole sequences give (fp32; train, checkpoint and inference
 * modes); bad prefix tables are refused with a message. */
#include "model_fixture.h"
#include "shared_layout.h"

static const char *MODELS[] = {"qwen3-tiny-tied", "qwen2-tiny", "llama3-tiny"};
#define N_MODELS (sizeof MODELS / sizeof MODELS[0])

enum { PROMPT = 9, OTHER = 6, MAX_T = 64 };
static const int CONT_LEN[N_CONT] = {5, 1, 11};

typedef struct run {
    float logp[MAX_T], entropy[MAX_T];
    float *grads;
} run;

static void run_model(rl_model *m, rl_acts_mode mode, const shared_layout *L, int shared, run *out)
{
    rl_err err = {{0}};
    rl_acts *a;
    cr_assert_eq(rl_acts_create(&a, m, MAX_T, mode, &err), 0, "%s", err.msg);
    const float *w = shared ? L->w_shared : L->w_whole;
    int n = shared ? L->n_shared : L->n_whole;
    tu_poison(out->logp, MAX_T);
    tu_poison(out->entropy, MAX_T);
    int rc = shared ? rl_model_forward_shared(m, a, L->shared, L->cu_shared, L->prefix_of, N_CONT + 2, 0.8f,
                                              out->logp, out->entropy, &err)
                    : rl_model_forward(m, a, L->whole, L->cu_whole, N_CONT + 1, 0.8f, out->logp, out->entropy, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    out->grads = NULL;
    if (mode != RL_ACTS_INFER) {
        memset(m->grads, 0, m->n_elems * sizeof(float));
        float dlogp[MAX_T];
        memcpy(dlogp, w, (size_t)n * sizeof(float));
        cr_assert_eq(rl_model_backward(m, a, dlogp, &err), 0, "%s", err.msg);
        out->grads = malloc(m->n_elems * sizeof(float));
        memcpy(out->grads, m->grads, m->n_elems * sizeof(float));
    }
    rl_acts_free(a);
}

Test(shared_prefix, matches_whole_sequences)
{
    for (size_t i = 0; i < N_MODELS; i++) {
        model_fixture f;
        mf_load(&f, MODELS[i]);
        rl_err err = {{0}};
        rl_ctx ctx;
        rl_model m;
        cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
        cr_assert_eq(rl_model_load(&m, &ctx, f.model_dir, &err), 0, "%s", err.msg);
        cr_assert_eq(rl_model_enable_grads(&m, &err), 0, "%s", err.msg);
        shared_layout L;
        sl_make(&L, PROMPT, OTHER, CONT_LEN, m.config.vocab_size);
        cr_assert(L.n_whole <= MAX_T);
        rl_acts_mode modes[3] = {RL_ACTS_TRAIN, RL_ACTS_TRAIN_CHECKPOINT, RL_ACTS_INFER};
        for (int k = 0; k < 3; k++) {
            run whole, shared;
            run_model(&m, modes[k], &L, 0, &whole);
            run_model(&m, modes[k], &L, 1, &shared);
            double worst_lp = 0, worst_h = 0;
            for (int t = 0; t < L.n_whole; t++) {
                int r = L.row_of[t];
                if (r < 0 || t == 0) continue; /* no row of its own, or a sequence start */
                worst_lp = fmax(worst_lp, fabs(shared.logp[r] - whole.logp[t]));
                worst_h = fmax(worst_h, fabs(shared.entropy[r] - whole.entropy[t]));
            }
            for (int s = 0; s < N_CONT + 2; s++)
                cr_expect(shared.logp[L.cu_shared[s]] == 0.0f, "%s: shared sequence %d's first token must score 0",
                          MODELS[i], s);
            cr_log_info("%s mode %d: logp max |diff| %.2e, entropy %.2e", MODELS[i], k, worst_lp, worst_h);
            cr_expect(worst_lp <= 2e-5 && worst_h <= 2e-5, "%s mode %d: log-probs differ by %.3e, entropies by %.3e",
                      MODELS[i], k, worst_lp, worst_h);
            if (whole.grads) {
                double e = mf_scaled_err(shared.grads, whole.grads, m.n_elems);
                cr_log_info("%s mode %d: gradient error %.2e", MODELS[i], k, e);
                cr_expect(e <= 1e-5, "%s mode %d: gradients differ from the whole sequences' (error %.3e)", MODELS[i],
                          k, e);
                free(whole.grads);
                free(shared.grads);
            }
        }
        sl_free(&L);
        rl_model_free(&m);
        rl_ctx_free(&ctx);
        mf_free(&f);
    }
}

static void expect_refused(rl_model *m, rl_acts *a, const shared_layout *L, const int32_t *prefix_of, const char *msg)
{
    rl_err err = {{0}};
    float logp[MAX_T];
    cr_expect_eq(rl_model_forward_shared(m, a, L->shared, L->cu_shared, prefix_of, N_CONT + 2, 1.0f, logp, NULL, &err),
                 -1);
    cr_expect_str_eq(err.msg, msg);
}

Test(shared_prefix, bad_prefix_tables_are_refused)
{
    model_fixture f;
    mf_load(&f, MODELS[0]);
    rl_err err = {{0}};
    rl_ctx ctx;
    rl_model m;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_load(&m, &ctx, f.model_dir, &err), 0, "%s", err.msg);
    shared_layout L;
    sl_make(&L, PROMPT, OTHER, CONT_LEN, m.config.vocab_size);
    rl_acts *a;
    cr_assert_eq(rl_acts_create(&a, &m, MAX_T, RL_ACTS_INFER, &err), 0, "%s", err.msg);
    int32_t later[N_CONT + 2] = {-1, 2, -1, -1, -1}, chain[N_CONT + 2] = {-1, -1, 1, 2, 1},
            low[N_CONT + 2] = {-1, -1, -2, 1, 1};
    expect_refused(&m, a, &L, later, "model: prefix_of[1] = 2 is neither -1 nor an earlier sequence without a prefix");
    expect_refused(&m, a, &L, chain, "model: prefix_of[3] = 2 is neither -1 nor an earlier sequence without a prefix");
    expect_refused(&m, a, &L, low, "model: prefix_of[2] = -2 is neither -1 nor an earlier sequence without a prefix");
    rl_acts_free(a);
    /* the batch fits 40 rows, its key slabs (the prefix copied three more times) do not */
    cr_assert_lt(L.n_shared, 40);
    cr_assert_eq(rl_acts_create(&a, &m, 40, RL_ACTS_INFER, &err), 0, "%s", err.msg);
    expect_refused(&m, a, &L, L.prefix_of,
                   "model: the key slabs of the shared prefixes need more than 40 rows (the activations' plan)");
    rl_acts_free(a);
    sl_free(&L);
    rl_model_free(&m);
    rl_ctx_free(&ctx);
    mf_free(&f);
}
