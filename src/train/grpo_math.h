/* grpo_math.h — the arithmetic of GRPO and its variants, apart from any model: group-relative
 * advantages and the per-token weights that carry each variant's loss normalisation into
 * rl_policy_loss (ops.h).
 *
 * Advantages (Shao et al. 2024, GRPO): for the G completions of one prompt with rewards r,
 * A_i = (r_i - mean(r)) / (std(r) + 1e-4) with the unbiased std (as TRL computes it), or
 * A_i = r_i - mean(r) without std scaling (Dr. GRPO, Liu et al. 2025). A group whose rewards
 * are all equal gets A = 0 exactly: it carries no signal.
 *
 * Loss normalisation, as the weight w of every completion token of sequence i (prompt tokens
 * get 0), for a batch of n sequences with |o_i| completion tokens:
 *   sequence (GRPO):      w = 1 / (n * |o_i|)      mean over a sequence's tokens, then over sequences
 *   token (DAPO):         w = 1 / sum_j |o_j|      every token of the batch counts the same
 *   dr_grpo (Dr. GRPO):   w = 1 / (n * max_len)    a constant: no length bias
 * "batch" is everything one optimizer update sees (all its micro-batches), so the gradient is
 * already normalised and the update needs no further scaling. */
#ifndef RL_TRAIN_GRPO_MATH_H
#define RL_TRAIN_GRPO_MATH_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef enum { RL_NORM_SEQUENCE, RL_NORM_TOKEN, RL_NORM_DR_GRPO } rl_loss_norm;

/* Where the advantages come from (no critic in any of them):
 *   RL_ADV_GROUP         GRPO's group-normalised rewards (above)
 *   RL_ADV_RLOO          RLOO (Ahmadian et al. 2024): the leave-one-out baseline within the group,
 *                        A_i = r_i - mean_{j != i} r_j = G / (G - 1) (r_i - mean(r))
 *   RL_ADV_REINFORCE_PP  REINFORCE++ (Hu 2025): per-token rewards -beta (logp - ref_logp) with the
 *                        score added at the last token, returns-to-go (gamma 1), then normalised
 *                        over every completion token of the batch (the KL is in the reward, not in
 *                        the loss) */
typedef enum { RL_ADV_GROUP, RL_ADV_RLOO, RL_ADV_REINFORCE_PP } rl_adv_kind;

/* RLOO advantages, laid out as rl_grpo_advantages'. */
void rl_rloo_advantages(const float *rewards, int n_groups, int group_size, float *adv);

/* REINFORCE++ token advantages of a packed batch: sequence s has tokens [cu[s], cu[s + 1]) and
 * completion[i] marks its completion tokens; logp / ref_logp (ref_logp NULL: no KL term) per
 * token; scores per sequence. Writes tok_adv on completion tokens (others 0). */
void rl_reinforce_pp_advantages(const float *logp, const float *ref_logp, const unsigned char *completion,
                                const int32_t *cu, int n_seqs, const float *scores, float beta, float *tok_adv);
/* The same in two halves, for a batch spread over ranks: the returns-to-go into tok_adv and
 * their count, sum and sum of squares into sums[3]; then the normalisation with the sums of
 * the whole batch (every rank's, added). */
void rl_reinforce_pp_returns(const float *logp, const float *ref_logp, const unsigned char *completion,
                             const int32_t *cu, int n_seqs, const float *scores, float beta, float *tok_adv,
                             double sums[3]);
void rl_reinforce_pp_normalise(const unsigned char *completion, size_t n_tokens, const double sums[3], float *tok_adv);

/* rewards and adv are [n_groups * group_size], group g at [g * group_size, ...). */
void rl_grpo_advantages(const float *rewards, int n_groups, int group_size, int scale_std, float *adv);

/* Per-sequence token weight w[i] for lens[i] completion tokens (a sequence with 0 tokens gets
 * 0). max_len: the configured maximum completion length (dr_grpo). */
void rl_grpo_weights(rl_loss_norm norm, const int *lens, int n_seqs, int max_len, float *w);

/* "sequence", "token", "dr_grpo" (by rl_loss_norm), then NULL. */
extern const char *const rl_loss_norm_names[];
int rl_loss_norm_parse(const char *name, rl_loss_norm *out, rl_err *err);
const char *rl_loss_norm_name(rl_loss_norm norm);

#endif
