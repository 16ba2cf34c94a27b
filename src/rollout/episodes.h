/* episodes.h — multi-turn episodes for RL (`rlc grpo --env`, docs/episodes.md): the model
 * writes a turn, the environment (env.h) answers with an observation, the model continues, until
 * the environment ends the episode with a reward or the turns run out.
 *
 * Each turn, every running episode of the step is one request of a single engine call whose
 * prompt is the whole conversation so far as token ids: the prompt, then per turn the model's own
 * sampled tokens (kept as sampled, never re-tokenised, so the trainer scores exactly what was
 * sampled) and the observation's tokens. The observation is rendered by the chat template
 * (io: rl_tok_chat_format) as a "tool" message after the assistant turn, followed by the
 * generation prompt; what the template writes after an assistant message's text (its end-of-turn
 * marker, which the model sampled itself when it stopped at end of turn) opens the observation.
 * The engine's prefix cache (kept for the whole step) finds the earlier turns' full KV blocks, so
 * only the new tokens and the last partial block are computed again.
 *
 * For the trainer, everything after the prompt is one sequence with a mask: 1 on the model's own
 * tokens (trained on, with their sampling log-probs), 0 on observation tokens (no loss). A turn
 * is the last when max_turns is reached or fewer than RL_EPISODE_RESERVE tokens (a quarter of a
 * smaller budget) of the max_tokens budget would remain after it; the environment must then end the episode. An
 * environment failure (crash, hang, garbage), a request the engine refuses, or an observation
 * that does not fit the budget ends the episode with fail_reward and a logged reason. */
#ifndef RL_ROLLOUT_EPISODES_H
#define RL_ROLLOUT_EPISODES_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/error.h"
#include "engine/generate.h"
#include "io/tokenizer.h"
#include "rollout/env.h"

#define RL_EPISODE_RESERVE 64

typedef struct rl_episodes_config {
    int max_turns;      /* >= 1 */
    int max_tokens;     /* tokens after the prompt, model's and observations' */
    float fail_reward;
    int thinking_off;   /* the template's enable_thinking false (io/chat.h, --thinking off) */
} rl_episodes_config;

typedef struct rl_episodes {
    rl_env *env;              /* not owned */
    const rl_tokenizer *tok;  /* not owned */
    rl_episodes_config cfg;
    char *after_turn;         /* what the template writes after an assistant text */
    char *tool_open, *tool_close; /* around a tool message's text, generation prompt included */
    char *eos_text;           /* the end-of-turn token's text ("<|im_end|>") */
    int32_t eos_id;
    long n_failed;            /* episodes ended by a failure, over the run */
    long cached_tokens, prompt_tokens; /* the engine's prefix-cache hits and prompt positions, last step */
} rl_episodes;

int rl_episodes_init(rl_episodes *ep, rl_env *env, const rl_tokenizer *tok, const rl_episodes_config *cfg, rl_err *err);
void rl_episodes_free(rl_episodes *ep);

/* Runs n episodes (prompts[i], its dataset line fields[i]) of a step. Fills results[i] (tokens
 * after the prompt, at most stride), own[i * stride ...] and rewards[i]. -1 only when the engine
 * itself fails or out of memory. */
int rl_episodes_run(rl_episodes *ep, rl_engine *e, int64_t step, const rl_gen_prompt *prompts,
                    const cJSON *const *fields, int n, const rl_gen_params *gen, rl_gen_result *results,
                    unsigned char *own, int stride, float *rewards, rl_err *err);

#endif
