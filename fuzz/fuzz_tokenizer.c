/* fuzz_tokenizer.c — libFuzzer target: any byte string as text for rl_tok_encode, with the
 * demo tokenizer (examples/demo/tokenizer.json; run from the repository root).
 *
 * Encoding never fails on any bytes, every id is in range, and decoding the ids gives the
 * input after U+FFFD repair and NFC (the round trip tokenizers guarantees for byte-level BPE). */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static rl_tokenizer *tok;
    rl_err err;
    if (!tok) check(rl_tok_load(&tok, "examples/demo/tokenizer.json", &err) == 0);
    int32_t *ids;
    int n;
    check(rl_tok_encode(tok, (const char *)data, size, &ids, &n, &err) == 0);
    for (int i = 0; i < n; i++) check(ids[i] >= 0 && ids[i] < rl_tok_vocab_size(tok));
    char *text, *clean;
    size_t len, clean_len;
    check(rl_tok_decode(tok, ids, n, &text, &len, &err) == 0);
    check(rl_tok_utf8_sanitize((const char *)data, size, &clean, &clean_len, &err) == 0);
    uint8_t *want = NULL;
    utf8proc_ssize_t want_len = utf8proc_map(clean ? (const uint8_t *)clean : data,
                                             clean ? (utf8proc_ssize_t)clean_len : (utf8proc_ssize_t)size, &want,
                                             UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    check(want_len >= 0 && (size_t)want_len == len && !memcmp(want, text, len));
    free(want);
    free(clean);
    free(text);
    free(ids);
    return 0;
}
