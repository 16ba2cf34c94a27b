/* shared_layout.h — one batch in both layouts rl_model_forward_shared (model.h) is tested with:
 * an unrelated sequence and N_CONT continuations of one prompt, whole (OTHER | prompt C1 |
 * prompt C2 | ...) and as GRPO lays out a group (OTHER | prompt but its last token | last
 * prompt token C1 | ...), with loss weights on the tokens both have rows for. Random ids from
 * a fixed seed. Shared by tests/model/test_shared_prefix.c and tests/gpu/test_shared_prefix.c. */
#ifndef RL_TEST_SHARED_LAYOUT_H
#define RL_TEST_SHARED_LAYOUT_H

#include <stdlib.h>

#include "core/rng.h"

#define N_CONT 3

typedef struct shared_layout {
    int32_t *whole, *shared, cu_whole[N_CONT + 2], cu_shared[N_CONT + 3], prefix_of[N_CONT + 2];
    float *w_whole, *w_shared;
    int n_whole, n_shared;
    int *row_of; /* [n_whole]: the shared row of each whole token that has one of its own, else -1 */
} shared_layout;

static inline void sl_make(shared_layout *L, int prompt_len, int other_len, const int *cont_len, int vocab)
{
    int n_whole = other_len, n_shared = other_len + prompt_len - 1;
    for (int c = 0; c < N_CONT; c++) n_whole += prompt_len + cont_len[c], n_shared += 1 + cont_len[c];
    L->whole = malloc((size_t)n_whole * sizeof(int32_t));
    L->shared = malloc((size_t)n_shared * sizeof(int32_t));
    L->w_whole = malloc((size_t)n_whole * sizeof(float));
    L->w_shared = malloc((size_t)n_shared * sizeof(float));
    L->row_of = malloc((size_t)n_whole * sizeof(int));
    int32_t *prompt = malloc((size_t)prompt_len * sizeof(int32_t));
    rl_rng rng;
    rl_rng_init(&rng, 7);
    for (int i = 0; i < prompt_len; i++) prompt[i] = (int32_t)rl_rng_below(&rng, (uint32_t)vocab);
    int w = 0, h = 0;
    L->cu_whole[0] = L->cu_shared[0] = 0;
    for (int i = 0; i < other_len; i++, w++, h++) {
        L->whole[w] = L->shared[h] = (int32_t)rl_rng_below(&rng, (uint32_t)vocab);
        L->w_whole[w] = L->w_shared[h] = i > 0 ? 0.25f * (float)(i % 7) - 0.5f : 0;
        L->row_of[w] = h;
    }
    L->cu_whole[1] = w;
    L->cu_shared[1] = h;
    L->prefix_of[0] = L->prefix_of[1] = -1;
    for (int i = 0; i < prompt_len - 1; i++, h++) L->shared[h] = prompt[i], L->w_shared[h] = 0;
    L->cu_shared[2] = h;
    for (int c = 0; c < N_CONT; c++) {
        for (int i = 0; i < prompt_len; i++, w++) L->whole[w] = prompt[i], L->w_whole[w] = 0, L->row_of[w] = -1;
        L->shared[h] = prompt[prompt_len - 1];
        L->w_shared[h++] = 0;
        for (int i = 0; i < cont_len[c]; i++, w++, h++) {
            L->whole[w] = L->shared[h] = (int32_t)rl_rng_below(&rng, (uint32_t)vocab);
            L->w_whole[w] = L->w_shared[h] = (float)rl_rng_below(&rng, 1000) / 500.0f - 1.0f;
            L->row_of[w] = h;
        }
        L->cu_whole[c + 2] = w;
        L->cu_shared[c + 3] = h;
        L->prefix_of[c + 2] = 1;
    }
    L->n_whole = w;
    L->n_shared = h;
    free(prompt);
}

static inline void sl_free(shared_layout *L)
{
    free(L->whole), free(L->shared), free(L->w_whole), free(L->w_shared), free(L->row_of);
}

#endif
