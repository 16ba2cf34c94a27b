/* checkpoint.h — a training checkpoint: a Hugging Face model directory that transformers loads,
 * plus what an exact resume needs.
 *
 * Layout of DIR:
 *   config.json, model.safetensors    rl_model_save, fp32 (the master weights, bit-exact)
 *   tokenizer.json, ...               copied from the source model directory when present
 *   optimizer.safetensors             "exp_avg" and "exp_avg_sq": the AdamW moments, fp32,
 *                                     flat in the parameter layout of model.h
 *   trainer_state.json                step, optimizer step, epoch and data position, the
 *                                     trainer's RNG state (64-bit values as hex strings) and
 *                                     the trainer's options
 * Atomic: everything is written into "DIR.tmp.<pid>", which is then renamed to DIR (an older
 * DIR is moved aside first and removed after), so an interrupted save never leaves a broken
 * checkpoint under the final name.
 *
 * Data parallel (an optimizer with cfg.dp, train/dp.h): saving is collective; rank 0 gathers the
 * masters and the moments from every rank's shard and alone writes the directory, in this same
 * format, so a checkpoint resumes on any number of ranks (each reads its slice of the moments). */
#ifndef RL_TRAIN_CHECKPOINT_H
#define RL_TRAIN_CHECKPOINT_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/error.h"
#include "core/rng.h"
#include "model/model.h"
#include "train/optim.h"

typedef struct rl_train_state {
    int64_t step;     /* trainer steps completed */
    int64_t epoch;    /* pass over the data the next example comes from */
    int64_t data_pos; /* position of the next example in that pass's order */
    rl_rng rng;       /* the trainer's random stream */
} rl_train_state;

/* Saves model, optimizer (may be NULL: weights only), state and options (may be NULL) to dir.
 * tokenizer_dir: directory to copy tokenizer files from (NULL to skip). */
int rl_checkpoint_save(const char *dir, const rl_model *m, const rl_optim *o,
                       const rl_train_state *st, const cJSON *options, const char *tokenizer_dir,
                       rl_err *err);

/* The same from host copies, by this process alone: master [m->n_elems] and, with o, moments
 * [2 o->n_elems] (m then v; o may hold another layout than m, e.g. a head trained beside m). */
int rl_checkpoint_write(const char *dir, const rl_model *m, const float *master, const rl_optim *o,
                        const float *moments, const rl_train_state *st, const cJSON *options,
                        const char *tokenizer_dir, rl_err *err);

/* Reads dir's trainer_state.json into *st and, when options is not NULL, a copy of its
 * options (caller frees with cJSON_Delete). */
int rl_checkpoint_load_state(const char *dir, rl_train_state *st, cJSON **options, rl_err *err);

/* Reads dir's optimizer.safetensors into o (created for the same model; the elements o holds,
 * all or its shard) and sets o->step. */
int rl_checkpoint_load_optim(const char *dir, rl_optim *o, rl_err *err);

/* Copies the tokenizer files that exist in src_dir into dst_dir. */
int rl_checkpoint_copy_tokenizer(const char *src_dir, const char *dst_dir, rl_err *err);

#endif
