/* sft.h — supervised fine-tuning: next-token cross-entropy on completion tokens only.
 *
 * An example is one token sequence whose first n_prompt tokens are context (no loss) and the
 * rest the completion. One step = grad_accum micro-batches; each micro-batch packs whole
 * consecutive examples (in the data order, order.h) end to end, with no padding, up to
 * max_tokens tokens. The loss of a step is the mean over all its completion tokens of
 * -log p(token | prefix) (every token counts the same, as transformers does with
 * num_items_in_batch), so the gradient needs no scaling after accumulation.
 *
 * Data parallel (cfg.optim.dp, train/dp.h): grad_accum is per rank. A step of N ranks takes the
 * N x grad_accum micro-batches one rank with grad_accum N x grad_accum would take, rank r the
 * r-th block of grad_accum of them; loss and token counts are the whole step's. */
#ifndef RL_TRAIN_SFT_H
#define RL_TRAIN_SFT_H

#include <stdint.h>

#include "core/error.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "train/metrics.h"
#include "train/optim.h"
#include "train/order.h"

typedef struct rl_sft_example {
    const int32_t *ids;
    int n_ids;
    int n_prompt; /* tokens [0, n_prompt) get no loss; the first token never has one */
} rl_sft_example;

typedef struct rl_sft_config {
    int max_tokens;          /* token budget of one packed micro-batch */
    int grad_accum;          /* micro-batches per optimizer step */
    int shuffle;
    uint64_t seed;
    int recompute;           /* activation checkpointing: keep layer inputs, recompute */
    rl_optim_config optim;
} rl_sft_config;

typedef struct rl_sft {
    rl_model *model;         /* not owned */
    const rl_sft_example *data;
    int n_data;
    rl_sft_config cfg;
    rl_acts *acts;
    rl_optim optim;
    rl_order order;
    rl_train_state state;
    rl_train_state before;        /* state at the start of the current step (rescue) */
    int optim_before;             /* optim.step then */
    int32_t *tokens, *cu_seqlens; /* host [max_tokens], [max_tokens + 1] */
    float *logp, *dlogp;          /* backend [max_tokens] each (one allocation) */
    float *host_f;                /* host [max_tokens] */
    int *batch_items;             /* host: example indices of the step being planned */
    double *item_loss;            /* host [max_tokens]: mean loss of each example of this rank's
                                     first micro-batch (samples.jsonl) */
    struct rl_runlog *log;        /* samples (train/runlog.h); not owned, NULL: none. Set after
                                     rl_sft_create */
} rl_sft;

rl_sft_config rl_sft_defaults(void);

/* Checks every example (fits max_tokens, has completion tokens, ids in the vocabulary),
 * enables gradients and allocates everything. The model and the data must outlive t. */
int rl_sft_create(rl_sft *t, rl_model *m, const rl_sft_example *data, int n_data,
                  const rl_sft_config *cfg, rl_err *err);
void rl_sft_free(rl_sft *t);

/* One optimizer step; fills stats (step number after it, loss, lr, grad norm, tokens, time).
 * A non-finite loss fails the step before the weights change. */
int rl_sft_step(rl_sft *t, rl_step_stats *stats, rl_err *err);
/* After rl_sft_step failed: the data position and RNG of the last completed step come back.
 * 0 when t again holds exactly that step (rl_sft_save may follow), -1 when the failed step had
 * already changed the weights (train/loop.h: the rescue hook). */
int rl_sft_rescue(rl_sft *t);

/* Saves a checkpoint of t (checkpoint.h) into dir. */
int rl_sft_save(const rl_sft *t, const char *dir, const cJSON *options, const char *tokenizer_dir,
                rl_err *err);
/* Continues from the checkpoint in dir: optimizer moments, step, data position, RNG. The model
 * t was created with must have been loaded from dir. */
int rl_sft_resume(rl_sft *t, const char *dir, rl_err *err);

/* Mean cross-entropy over the completion tokens of examples (no update), packing as the step
 * does. */
int rl_sft_eval_loss(rl_sft *t, const rl_sft_example *ex, int n, double *loss, rl_err *err);

#endif
