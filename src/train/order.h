/* order.h — the order in which a trainer visits its examples: pass after pass over n items,
 * each pass a fresh permutation (or the file order). The permutation of pass e is a pure
 * function of (seed, e), so a checkpoint only needs (epoch, data_pos) of rl_train_state to
 * resume at exactly the next item. */
#ifndef RL_TRAIN_ORDER_H
#define RL_TRAIN_ORDER_H

#include <stdint.h>

#include "core/error.h"
#include "train/checkpoint.h"

typedef struct rl_order {
    int n;
    int shuffle;
    uint64_t seed;
    int64_t epoch; /* pass perm holds, -1 before the first */
    int32_t *perm; /* [n] */
} rl_order;

int rl_order_create(rl_order *o, int n, uint64_t seed, int shuffle, rl_err *err);
void rl_order_free(rl_order *o);
/* The item at (st->epoch, st->data_pos); advances st to the next one. */
int rl_order_next(rl_order *o, rl_train_state *st);
/* Which item comes next, without advancing. */
int rl_order_peek(rl_order *o, const rl_train_state *st);

#endif
