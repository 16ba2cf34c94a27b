/* generate.h — the generation engine: prompts in, completions (ids, text, per-token log-probs)
 * out.
 *
 * This is the CPU reference engine: every prompt gets one key/value slab of prompt length +
 * max_new_tokens rows (fewer near max_position_embeddings), the prompts are prefilled (in
 * chunks of packed sequences), then all unfinished sequences decode one token per step together. The interface is what a paged,
 * continuous-batching CUDA engine keeps: rl_engine_generate(engine, prompts, n, params,
 * results) with the same meaning and the same random draws.
 *
 * Sampling goes through rl_sample with Philox(seed, counter = (step, row)), where row is the
 * prompt's index in the call and step the index of the token in its completion: a completion
 * depends only on (model, prompt, params, seed, its index), not on when the others finish.
 *
 * A completion ends at an end-of-sequence id (the config's eos ids plus the tokenizer's
 * <|im_end|> and <|endoftext|> when it has them; the id is kept in ids and logprobs, its text
 * is not in text), when a stop string appears in the decoded text (ids and logprobs keep every
 * sampled token, including the one that completed the stop string; text is cut just before the
 * stop string, as vLLM does), or after max_new_tokens, or when prompt + completion reach the
 * model's max_position_embeddings (both "length"; a prompt must be shorter than that). Sampled ids the tokenizer does not have
 * (the padding rows of a model's vocabulary) are kept in ids but have no text. */
#ifndef RL_ENGINE_GENERATE_H
#define RL_ENGINE_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "backend/ops.h"
#include "core/error.h"
#include "io/tokenizer.h"
#include "model/model.h"

#define RL_ENGINE_MAX_EOS 16

typedef struct rl_gen_params {
    rl_sample_params sample;  /* temperature (0 = greedy), top_k, top_p, min_p */
    int max_new_tokens;       /* >= 1 */
    uint64_t seed;
    const char *const *stop;  /* stop strings (need a tokenizer); may be NULL */
    int n_stop;
} rl_gen_params;

/* Defaults: temperature 1, no truncation, 256 new tokens, seed 0, no stop strings. */
rl_gen_params rl_gen_params_default(void);

typedef struct rl_gen_prompt {
    const int32_t *ids; /* host */
    int n_ids;          /* >= 1 */
} rl_gen_prompt;

typedef enum { RL_FINISH_LENGTH = 0, RL_FINISH_EOS = 1, RL_FINISH_STOP = 2 } rl_finish_reason;

typedef struct rl_gen_result {
    int32_t *ids;     /* the sampled tokens (malloc'd) */
    float *logprobs;  /* [n_ids]: log-prob of each under the unmodified softmax(logits / T) */
    int n_ids;
    char *text;       /* NUL-terminated UTF-8 (malloc'd); NULL when the engine has no tokenizer */
    size_t text_len;
    rl_finish_reason finish;
} rl_gen_result;

/* "length", "eos", "stop". */
const char *rl_finish_name(rl_finish_reason finish);

typedef struct rl_engine rl_engine;

/* An engine over a loaded model (not owned; it must outlive the engine). tok may be NULL: no
 * text, no stop strings, eos ids from the config only. */
int rl_engine_create(rl_engine **out, rl_model *m, const rl_tokenizer *tok, rl_err *err);
void rl_engine_free(rl_engine *e);

/* The end-of-sequence ids the engine stops on. */
int rl_engine_eos_ids(const rl_engine *e, const int32_t **ids);

/* Generates one completion per prompt into results[0 .. n) (each freed with
 * rl_gen_result_free, also after a failure). All working memory (KV slabs, activations) is
 * allocated for the call and released before it returns. */
int rl_engine_generate(rl_engine *e, const rl_gen_prompt *prompts, int n,
                       const rl_gen_params *params, rl_gen_result *results, rl_err *err);

void rl_gen_result_free(rl_gen_result *r);

#endif
