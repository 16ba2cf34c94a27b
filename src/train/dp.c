/* dp.c — see dp.h. The gradient hooks (rl_grad_hooks, model.h) are this file's entry from the
 * backward: begin/end of each region, and under ZeRO 2 the address of each gradient.
 *
 * ZeRO 2 buffers ("slots"): region n_layers + 1 (embedding) always takes slot 0, sized for the
 * embedding or the untied lm_head; the layers alternate between slots 1 and 2, so a layer's
 * reduction runs while the next layer's backward writes the other slot; the tail (final norm,
 * and the lm_head when untied) takes slot 0 untied, slot 1 tied (slot 0 then already holds the
 * embedding, which the tied lm_head writes first). Before a slot is reused its last reduction
 * must be done: the ctx's queue waits for that collective's ticket. */
#include "train/dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ops.h"

#define SHARD_ALIGN 64            /* elements: fp32 shards start on 256-byte boundaries */
#define GATHER_CHUNK ((size_t)1 << 24) /* elements per message when gathering a checkpoint */
#define N_SLOTS 3

struct rl_dp {
    rl_comm *comm;
    rl_ctx *ctx;
    int rank, world, zero;
    rl_model *model;
    size_t *shard;            /* [world + 1] */
    int n_regions;
    rl_grad_region *regions;  /* backward order: offsets decrease */
    rl_grad_hooks hooks;
    /* ZeRO 2 */
    float *grad_shard;        /* [shard[rank + 1] - shard[rank]] */
    float *slot[N_SLOTS];
    uint64_t slot_ticket[N_SLOTS];
    float **base;             /* [n_regions]: the live region's buffer, NULL when not live */
    /* the update in progress */
    int announced, n_micro, max_micro, backwards, in_backward, syncing, synced;
};

int rl_dp_rank(const rl_dp *dp) { return dp ? dp->rank : 0; }
int rl_dp_world(const rl_dp *dp) { return dp ? dp->world : 1; }
int rl_dp_zero(const rl_dp *dp) { return dp ? dp->zero : 0; }

int rl_dp_create(rl_dp **out, rl_comm *comm, int zero, rl_err *err)
{
    *out = NULL;
    if (zero < 0 || zero > 2) return rl_err_set(err, "--zero must be 0, 1 or 2, got %d", zero);
    rl_dp *dp = calloc(1, sizeof *dp);
    if (!dp) return rl_err_oom(err, "data-parallel state", sizeof *dp);
    dp->comm = comm;
    dp->ctx = comm->ctx;
    dp->rank = comm->rank;
    dp->world = comm->world;
    dp->zero = zero;
    *out = dp;
    return 0;
}

void rl_dp_free(rl_dp *dp)
{
    if (!dp) return;
    if (dp->model && dp->model->grad_hooks == &dp->hooks) dp->model->grad_hooks = NULL;
    rl_free(dp->ctx, dp->grad_shard);
    for (int s = 0; s < N_SLOTS; s++) rl_free(dp->ctx, dp->slot[s]);
    free(dp->shard);
    free(dp->regions);
    free(dp->base);
    free(dp);
}

static size_t lo_of(const rl_dp *dp) { return dp->shard[dp->rank]; }
static size_t hi_of(const rl_dp *dp) { return dp->shard[dp->rank + 1]; }

/* ---- reductions of one region ----------------------------------------------------------------- */

/* Region r's gradients (src, the region's first element) to where this ZeRO level wants them. */
static int reduce_region(rl_dp *dp, int r, float *src, rl_err *err)
{
    size_t a = dp->regions[r].offset, b = a + dp->regions[r].count;
    if (dp->zero == 0) return rl_comm_allreduce(dp->comm, src, b - a, err);
    for (int owner = 0; owner < dp->world; owner++) {
        size_t x = a > dp->shard[owner] ? a : dp->shard[owner];
        size_t y = b < dp->shard[owner + 1] ? b : dp->shard[owner + 1];
        if (x >= y) continue;
        float *part = src + (x - a), *dst = NULL;
        int mine = owner == dp->rank;
        if (mine) dst = dp->zero == 1 ? part : dp->grad_shard + (x - lo_of(dp));
        if (rl_comm_reduce(dp->comm, dst, part, y - x, owner, dp->zero == 2, err)) return -1;
    }
    return 0;
}

static int slot_of(const rl_dp *dp, int r)
{
    int L = dp->n_regions - 2, tied = dp->model->lm_head == dp->model->embed;
    if (r == L + 1) return 0;
    if (r == 0) return tied ? 1 : 0;
    return 1 + (r % 2);
}

/* ZeRO 2: region r gets a zeroed slot, once the slot's last reduction is done. */
static int take_slot(rl_dp *dp, int r, rl_err *err)
{
    int s = slot_of(dp, r);
    if (rl_comm_wait(dp->comm, dp->slot_ticket[s], err) ||
        rl_memzero(dp->ctx, dp->slot[s], dp->regions[r].count * sizeof(float)))
        return rl_err_prefix(err, "gradient region %d: ", r);
    dp->base[r] = dp->slot[s];
    return 0;
}

static int release_slot(rl_dp *dp, int r, int reduce, rl_err *err)
{
    if (reduce && reduce_region(dp, r, dp->base[r], err)) return -1;
    dp->slot_ticket[slot_of(dp, r)] = rl_comm_ticket(dp->comm);
    dp->base[r] = NULL;
    return 0;
}

/* ---- gradient hooks --------------------------------------------------------------------------- */

static float *hook_at(void *user, size_t offset)
{
    rl_dp *dp = user;
    int lo = 0, hi = dp->n_regions - 1; /* offsets decrease with the index */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (dp->regions[mid].offset > offset) lo = mid + 1;
        else hi = mid;
    }
    RL_ASSERT(dp->base[lo] && offset - dp->regions[lo].offset < dp->regions[lo].count);
    return dp->base[lo] + (offset - dp->regions[lo].offset);
}

static int hook_begin(void *user, int r, rl_err *err)
{
    rl_dp *dp = user;
    if (!dp->in_backward) {
        if (dp->zero == 2 && !dp->announced)
            return rl_err_set(err, "data parallel: a backward before rl_dp_begin_update (ZeRO 2 must know the count)");
        if (dp->synced)
            return rl_err_set(err, "data parallel: more backwards than the %d rl_dp_begin_update announced", dp->n_micro);
        dp->in_backward = 1;
        /* a count never announced (0) defers the whole reduction to the step */
        dp->syncing = dp->zero == 2 || dp->backwards + 1 == dp->n_micro;
    }
    return dp->zero == 2 ? take_slot(dp, r, err) : 0;
}

static int hook_end(void *user, int r, rl_err *err)
{
    rl_dp *dp = user;
    int rc = 0;
    if (dp->zero == 2) rc = release_slot(dp, r, 1, err);
    else if (dp->syncing) rc = reduce_region(dp, r, dp->model->grads + dp->regions[r].offset, err);
    if (rc) return rl_err_prefix(err, "gradient reduction of region %d: ", r);
    if (r == dp->n_regions - 1) { /* the embedding ends every backward */
        dp->in_backward = 0;
        dp->backwards++;
        dp->synced |= dp->syncing && dp->zero < 2;
    }
    return 0;
}

/* ---- set-up ------------------------------------------------------------------------------------ */

int rl_dp_moment_range(const rl_dp *dp, size_t n_elems, size_t *lo, size_t *hi, rl_err *err)
{
    if (!dp->shard || dp->shard[dp->world] != n_elems)
        return rl_err_set(err, "data parallel: the optimizer was created before rl_dp_prepare for its model");
    *lo = dp->zero >= 1 ? lo_of(dp) : 0;
    *hi = dp->zero >= 1 ? hi_of(dp) : n_elems;
    return 0;
}

int rl_dp_prepare(rl_dp *dp, rl_model *m, rl_err *err)
{
    if (!dp) return rl_model_enable_grads(m, err) || rl_model_zero_grads(m, err) ? -1 : 0;
    if (dp->model) return rl_err_set(err, "data parallel: this group already trains a model");
    if (m->ctx != dp->ctx) return rl_err_set(err, "data parallel: the model and the communicator use different contexts");
    dp->model = m;
    int W = dp->world, L = m->config.n_layers;
    dp->n_regions = L + 2;
    dp->shard = malloc((size_t)(W + 1) * sizeof *dp->shard);
    dp->regions = malloc((size_t)dp->n_regions * sizeof *dp->regions);
    dp->base = calloc((size_t)dp->n_regions, sizeof *dp->base);
    if (!dp->shard || !dp->regions || !dp->base) return rl_err_oom(err, "data-parallel tables", (size_t)dp->n_regions * 32);
    size_t n = m->n_elems, per = (n / (size_t)W + SHARD_ALIGN - 1) / SHARD_ALIGN * SHARD_ALIGN;
    for (int r = 0; r <= W; r++) dp->shard[r] = (size_t)r * per < n ? (size_t)r * per : n;
    dp->shard[W] = n;
    rl_model_grad_regions(m, dp->regions);
    dp->hooks = (rl_grad_hooks){dp, NULL, hook_begin, hook_end};
    size_t lo = lo_of(dp), held = hi_of(dp) - lo;
    if (dp->zero >= 1 && rl_model_working_copy(m) && rl_model_shard_master(m, lo, held, err)) return -1;
    if (dp->zero < 2) {
        if (rl_model_enable_grads(m, err) || rl_model_zero_grads(m, err)) return -1;
    } else {
        size_t big = dp->regions[L + 1].count, layer = 0, tail = dp->regions[0].count;
        int tied = m->lm_head == m->embed;
        for (int r = 1; r <= L; r++) layer = dp->regions[r].count > layer ? dp->regions[r].count : layer;
        if (!tied && tail > big) big = tail;
        if (tied && tail > layer) layer = tail;
        size_t want[N_SLOTS] = {big, layer, layer};
        dp->grad_shard = rl_alloc(dp->ctx, (held ? held : 1) * sizeof(float));
        for (int s = 0; s < N_SLOTS && dp->grad_shard; s++) dp->slot[s] = rl_alloc(dp->ctx, want[s] * sizeof(float));
        if (!dp->grad_shard || !dp->slot[N_SLOTS - 1] || rl_memzero(dp->ctx, dp->grad_shard, held * sizeof(float))) {
            rl_ctx_error(dp->ctx, err);
            return rl_err_prefix(err, "ZeRO-2 gradient buffers: ");
        }
        dp->hooks.at = hook_at;
    }
    m->grad_hooks = &dp->hooks;
    return 0;
}

int rl_dp_begin_update(rl_dp *dp, int n_micro, rl_err *err)
{
    if (!dp) return 0;
    dp->announced = 1;
    dp->n_micro = n_micro;
    dp->max_micro = n_micro;
    dp->backwards = dp->synced = 0;
    if (dp->zero < 2) return 0;
    double most = n_micro;
    if (rl_comm_host_reduce(dp->comm, &most, 1, RL_COMM_MAX, err)) return -1;
    dp->max_micro = (int)most;
    return 0;
}

int rl_dp_sum(rl_dp *dp, double *x, int n, rl_err *err)
{
    return dp ? rl_comm_host_reduce(dp->comm, x, n, RL_COMM_SUM, err) : 0;
}

int rl_dp_max(rl_dp *dp, double *x, int n, rl_err *err)
{
    return dp ? rl_comm_host_reduce(dp->comm, x, n, RL_COMM_MAX, err) : 0;
}

int rl_dp_any(rl_dp *dp, int flag, int *out, rl_err *err)
{
    double x = flag != 0;
    if (rl_dp_max(dp, &x, 1, err)) return -1;
    *out = x != 0;
    return 0;
}

/* ---- the optimizer step ------------------------------------------------------------------------ */

/* Every rank must have issued the same reductions before the update: a rank that ran fewer
 * backwards (or none) issues what the missing ones would have. */
static int catch_up(rl_dp *dp, rl_err *err)
{
    if (dp->zero < 2) {
        for (int r = 0; !dp->synced && r < dp->n_regions; r++)
            if (reduce_region(dp, r, dp->model->grads + dp->regions[r].offset, err)) return -1;
        return 0;
    }
    for (; dp->backwards < dp->max_micro; dp->backwards++)
        for (int r = 0; r < dp->n_regions; r++)
            if (take_slot(dp, r, err) || release_slot(dp, r, 1, err)) return -1;
    return 0;
}

int rl_dp_step(rl_dp *dp, rl_optim *o, double grad_scale, rl_optim_stats *stats, rl_err *err)
{
    rl_model *m = dp->model;
    rl_ctx *ctx = dp->ctx;
    if (!m) return rl_err_set(err, "data parallel: rl_dp_prepare was not called");
    if (dp->zero == 2 && !dp->announced)
        return rl_err_set(err, "data parallel: ZeRO 2 needs rl_dp_begin_update before each update");
    if (catch_up(dp, err) || rl_comm_wait(dp->comm, rl_comm_ticket(dp->comm), err))
        return rl_err_prefix(err, "optimizer step %d: ", o->step + 1);
    size_t lo = o->lo, held = o->hi - o->lo;
    float *grads = dp->zero == 2 ? dp->grad_shard : m->grads + lo;
    double sumsq = 0, scale = 1;
    if (rl_sumsq(ctx, &sumsq, grads, held) != 0) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "gradient norm: ");
    }
    if (dp->zero >= 1 && rl_comm_host_reduce(dp->comm, &sumsq, 1, RL_COMM_SUM, err)) return -1;
    rl_optim_stats st = {0};
    void *working = rl_model_working_copy(m);
    if (rl_optim_clip(o, sumsq, grad_scale, &st, &scale, err) ||
        rl_optim_apply(o, m->master + (lo - m->master_lo), working, grads, scale, st.lr, err))
        return -1;
    if (dp->zero >= 1) {
        void *weights = working ? working : (void *)m->master;
        if (rl_comm_allgatherv(dp->comm, weights, dp->shard, rl_dtype_size(ctx->act_dtype), err) ||
            rl_comm_wait(dp->comm, rl_comm_ticket(dp->comm), err))
            return rl_err_prefix(err, "sharing the updated weights: ");
    }
    float *zero_from = dp->zero == 2 ? dp->grad_shard : m->grads;
    size_t zero_n = dp->zero == 2 ? held : m->n_elems;
    if (rl_memzero(ctx, zero_from, zero_n * sizeof(float)) != 0) {
        rl_ctx_error(ctx, err);
        return rl_err_prefix(err, "zeroing gradients: ");
    }
    o->step++;
    dp->announced = dp->n_micro = dp->backwards = dp->synced = 0;
    if (stats) *stats = st;
    return 0;
}

/* ---- checkpoints -------------------------------------------------------------------------------- */

/* Rank 0 assembles into host[0 .. n_elems) the array whose part [shard[r], shard[r+1]) rank r
 * holds at part (backend memory; the whole array when every rank has all of it). */
static int gather_array(rl_dp *dp, float *host, const float *part, int sharded, float *staging, rl_err *err)
{
    rl_ctx *ctx = dp->ctx;
    if (!sharded) {
        if (dp->rank == 0 && rl_memcpy(ctx, host, part, dp->shard[dp->world] * sizeof(float), RL_D2H))
            return rl_ctx_error(ctx, err);
        return 0;
    }
    for (int r = 0; r < dp->world; r++) {
        size_t first = dp->shard[r], count = dp->shard[r + 1] - first;
        if (dp->rank == 0 && r == 0) {
            if (rl_memcpy(ctx, host + first, part, count * sizeof(float), RL_D2H)) return rl_ctx_error(ctx, err);
            continue;
        }
        if (dp->rank != 0 && dp->rank != r) continue;
        for (size_t at = 0; at < count; at += GATHER_CHUNK) {
            size_t k = count - at < GATHER_CHUNK ? count - at : GATHER_CHUNK;
            if (dp->rank == r) {
                if (rl_comm_send(dp->comm, part + at, k * sizeof(float), 0, err)) return -1;
            } else {
                if (rl_comm_recv(dp->comm, staging, k * sizeof(float), r, err) ||
                    rl_comm_wait(dp->comm, rl_comm_ticket(dp->comm), err))
                    return rl_err_prefix(err, "gathering rank %d's shard: ", r);
                if (rl_memcpy(ctx, host + first + at, staging, k * sizeof(float), RL_D2H)) {
                    rl_ctx_error(ctx, err);
                    return rl_err_prefix(err, "gathering rank %d's shard: ", r);
                }
            }
        }
    }
    return rl_comm_wait(dp->comm, rl_comm_ticket(dp->comm), err);
}

int rl_dp_gather(rl_dp *dp, const rl_optim *o, float **master, float **moments, rl_err *err)
{
    *master = *moments = NULL;
    rl_model *m = dp->model;
    size_t n = m->n_elems;
    float *staging = NULL;
    int rc = 0;
    if (dp->rank == 0) {
        *master = malloc(n * sizeof(float));
        *moments = malloc(2 * n * sizeof(float));
        staging = rl_alloc(dp->ctx, GATHER_CHUNK * sizeof(float));
        if (!*master || !*moments || !staging) rc = rl_err_oom(err, "checkpoint gathering", 3 * n * sizeof(float));
    }
    /* every rank takes part even when rank 0 is short of memory, so nobody waits forever */
    double failed = rc != 0;
    if (rl_comm_host_reduce(dp->comm, &failed, 1, RL_COMM_MAX, err)) rc = -1;
    else if (failed && rc == 0) rc = rl_err_set(err, "rank 0 could not allocate the checkpoint's host copies");
    int sharded_master = m->master_count != n, sharded_moments = o->hi - o->lo != n;
    if (rc == 0) rc = gather_array(dp, *master, m->master, sharded_master, staging, err);
    if (rc == 0) rc = gather_array(dp, *moments, o->m, sharded_moments, staging, err);
    if (rc == 0) rc = gather_array(dp, *moments ? *moments + n : NULL, o->v, sharded_moments, staging, err);
    rl_free(dp->ctx, staging);
    if (rc != 0) {
        free(*master);
        free(*moments);
        *master = *moments = NULL;
    }
    return rc;
}
