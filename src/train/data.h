/* data.h — the preparation of a training run's data: dataset lines (io/dataset.h) to token ids
 * for the trainers (`rlc sft`, `rlc grpo` and the demo all go through here).
 *
 * SFT: {"prompt","completion"} as text: ids = encode(prompt) + encode(completion) + <eos>
 * (the tokenizer's end of turn, rl_tok_eos_ids, else the config's first eos id); as messages:
 * the prompt rendered by the tokenizer's chat template (io/chat.h) with the generation prompt,
 * then what the whole conversation adds to it (the completion turns, with the template's
 * end-of-turn tokens and, for Qwen3, its think block). A {"messages"} line learns the last
 * assistant turn: everything before it is the prompt (masked out of the loss). A line's
 * "tools" go to the template.
 * GRPO: the prompt as text, or as messages rendered with the generation prompt (enable_thinking
 * as given); the reward sees that same prompt text.
 * Examples longer than max_len tokens are cut at max_len (SFT: from the end of the completion;
 * n_truncated counts them) or refused (GRPO prompts); messages name the file and the line. */
#ifndef RL_TRAIN_DATA_H
#define RL_TRAIN_DATA_H

#include "core/error.h"
#include "io/dataset.h"
#include "io/tokenizer.h"
#include "model/model.h"
#include "train/grpo.h"
#include "train/sft.h"

typedef struct rl_train_data {
    rl_dataset *ds;
    rl_sft_example *sft;
    rl_grpo_prompt *prompts;
    char **texts; /* GRPO: formatted prompt texts */
    int32_t **ids;
    int n, n_truncated;
    int max_ids; /* the longest example (SFT) or prompt (GRPO), in tokens */
} rl_train_data;

/* cfg gives the eos id when the tokenizer has no end-of-turn token (may be NULL). */
int rl_train_data_sft(rl_train_data *d, const char *path, const rl_tokenizer *tok, const rl_model_config *cfg,
                      int max_len, rl_err *err);
/* Chat prompts with the template's default (enable_thinking on); _chat says which. */
int rl_train_data_rl(rl_train_data *d, const char *path, const rl_tokenizer *tok, int max_len, rl_err *err);
int rl_train_data_rl_chat(rl_train_data *d, const char *path, const rl_tokenizer *tok, int max_len, int enable_thinking,
                          rl_err *err);
void rl_train_data_free(rl_train_data *d);

#endif
