/* shared_critic.h — PPO's shared-trunk critic (--critic shared; the layout of TRL's older
 * AutoModelForCausalLMWithValueHead): a one-label score head on the policy's final hidden state,
 * trained with its own AdamW (the value model's settings: vf_lr), while the value loss's
 * gradient through the trunk joins the policy's in the same backward (model.h rl_value_head) and
 * the policy's optimizer applies it.
 *
 * The head: weight [hidden_size] at element 0 and bias at element A = hidden_size rounded up to
 * 64 (the model's own alignment), n_elems = A + 64; fp32 masters and gradients in backend memory,
 * the working copy the forward reads in the act dtype (the masters themselves where that is
 * fp32). It starts at zero, as rl_model_load_value's new head: every value starts at 0 and the
 * first updates move the head alone.
 *
 * Saved as a value model a transformers user can load: rl_shared_critic_save writes DIR/value as
 * a <Arch>ForTokenClassification checkpoint (checkpoint.h layout, fp32) whose trunk is the
 * policy's weights at that step and whose score head is this one, with the head's AdamW moments
 * as its optimizer.safetensors; rl_shared_critic_load reads the head and its moments back. */
#ifndef RL_TRAIN_SHARED_CRITIC_H
#define RL_TRAIN_SHARED_CRITIC_H

#include "core/error.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "train/optim.h"

typedef struct rl_shared_critic {
    rl_ctx *ctx; /* not owned */
    int dim;
    size_t bias_at, n_elems;
    float *master, *grads; /* backend fp32 [n_elems] */
    void *working;         /* act dtype [n_elems]; == master where that is fp32 */
    rl_param params[2];    /* score.weight, score.bias: the optimizer's table */
    rl_optim optim;
} rl_shared_critic;

/* A zero head for policy's hidden size, its optimizer from cfg (no data parallel). */
int rl_shared_critic_create(rl_shared_critic *c, const rl_model *policy, const rl_optim_config *cfg, rl_err *err);
void rl_shared_critic_free(rl_shared_critic *c);

/* The head as the model's forward and backward take it. */
rl_value_head rl_shared_critic_head(const rl_shared_critic *c);

/* One AdamW update of the head from its gradients (zeroed after). */
int rl_shared_critic_step(rl_shared_critic *c, rl_optim_stats *stats, rl_err *err);

/* vdir: the value model (trunk = policy's masters, this head) and the head's optimizer, as a
 * checkpoint with state st. */
int rl_shared_critic_save(const rl_shared_critic *c, const rl_model *policy, const char *vdir,
                          const rl_train_state *st, const char *tokenizer_dir, rl_err *err);
/* The head's weights (vdir's score.weight and score.bias) and optimizer state from vdir. */
int rl_shared_critic_load(rl_shared_critic *c, const char *vdir, rl_err *err);

#endif
