/* fuzz_tokenizer.c — libFuzzer target: any byte string as text for rl_tok_encode, with the
 * demo tokenizer (examples/demo/tokenizer.json; run from the repository root) or the one named
 * by RL_FUZZ_TOKENIZER (the real Qwen3 one: ../shared/data/qwen3-tokenizer/tokenizer.json).
 *
 * Encoding never fails on any bytes, every id is in range, and decoding the ids gives the
 * input after U+FFFD repair and NFC (the round trip tokenizers guarantees for byte-level BPE).
 * NFC applies to the text between added tokens, never across one: "<|im_end|>" followed by
 * U+0338 keeps its '>' (whole-text NFC would compose '>' + U+0338 into U+226F). The added
 * tokens of both tokenizers are all normalized=false without strip rules, so the expected text
 * is the repaired input cut at leftmost-longest added tokens, each gap NFC'd on its own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "io/tok_internal.h"
#include "io/tokenizer.h"

static void check(int ok)
{
    if (!ok) __builtin_trap();
}

/* Appends NFC(s[0..n)) to *out (grown with realloc). */
static void append_nfc(uint8_t **out, size_t *len, const uint8_t *s, size_t n)
{
    uint8_t *piece = NULL;
    utf8proc_ssize_t m = n ? utf8proc_map(s, (utf8proc_ssize_t)n, &piece, UTF8PROC_STABLE | UTF8PROC_COMPOSE) : 0;
    check(m >= 0);
    *out = realloc(*out, *len + (size_t)m + 1);
    check(*out != NULL);
    if (m) memcpy(*out + *len, piece, (size_t)m);
    *len += (size_t)m;
    free(piece);
}

/* The text decode(encode(s)) must give for valid UTF-8 s: added tokens kept as they are,
 * the gaps between them NFC-normalised. */
static uint8_t *expected_text(const rl_tokenizer *tok, const uint8_t *s, size_t n, size_t *len)
{
    uint8_t *out = NULL;
    size_t gap = 0, i = 0;
    *len = 0;
    while (i < n) {
        size_t best = 0;
        for (int k = 0; k < tok->n_added; k++) {
            const rl_tok_added *a = &tok->added[k];
            check(!a->normalized && !a->lstrip && !a->rstrip && !a->single_word);
            if (a->len > best && a->len <= n - i && !memcmp(s + i, a->content, a->len)) best = a->len;
        }
        if (!best) {
            i++;
            continue;
        }
        append_nfc(&out, len, s + gap, i - gap);
        append_nfc(&out, len, s + i, best); /* a token is ASCII here: NFC leaves it as it is */
        i += best;
        gap = i;
    }
    append_nfc(&out, len, s + gap, n - gap);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static rl_tokenizer *tok;
    rl_err err;
    if (!tok) {
        const char *path = getenv("RL_FUZZ_TOKENIZER");
        check(rl_tok_load(&tok, path ? path : "examples/demo/tokenizer.json", &err) == 0);
    }
    int32_t *ids;
    int n;
    check(rl_tok_encode(tok, (const char *)data, size, &ids, &n, &err) == 0);
    for (int i = 0; i < n; i++) check(ids[i] >= 0 && ids[i] < rl_tok_vocab_size(tok));
    char *text, *clean;
    size_t len, clean_len;
    check(rl_tok_decode(tok, ids, n, &text, &len, &err) == 0);
    check(rl_tok_utf8_sanitize((const char *)data, size, &clean, &clean_len, &err) == 0);
    size_t want_len;
    uint8_t *want = expected_text(tok, clean ? (const uint8_t *)clean : data, clean ? clean_len : size, &want_len);
    check(want_len == len && (!len || !memcmp(want, text, len)));
    free(want);
    free(clean);
    free(text);
    free(ids);
    return 0;
}
