/* order.c — see order.h. Fisher-Yates with a Philox stream keyed by (seed, epoch). */
#include "train/order.h"

#include <stdlib.h>

#include "core/rng.h"

int rl_order_create(rl_order *o, int n, uint64_t seed, int shuffle, rl_err *err)
{
    if (n <= 0) return rl_err_set(err, "training data: no examples");
    o->n = n;
    o->shuffle = shuffle;
    o->seed = seed;
    o->epoch = -1;
    o->perm = malloc((size_t)n * sizeof *o->perm);
    if (!o->perm) return rl_err_oom(err, "data order", (size_t)n * sizeof *o->perm);
    return 0;
}

void rl_order_free(rl_order *o)
{
    free(o->perm);
    o->perm = NULL;
}

static void build(rl_order *o, int64_t epoch)
{
    for (int i = 0; i < o->n; i++) o->perm[i] = i;
    if (o->shuffle) {
        rl_rng rng;
        rl_rng_init(&rng, o->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(epoch + 1)));
        for (int i = o->n - 1; i > 0; i--) {
            int j = (int)rl_rng_below(&rng, (uint32_t)i + 1);
            int32_t t = o->perm[i];
            o->perm[i] = o->perm[j];
            o->perm[j] = t;
        }
    }
    o->epoch = epoch;
}

int rl_order_peek(rl_order *o, const rl_train_state *st)
{
    int64_t epoch = st->epoch, pos = st->data_pos;
    if (pos >= o->n) epoch++, pos = 0;
    if (o->epoch != epoch) build(o, epoch);
    return o->perm[pos];
}

int rl_order_next(rl_order *o, rl_train_state *st)
{
    if (st->data_pos >= o->n) st->epoch++, st->data_pos = 0;
    int item = rl_order_peek(o, st);
    st->data_pos++;
    return item;
}
