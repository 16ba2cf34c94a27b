/* pretokenize.c — rl_tok_encode: UTF-8 repair, added tokens, NFC, regex splits, then BPE.
 *
 * The pipeline is tokenizers' (AddedVocabulary::extract_and_normalize, then pre_tokenize):
 *   1. invalid UTF-8 -> U+FFFD per maximal invalid subsequence (tokenizer.h says why);
 *   2. added tokens with normalized=false are found in the raw text, leftmost-longest, with
 *      their single_word / lstrip / rstrip rules; the text between them goes on;
 *   3. each piece is NFC-normalised (when the normalizer says so), then added tokens with
 *      normalized=true are found in it the same way;
 *   4. each remaining piece is split by every Split regex in turn (behavior Isolated: the
 *      matches and the gaps between them are all pieces), and each final piece is BPE'd.
 * Nothing here is shared between calls: each encode has its own buffers and match data. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "io/tok_internal.h"
#include "io/tokenizer.h"

typedef struct enc {
    const rl_tokenizer *tok;
    rl_tok_buf buf;
    pcre2_match_data *md;
    rl_err *err;
} enc;

/* Length of the valid UTF-8 char at s[0..n) or 0; *bad gets the maximal invalid subpart. */
static size_t utf8_char(const uint8_t *s, size_t n, size_t *bad)
{
    uint8_t b = s[0];
    *bad = 1;
    if (b < 0x80) return 1;
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) need = 1;
    else if (b >= 0xE0 && b <= 0xEF) need = 2, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
    else if (b >= 0xF0 && b <= 0xF4) need = 3, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
    else return 0;
    for (size_t k = 1; k <= need; k++) {
        if (k >= n || s[k] < lo || s[k] > hi) {
            *bad = k;
            return 0;
        }
        lo = 0x80, hi = 0xBF;
    }
    return need + 1;
}

int rl_tok_utf8_sanitize(const char *text, size_t n, char **out, size_t *out_len, rl_err *err)
{
    const uint8_t *s = (const uint8_t *)text;
    size_t i = 0, bad, len;
    *out = NULL;
    *out_len = 0;
    while (i < n) {
        if (s[i] < 0x80) i++;
        else if ((len = utf8_char(s + i, n - i, &bad))) i += len;
        else break;
    }
    if (i == n) return 0;
    /* Each bad subpart (>= 1 byte) becomes 3 bytes: at most 3n + 1. */
    char *buf = malloc(3 * n + 1);
    if (!buf) return rl_err_oom(err, "tokenizer: UTF-8 repair", 3 * n + 1);
    memcpy(buf, text, i);
    size_t k = i;
    while (i < n) {
        if ((len = utf8_char(s + i, n - i, &bad))) {
            memcpy(buf + k, s + i, len);
            k += len, i += len;
        } else {
            memcpy(buf + k, "\xEF\xBF\xBD", 3);
            k += 3, i += bad;
        }
    }
    buf[k] = '\0';
    *out = buf;
    *out_len = k;
    return 0;
}

/* Decodes the (valid) char at s, returning its length. */
static size_t decode_at(const uint8_t *s, int32_t *cp)
{
    utf8proc_ssize_t l = utf8proc_iterate(s, 4, cp);
    return l > 0 ? (size_t)l : 1;
}

static int is_space(int32_t c)
{
    return (c >= 0x9 && c <= 0xD) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Rust regex's \w: letters, marks, decimal and letter numbers, connector punctuation. */
static int is_word(int32_t c)
{
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
        return 1;
    default:
        return c == 0x200C || c == 0x200D;
    }
}

/* The char that ends s[0..end) (end > 0). */
static int32_t char_before(const uint8_t *s, size_t end)
{
    size_t i = end - 1;
    while (i > 0 && (s[i] & 0xC0) == 0x80 && end - i < 4) i--;
    int32_t cp;
    decode_at(s + i, &cp);
    return cp;
}

static int pretok(enc *e, int level, const char *s, size_t n)
{
    const rl_tokenizer *tok = e->tok;
    if (n == 0) return 0;
    if (level == tok->n_split) return rl_bpe_word(tok, (const uint8_t *)s, n, &e->buf, e->err);
    const pcre2_code *re = tok->split[level];
    size_t at = 0, gap = 0;
    while (at < n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, n, at, PCRE2_NO_UTF_CHECK, e->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return rl_err_set(e->err, "%s: pre_tokenizer Split: regex match failed on a %zu-byte piece: %s", tok->name,
                              n, (const char *)msg);
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
        size_t ms = ov[0], me = ov[1];
        if (me <= ms) { /* an empty match splits nothing: look again one char further */
            int32_t cp;
            if (ms >= n) break;
            at = ms + decode_at((const uint8_t *)s + ms, &cp);
            continue;
        }
        if (ms > gap && pretok(e, level + 1, s + gap, ms - gap)) return -1;
        if (pretok(e, level + 1, s + ms, me - ms)) return -1;
        gap = at = me;
    }
    return gap < n ? pretok(e, level + 1, s + gap, n - gap) : 0;
}

static int normalize_piece(enc *e, const char *s, size_t n);

/* Finds added tokens of the given `normalized` kind in s; gaps go on to the next stage. */
static int split_added(enc *e, int normalized, const char *s, size_t n)
{
    const rl_tokenizer *tok = e->tok;
    const uint8_t *u = (const uint8_t *)s;
    size_t from = 0, done = 0;
    while (from < n) {
        const rl_tok_added *hit = NULL;
        size_t ms = from;
        for (; ms < n; ms++) {
            if (!tok->added_first[u[ms]]) continue;
            for (int k = 0; k < tok->n_added && !hit; k++) {
                const rl_tok_added *a = &tok->added[k];
                if (a->normalized == normalized && a->len <= n - ms && !memcmp(s + ms, a->content, a->len)) hit = a;
            }
            if (hit) break;
        }
        if (!hit) break;
        size_t start = ms, stop = ms + hit->len;
        from = stop; /* matches never overlap, whatever the strip rules do below */
        if (hit->single_word) {
            int32_t after = 0;
            if (stop < n) decode_at(u + stop, &after);
            if ((start > 0 && is_word(char_before(u, start))) || (stop < n && is_word(after))) continue;
        }
        if (hit->lstrip) {
            while (start > done && is_space(char_before(u, start))) {
                size_t i = start - 1;
                while (i > 0 && (u[i] & 0xC0) == 0x80) i--;
                start = i;
            }
        }
        if (hit->rstrip) {
            int32_t cp;
            size_t l;
            while (stop < n && (l = decode_at(u + stop, &cp)) && is_space(cp)) stop += l;
        }
        if (start > done) {
            int rc = normalized ? pretok(e, 0, s + done, start - done) : normalize_piece(e, s + done, start - done);
            if (rc) return -1;
        }
        if (rl_tok_buf_push(&e->buf, hit->id)) return rl_err_oom(e->err, "tokenizer: ids", e->buf.cap * 8);
        done = stop;
    }
    if (done >= n) return 0;
    return normalized ? pretok(e, 0, s + done, n - done) : normalize_piece(e, s + done, n - done);
}

static int append(char **buf, size_t *len, size_t *cap, const void *src, size_t n)
{
    if (n == 0) return 0;
    if (*len + n > *cap) {
        size_t want = (*len + n) * 2;
        char *p = realloc(*buf, want);
        if (!p) return -1;
        *buf = p, *cap = want;
    }
    memcpy(*buf + *len, src, n);
    *len += n;
    return 0;
}

/* NFC of s into a malloc'd *out, or *out = NULL when NFC changes nothing. A "safe" char
 * (rl_tok_nfc_safe; every char below U+0300, lead byte below 0xCC, is one) is its own NFC and
 * starts a boundary: nothing before it composes or reorders with anything after it. So only
 * the segments from the last safe char before an unsafe one to the next safe char after it
 * go through utf8proc; the rest is copied. */
static int nfc(enc *e, const uint8_t *u, size_t n, char **out, size_t *out_len)
{
    const rl_tokenizer *tok = e->tok;
    char *buf = NULL;
    size_t len = 0, cap = 0, copied = 0, last_safe = 0, i = 0;
    int32_t cp;
    *out = NULL;
    while (i < n) {
        size_t l = u[i] < 0xCC ? 1 : decode_at(u + i, &cp);
        if (u[i] < 0xCC || rl_tok_nfc_safe(tok, cp)) {
            if ((u[i] & 0xC0) != 0x80) last_safe = i; /* a char's first byte */
            i += l;
            continue;
        }
        size_t from = last_safe > copied ? last_safe : copied, to = i + l;
        while (to < n && u[to] >= 0xCC) {
            size_t l2 = decode_at(u + to, &cp);
            if (rl_tok_nfc_safe(tok, cp)) break;
            to += l2;
        }
        uint8_t *seg = NULL;
        utf8proc_ssize_t seg_len = utf8proc_map(u + from, (utf8proc_ssize_t)(to - from), &seg, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        if (seg_len < 0) {
            free(buf);
            return rl_err_set(e->err, "%s: NFC normalization failed: %s", tok->name, utf8proc_errmsg(seg_len));
        }
        int rc = append(&buf, &len, &cap, u + copied, from - copied) || append(&buf, &len, &cap, seg, (size_t)seg_len);
        free(seg);
        if (rc) {
            free(buf);
            return rl_err_oom(e->err, "tokenizer: NFC text", cap);
        }
        copied = i = last_safe = to;
    }
    if (buf && append(&buf, &len, &cap, u + copied, n - copied)) {
        free(buf);
        return rl_err_oom(e->err, "tokenizer: NFC text", cap);
    }
    *out = buf;
    *out_len = len;
    return 0;
}

static int normalize_piece(enc *e, const char *s, size_t n)
{
    const rl_tokenizer *tok = e->tok;
    char *normal = NULL;
    size_t normal_len;
    if (tok->nfc && nfc(e, (const uint8_t *)s, n, &normal, &normal_len)) return -1;
    if (normal) s = normal, n = normal_len;
    int rc = tok->has_normalized_added ? split_added(e, 1, s, n) : pretok(e, 0, s, n);
    free(normal);
    return rc;
}

int rl_tok_encode(const rl_tokenizer *tok, const char *text, size_t len, int32_t **ids, int *n_ids, rl_err *err)
{
    *ids = NULL;
    *n_ids = 0;
    char *clean;
    size_t clean_len;
    if (rl_tok_utf8_sanitize(text, len, &clean, &clean_len, err)) return -1;
    if (clean) text = clean, len = clean_len;
    enc e = {tok, {0}, pcre2_match_data_create(16, NULL), err};
    e.buf.use_cache = len >= 4096;
    int rc = -1;
    if (!e.md) rl_err_oom(err, "tokenizer: regex match data", 256);
    else if (tok->n_added ? !split_added(&e, 0, text, len) : !normalize_piece(&e, text, len)) {
        if (e.buf.n > INT32_MAX) rl_err_set(err, "%s: encode: %zu tokens do not fit an int", tok->name, e.buf.n);
        else rc = 0;
    }
    free(clean);
    pcre2_match_data_free(e.md);
    if (rc == 0) {
        *ids = e.buf.ids;
        *n_ids = (int)e.buf.n;
        e.buf.ids = NULL;
    }
    rl_tok_buf_free(&e.buf);
    return rc;
}
