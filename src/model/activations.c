/* activations.c — plans the activation memory of a model for a maximum token count and mode,
 * and hands out the pieces of ONE backend allocation (layout in acts_internal.h).
 *
 * The plan runs twice over the same sequence of rl_arena_alloc calls: first on a measuring
 * arena (which counts bytes and returns NULL), then on an arena whose base is the backend
 * allocation (rl_arena only does pointer arithmetic on base, so device memory works too). */
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "model/acts_internal.h"

#define ACT_ALIGN 256

typedef struct planner {
    rl_arena arena;
    size_t esize; /* bytes per activation element (ctx->act_dtype) */
} planner;

static void *act(planner *p, size_t n) { return rl_arena_alloc(&p->arena, n * p->esize, ACT_ALIGN); }
static float *f32(planner *p, size_t n) { return rl_arena_alloc(&p->arena, n * sizeof(float), ACT_ALIGN); }
static int32_t *i32(planner *p, size_t n) { return rl_arena_alloc(&p->arena, n * sizeof(int32_t), ACT_ALIGN); }

/* What the backward reads and cannot cheaply recompute: the attention's inputs before QK-norm
 * (q_raw, k_raw; q, k themselves when there is no QK-norm, since RoPE rotates them in place),
 * v, its output and log-sum-exp, the residual h and the MLP's gate and up. */
static void plan_kept(planner *p, rl_layer_acts *s, const rl_model_config *c, size_t T, void **gate_up)
{
    size_t D = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t qd = (size_t)c->n_heads * (size_t)c->head_dim, kd = (size_t)c->n_kv_heads * (size_t)c->head_dim;
    if (c->qk_norm) {
        s->q_raw = act(p, T * qd);
        s->k_raw = act(p, T * kd);
    } else {
        s->q = act(p, T * qd);
        s->k = act(p, T * kd);
    }
    s->v = act(p, T * kd);
    s->attn = act(p, T * qd);
    s->lse = f32(p, T * (size_t)c->n_heads);
    s->h = act(p, T * D);
    if (gate_up) {
        /* One [T, 2 I] buffer: [T, I] gate and up halves for the separate products, or the
         * interleaved rows of the fused one. */
        *gate_up = act(p, T * 2 * I);
        s->gate = *gate_up;
        s->up = *gate_up ? (char *)*gate_up + T * I * p->esize : NULL;
    } else {
        s->gate = act(p, T * I);
        s->up = act(p, T * I);
    }
}

/* What one forward op remakes from the kept set: the RMSNorm outputs with their rstd, q and k
 * after QK-norm + RoPE, and silu(gate) * up. */
static void plan_recomputed(planner *p, rl_layer_acts *s, const rl_model_config *c, size_t T)
{
    size_t D = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t qd = (size_t)c->n_heads * (size_t)c->head_dim, kd = (size_t)c->n_kv_heads * (size_t)c->head_dim;
    s->xn1 = act(p, T * D);
    s->rstd1 = f32(p, T);
    if (c->qk_norm) {
        s->q = act(p, T * qd);
        s->k = act(p, T * kd);
        s->q_rstd = f32(p, T * (size_t)c->n_heads);
        s->k_rstd = f32(p, T * (size_t)c->n_kv_heads);
    }
    s->xn2 = act(p, T * D);
    s->rstd2 = f32(p, T);
    s->act = act(p, T * I);
}

/* One pass of the plan; with a measuring arena every pointer comes out NULL. */
static void plan(planner *p, rl_acts *a)
{
    const rl_model_config *c = &a->model->config;
    size_t T = (size_t)a->max_tokens, D = (size_t)c->hidden_size, I = (size_t)c->intermediate_size;
    size_t qd = (size_t)c->n_heads * (size_t)c->head_dim, kd = (size_t)c->n_kv_heads * (size_t)c->head_dim;
    int L = c->n_layers;

    if (a->mode == RL_ACTS_INFER) {
        /* the residual stream, in two buffers: x (every layer's input and output) and h (after
         * the attention), so that no product adds to the stream in place (cuBLASLt's residual
         * product in place rounds twice: 1 bf16 ulp off in ~30% of the outputs at 65+ rows) */
        void *stream = act(p, T * D);
        for (int l = 0; l <= L; l++) a->x[l] = stream;
        plan_kept(p, &a->layers[0], c, T, &a->gate_up);
        plan_recomputed(p, &a->layers[0], c, T);
        for (int l = 1; l < L; l++) a->layers[l] = a->layers[0];
        a->gather = act(p, T * D);
        if (a->model->fused_qkv) {
            a->qkv = act(p, T * (qd + 2 * kd));
            a->split_q = i32(p, T * (size_t)c->n_heads);
            a->split_k = i32(p, T * (size_t)c->n_kv_heads);
            a->split_v = i32(p, T * (size_t)c->n_kv_heads);
        }
    } else if (a->mode == RL_ACTS_TRAIN_CHECKPOINT) {
        for (int l = 0; l <= L; l++) a->x[l] = act(p, T * D);
        plan_kept(p, &a->layers[0], c, T, NULL);
        plan_recomputed(p, &a->layers[0], c, T);
        for (int l = 1; l < L; l++) a->layers[l] = a->layers[0];
    } else {
        /* Each layer keeps its own set; the recomputed pieces are one set that every layer's
         * forward overwrites and its backward remakes (layer_bwd in qwen3.c). */
        rl_layer_acts shared = {0};
        plan_recomputed(p, &shared, c, T);
        for (int l = 0; l <= L; l++) a->x[l] = act(p, T * D);
        for (int l = 0; l < L; l++) {
            a->layers[l] = shared; /* plan_kept sets only the fields plan_recomputed left */
            plan_kept(p, &a->layers[l], c, T, NULL);
        }
    }
    a->xf = act(p, T * D);
    a->rstd_f = f32(p, T);
    a->head_lse = f32(p, T);
    a->logp_next = f32(p, T);
    a->entropy_next = f32(p, T);
    a->tokens = i32(p, T);
    a->positions = i32(p, T);
    a->targets = i32(p, T);
    a->cu_q = i32(p, T + 1);
    a->kx = act(p, T * kd);
    a->vx = act(p, T * kd);
    a->kmap = i32(p, T);
    a->cu_k = i32(p, T + 1);
    a->kinv_off = i32(p, T + 1);
    a->kinv_rows = i32(p, T);
    if (a->mode == RL_ACTS_INFER) return;

    a->dres = act(p, T * D);
    a->dxn = act(p, T * D);
    a->dattn = act(p, T * qd);
    a->dq = act(p, T * qd);
    a->dk = act(p, T * kd);
    a->dv = act(p, T * kd);
    a->dkx = act(p, T * kd);
    a->dvx = act(p, T * kd);
    if (c->qk_norm) {
        a->dq_raw = act(p, T * qd);
        a->dk_raw = act(p, T * kd);
    }
    a->dgate = act(p, T * I);
    a->dup = act(p, T * I);
    a->dact = act(p, T * I);
    a->dlogp_next = f32(p, T);
    a->dentropy_next = f32(p, T);
    a->dvalues_next = f32(p, T);
}

/* The rows of qkv (as [T (H + 2 KV), head_dim]) that hold q, k and v of each token, in token
 * order: token t's row block starts at t (H + 2 KV), with q heads, then k, then v. */
static int upload_split_rows(rl_acts *a, rl_err *err)
{
    const rl_model_config *c = &a->model->config;
    int H = c->n_heads, KV = c->n_kv_heads, per = H + 2 * KV;
    size_t T = (size_t)a->max_tokens;
    int32_t *rows = malloc(T * (size_t)per * sizeof *rows);
    if (!rows) return rl_err_oom(err, "qkv split rows", T * (size_t)per * sizeof *rows);
    int32_t *q = rows, *k = q + T * H, *v = k + T * KV;
    for (size_t t = 0; t < T; t++) {
        for (int h = 0; h < H; h++) q[t * H + h] = (int32_t)(t * per + h);
        for (int h = 0; h < KV; h++) {
            k[t * KV + h] = (int32_t)(t * per + H + h);
            v[t * KV + h] = (int32_t)(t * per + H + KV + h);
        }
    }
    rl_ctx *ctx = a->model->ctx;
    int rc = rl_memcpy(ctx, a->split_q, q, T * H * sizeof *rows, RL_H2D) ||
             rl_memcpy(ctx, a->split_k, k, T * KV * sizeof *rows, RL_H2D) ||
             rl_memcpy(ctx, a->split_v, v, T * KV * sizeof *rows, RL_H2D);
    free(rows);
    if (rc) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "activations: ");
    }
    return 0;
}

int rl_acts_create(rl_acts **out, const rl_model *m, int max_tokens, rl_acts_mode mode,
                   rl_err *err)
{
    *out = NULL;
    if (max_tokens < 1) return rl_err_set(err, "activations: max_tokens = %d, must be >= 1", max_tokens);
    int L = m->config.n_layers;
    rl_acts *a = calloc(1, sizeof *a);
    if (!a) return rl_err_oom(err, "activations", sizeof *a);
    a->model = m;
    a->mode = mode;
    a->max_tokens = max_tokens;
    a->x = calloc((size_t)L + 1, sizeof *a->x);
    a->layers = calloc((size_t)L, sizeof *a->layers);
    size_t host_n = (size_t)max_tokens + 1;
    int32_t *host = malloc(7 * host_n * sizeof(int32_t));
    if (!a->x || !a->layers || !host) {
        free(host);
        rl_acts_free(a);
        return rl_err_oom(err, "activation tables", 7 * host_n * sizeof(int32_t));
    }
    a->host_positions = host;
    a->host_targets = host + host_n;
    a->host_cu = host + 2 * host_n;
    a->host_kmap = host + 3 * host_n;
    a->host_cu_k = host + 4 * host_n;
    a->host_kinv_off = host + 5 * host_n;
    a->host_kinv_rows = host + 6 * host_n;

    planner p = {.esize = rl_dtype_size(m->ctx->act_dtype)};
    rl_arena_create(&p.arena, 0);
    plan(&p, a);
    a->bytes = p.arena.peak;
    a->base = rl_alloc(m->ctx, a->bytes);
    if (!a->base) {
        rl_ctx_error(m->ctx, err);
        rl_acts_free(a);
        return rl_err_prefix(err, "activations for %d tokens: ", max_tokens);
    }
    p.arena = (rl_arena){.base = a->base, .capacity = a->bytes};
    plan(&p, a);
    if (a->split_q && upload_split_rows(a, err)) {
        rl_acts_free(a);
        return -1;
    }
    *out = a;
    return 0;
}

int rl_acts_share(rl_acts *a, const rl_model *m, rl_err *err)
{
    const rl_model_config *x = &a->model->config, *y = &m->config;
    if (a->mode == RL_ACTS_INFER)
        return rl_err_set(err, "model: inference activations are not shared (their plan follows the weights' layout)");
    if (a->model->ctx != m->ctx || x->hidden_size != y->hidden_size || x->intermediate_size != y->intermediate_size ||
        x->n_layers != y->n_layers || x->n_heads != y->n_heads || x->n_kv_heads != y->n_kv_heads ||
        x->head_dim != y->head_dim || x->qk_norm != y->qk_norm || x->attention_bias != y->attention_bias)
        return rl_err_set(err, "model: the activations were planned for another shape of model");
    a->model = m;
    a->have_batch = 0;
    return 0;
}

size_t rl_acts_plan_bytes(const rl_model_config *cfg, rl_dtype act_dtype, int max_tokens, rl_acts_mode mode)
{
    /* inference fuses q, k, v when their weights are adjacent (params.c): counted whenever they
     * have no biases, so the estimate is never below what rl_acts_create allocates */
    rl_model shape = {.config = *cfg, .fused_qkv = !cfg->attention_bias};
    rl_acts a = {.model = &shape, .mode = mode, .max_tokens = max_tokens};
    a.x = calloc((size_t)cfg->n_layers + 1, sizeof *a.x);
    a.layers = calloc((size_t)cfg->n_layers, sizeof *a.layers);
    size_t bytes = 0;
    if (a.x && a.layers) {
        planner p = {.esize = rl_dtype_size(act_dtype)};
        rl_arena_create(&p.arena, 0);
        plan(&p, &a);
        bytes = p.arena.peak;
    }
    free(a.x);
    free(a.layers);
    return bytes;
}

void rl_acts_free(rl_acts *a)
{
    if (!a) return;
    if (a->base) rl_free(a->model->ctx, a->base);
    free(a->host_positions);
    free(a->x);
    free(a->layers);
    free(a);
}

size_t rl_acts_bytes(const rl_acts *a) { return a->bytes; }
