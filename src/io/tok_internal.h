/* tok_internal.h — the layout of rl_tokenizer, shared by the tokenizer's own files only
 * (tokenizer.c loads it, bpe.c merges, pretokenize.c splits and drives encoding).
 *
 * Ids are dense in [0, n_ids); an id with no token has str_off == RL_TOK_NONE. All token
 * strings live in one buffer (strs), all decoded token bytes in another (raw). */
#ifndef RL_IO_TOK_INTERNAL_H
#define RL_IO_TOK_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "io/chat.h"

#define RL_TOK_NONE UINT32_MAX
#define RL_TOK_MAX_SPLITS 8
#define RL_TOK_MAX_ID (1 << 24) /* sanity bound: ids index dense tables */

typedef struct rl_tok_added {
    const char *content; /* points into strs; matched as bytes */
    uint32_t len;
    int32_t id;
    uint8_t special, lstrip, rstrip, single_word, normalized;
} rl_tok_added;

/* One merge: the pair (left id, right id) packed as left << 32 | right. */
typedef struct rl_tok_merge {
    uint64_t pair;
    int32_t rank; /* position in model.merges: lower merges first */
    int32_t id;   /* the merged token */
} rl_tok_merge;

struct rl_tokenizer {
    char name[256]; /* file name for messages */
    int n_ids;      /* largest id + 1 */
    char *strs;     /* token strings as tokenizer.json spells them, NUL-separated */
    uint32_t *str_off, *str_len;
    char *raw;      /* the bytes each token decodes to */
    uint32_t *raw_off, *raw_len;
    uint8_t *special;

    int32_t *vocab_slots; /* open addressing: string -> id (added tokens win); -1 = empty */
    uint32_t vocab_mask;
    rl_tok_merge *merges; /* open addressing on pair; pair == 0 with id -1 = empty */
    uint32_t merge_mask;
    int32_t byte_id[256]; /* model id of each single byte's byte-level char, -1 if none */
    int ignore_merges;

    int nfc;                             /* normalizer NFC */
    uint8_t *nfc_safe; /* bit per BMP code point: NFC leaves any run of such chars unchanged */
    pcre2_code *split[RL_TOK_MAX_SPLITS]; /* Split pre-tokenizers (Isolated), in order */
    int n_split;

    rl_tok_added *added; /* longest first, so the first match at a position is the longest */
    int n_added;
    int has_normalized_added;
    uint8_t added_first[256]; /* 1 if some added token starts with this byte */

    rl_chat_template chat; /* the template beside tokenizer.json (chat.c), when has_chat */
    int has_chat;
    char chat_error[1024]; /* why there is none */
};

/* Reads the chat template beside tokenizer_path into tok (chat.c); never fails the load. */
void rl_tok_chat_attach(struct rl_tokenizer *tok, const char *tokenizer_path);

/* Hashes used by both the loader and the encoder. */
static inline uint32_t rl_tok_hash_str(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return (uint32_t)(h ^ (h >> 32));
}

static inline uint32_t rl_tok_hash_pair(uint64_t pair)
{
    pair *= 0x9e3779b97f4a7c15ull;
    return (uint32_t)(pair >> 32);
}

/* Id of the exact string s (n bytes), -1 if absent. */
int32_t rl_tok_lookup(const struct rl_tokenizer *tok, const char *s, size_t n);

/* Merge for the pair (left, right), NULL if none. */
static inline const rl_tok_merge *rl_tok_find_merge(const struct rl_tokenizer *tok, int32_t left,
                                                   int32_t right)
{
    uint64_t pair = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    for (uint32_t i = rl_tok_hash_pair(pair) & tok->merge_mask;; i = (i + 1) & tok->merge_mask) {
        const rl_tok_merge *m = &tok->merges[i];
        if (m->id < 0) return NULL;
        if (m->pair == pair) return m;
    }
}

/* 1 if NFC leaves every run of such chars unchanged: the char is its own NFC, has combining
 * class 0 and never is the second char of a composition (so its neighbours do not change it). */
int rl_tok_nfc_safe(const struct rl_tokenizer *tok, int32_t cp);

/* Per-call cache of short words already merged: word bytes -> their ids. */
typedef struct rl_tok_cache_entry {
    uint32_t hash, key_off, ids_off;
    uint16_t key_len, n_ids;
} rl_tok_cache_entry;

/* Growable id list and per-call scratch for BPE (one per encode call: no shared state). */
typedef struct rl_tok_buf {
    int32_t *ids;
    size_t n, cap;
    int32_t *sym;    /* symbol ids of the current word */
    int32_t *prev, *next;
    uint64_t *heap;  /* rank << 32 | position */
    char *chars;     /* the word in byte-level chars (ignore_merges lookups) */
    size_t scratch_cap;
    int use_cache;   /* set by the caller for long texts, where words repeat */
    uint32_t *cache_slots; /* entry index + 1, 0 = empty */
    rl_tok_cache_entry *cache;
    uint32_t n_cache;
    char *cache_keys;
    int32_t *cache_ids;
    size_t n_cache_keys, n_cache_ids;
} rl_tok_buf;

int rl_tok_buf_push(rl_tok_buf *b, int32_t id);
void rl_tok_buf_free(rl_tok_buf *b);

/* Byte-pair encodes one pre-token (raw bytes, before the byte-level mapping) onto b. */
int rl_bpe_word(const struct rl_tokenizer *tok, const uint8_t *word, size_t n, rl_tok_buf *b,
                rl_err *err);

/* Byte-level alphabet: the char each byte becomes, and back (-1 for chars not in it). */
uint32_t rl_tok_byte_to_char(uint8_t byte);
int rl_tok_char_to_byte(uint32_t cp);

/* Copies s into a malloc'd string with each maximal invalid UTF-8 subsequence replaced by
 * U+FFFD. Returns 0 and *out = NULL when s is already valid. */
int rl_tok_utf8_sanitize(const char *s, size_t n, char **out, size_t *out_len, rl_err *err);

#endif
