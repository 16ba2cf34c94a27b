/* block_manager.c — reference counts, the free queue (LRU), block tables, copy-on-write and
 * the prefix cache (see block_manager.h).
 *
 * The free queue is a doubly linked list through prev/next; the prefix cache an open-addressing
 * table (linear probing, deletion by backward shift, so no tombstones) of block ids keyed by
 * their chained hash. All operations are O(1) per block except hashing a block's tokens. */
#include "engine/block_manager.h"

#include <stdlib.h>
#include <string.h>

/* The parent key of a sequence's first block. */
#define ROOT_KEY 0x243F6A8885A308D3ull

/* splitmix64's finaliser: a bijective mix of 64 bits. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t chain_key(uint64_t parent, const int32_t *tokens, int n)
{
    uint64_t h = mix64(parent);
    for (int i = 0; i < n; i++) h = mix64(h + 0x9E3779B97F4A7C15ull + (uint32_t)tokens[i]);
    return h;
}

int rl_bm_create(rl_block_manager *bm, int n_blocks, int block_size, rl_err *err)
{
    memset(bm, 0, sizeof *bm);
    if (n_blocks < 1 || block_size < 1 || n_blocks > (1 << 29))
        return rl_err_set(err, "block manager: %d blocks of %d tokens", n_blocks, block_size);
    bm->n_blocks = n_blocks;
    bm->block_size = block_size;
    uint32_t slots = 1;
    while (slots < 2u * (uint32_t)n_blocks) slots <<= 1;
    bm->table_mask = slots - 1;
    bm->ref = calloc((size_t)n_blocks, sizeof *bm->ref);
    bm->prev = malloc((size_t)n_blocks * sizeof *bm->prev);
    bm->next = malloc((size_t)n_blocks * sizeof *bm->next);
    bm->cached = calloc((size_t)n_blocks, 1);
    bm->key = calloc((size_t)n_blocks, sizeof *bm->key);
    bm->parent = calloc((size_t)n_blocks, sizeof *bm->parent);
    bm->tokens = malloc((size_t)n_blocks * block_size * sizeof *bm->tokens);
    bm->table = malloc((size_t)slots * sizeof *bm->table);
    if (!bm->ref || !bm->prev || !bm->next || !bm->cached || !bm->key || !bm->parent || !bm->tokens || !bm->table) {
        rl_bm_free(bm);
        return rl_err_oom(err, "block manager", (size_t)n_blocks * (40 + 4 * (size_t)block_size));
    }
    memset(bm->table, 0xff, (size_t)slots * sizeof *bm->table);
    for (int b = 0; b < n_blocks; b++) {
        bm->prev[b] = b - 1;
        bm->next[b] = b + 1 < n_blocks ? b + 1 : -1;
    }
    bm->head = 0;
    bm->tail = n_blocks - 1;
    bm->n_free = n_blocks;
    return 0;
}

void rl_bm_free(rl_block_manager *bm)
{
    free(bm->ref);
    free(bm->prev);
    free(bm->next);
    free(bm->cached);
    free(bm->key);
    free(bm->parent);
    free(bm->tokens);
    free(bm->table);
    memset(bm, 0, sizeof *bm);
}

/* ---- free queue ------------------------------------------------------------------------- */

static void queue_remove(rl_block_manager *bm, int b)
{
    if (bm->prev[b] >= 0) bm->next[bm->prev[b]] = bm->next[b];
    else bm->head = bm->next[b];
    if (bm->next[b] >= 0) bm->prev[bm->next[b]] = bm->prev[b];
    else bm->tail = bm->prev[b];
    bm->n_free--;
}

static void queue_push_tail(rl_block_manager *bm, int b)
{
    bm->prev[b] = bm->tail;
    bm->next[b] = -1;
    if (bm->tail >= 0) bm->next[bm->tail] = b;
    else bm->head = b;
    bm->tail = b;
    bm->n_free++;
}

/* ---- prefix cache table ----------------------------------------------------------------- */

static uint32_t home(const rl_block_manager *bm, uint64_t key) { return (uint32_t)key & bm->table_mask; }

static int table_find(const rl_block_manager *bm, uint64_t key, uint64_t parent, const int32_t *tokens)
{
    for (uint32_t i = home(bm, key);; i = (i + 1) & bm->table_mask) {
        int b = bm->table[i];
        if (b < 0) return -1;
        if (bm->key[b] == key && bm->parent[b] == parent &&
            !memcmp(bm->tokens + (size_t)b * bm->block_size, tokens, (size_t)bm->block_size * sizeof *tokens))
            return b;
    }
}

static void table_insert(rl_block_manager *bm, int b)
{
    uint32_t i = home(bm, bm->key[b]);
    while (bm->table[i] >= 0) i = (i + 1) & bm->table_mask;
    bm->table[i] = b;
}

/* Backward-shift deletion: entries after the hole move up unless their home lies in between. */
static void table_delete(rl_block_manager *bm, int b)
{
    uint32_t i = home(bm, bm->key[b]);
    while (bm->table[i] != b) i = (i + 1) & bm->table_mask;
    for (uint32_t j = (i + 1) & bm->table_mask; bm->table[j] >= 0; j = (j + 1) & bm->table_mask) {
        uint32_t k = home(bm, bm->key[bm->table[j]]);
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays) continue;
        bm->table[i] = bm->table[j];
        i = j;
    }
    bm->table[i] = -1;
}

/* ---- holding blocks --------------------------------------------------------------------- */

/* The free queue's head, forgotten by the cache, held once. */
static int alloc_block(rl_block_manager *bm)
{
    int b = bm->head;
    RL_ASSERT(b >= 0);
    queue_remove(bm, b);
    if (bm->cached[b]) {
        table_delete(bm, b);
        bm->cached[b] = 0;
        bm->n_evicted++;
    }
    bm->ref[b] = 1;
    return b;
}

static void hold(rl_block_manager *bm, int b)
{
    if (bm->ref[b] == 0) queue_remove(bm, b);
    bm->ref[b]++;
}

static void drop(rl_block_manager *bm, int b)
{
    RL_ASSERT(bm->ref[b] > 0);
    if (--bm->ref[b] == 0) queue_push_tail(bm, b);
}

static int blocks_for(const rl_block_manager *bm, int n_tokens) { return (n_tokens + bm->block_size - 1) / bm->block_size; }

int rl_bm_blocks_needed(const rl_block_manager *bm, const rl_block_table *bt, int n_tokens, int write_from)
{
    int want = blocks_for(bm, n_tokens), n = want > bt->n ? want - bt->n : 0;
    for (int i = write_from / bm->block_size; i < bt->n && i < want; i++) n += bm->ref[bt->ids[i]] > 1;
    return n;
}

int rl_bm_ensure(rl_block_manager *bm, rl_block_table *bt, int n_tokens, int write_from, rl_block_copy *copies,
                 int *n_copies)
{
    int needed = rl_bm_blocks_needed(bm, bt, n_tokens, write_from);
    if (needed > bm->n_free) return -1;
    if (needed == 0) return 0;
    int want = blocks_for(bm, n_tokens);
    for (int i = write_from / bm->block_size; i < bt->n && i < want; i++) {
        int old = bt->ids[i];
        if (bm->ref[old] <= 1) continue;
        int b = alloc_block(bm);
        copies[(*n_copies)++] = (rl_block_copy){.src = old, .dst = b};
        drop(bm, old);
        bt->ids[i] = b;
        if (i < bt->n_cached) bt->n_cached = i; /* not reached: cached blocks are full, never written */
    }
    while (bt->n < want) bt->ids[bt->n++] = alloc_block(bm);
    bt->version++;
    return 0;
}

void rl_bm_fork(rl_block_manager *bm, rl_block_table *dst, const rl_block_table *src, int n_tokens)
{
    int n = blocks_for(bm, n_tokens);
    RL_ASSERT(dst->n == 0 && n <= src->n && src->n_cached <= n);
    for (int i = 0; i < n; i++) {
        dst->ids[i] = src->ids[i];
        hold(bm, src->ids[i]);
    }
    dst->n = n;
    dst->n_cached = src->n_cached;
    dst->last_key = src->last_key;
    dst->version++;
}

void rl_bm_release(rl_block_manager *bm, rl_block_table *bt)
{
    for (int i = bt->n - 1; i >= 0; i--) drop(bm, bt->ids[i]);
    bt->n = 0;
    bt->n_cached = 0;
    bt->last_key = ROOT_KEY;
    bt->version++;
}

int rl_bm_match(rl_block_manager *bm, rl_block_table *bt, const int32_t *tokens, int n_tokens, int max_blocks)
{
    RL_ASSERT(bt->n == 0);
    uint64_t parent = ROOT_KEY;
    int bs = bm->block_size;
    while (bt->n < max_blocks && (bt->n + 1) * bs <= n_tokens) {
        const int32_t *t = tokens + (size_t)bt->n * bs;
        uint64_t key = chain_key(parent, t, bs);
        int b = table_find(bm, key, parent, t);
        if (b < 0) break;
        hold(bm, b);
        bt->ids[bt->n++] = b;
        parent = key;
        bm->n_hit_blocks++;
    }
    bt->n_cached = bt->n;
    bt->last_key = parent;
    if (bt->n) bt->version++;
    return bt->n * bs;
}

void rl_bm_register(rl_block_manager *bm, rl_block_table *bt, const int32_t *tokens, int n_computed)
{
    int bs = bm->block_size;
    if (bt->n_cached == 0) bt->last_key = ROOT_KEY;
    while (bt->n_cached < bt->n && (bt->n_cached + 1) * bs <= n_computed) {
        const int32_t *t = tokens + (size_t)bt->n_cached * bs;
        uint64_t key = chain_key(bt->last_key, t, bs);
        int b = bt->ids[bt->n_cached];
        if (!bm->cached[b] && table_find(bm, key, bt->last_key, t) < 0) {
            bm->cached[b] = 1;
            bm->key[b] = key;
            bm->parent[b] = bt->last_key;
            memcpy(bm->tokens + (size_t)b * bs, t, (size_t)bs * sizeof *t);
            table_insert(bm, b);
        }
        bt->last_key = key;
        bt->n_cached++;
    }
}

void rl_bm_clear_cache(rl_block_manager *bm)
{
    memset(bm->cached, 0, (size_t)bm->n_blocks);
    memset(bm->table, 0xff, ((size_t)bm->table_mask + 1) * sizeof *bm->table);
}

void rl_bm_share_runs(const int32_t *tables, int stride, const int32_t *len_k, int n_rows, int block_size,
                      int max_share, int32_t *lead, int32_t *len, int32_t *count)
{
    for (int i = 0; i < n_rows; i++) {
        lead[i] = i;
        len[i] = 0;
        count[i] = 0;
    }
    for (int i = 0; i < n_rows;) {
        /* blocks wholly before row i's last key: the most it may share */
        int common = len_k[i] > 0 ? (len_k[i] - 1) / block_size : 0, j = i + 1;
        const int32_t *ti = tables + (size_t)i * stride;
        while (common > 0 && j < n_rows && j - i < max_share && len_k[j] > 0) {
            const int32_t *tj = tables + (size_t)j * stride;
            int limit = (len_k[j] - 1) / block_size, same = 0;
            if (limit > common) limit = common;
            while (same < limit && ti[same] == tj[same]) same++;
            if (same == 0) break;
            common = same;
            j++;
        }
        if (j - i >= 2) {
            for (int t = i; t < j; t++) {
                lead[t] = i;
                len[t] = common * block_size;
            }
            count[i] = j - i;
        }
        i = j;
    }
}
