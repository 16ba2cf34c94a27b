/* shared_critic.c — see shared_critic.h. */
#include "train/shared_critic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "io/config.h"
#include "io/safetensors.h"

static int ctx_fail(rl_ctx *ctx, rl_err *err)
{
    rl_ctx_error(ctx, err);
    return rl_err_prefix(err, "shared critic: ");
}

int rl_shared_critic_create(rl_shared_critic *c, const rl_model *policy, const rl_optim_config *cfg, rl_err *err)
{
    memset(c, 0, sizeof *c);
    if (cfg->dp) return rl_err_set(err, "shared critic: --critic shared does not run data parallel (use --critic separate)");
    rl_ctx *ctx = c->ctx = policy->ctx;
    c->dim = policy->config.hidden_size;
    c->bias_at = ((size_t)c->dim + 63) / 64 * 64;
    c->n_elems = c->bias_at + 64;
    c->params[0] = (rl_param){"score.weight", 2, {1, c->dim}, 0, (size_t)c->dim, 1};
    c->params[1] = (rl_param){"score.bias", 1, {1, 1}, c->bias_at, 1, 0};
    size_t bytes = c->n_elems * sizeof(float);
    c->master = rl_alloc(ctx, bytes);
    c->grads = rl_alloc(ctx, bytes);
    if (!c->master || !c->grads || rl_memzero(ctx, c->master, bytes) || rl_memzero(ctx, c->grads, bytes)) {
        rl_shared_critic_free(c);
        return ctx_fail(ctx, err);
    }
    if (ctx->act_dtype == RL_F32) {
        c->working = c->master;
    } else {
        size_t wbytes = c->n_elems * rl_dtype_size(ctx->act_dtype);
        c->working = rl_alloc(ctx, wbytes);
        if (!c->working || rl_memzero(ctx, c->working, wbytes)) {
            rl_shared_critic_free(c);
            return ctx_fail(ctx, err);
        }
    }
    if (rl_optim_create(&c->optim, ctx, c->params, 2, c->n_elems, cfg, err)) {
        rl_shared_critic_free(c);
        return rl_err_prefix(err, "shared critic: ");
    }
    return 0;
}

void rl_shared_critic_free(rl_shared_critic *c)
{
    if (!c->ctx) return;
    rl_optim_free(&c->optim);
    if (c->working != (void *)c->master) rl_free(c->ctx, c->working);
    rl_free(c->ctx, c->master);
    rl_free(c->ctx, c->grads);
    memset(c, 0, sizeof *c);
}

rl_value_head rl_shared_critic_head(const rl_shared_critic *c)
{
    size_t es = rl_dtype_size(c->ctx->act_dtype);
    return (rl_value_head){c->working, (const char *)c->working + c->bias_at * es, c->grads, c->grads + c->bias_at};
}

int rl_shared_critic_step(rl_shared_critic *c, rl_optim_stats *stats, rl_err *err)
{
    void *working = c->working == (void *)c->master ? NULL : c->working;
    return rl_optim_step(&c->optim, c->master, working, c->grads, 1.0, stats, err);
}

int rl_shared_critic_save(const rl_shared_critic *c, const rl_model *policy, const char *vdir,
                          const rl_train_state *st, const char *tokenizer_dir, rl_err *err)
{
    if (policy->master_count != policy->n_elems)
        return rl_err_set(err, "%s: the policy's masters are sharded", vdir);
    rl_model_config cfg = policy->config;
    rl_config_as_value(&cfg, RL_HEAD_TOKEN_CLS);
    rl_model vm;
    if (rl_model_table(&vm, &cfg, err)) return rl_err_prefix(err, "%s: ", vdir);
    float *pol = malloc(policy->n_elems * sizeof(float)), *head = malloc(c->n_elems * sizeof(float));
    float *host = malloc(vm.n_elems * sizeof(float)), *moments = malloc(2 * c->n_elems * sizeof(float));
    int rc = 0;
    if (!pol || !head || !host || !moments)
        rc = rl_err_oom(err, "shared critic save staging", (policy->n_elems + vm.n_elems) * sizeof(float));
    else if (rl_memcpy(c->ctx, pol, policy->master, policy->n_elems * sizeof(float), RL_D2H) ||
             rl_memcpy(c->ctx, head, c->master, c->n_elems * sizeof(float), RL_D2H) ||
             rl_memcpy(c->ctx, moments, c->optim.m, 2 * c->n_elems * sizeof(float), RL_D2H))
        rc = ctx_fail(c->ctx, err);
    for (int i = 0; rc == 0 && i < vm.n_params; i++) {
        const rl_param *p = &vm.params[i];
        const float *from;
        if (!strcmp(p->name, "score.weight")) from = head;
        else if (!strcmp(p->name, "score.bias")) from = head + c->bias_at;
        else {
            int j = rl_model_find_param(policy, p->name);
            if (j < 0 || policy->params[j].count != p->count) {
                rc = rl_err_set(err, "%s: the policy has no tensor '%s' of %zu elements", vdir, p->name, p->count);
                break;
            }
            from = pol + policy->params[j].offset;
        }
        memcpy(host + p->offset, from, p->count * sizeof(float));
    }
    if (rc == 0) rc = rl_checkpoint_write(vdir, &vm, host, &c->optim, moments, st, NULL, tokenizer_dir, err);
    free(pol), free(head), free(host), free(moments);
    rl_model_free(&vm);
    return rc;
}

int rl_shared_critic_load(rl_shared_critic *c, const char *vdir, rl_err *err)
{
    rl_safetensors *st;
    if (rl_safetensors_open_dir(&st, vdir, err)) return -1;
    float *head = calloc(c->n_elems, sizeof(float));
    const rl_st_tensor *w = rl_safetensors_find(st, "score.weight"), *b = rl_safetensors_find(st, "score.bias");
    int rc = 0;
    if (!head) rc = rl_err_oom(err, "shared critic head", c->n_elems * sizeof(float));
    else if (!w || rl_st_tensor_numel(w) != c->dim || (b && rl_st_tensor_numel(b) != 1))
        rc = rl_err_set(err, "%s: no score.weight of %d elements (the policy's hidden size) and score.bias of 1: not "
                             "the value model of a shared critic", vdir, c->dim);
    if (rc == 0) {
        rl_safetensors_to_f32(w, head);
        if (b) rl_safetensors_to_f32(b, head + c->bias_at);
        if (rl_memcpy(c->ctx, c->master, head, c->n_elems * sizeof(float), RL_H2D) ||
            (c->working != (void *)c->master && rl_upload_act(c->ctx, c->working, head, c->n_elems)))
            rc = ctx_fail(c->ctx, err);
    }
    free(head);
    rl_safetensors_close(st);
    if (rc == 0 && rl_checkpoint_load_optim(vdir, &c->optim, err)) return rl_err_prefix(err, "shared critic: ");
    return rc;
}
