/* bpe.c — byte-pair merging of one pre-token, and the byte-level alphabet.
 *
 * A word starts as one symbol per byte (the vocab id of that byte's byte-level char). Then,
 * as in tokenizers' BPE, the adjacent pair with the lowest merge rank is merged, the leftmost
 * one on ties, until no pair has a merge. Short words keep symbols and pair ranks in arrays
 * and rescan (cheap for the usual 1-10 symbols); long words use a min-heap keyed by
 * (rank, position) over a linked list, so a megabyte with no spaces stays O(n log n).
 * ignore_merges: a word whose byte-level string is itself a token is emitted as that token.
 * For long texts a per-call cache maps short words (<= 24 bytes) to their ids, as tokenizers
 * caches words: text repeats words, and a cache hit skips the scattered merge-table lookups.
 *
 * Byte-level alphabet (GPT-2): printable bytes 33-126, 161-172, 174-255 stand for themselves;
 * the other 68 bytes map, in byte order, to U+0100 upwards. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "io/tok_internal.h"

#define SHORT_WORD 48
#define CACHE_WORD 24       /* longest word cached, in bytes */
#define CACHE_ENTRIES 65536 /* entries kept per encode call; later words are not cached */
#define CACHE_SLOTS (2 * CACHE_ENTRIES)

uint32_t rl_tok_byte_to_char(uint8_t byte)
{
    if ((byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174) return byte;
    uint32_t k = 0;
    for (uint32_t b = 0; b < byte; b++)
        if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)) k++;
    return 256 + k;
}

static int char_to_byte[324];
static pthread_once_t char_to_byte_once = PTHREAD_ONCE_INIT;

static void build_char_to_byte(void)
{
    for (int i = 0; i < 324; i++) char_to_byte[i] = -1;
    for (int b = 0; b < 256; b++) char_to_byte[rl_tok_byte_to_char((uint8_t)b)] = b;
}

int rl_tok_char_to_byte(uint32_t cp)
{
    pthread_once(&char_to_byte_once, build_char_to_byte);
    return cp < 324 ? char_to_byte[cp] : -1;
}

int rl_tok_buf_push(rl_tok_buf *b, int32_t id)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        int32_t *ids = realloc(b->ids, cap * sizeof *ids);
        if (!ids) return -1;
        b->ids = ids;
        b->cap = cap;
    }
    b->ids[b->n++] = id;
    return 0;
}

void rl_tok_buf_free(rl_tok_buf *b)
{
    free(b->ids);
    free(b->sym);
    free(b->prev);
    free(b->next);
    free(b->heap);
    free(b->chars);
    free(b->cache_slots);
    free(b->cache);
    free(b->cache_keys);
    free(b->cache_ids);
    memset(b, 0, sizeof *b);
}

static int reserve(rl_tok_buf *b, size_t n, rl_err *err)
{
    if (n <= b->scratch_cap) return 0;
    size_t cap = n < 64 ? 64 : n + n / 2;
    int32_t *sym = realloc(b->sym, cap * sizeof *sym);
    if (sym) b->sym = sym;
    int32_t *prev = realloc(b->prev, cap * sizeof *prev);
    if (prev) b->prev = prev;
    int32_t *next = realloc(b->next, cap * sizeof *next);
    if (next) b->next = next;
    uint64_t *heap = realloc(b->heap, cap * sizeof *heap);
    if (heap) b->heap = heap;
    char *chars = realloc(b->chars, 2 * cap);
    if (chars) b->chars = chars;
    if (!sym || !prev || !next || !heap || !chars) return rl_err_oom(err, "tokenizer: word buffer", cap * 26);
    b->scratch_cap = cap;
    return 0;
}

static int32_t pair_rank(const struct rl_tokenizer *tok, int32_t left, int32_t right)
{
    const rl_tok_merge *m = rl_tok_find_merge(tok, left, right);
    return m ? m->rank : INT32_MAX;
}

/* Array version: sym[0..m) with rank[i] the rank of (sym[i], sym[i+1]). */
static int merge_short(const struct rl_tokenizer *tok, rl_tok_buf *b, int m)
{
    int32_t *sym = b->sym, *rank = b->next;
    for (int i = 0; i + 1 < m; i++) rank[i] = pair_rank(tok, sym[i], sym[i + 1]);
    while (m > 1) {
        int best = 0;
        for (int i = 1; i + 1 < m; i++)
            if (rank[i] < rank[best]) best = i;
        if (rank[best] == INT32_MAX) break;
        sym[best] = rl_tok_find_merge(tok, sym[best], sym[best + 1])->id;
        memmove(sym + best + 1, sym + best + 2, (size_t)(m - best - 2) * sizeof *sym);
        memmove(rank + best + 1, rank + best + 2, (size_t)(m > best + 2 ? m - best - 3 : 0) * sizeof *rank);
        m--;
        if (best > 0) rank[best - 1] = pair_rank(tok, sym[best - 1], sym[best]);
        if (best + 1 < m) rank[best] = pair_rank(tok, sym[best], sym[best + 1]);
    }
    for (int i = 0; i < m; i++)
        if (rl_tok_buf_push(b, sym[i])) return -1;
    return 0;
}

static void heap_push(uint64_t *heap, size_t *n, uint64_t key)
{
    size_t i = (*n)++;
    while (i > 0 && heap[(i - 1) / 2] > key) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = key;
}

static uint64_t heap_pop(uint64_t *heap, size_t *n)
{
    uint64_t top = heap[0], last = heap[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && heap[c + 1] < heap[c]) c++;
        if (heap[c] >= last) break;
        heap[i] = heap[c];
        i = c;
    }
    if (*n) heap[i] = last;
    return top;
}

static void push_pair(const struct rl_tokenizer *tok, rl_tok_buf *b, size_t *n_heap, int32_t pos)
{
    int32_t r = b->next[pos];
    if (r < 0) return;
    int32_t rank = pair_rank(tok, b->sym[pos], b->sym[r]);
    if (rank != INT32_MAX) heap_push(b->heap, n_heap, (uint64_t)rank << 32 | (uint32_t)pos);
}

/* Heap version over a linked list; a popped entry is stale when its pair changed since. The
 * heap never holds more than one entry per live pair plus stale ones, bounded by 2n. */
static int merge_long(const struct rl_tokenizer *tok, rl_tok_buf *b, int m)
{
    int32_t *sym = b->sym, *prev = b->prev, *next = b->next;
    size_t n_heap = 0;
    for (int i = 0; i < m; i++) {
        prev[i] = i - 1;
        next[i] = i + 1 < m ? i + 1 : -1;
    }
    for (int i = 0; i + 1 < m; i++) push_pair(tok, b, &n_heap, i);
    while (n_heap) {
        uint64_t key = heap_pop(b->heap, &n_heap);
        int32_t pos = (int32_t)(uint32_t)key, rank = (int32_t)(key >> 32);
        int32_t r = next[pos];
        if (sym[pos] < 0 || r < 0) continue;
        const rl_tok_merge *mg = rl_tok_find_merge(tok, sym[pos], sym[r]);
        if (!mg || mg->rank != rank) continue;
        sym[pos] = mg->id;
        sym[r] = -1;
        next[pos] = next[r];
        if (next[r] >= 0) prev[next[r]] = pos;
        if (prev[pos] >= 0) push_pair(tok, b, &n_heap, prev[pos]);
        push_pair(tok, b, &n_heap, pos);
    }
    for (int32_t i = 0; i >= 0; i = next[i])
        if (rl_tok_buf_push(b, sym[i])) return -1;
    return 0;
}

static int cache_alloc(rl_tok_buf *b)
{
    if (b->cache_slots) return 0;
    b->cache_slots = calloc(CACHE_SLOTS, sizeof *b->cache_slots);
    b->cache = malloc(CACHE_ENTRIES * sizeof *b->cache);
    b->cache_keys = malloc(CACHE_ENTRIES * CACHE_WORD);
    b->cache_ids = malloc(CACHE_ENTRIES * CACHE_WORD * sizeof *b->cache_ids);
    return b->cache_slots && b->cache && b->cache_keys && b->cache_ids ? 0 : -1;
}

/* Slot of word in the cache: its entry, or the empty slot where it goes. */
static uint32_t *cache_slot(const rl_tok_buf *b, const uint8_t *word, size_t n, uint32_t hash)
{
    for (uint32_t i = hash & (CACHE_SLOTS - 1);; i = (i + 1) & (CACHE_SLOTS - 1)) {
        uint32_t e = b->cache_slots[i];
        if (!e) return &b->cache_slots[i];
        const rl_tok_cache_entry *c = &b->cache[e - 1];
        if (c->hash == hash && c->key_len == n && !memcmp(b->cache_keys + c->key_off, word, n)) return &b->cache_slots[i];
    }
}

static int bpe_uncached(const struct rl_tokenizer *tok, const uint8_t *word, size_t n, rl_tok_buf *b, rl_err *err);

int rl_bpe_word(const struct rl_tokenizer *tok, const uint8_t *word, size_t n, rl_tok_buf *b, rl_err *err)
{
    if (!b->use_cache || n > CACHE_WORD) return bpe_uncached(tok, word, n, b, err);
    if (cache_alloc(b)) return rl_err_oom(err, "tokenizer: word cache", CACHE_ENTRIES * 100);
    uint32_t hash = rl_tok_hash_str((const char *)word, n);
    uint32_t *slot = cache_slot(b, word, n, hash);
    if (*slot) {
        const rl_tok_cache_entry *c = &b->cache[*slot - 1];
        for (uint32_t i = 0; i < c->n_ids; i++)
            if (rl_tok_buf_push(b, b->cache_ids[c->ids_off + i])) return rl_err_oom(err, "tokenizer: ids", b->cap * 8);
        return 0;
    }
    size_t first = b->n;
    if (bpe_uncached(tok, word, n, b, err)) return -1;
    if (b->n_cache < CACHE_ENTRIES) {
        rl_tok_cache_entry *c = &b->cache[b->n_cache++];
        *c = (rl_tok_cache_entry){hash, (uint32_t)b->n_cache_keys, (uint32_t)b->n_cache_ids, (uint16_t)n,
                                  (uint16_t)(b->n - first)};
        memcpy(b->cache_keys + b->n_cache_keys, word, n);
        memcpy(b->cache_ids + b->n_cache_ids, b->ids + first, (b->n - first) * sizeof *b->ids);
        b->n_cache_keys += n;
        b->n_cache_ids += b->n - first;
        *slot = b->n_cache;
    }
    return 0;
}

/* Merges one word from its bytes. */
static int bpe_uncached(const struct rl_tokenizer *tok, const uint8_t *word, size_t n, rl_tok_buf *b, rl_err *err)
{
    if (n > INT32_MAX / 4) return rl_err_set(err, "%s: pre-token of %zu bytes is too long", tok->name, n);
    if (reserve(b, 2 * n + 1, err)) return -1;
    if (tok->ignore_merges) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t c = rl_tok_byte_to_char(word[i]);
            if (c < 0x80) b->chars[k++] = (char)c;
            else {
                b->chars[k++] = (char)(0xC0 | (c >> 6));
                b->chars[k++] = (char)(0x80 | (c & 0x3F));
            }
        }
        int32_t id = rl_tok_lookup(tok, b->chars, k);
        if (id >= 0) {
            if (rl_tok_buf_push(b, id)) return rl_err_oom(err, "tokenizer: ids", b->cap * 8);
            return 0;
        }
    }
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = tok->byte_id[word[i]];
        if (id >= 0) b->sym[m++] = id; /* no token for this byte and no unk: dropped, as tokenizers does */
    }
    int rc = m <= SHORT_WORD ? merge_short(tok, b, m) : merge_long(tok, b, m);
    if (rc) return rl_err_oom(err, "tokenizer: ids", b->cap * 8);
    return 0;
}
