/* episodes.c — see episodes.h. */
#include "rollout/episodes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

#define MARK "\x01RLC_TURN\x01"
#define OBS "\x01RLC_OBSERVATION\x01"

void rl_episodes_free(rl_episodes *ep)
{
    free(ep->after_turn), free(ep->tool_open), free(ep->tool_close), free(ep->eos_text);
    memset(ep, 0, sizeof *ep);
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n), d[n] = '\0';
    return d;
}

int rl_episodes_init(rl_episodes *ep, rl_env *env, const rl_tokenizer *tok, const rl_episodes_config *cfg, rl_err *err)
{
    memset(ep, 0, sizeof *ep);
    ep->env = env, ep->tok = tok, ep->cfg = *cfg;
    if (cfg->max_turns < 1) return rl_err_set(err, "episodes: max_turns must be >= 1, got %d", cfg->max_turns);
    /* the template's pieces around a turn, found by rendering marker texts */
    rl_chat_message one[] = {{.role = "assistant", .content = MARK}},
                    two[] = {{.role = "assistant", .content = MARK}, {.role = "tool", .content = OBS}};
    rl_chat_options turn = {.add_generation_prompt = 0, .enable_thinking = !cfg->thinking_off};
    rl_chat_options next = {.add_generation_prompt = 1, .enable_thinking = !cfg->thinking_off};
    char *a = NULL, *b = NULL;
    int rc = rl_tok_chat_format(tok, one, 1, &turn, &a, err) || rl_tok_chat_format(tok, two, 2, &next, &b, err) ? -1 : 0;
    const char *ma = rc ? NULL : strstr(a, MARK), *ob = rc ? NULL : strstr(b, OBS);
    size_t la = a ? strlen(a) : 0;
    if (rc == 0 && (!ma || !ob || strncmp(a, b, la) || ob < b + la))
        rc = rl_err_set(err, "episodes: the chat format does not render a tool message after an assistant turn");
    if (rc == 0) {
        ep->after_turn = strdup(ma + strlen(MARK));
        ep->tool_open = dup_n(b + la, (size_t)(ob - (b + la)));
        ep->tool_close = strdup(ob + strlen(OBS));
        int32_t eos[RL_TOK_MAX_EOS];
        const char *bytes;
        size_t n;
        ep->eos_id = rl_tok_eos_ids(tok, eos) > 0 ? eos[0] : -1;
        if (ep->eos_id >= 0 && rl_tok_token_bytes(tok, ep->eos_id, &bytes, &n) == 0) ep->eos_text = dup_n(bytes, n);
        if (!ep->after_turn || !ep->tool_open || !ep->tool_close) rc = rl_err_oom(err, "episode template", 0);
    }
    free(a), free(b);
    if (rc) rl_episodes_free(ep);
    return rc;
}

/* One episode's state within a step. */
typedef struct ep_state {
    int32_t *seq;      /* prompt + everything after it */
    int n_prompt, n;   /* prompt tokens; all tokens */
    int running;
    char *text;        /* the model's turns, joined */
} ep_state;

static void end(rl_episodes *ep, ep_state *s, float *reward, float value, int index, const char *why)
{
    s->running = 0;
    *reward = value;
    if (why) {
        if (ep->n_failed++ < 20 || rl_log_get_level() >= RL_LOG_DEBUG)
            rl_log_warn("episode %d: %s; reward %g", index, why, value);
    }
}

static int append_text(char **text, const char *add)
{
    size_t had = *text ? strlen(*text) : 0, n = strlen(add);
    char *g = realloc(*text, had + n + (had ? 2 : 1));
    if (!g) return -1;
    if (had) g[had++] = '\n';
    memcpy(g + had, add, n + 1);
    *text = g;
    return 0;
}

/* The observation's tokens after the model's turn (which ended at end of turn when eos_end). */
static int observation_ids(rl_episodes *ep, const char *obs, int eos_end, int32_t **ids, int *n_ids, rl_err *err)
{
    const char *close = ep->after_turn;
    if (eos_end && ep->eos_text && !strncmp(close, ep->eos_text, strlen(ep->eos_text))) close += strlen(ep->eos_text);
    size_t len = strlen(close) + strlen(ep->tool_open) + strlen(obs) + strlen(ep->tool_close);
    char *text = malloc(len + 1);
    if (!text) return rl_err_oom(err, "observation", len);
    snprintf(text, len + 1, "%s%s%s%s", close, ep->tool_open, obs, ep->tool_close);
    int rc = rl_tok_encode(ep->tok, text, len, ids, n_ids, err);
    free(text);
    return rc;
}

int rl_episodes_run(rl_episodes *ep, rl_engine *e, int64_t step, const rl_gen_prompt *prompts,
                    const cJSON *const *fields, int n, const rl_gen_params *gen, rl_gen_result *results,
                    unsigned char *own, int stride, float *rewards, rl_err *err)
{
    ep_state *st = calloc((size_t)(n > 0 ? n : 1), sizeof *st);
    rl_gen_prompt *gp = calloc((size_t)(n > 0 ? n : 1), sizeof *gp);
    rl_gen_params *par = calloc((size_t)(n > 0 ? n : 1), sizeof *par);
    rl_gen_result *res = calloc((size_t)(n > 0 ? n : 1), sizeof *res);
    rl_env_turn *turns = calloc((size_t)(n > 0 ? n : 1), sizeof *turns);
    int *who = calloc((size_t)(n > 0 ? n : 1), sizeof *who);
    int rc = st && gp && par && res && turns && who ? 0 : rl_err_oom(err, "episodes", (size_t)n * 256);
    ep->cached_tokens = ep->prompt_tokens = 0;
    int reserve = stride / 4 < RL_EPISODE_RESERVE ? stride / 4 : RL_EPISODE_RESERVE;
    for (int i = 0; rc == 0 && i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        results[i].ids = malloc((size_t)stride * sizeof(int32_t));
        results[i].logprobs = malloc((size_t)stride * sizeof(float));
        st[i].seq = malloc((size_t)(prompts[i].n_ids + stride) * sizeof(int32_t));
        if (!results[i].ids || !results[i].logprobs || !st[i].seq) {
            rc = rl_err_oom(err, "episode tokens", (size_t)stride * 8);
            break;
        }
        memcpy(st[i].seq, prompts[i].ids, (size_t)prompts[i].n_ids * sizeof(int32_t));
        st[i].n = st[i].n_prompt = prompts[i].n_ids;
        st[i].running = 1;
        rewards[i] = ep->cfg.fail_reward;
    }
    if (rc == 0) rc = rl_env_begin(ep->env, step, n, err);
    for (int turn = 0; rc == 0 && turn < ep->cfg.max_turns; turn++) {
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (!st[i].running) continue;
            int room = stride - (st[i].n - st[i].n_prompt);
            if (room < 1) {
                end(ep, &st[i], &rewards[i], ep->cfg.fail_reward, i, "no room left in the episode's token budget");
                continue;
            }
            par[k] = *gen;
            par[k].max_new_tokens = room < gen->max_new_tokens ? room : gen->max_new_tokens;
            par[k].seed = gen->seed + 0x9e3779b97f4a7c15ull * (uint64_t)turn;
            gp[k] = (rl_gen_prompt){.ids = st[i].seq, .n_ids = st[i].n, .params = &par[k], .sample = i};
            who[k++] = i;
        }
        if (k == 0) break;
        rl_gen_params call = *gen;
        call.seed = par[0].seed;
        memset(res, 0, (size_t)k * sizeof *res);
        int grc = rl_engine_generate(e, gp, k, &call, res, NULL, NULL, err);
        rl_engine_stats es;
        rl_engine_stats_get(e, &es);
        ep->cached_tokens += es.cached_tokens, ep->prompt_tokens += es.prompt_tokens;
        int n_errors = 0;
        for (int j = 0; j < k; j++) n_errors += res[j].error != NULL;
        if (grc && n_errors == k) { /* the engine itself failed: the step fails */
            for (int j = 0; j < k; j++) rl_gen_result_free(&res[j]);
            rc = -1;
            break;
        }
        int m = 0;
        for (int j = 0; j < k; j++) {
            int i = who[j];
            ep_state *s = &st[i];
            rl_gen_result *r = &res[j];
            if (r->error) {
                end(ep, s, &rewards[i], ep->cfg.fail_reward, i, r->error);
                continue;
            }
            int after = s->n - s->n_prompt;
            memcpy(s->seq + s->n, r->ids, (size_t)r->n_ids * sizeof(int32_t));
            memcpy(results[i].ids + after, r->ids, (size_t)r->n_ids * sizeof(int32_t));
            memcpy(results[i].logprobs + after, r->logprobs, (size_t)r->n_ids * sizeof(float));
            memset(own + (size_t)i * stride + after, 1, (size_t)r->n_ids);
            s->n += r->n_ids;
            results[i].n_ids = s->n - s->n_prompt;
            results[i].finish = r->finish;
            if (append_text(&s->text, r->text ? r->text : "")) {
                rc = rl_err_oom(err, "episode text", 0);
                break;
            }
            int left = stride - (s->n - s->n_prompt);
            turns[m] = (rl_env_turn){.episode = i, .turn = turn, .text = r->text ? r->text : "", .fields = fields[i],
                                     .last = turn == ep->cfg.max_turns - 1 || left < reserve};
            m++;
        }
        if (rc == 0 && m) rc = rl_env_step(ep->env, turns, m, err);
        for (int q = 0; rc == 0 && q < m; q++) {
            rl_env_turn *t = &turns[q];
            int i = t->episode;
            ep_state *s = &st[i];
            if (t->failure) end(ep, s, &rewards[i], ep->cfg.fail_reward, i, t->failure);
            else if (t->done) end(ep, s, &rewards[i], t->reward, i, NULL);
            else if (t->last) end(ep, s, &rewards[i], ep->cfg.fail_reward, i, "the environment did not end the episode on its last turn");
            else {
                int32_t *ids = NULL;
                int n_ids = 0;
                int eos_end = s->n > s->n_prompt && s->seq[s->n - 1] == ep->eos_id;
                if (observation_ids(ep, t->observation, eos_end, &ids, &n_ids, err)) {
                    rc = -1;
                } else if (s->n - s->n_prompt + n_ids + 1 > stride) {
                    end(ep, s, &rewards[i], ep->cfg.fail_reward, i, "the observation does not fit the episode's token budget");
                } else {
                    int after = s->n - s->n_prompt;
                    memcpy(s->seq + s->n, ids, (size_t)n_ids * sizeof(int32_t));
                    memcpy(results[i].ids + after, ids, (size_t)n_ids * sizeof(int32_t));
                    memset(results[i].logprobs + after, 0, (size_t)n_ids * sizeof(float));
                    memset(own + (size_t)i * stride + after, 0, (size_t)n_ids);
                    s->n += n_ids;
                    results[i].n_ids = s->n - s->n_prompt;
                }
                free(ids);
            }
            free(t->observation), free(t->failure);
            t->observation = t->failure = NULL;
        }
        for (int j = 0; j < k; j++) rl_gen_result_free(&res[j]);
    }
    for (int i = 0; i < n && st; i++) {
        if (rc == 0 && st[i].running) end(ep, &st[i], &rewards[i], ep->cfg.fail_reward, i, "no turns left");
        results[i].text = st[i].text ? st[i].text : strdup("");
        results[i].text_len = results[i].text ? strlen(results[i].text) : 0;
        free(st[i].seq);
    }
    free(st), free(gp), free(par), free(res), free(turns), free(who);
    return rc;
}
