/* tokenizer.c — loads a Hugging Face tokenizer.json into rl_tokenizer, and the id <-> token
 * lookups (token strings, decoded bytes, decode).
 *
 * Everything the file declares is checked against what we implement (see tokenizer.h); an
 * unknown or unsupported normalizer, pre-tokenizer, decoder or model setting is an error that
 * names it, so a tokenizer we would get wrong never loads. Defaults follow tokenizers' serde
 * defaults (ByteLevel: add_prefix_space, trim_offsets and use_regex default to true).
 * The post_processor is not applied: encode matches encode(..., add_special_tokens=False). */
#include "io/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "io/json.h"
#include "io/tok_internal.h"

/* GPT-2's split pattern, run by a ByteLevel pre-tokenizer with use_regex = true. */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static uint32_t pow2_above(size_t n)
{
    uint32_t p = 16;
    while (p < 2 * n) p <<= 1;
    return p;
}

int32_t rl_tok_lookup(const struct rl_tokenizer *tok, const char *s, size_t n)
{
    for (uint32_t i = rl_tok_hash_str(s, n) & tok->vocab_mask;; i = (i + 1) & tok->vocab_mask) {
        int32_t id = tok->vocab_slots[i];
        if (id < 0) return -1;
        if (tok->str_len[id] == n && !memcmp(tok->strs + tok->str_off[id], s, n)) return id;
    }
}

/* Inserts id under its string; an earlier id with the same string is replaced. */
static void vocab_insert(rl_tokenizer *tok, int32_t id)
{
    const char *s = tok->strs + tok->str_off[id];
    size_t n = tok->str_len[id];
    for (uint32_t i = rl_tok_hash_str(s, n) & tok->vocab_mask;; i = (i + 1) & tok->vocab_mask) {
        int32_t old = tok->vocab_slots[i];
        if (old < 0 || (tok->str_len[old] == n && !memcmp(tok->strs + tok->str_off[old], s, n))) {
            tok->vocab_slots[i] = id;
            return;
        }
    }
}

static void merge_insert(rl_tokenizer *tok, uint64_t pair, int32_t rank, int32_t id)
{
    for (uint32_t i = rl_tok_hash_pair(pair) & tok->merge_mask;; i = (i + 1) & tok->merge_mask) {
        rl_tok_merge *m = &tok->merges[i];
        if (m->id < 0 || m->pair == pair) { /* a repeated pair keeps its last rank, as tokenizers does */
            m->pair = pair;
            m->rank = rank;
            m->id = id;
            return;
        }
    }
}

static const char *type_of(const cJSON *obj)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, "type");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* Optional bool with a default; a present non-bool is an error. */
static int opt_bool(const cJSON *obj, const char *key, int dflt, int *out, const char *what, rl_err *err)
{
    *out = dflt;
    return rl_json_bool(obj, key, out, 0, what, err);
}

static int load_normalizer(rl_tokenizer *tok, const cJSON *norm, rl_err *err)
{
    if (!norm || cJSON_IsNull(norm)) return 0;
    const char *type = type_of(norm);
    if (type && !strcmp(type, "NFC")) {
        tok->nfc = 1;
        return 0;
    }
    if (type && !strcmp(type, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(norm, "normalizers"), *item;
        if (!cJSON_IsArray(list)) return rl_err_set(err, "%s: normalizer: Sequence needs an array 'normalizers'", tok->name);
        cJSON_ArrayForEach(item, list) {
            if (cJSON_IsNull(item) || !type_of(item) || strcmp(type_of(item), "NFC"))
                return rl_err_set(err, "%s: normalizer type '%s' inside Sequence is not supported (only NFC is)",
                                  tok->name, type_of(item) ? type_of(item) : "?");
            tok->nfc = 1;
        }
        return 0;
    }
    return rl_err_set(err, "%s: normalizer type '%s' is not supported (only NFC or none)", tok->name,
                      type ? type : "?");
}

static int add_split(rl_tokenizer *tok, const char *pattern, size_t len, int literal, rl_err *err)
{
    if (tok->n_split == RL_TOK_MAX_SPLITS)
        return rl_err_set(err, "%s: pre_tokenizer: more than %d Split steps", tok->name, RL_TOK_MAX_SPLITS);
    int code;
    PCRE2_SIZE at;
    uint32_t opts = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &code, &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return rl_err_set(err, "%s: pre_tokenizer: Split pattern does not compile at offset %zu: %s",
                          tok->name, (size_t)at, (const char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* without JIT, pcre2_match interprets: same results */
    tok->split[tok->n_split++] = re;
    return 0;
}

int rl_tok_nfc_safe(const struct rl_tokenizer *tok, int32_t cp)
{
    if (cp < 0x10000) return tok->nfc_safe[cp >> 3] >> (cp & 7) & 1;
    const utf8proc_property_t *p = utf8proc_get_property(cp);
    int second = p->comb_index != UINT16_MAX && (p->comb_index & 0x8000);
    return p->combining_class == 0 && !second && (p->decomp_seqindex == UINT16_MAX || p->decomp_type != 0);
}

/* The BMP part of rl_tok_nfc_safe: chars with a canonical decomposition are asked of utf8proc
 * (most recompose to themselves; singletons and exclusions do not); Hangul jamo compose
 * algorithmically, so they are never safe. */
static int build_nfc_safe(rl_tokenizer *tok, rl_err *err)
{
    tok->nfc_safe = calloc(0x10000 / 8, 1);
    if (!tok->nfc_safe) return rl_err_oom(err, tok->name, 0x10000 / 8);
    for (int32_t cp = 0; cp < 0x10000; cp++) {
        const utf8proc_property_t *p = utf8proc_get_property(cp);
        int second = p->comb_index != UINT16_MAX && (p->comb_index & 0x8000);
        int safe = p->combining_class == 0 && !second && !(cp >= 0x1100 && cp <= 0x11FF) && !(cp >= 0xD800 && cp <= 0xDFFF);
        if (safe && p->decomp_seqindex != UINT16_MAX && p->decomp_type == 0) {
            uint8_t in[4], *out = NULL;
            utf8proc_ssize_t n = utf8proc_encode_char(cp, in);
            utf8proc_ssize_t m = utf8proc_map(in, n, &out, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            safe = m == n && !memcmp(in, out, (size_t)n);
            free(out);
        }
        if (safe) tok->nfc_safe[cp >> 3] |= (uint8_t)(1u << (cp & 7));
    }
    return 0;
}

static int load_split(rl_tokenizer *tok, const cJSON *step, rl_err *err)
{
    const char *behavior = NULL;
    int invert;
    char what[300];
    snprintf(what, sizeof what, "%s: pre_tokenizer Split", tok->name);
    if (rl_json_string(step, "behavior", &behavior, 1, what, err) || opt_bool(step, "invert", 0, &invert, what, err))
        return -1;
    if (strcmp(behavior, "Isolated") || invert)
        return rl_err_set(err, "%s: pre_tokenizer Split: behavior '%s'%s is not supported (only Isolated, invert false)",
                          tok->name, behavior, invert ? " with invert" : "");
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(step, "pattern");
    const cJSON *re = pat ? cJSON_GetObjectItemCaseSensitive(pat, "Regex") : NULL;
    const cJSON *str = pat ? cJSON_GetObjectItemCaseSensitive(pat, "String") : NULL;
    if (cJSON_IsString(re)) return add_split(tok, re->valuestring, strlen(re->valuestring), 0, err);
    if (cJSON_IsString(str)) return add_split(tok, str->valuestring, strlen(str->valuestring), 1, err);
    return rl_err_set(err, "%s: pre_tokenizer Split: 'pattern' must be {\"Regex\": ...} or {\"String\": ...}", tok->name);
}

/* One step of the pre-tokenizer; *byte_level counts ByteLevel steps, which must come last. */
static int load_pre_step(rl_tokenizer *tok, const cJSON *step, int *byte_level, rl_err *err)
{
    const char *type = type_of(step);
    if (*byte_level)
        return rl_err_set(err, "%s: pre_tokenizer: '%s' after ByteLevel is not supported (ByteLevel must be last)",
                          tok->name, type ? type : "?");
    if (type && !strcmp(type, "Split")) return load_split(tok, step, err);
    if (type && !strcmp(type, "ByteLevel")) {
        int prefix, use_regex;
        char what[300];
        snprintf(what, sizeof what, "%s: pre_tokenizer ByteLevel", tok->name);
        if (opt_bool(step, "add_prefix_space", 1, &prefix, what, err) || opt_bool(step, "use_regex", 1, &use_regex, what, err))
            return -1;
        if (prefix) return rl_err_set(err, "%s: pre_tokenizer ByteLevel: add_prefix_space true is not supported", tok->name);
        *byte_level = 1;
        return use_regex ? add_split(tok, GPT2_PATTERN, sizeof GPT2_PATTERN - 1, 0, err) : 0;
    }
    return rl_err_set(err, "%s: pre_tokenizer type '%s' is not supported (Split, ByteLevel or a Sequence of them)",
                      tok->name, type ? type : "?");
}

static int load_pre_tokenizer(rl_tokenizer *tok, const cJSON *pre, rl_err *err)
{
    int byte_level = 0;
    if (!pre || cJSON_IsNull(pre))
        return rl_err_set(err, "%s: pre_tokenizer is missing (a ByteLevel pre-tokenizer is required)", tok->name);
    const char *type = type_of(pre);
    if (type && !strcmp(type, "Sequence")) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(pre, "pretokenizers"), *step;
        if (!cJSON_IsArray(list)) return rl_err_set(err, "%s: pre_tokenizer: Sequence needs an array 'pretokenizers'", tok->name);
        cJSON_ArrayForEach(step, list)
            if (load_pre_step(tok, step, &byte_level, err)) return -1;
    } else if (load_pre_step(tok, pre, &byte_level, err))
        return -1;
    if (!byte_level) return rl_err_set(err, "%s: pre_tokenizer has no ByteLevel step (required)", tok->name);
    return 0;
}

static int load_decoder(rl_tokenizer *tok, const cJSON *dec, rl_err *err)
{
    const char *type = dec ? type_of(dec) : NULL;
    if (!dec || cJSON_IsNull(dec)) return rl_err_set(err, "%s: decoder is missing (ByteLevel is required)", tok->name);
    if (!type || strcmp(type, "ByteLevel"))
        return rl_err_set(err, "%s: decoder type '%s' is not supported (only ByteLevel)", tok->name, type ? type : "?");
    return 0;
}

/* Model settings other than vocab and merges. */
static int check_model(rl_tokenizer *tok, const cJSON *model, rl_err *err)
{
    const char *type = type_of(model);
    if (!type || strcmp(type, "BPE"))
        return rl_err_set(err, "%s: model type '%s' is not supported (only BPE)", tok->name, type ? type : "?");
    static const char *const must_be_null[] = {"dropout", "unk_token"};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, must_be_null[i]);
        if (v && !cJSON_IsNull(v))
            return rl_err_set(err, "%s: model: '%s' is set; only null is supported", tok->name, must_be_null[i]);
    }
    static const char *const must_be_empty[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, must_be_empty[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsString(v) && !v->valuestring[0]))
            return rl_err_set(err, "%s: model: '%s' is set; only empty is supported", tok->name, must_be_empty[i]);
    }
    int fallback;
    char what[300];
    snprintf(what, sizeof what, "%s: model", tok->name);
    if (opt_bool(model, "byte_fallback", 0, &fallback, what, err) ||
        opt_bool(model, "ignore_merges", 0, &tok->ignore_merges, what, err))
        return -1;
    if (fallback) return rl_err_set(err, "%s: model: byte_fallback true is not supported", tok->name);
    return 0;
}

static int check_id(const cJSON *v, int64_t *id)
{
    if (!rl_json_is_integer(v) || v->valuedouble < 0 || v->valuedouble >= RL_TOK_MAX_ID) return -1;
    *id = (int64_t)v->valuedouble;
    return 0;
}

/* Sizes the id space, lays out the token strings, and fills the vocab map. */
static int load_tokens(rl_tokenizer *tok, const cJSON *vocab, const cJSON *added, rl_err *err)
{
    int64_t max_id = -1, id;
    size_t bytes = 0, count = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, vocab) {
        if (check_id(item, &id))
            return rl_err_set(err, "%s: model: vocab['%s'] must be an id in [0, %d)", tok->name, item->string, RL_TOK_MAX_ID);
        if (id > max_id) max_id = id;
        bytes += strlen(item->string) + 1;
        count++;
    }
    int k = 0;
    cJSON_ArrayForEach(item, added) {
        const char *content;
        char what[300];
        snprintf(what, sizeof what, "%s: added_tokens[%d]", tok->name, k);
        if (rl_json_string(item, "content", &content, 1, what, err)) return -1;
        if (!content[0]) return rl_err_set(err, "%s: added_tokens[%d]: empty content", tok->name, k);
        if (check_id(cJSON_GetObjectItemCaseSensitive(item, "id"), &id))
            return rl_err_set(err, "%s: added_tokens[%d]: 'id' must be an id in [0, %d)", tok->name, k, RL_TOK_MAX_ID);
        if (id > max_id) max_id = id;
        bytes += strlen(content) + 1;
        count++;
        k++;
    }
    if (max_id < 0) return rl_err_set(err, "%s: model: vocab is empty", tok->name);
    tok->n_ids = (int)max_id + 1;
    size_t n = (size_t)tok->n_ids;
    tok->strs = malloc(bytes ? bytes : 1);
    tok->str_off = malloc(n * sizeof *tok->str_off);
    tok->str_len = calloc(n, sizeof *tok->str_len);
    tok->special = calloc(n, 1);
    tok->vocab_mask = pow2_above(count) - 1;
    tok->vocab_slots = malloc(((size_t)tok->vocab_mask + 1) * sizeof *tok->vocab_slots);
    tok->added = calloc((size_t)k + 1, sizeof *tok->added);
    if (!tok->strs || !tok->str_off || !tok->str_len || !tok->special || !tok->vocab_slots || !tok->added)
        return rl_err_oom(err, tok->name, bytes + n * 9);
    memset(tok->str_off, 0xff, n * sizeof *tok->str_off);
    memset(tok->vocab_slots, 0xff, ((size_t)tok->vocab_mask + 1) * sizeof *tok->vocab_slots);
    size_t at = 0;
    cJSON_ArrayForEach(item, vocab) {
        id = (int64_t)item->valuedouble;
        if (tok->str_off[id] != RL_TOK_NONE)
            return rl_err_set(err, "%s: model: vocab['%s'] and vocab['%s'] have the same id %lld", tok->name,
                              item->string, tok->strs + tok->str_off[id], (long long)id);
        size_t len = strlen(item->string);
        memcpy(tok->strs + at, item->string, len + 1);
        tok->str_off[id] = (uint32_t)at;
        tok->str_len[id] = (uint32_t)len;
        at += len + 1;
        vocab_insert(tok, (int32_t)id);
    }
    cJSON_ArrayForEach(item, added) {
        rl_tok_added *a = &tok->added[tok->n_added];
        int flags[5];
        static const char *const names[5] = {"special", "lstrip", "rstrip", "single_word", "normalized"};
        char what[300];
        snprintf(what, sizeof what, "%s: added_tokens[%d]", tok->name, tok->n_added);
        for (int f = 0; f < 5; f++)
            if (opt_bool(item, names[f], 0, &flags[f], what, err)) return -1;
        const char *content = cJSON_GetObjectItemCaseSensitive(item, "content")->valuestring;
        size_t len = strlen(content);
        id = (int64_t)cJSON_GetObjectItemCaseSensitive(item, "id")->valuedouble;
        if (flags[4] && tok->nfc) {
            /* Matched on NFC text, so the content must be NFC already (we keep one spelling). */
            uint8_t *nfc = NULL;
            utf8proc_ssize_t n_nfc = utf8proc_map((const uint8_t *)content, (utf8proc_ssize_t)len, &nfc,
                                                  UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            int same = n_nfc == (utf8proc_ssize_t)len && !memcmp(nfc, content, len);
            free(nfc);
            if (!same)
                return rl_err_set(err, "%s: added_tokens[%d]: normalized token '%s' is not in NFC form (not supported)",
                                  tok->name, tok->n_added, content);
        }
        memcpy(tok->strs + at, content, len + 1);
        tok->str_off[id] = (uint32_t)at;
        tok->str_len[id] = (uint32_t)len;
        *a = (rl_tok_added){tok->strs + at, (uint32_t)len, (int32_t)id, (uint8_t)flags[0], (uint8_t)flags[1],
                            (uint8_t)flags[2], (uint8_t)flags[3], (uint8_t)flags[4]};
        at += len + 1;
        tok->special[id] = a->special;
        tok->added_first[(uint8_t)content[0]] = 1;
        tok->has_normalized_added |= a->normalized;
        vocab_insert(tok, (int32_t)id);
        tok->n_added++;
    }
    return 0;
}

static int longer_first(const void *pa, const void *pb)
{
    const rl_tok_added *a = pa, *b = pb;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* "a b" or ["a", "b"] -> the two tokens' ids. */
static int merge_ids(rl_tokenizer *tok, const cJSON *item, int index, int32_t ids[2], rl_err *err)
{
    const char *part[2];
    size_t len[2];
    if (cJSON_IsString(item)) {
        const char *s = item->valuestring, *sp = strchr(s, ' ');
        if (!sp || strchr(sp + 1, ' '))
            return rl_err_set(err, "%s: model: merges[%d] '%s' must be two tokens separated by one space", tok->name, index, s);
        part[0] = s, len[0] = (size_t)(sp - s), part[1] = sp + 1, len[1] = strlen(sp + 1);
    } else if (cJSON_IsArray(item) && cJSON_GetArraySize(item) == 2 && cJSON_IsString(cJSON_GetArrayItem(item, 0)) &&
               cJSON_IsString(cJSON_GetArrayItem(item, 1))) {
        for (int i = 0; i < 2; i++) {
            part[i] = cJSON_GetArrayItem(item, i)->valuestring;
            len[i] = strlen(part[i]);
        }
    } else
        return rl_err_set(err, "%s: model: merges[%d] must be a string \"a b\" or a pair [\"a\", \"b\"]", tok->name, index);
    for (int i = 0; i < 2; i++) {
        ids[i] = rl_tok_lookup(tok, part[i], len[i]);
        if (ids[i] < 0 || !len[i])
            return rl_err_set(err, "%s: model: merges[%d]: token '%.*s' is not in the vocab", tok->name, index, (int)len[i], part[i]);
    }
    return 0;
}

static int load_merges(rl_tokenizer *tok, const cJSON *merges, rl_err *err)
{
    int n = cJSON_GetArraySize(merges);
    tok->merge_mask = pow2_above((size_t)n) - 1;
    tok->merges = malloc(((size_t)tok->merge_mask + 1) * sizeof *tok->merges);
    if (!tok->merges) return rl_err_oom(err, tok->name, ((size_t)tok->merge_mask + 1) * sizeof *tok->merges);
    for (size_t i = 0; i <= tok->merge_mask; i++) tok->merges[i] = (rl_tok_merge){0, 0, -1};
    char joined[1024];
    int index = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, merges) {
        int32_t ids[2] = {-1, -1};
        if (merge_ids(tok, item, index, ids, err)) return -1;
        size_t l0 = tok->str_len[ids[0]], l1 = tok->str_len[ids[1]];
        if (l0 + l1 > sizeof joined)
            return rl_err_set(err, "%s: model: merges[%d]: merged token longer than %zu bytes", tok->name, index, sizeof joined);
        memcpy(joined, tok->strs + tok->str_off[ids[0]], l0);
        memcpy(joined + l0, tok->strs + tok->str_off[ids[1]], l1);
        int32_t id = rl_tok_lookup(tok, joined, l0 + l1);
        if (id < 0)
            return rl_err_set(err, "%s: model: merges[%d]: merged token '%.*s' is not in the vocab", tok->name, index,
                              (int)(l0 + l1), joined);
        merge_insert(tok, (uint64_t)(uint32_t)ids[0] << 32 | (uint32_t)ids[1], index, id);
        index++;
    }
    return 0;
}

/* The bytes each token decodes to: its chars mapped back through the byte-level alphabet, or
 * its own UTF-8 when some char is outside that alphabet (as tokenizers' ByteLevel decoder). */
static int build_raw(rl_tokenizer *tok, rl_err *err)
{
    size_t n = (size_t)tok->n_ids, total = 0;
    for (size_t i = 0; i < n; i++) total += tok->str_len[i];
    tok->raw = malloc(total ? total : 1);
    tok->raw_off = malloc(n * sizeof *tok->raw_off);
    tok->raw_len = calloc(n, sizeof *tok->raw_len);
    if (!tok->raw || !tok->raw_off || !tok->raw_len) return rl_err_oom(err, tok->name, total + 8 * n);
    size_t at = 0;
    for (size_t id = 0; id < n; id++) {
        tok->raw_off[id] = (uint32_t)at;
        if (tok->str_off[id] == RL_TOK_NONE) continue;
        const uint8_t *s = (const uint8_t *)tok->strs + tok->str_off[id];
        size_t len = tok->str_len[id], k = 0, i = 0;
        while (i < len) {
            uint32_t cp = s[i];
            size_t step = 1;
            if (s[i] >= 0xC0 && s[i] < 0xE0 && i + 1 < len) cp = (uint32_t)(s[i] & 0x1F) << 6 | (s[i + 1] & 0x3F), step = 2;
            int b = s[i] >= 0xE0 ? -1 : rl_tok_char_to_byte(cp);
            if (b < 0) break;
            tok->raw[at + k++] = (char)b;
            i += step;
        }
        if (i < len) {
            memcpy(tok->raw + at, s, len);
            k = len;
        }
        tok->raw_len[id] = (uint32_t)k;
        at += k;
    }
    return 0;
}

int rl_tok_load(rl_tokenizer **out, const char *path, rl_err *err)
{
    *out = NULL;
    cJSON *root = rl_json_parse_file(path, err);
    if (!root) return -1;
    rl_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) {
        cJSON_Delete(root);
        return rl_err_oom(err, path, sizeof *tok);
    }
    snprintf(tok->name, sizeof tok->name, "%s", path);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *vocab = model ? cJSON_GetObjectItemCaseSensitive(model, "vocab") : NULL;
    const cJSON *merges = model ? cJSON_GetObjectItemCaseSensitive(model, "merges") : NULL;
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    int rc = -1;
    if (!cJSON_IsObject(model)) rl_err_set(err, "%s: missing object 'model'", path);
    else if (check_model(tok, model, err)) {
    } else if (!cJSON_IsObject(vocab)) rl_err_set(err, "%s: model: missing object 'vocab'", path);
    else if (!cJSON_IsArray(merges)) rl_err_set(err, "%s: model: missing array 'merges'", path);
    else if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added)) rl_err_set(err, "%s: 'added_tokens' must be an array", path);
    else if (!load_normalizer(tok, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), err) &&
             !load_pre_tokenizer(tok, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), err) &&
             !load_decoder(tok, cJSON_GetObjectItemCaseSensitive(root, "decoder"), err) &&
             !load_tokens(tok, vocab, cJSON_IsArray(added) ? added : NULL, err) && !load_merges(tok, merges, err) &&
             !build_raw(tok, err) && (!tok->nfc || !build_nfc_safe(tok, err)))
        rc = 0;
    cJSON_Delete(root);
    if (rc) {
        rl_tok_free(tok);
        return -1;
    }
    qsort(tok->added, (size_t)tok->n_added, sizeof *tok->added, longer_first);
    for (int b = 0; b < 256; b++) {
        char s[2];
        uint32_t c = rl_tok_byte_to_char((uint8_t)b);
        size_t n = 1;
        if (c < 0x80) s[0] = (char)c;
        else s[0] = (char)(0xC0 | (c >> 6)), s[1] = (char)(0x80 | (c & 0x3F)), n = 2;
        tok->byte_id[b] = rl_tok_lookup(tok, s, n);
    }
    rl_tok_chat_attach(tok, path);
    *out = tok;
    return 0;
}

void rl_tok_free(rl_tokenizer *tok)
{
    if (!tok) return;
    for (int i = 0; i < tok->n_split; i++) pcre2_code_free(tok->split[i]);
    free(tok->strs);
    free(tok->str_off);
    free(tok->str_len);
    free(tok->raw);
    free(tok->raw_off);
    free(tok->raw_len);
    free(tok->special);
    free(tok->vocab_slots);
    free(tok->merges);
    free(tok->added);
    free(tok->nfc_safe);
    free(tok);
}

int rl_tok_vocab_size(const rl_tokenizer *tok) { return tok->n_ids; }

int32_t rl_tok_token_id(const rl_tokenizer *tok, const char *token)
{
    return rl_tok_lookup(tok, token, strlen(token));
}

int rl_tok_is_special(const rl_tokenizer *tok, int32_t id)
{
    return id >= 0 && id < tok->n_ids && tok->special[id];
}

int rl_tok_token_bytes(const rl_tokenizer *tok, int32_t id, const char **bytes, size_t *len)
{
    if (id < 0 || id >= tok->n_ids || tok->str_off[id] == RL_TOK_NONE) return -1;
    *bytes = tok->raw + tok->raw_off[id];
    *len = tok->raw_len[id];
    return 0;
}

int rl_tok_decode(const rl_tokenizer *tok, const int32_t *ids, int n_ids, char **text, size_t *len, rl_err *err)
{
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (int i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= tok->n_ids || tok->str_off[ids[i]] == RL_TOK_NONE)
            return rl_err_set(err, "%s: decode: id %d at position %d is not a token (vocab size %d)", tok->name,
                              (int)ids[i], i, tok->n_ids);
        total += tok->raw_len[ids[i]];
    }
    char *buf = malloc(total + 1);
    if (!buf) return rl_err_oom(err, "decode", total + 1);
    size_t at = 0;
    for (int i = 0; i < n_ids; i++) {
        memcpy(buf + at, tok->raw + tok->raw_off[ids[i]], tok->raw_len[ids[i]]);
        at += tok->raw_len[ids[i]];
    }
    buf[at] = '\0';
    char *clean;
    size_t clean_len;
    if (rl_tok_utf8_sanitize(buf, at, &clean, &clean_len, err)) {
        free(buf);
        return -1;
    }
    if (clean) {
        free(buf);
        buf = clean;
        at = clean_len;
    }
    *text = buf;
    *len = at;
    return 0;
}
