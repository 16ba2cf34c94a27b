/* block_manager.h — who holds which block of the KV pool: reference counts, the free queue,
 * per-sequence block tables, prefix sharing and the prefix cache. Host-only bookkeeping (the
 * blocks' contents live in kv_pool.h); unit-tested without a model.
 *
 * - A block is held by every sequence whose table names it (ref = holders). A block with
 *   ref 0 is in the free queue; rl_bm_alloc takes the queue's head.
 * - Sharing: rl_bm_fork gives a sequence another one's blocks (the G samples of one prompt
 *   after its prefill); before a sequence writes into a block someone else also holds (the
 *   prompt's partial last block), rl_bm_ensure copies it to a fresh block (copy-on-write) and
 *   reports the copy for the engine to run on the device.
 * - Prefix cache: a full block's key is a 64-bit hash chained over the prefix, h_i =
 *   H(h_{i-1}, tokens of block i), so equal keys mean equal prefixes (the parent key and the
 *   tokens are compared too, so a hash collision is never taken for a match). Full blocks are
 *   registered as their tokens get computed; rl_bm_match gives a later sequence the cached
 *   blocks of its longest cached prefix. A cached block whose last holder leaves stays cached in
 *   the free queue and is only forgotten when rl_bm_alloc reuses it: freed blocks go to the
 *   queue's tail, so the least recently released block is evicted first (LRU); a sequence's
 *   blocks are released last block first, so its prefix, the part others share, is kept
 *   longest. */
#ifndef RL_ENGINE_BLOCK_MANAGER_H
#define RL_ENGINE_BLOCK_MANAGER_H

#include <stdint.h>

#include "core/error.h"

typedef struct rl_block_manager {
    int n_blocks, block_size;
    int32_t *ref;          /* [n_blocks] holders */
    int32_t *prev, *next;  /* free queue links [n_blocks]; -1 ends */
    int head, tail, n_free;
    uint8_t *cached;       /* [n_blocks] 1: registered in the prefix cache */
    uint64_t *key, *parent; /* [n_blocks] chained hash of a cached block and of its parent */
    int32_t *tokens;       /* [n_blocks, block_size] tokens of cached blocks (collision check) */
    int32_t *table;        /* open-addressing hash table of cached block ids, -1 empty */
    uint32_t table_mask;
    long n_hit_blocks, n_evicted; /* statistics */
} rl_block_manager;

/* A sequence's blocks: ids[i] holds token positions [i * block_size, (i + 1) * block_size). */
typedef struct rl_block_table {
    int32_t *ids;     /* capacity: the engine's max blocks per sequence (owned by the caller) */
    int n;            /* blocks held */
    int n_cached;     /* leading full blocks whose keys are known (registered or matched) */
    uint64_t last_key; /* key of block n_cached - 1 (the chain's parent for the next) */
    int version;      /* bumped whenever ids change (the engine re-uploads the table) */
} rl_block_table;

/* A copy-on-write the device must do: block dst gets block src's contents. */
typedef struct rl_block_copy {
    int32_t src, dst;
} rl_block_copy;

int rl_bm_create(rl_block_manager *bm, int n_blocks, int block_size, rl_err *err);
void rl_bm_free(rl_block_manager *bm);

/* Blocks that rl_bm_alloc can still hand out (free, cached or not). */
static inline int rl_bm_n_free(const rl_block_manager *bm) { return bm->n_free; }

/* Blocks rl_bm_ensure(bt, n_tokens, write_from) would take from the free queue. */
int rl_bm_blocks_needed(const rl_block_manager *bm, const rl_block_table *bt, int n_tokens, int write_from);

/* Makes bt cover token positions [0, n_tokens) (new blocks from the free queue), after
 * copying every block it shares with another holder that covers a position >= write_from to a
 * block of its own (appended to copies, *n_copies advanced; copies has room for at least
 * rl_bm_blocks_needed entries). All or nothing: returns -1 without changing anything when the
 * free queue is short. */
int rl_bm_ensure(rl_block_manager *bm, rl_block_table *bt, int n_tokens, int write_from, rl_block_copy *copies,
                 int *n_copies);

/* dst (empty) shares the blocks of src that cover positions [0, n_tokens). */
void rl_bm_fork(rl_block_manager *bm, rl_block_table *dst, const rl_block_table *src, int n_tokens);

/* Releases every block of bt, last first; bt becomes empty. */
void rl_bm_release(rl_block_manager *bm, rl_block_table *bt);

/* For an empty bt: takes the cached blocks of the longest cached prefix of tokens[0, n_tokens)
 * made of whole blocks, at most max_blocks of them; returns how many tokens they hold. */
int rl_bm_match(rl_block_manager *bm, rl_block_table *bt, const int32_t *tokens, int n_tokens, int max_blocks);

/* Forgets every cached block (their contents are stale: the model's weights changed). The
 * blocks stay where they are; holders keep them. */
void rl_bm_clear_cache(rl_block_manager *bm);

/* Registers bt's full blocks whose tokens are all computed (positions < n_computed) in the
 * prefix cache (a block whose prefix is already cached under another block stays private). */
void rl_bm_register(rl_block_manager *bm, rl_block_table *bt, const int32_t *tokens, int n_computed);

/* Shared-prefix runs of a decode step (rl_paged_kv's share_lead, share_len, share_count): row i
 * has block table tables[i * stride ..] and len_k[i] keys (0: an idle row). A run is a stretch
 * of 2 to max_share adjacent rows whose tables begin with the same blocks (the samples of one
 * prompt after rl_bm_fork); it shares the blocks all of them hold that lie wholly before each
 * one's last key (the key of the token being decoded is never shared). Rows are taken greedily
 * from the first: a row joins the run while it shares at least one block with the run's
 * first, and the run's shared length is the shortest such prefix. Rows in no run get lead =
 * themselves, len = count = 0. */
void rl_bm_share_runs(const int32_t *tables, int stride, const int32_t *len_k, int n_rows, int block_size,
                      int max_share, int32_t *lead, int32_t *len, int32_t *count);

#endif
