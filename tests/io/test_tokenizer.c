/* test_tokenizer.c — rl_tok_* against the `tokenizers` library: id parity on the fixture corpora
 * (tools/make_tokenizer_fixtures.py: the real Qwen3 tokenizer, a small tokenizer with every
 * added-token flag and ignore_merges, and the demo tokenizer), decode round trips, invalid
 * UTF-8, special tokens, the chat format of the tokenizer's own template against transformers
 * (more in test_chat.c), and the error
 * messages for broken tokenizer.json files. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utf8proc.h>

#include "core/file.h"
#include "core/rng.h"
#include "io/json.h"
#include "io/tok_internal.h"
#include "io/tokenizer.h"
#include "test_util.h"

#define QWEN "../shared/data/qwen3-tokenizer/tokenizer.json"
#define FIX "tests/fixtures/tokenizer/"

/* The real Qwen3 tokenizer lives outside the repository (DESIGN.md), beside the checkout. CI
 * always has it there, so under CI a missing file fails; elsewhere the parity tests are skipped. */
static void need_qwen(void)
{
    if (rl_file_exists(QWEN)) return;
    if (getenv("CI")) cr_assert_fail("%s not found (CI must run the Qwen3 parity corpus)", QWEN);
    cr_skip_test("%s not found", QWEN);
}

static rl_tokenizer *load_or_fail(const char *path)
{
    rl_err err = {{0}};
    rl_tokenizer *tok = NULL;
    cr_assert_eq(rl_tok_load(&tok, path, &err), 0, "loading %s: %s", path, err.msg);
    return tok;
}

/* Calls fn on each parsed line of a JSONL fixture; returns the number of lines. */
static int each_line(const char *path, void (*fn)(const cJSON *line, int index, void *ctx), void *ctx)
{
    char *data;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(path, &data, &len, &err), 0, "%s", err.msg);
    int n = 0;
    for (char *p = data, *nl; p < data + len; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(data + len - p));
        if (!nl) nl = data + len;
        if (nl == p) continue;
        cJSON *line = rl_json_parse(p, (size_t)(nl - p), path, &err);
        cr_assert(line, "%s line %d: %s", path, n + 1, err.msg);
        fn(line, n++, ctx);
        cJSON_Delete(line);
    }
    free(data);
    return n;
}

/* The input bytes of a fixture line: "text", or "hex" for invalid UTF-8. */
static char *line_bytes(const cJSON *line, size_t *len)
{
    const cJSON *text = cJSON_GetObjectItem(line, "text"), *hex = cJSON_GetObjectItem(line, "hex");
    if (cJSON_IsString(text)) {
        *len = strlen(text->valuestring);
        return strdup(text->valuestring);
    }
    cr_assert(cJSON_IsString(hex), "fixture line has neither text nor hex");
    size_t n = strlen(hex->valuestring) / 2;
    char *out = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex->valuestring + 2 * i, "%2x", &v);
        out[i] = (char)v;
    }
    *len = n;
    return out;
}

typedef struct parity {
    rl_tokenizer *tok;
    int mismatches, decode_mismatches;
    long total_ids;
    char first[600], first_decode[600];
} parity;

static void check_line(const cJSON *line, int index, void *ctx)
{
    parity *p = ctx;
    size_t len;
    char *text = line_bytes(line, &len);
    const cJSON *want = cJSON_GetObjectItem(line, "ids");
    int n_want = cJSON_GetArraySize(want);
    int32_t *ids = NULL;
    int n_ids = -1;
    rl_err err = {{0}};
    cr_assert_eq(rl_tok_encode(p->tok, text, len, &ids, &n_ids, &err), 0, "string %d: %s", index, err.msg);
    int pos = 0;
    while (pos < n_ids && pos < n_want && ids[pos] == (int32_t)cJSON_GetArrayItem(want, pos)->valuedouble) pos++;
    if (pos < n_ids || pos < n_want) {
        if (!p->mismatches++)
            snprintf(p->first, sizeof p->first, "string %d (%zu bytes '%.60s'): first difference at id %d: expected %d, got %d (%d vs %d ids)",
                     index, len, text, pos, pos < n_want ? (int)cJSON_GetArrayItem(want, pos)->valuedouble : -1,
                     pos < n_ids ? ids[pos] : -1, n_want, n_ids);
    }
    p->total_ids += n_ids;
    char *dec = NULL;
    size_t dec_len = 0;
    cr_assert_eq(rl_tok_decode(p->tok, ids, n_ids, &dec, &dec_len, &err), 0, "string %d: %s", index, err.msg);
    const char *want_dec = cJSON_GetObjectItem(line, "decoded")->valuestring;
    if (dec_len != strlen(want_dec) || memcmp(dec, want_dec, dec_len)) {
        if (!p->decode_mismatches++)
            snprintf(p->first_decode, sizeof p->first_decode, "string %d: decoded '%.80s', expected '%.80s'", index, dec, want_dec);
    }
    free(dec);
    free(ids);
    free(text);
}

static void parity_check(const char *tok_path, const char *fixture, int min_lines)
{
    parity p = {.tok = load_or_fail(tok_path)};
    int n = each_line(fixture, check_line, &p);
    rl_tok_free(p.tok);
    cr_assert_geq(n, min_lines, "%s: only %d lines", fixture, n);
    cr_assert_eq(p.mismatches, 0, "%s: %d of %d strings differ from tokenizers; first: %s", fixture, p.mismatches, n, p.first);
    cr_assert_eq(p.decode_mismatches, 0, "%s: %d of %d decodes differ; first: %s", fixture, p.decode_mismatches, n, p.first_decode);
    cr_assert_gt(p.total_ids, 0);
}

Test(tokenizer, qwen3_parity)
{
    need_qwen();
    /* >= 2400 strings + 80 invalid UTF-8 cases; decode == NFC(text) was checked by the generator */
    parity_check(QWEN, FIX "qwen3_encode.jsonl", 2480);
}

Test(tokenizer, flags_parity)
{
    /* added tokens with lstrip / rstrip / single_word / normalized, and ignore_merges */
    parity_check(FIX "flags_tokenizer.json", FIX "flags_encode.jsonl", 100);
}

Test(tokenizer, demo_parity)
{
    parity_check("examples/demo/tokenizer.json", FIX "demo_encode.jsonl", 100);
}

static int32_t encode_one(const rl_tokenizer *tok, const char *s)
{
    int32_t *ids;
    int n;
    rl_err err;
    cr_assert_eq(rl_tok_encode(tok, s, strlen(s), &ids, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, 1, "'%s' encodes to %d ids, expected one", s, n);
    int32_t id = ids[0];
    free(ids);
    return id;
}

Test(tokenizer, special_tokens)
{
    need_qwen();
    rl_tokenizer *tok = load_or_fail(QWEN);
    cJSON *meta = rl_json_parse_file(FIX "qwen3_meta.json", &(rl_err){{0}});
    cr_assert(meta);
    cr_assert_eq(rl_tok_vocab_size(tok), (int)cJSON_GetObjectItem(meta, "vocab_size")->valuedouble);
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(meta, "added")) {
        const char *content = cJSON_GetObjectItem(item, "content")->valuestring;
        int32_t id = (int32_t)cJSON_GetObjectItem(item, "id")->valuedouble;
        int special = cJSON_IsTrue(cJSON_GetObjectItem(item, "special"));
        cr_assert_eq(rl_tok_token_id(tok, content), id, "token_id('%s')", content);
        cr_assert_eq(encode_one(tok, content), id, "encode('%s')", content);
        cr_assert_eq(rl_tok_is_special(tok, id), special, "is_special('%s')", content);
        const char *bytes;
        size_t len;
        cr_assert_eq(rl_tok_token_bytes(tok, id, &bytes, &len), 0);
        cr_assert(len == strlen(content) && !memcmp(bytes, content, len), "token_bytes(%d)", id);
    }
    cJSON_Delete(meta);
    cr_assert_eq(rl_tok_token_id(tok, "<|not_a_token|>"), -1);
    const char *b;
    size_t l;
    cr_assert_eq(rl_tok_token_bytes(tok, -1, &b, &l), -1);
    cr_assert_eq(rl_tok_token_bytes(tok, rl_tok_vocab_size(tok), &b, &l), -1);
    /* a byte-level token decodes to its raw byte: "Ġ" is the space */
    cr_assert_eq(rl_tok_token_bytes(tok, rl_tok_token_id(tok, "\xc4\xa0"), &b, &l), 0);
    cr_assert(l == 1 && b[0] == ' ');
    rl_tok_free(tok);
}

Test(tokenizer, invalid_utf8)
{
    need_qwen();
    rl_tokenizer *tok = load_or_fail(QWEN);
    /* Each maximal invalid subpart is one U+FFFD: "\xe2\x82" is one, "\xc0\x80" two. */
    static const struct { const char *bad; const char *same; } cases[] = {
        {"\xff", "\xef\xbf\xbd"},
        {"a\xe2\x82", "a\xef\xbf\xbd"},
        {"\xc0\x80x", "\xef\xbf\xbd\xef\xbf\xbdx"},
        {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"<|im_end\xff|>", "<|im_end\xef\xbf\xbd|>"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int32_t *a, *b;
        int na, nb;
        rl_err err;
        cr_assert_eq(rl_tok_encode(tok, cases[c].bad, strlen(cases[c].bad), &a, &na, &err), 0, "%s", err.msg);
        cr_assert_eq(rl_tok_encode(tok, cases[c].same, strlen(cases[c].same), &b, &nb, &err), 0, "%s", err.msg);
        cr_assert(na == nb && !memcmp(a, b, (size_t)na * sizeof *a), "case %zu: %d vs %d ids", c, na, nb);
        free(a);
        free(b);
    }
    /* Decoding half a character gives U+FFFD; the raw bytes are still there for streaming. */
    int32_t *ids;
    int n;
    rl_err err;
    cr_assert_eq(rl_tok_encode(tok, "\xf0\xa0\x80\x80", 4, &ids, &n, &err), 0);
    cr_assert_gt(n, 1, "U+20000 should need several byte tokens");
    char *text;
    size_t len;
    cr_assert_eq(rl_tok_decode(tok, ids, 1, &text, &len, &err), 0);
    cr_assert_str_eq(text, "\xef\xbf\xbd");
    free(text);
    free(ids);
    /* NUL bytes are text like any other */
    cr_assert_eq(rl_tok_encode(tok, "a\0b", 3, &ids, &n, &err), 0);
    cr_assert_eq(rl_tok_decode(tok, ids, n, &text, &len, &err), 0);
    cr_assert(len == 3 && !memcmp(text, "a\0b", 3));
    free(text);
    free(ids);
    int32_t bad_id = rl_tok_vocab_size(tok);
    cr_assert_eq(rl_tok_decode(tok, &bad_id, 1, &text, &len, &err), -1);
    cr_assert(strstr(err.msg, "is not a token"), "%s", err.msg);
    rl_tok_free(tok);
}

static void check_chat(const cJSON *line, int index, void *ctx)
{
    const cJSON *msgs = cJSON_GetObjectItem(line, "messages"), *m;
    rl_chat_message list[16];
    int n = 0;
    cJSON_ArrayForEach(m, msgs) {
        cr_assert_lt(n, 16);
        list[n] = (rl_chat_message){0};
        list[n].role = cJSON_GetObjectItem(m, "role")->valuestring;
        list[n++].content = cJSON_GetObjectItem(m, "content")->valuestring;
    }
    char *text;
    rl_err err;
    rl_chat_options opt = {.add_generation_prompt = cJSON_IsTrue(cJSON_GetObjectItem(line, "add_generation_prompt")),
                           .enable_thinking = 1};
    cr_assert_eq(rl_tok_chat_format(ctx, list, n, &opt, &text, &err), 0, "%s", err.msg);
    cr_assert_str_eq(text, cJSON_GetObjectItem(line, "text")->valuestring, "conversation %d", index);
    int32_t *ids;
    int n_ids;
    cr_assert_eq(rl_tok_encode(ctx, text, strlen(text), &ids, &n_ids, &err), 0);
    cr_assert_eq(ids[0], rl_tok_token_id(ctx, "<|im_start|>"), "conversation %d starts with %d", index, ids[0]);
    free(ids);
    free(text);
}

Test(tokenizer, chat_format)
{
    need_qwen();
    rl_tokenizer *tok = load_or_fail(QWEN);
    cr_assert_geq(each_line(FIX "qwen3_chat.jsonl", check_chat, tok), 5);
    rl_tok_free(tok);
}

/* Writes json to a temporary tokenizer.json and expects loading to fail with `expect` in the message. */
static void expect_load_error(const char *json, const char *expect)
{
    char path[] = "/tmp/rl_tok_test_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
    close(fd);
    rl_tokenizer *tok = NULL;
    rl_err err = {{0}};
    int rc = rl_tok_load(&tok, path, &err);
    unlink(path);
    cr_assert_eq(rc, -1, "loading should fail for: %s", json);
    cr_assert_null(tok);
    cr_assert(strstr(err.msg, expect), "message '%s' should contain '%s'", err.msg, expect);
    cr_assert(!strncmp(err.msg, path, strlen(path)), "message '%s' should start with the file's name", err.msg);
}

#define PRE "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}, "
#define DEC "\"decoder\": {\"type\": \"ByteLevel\"}, "
#define VOCAB "\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}"

Test(tokenizer, broken_files)
{
    expect_load_error("{\"model\": ", "invalid JSON at line 1");
    expect_load_error("{" PRE DEC "\"normalizer\": null}", "missing object 'model'");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", \"merges\": []}}", "missing object 'vocab'");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", " VOCAB "}}", "missing array 'merges'");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"WordPiece\", " VOCAB "}}", "model type 'WordPiece' is not supported");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [\"a c\"]}}", "merges[0]: token 'c' is not in the vocab");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [\"a b\", \"b a\"]}}", "merges[1]: merged token 'ba' is not in the vocab");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [\"a b c\"]}}", "merges[0] 'a b c' must be two tokens");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": [[\"a\"]]}}", "merges[0] must be a string");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}}", "vocab['a'] must be an id");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}", "have the same id 0");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 2000000000}, \"merges\": []}}", "vocab['a'] must be an id in [0, ");
    expect_load_error("{" PRE DEC "\"added_tokens\": [{\"id\": 1.5, \"content\": \"<x>\"}], \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "added_tokens[0]: 'id' must be an id");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", " VOCAB ", \"merges\": []}}", "'unk_token' is set");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, " VOCAB ", \"merges\": []}}", "'dropout' is set");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", \"byte_fallback\": true, " VOCAB ", \"merges\": []}}", "byte_fallback");
    expect_load_error("{" PRE DEC "\"normalizer\": {\"type\": \"NFKC\"}, \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "normalizer type 'NFKC' is not supported");
    expect_load_error("{" PRE DEC "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Lowercase\"}]}, \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "'Lowercase' inside Sequence");
    expect_load_error("{" DEC "\"pre_tokenizer\": {\"type\": \"Whitespace\"}, \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "pre_tokenizer type 'Whitespace' is not supported");
    expect_load_error("{" DEC "\"pre_tokenizer\": null, \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "pre_tokenizer is missing");
    expect_load_error("{" DEC "\"pre_tokenizer\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "add_prefix_space true is not supported");
    expect_load_error("{" DEC "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\s+\"}, \"behavior\": \"Removed\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false}]}, \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "behavior 'Removed' is not supported");
    expect_load_error("{" DEC "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(ab\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false}]}, \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "Split pattern does not compile at offset 3");
    expect_load_error("{" DEC "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\s+\"}}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false}]}, \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", ": pre_tokenizer Split: missing field 'behavior'");
    expect_load_error("{" DEC "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": 0}, \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", ": pre_tokenizer ByteLevel: field 'add_prefix_space' must be true or false");
    expect_load_error("{" PRE DEC "\"model\": {\"type\": \"BPE\", \"ignore_merges\": \"yes\", " VOCAB ", \"merges\": []}}", ": model: field 'ignore_merges' must be true or false");
    expect_load_error("{" PRE DEC "\"added_tokens\": [{\"id\": 3, \"content\": \"<x>\", \"special\": 1}], \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", ": added_tokens[0]: field 'special' must be true or false");
    expect_load_error("{" DEC "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"ByteLevel\", \"add_prefix_space\": false}, {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"Isolated\"}]}, \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "'Split' after ByteLevel is not supported");
    expect_load_error("{" PRE "\"decoder\": {\"type\": \"WordPiece\"}, \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "decoder type 'WordPiece' is not supported");
    expect_load_error("{" PRE "\"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "decoder is missing");
    expect_load_error("{" PRE DEC "\"added_tokens\": [{\"id\": 5}], \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "added_tokens[0]: ");
    expect_load_error("{" PRE DEC "\"added_tokens\": [{\"id\": 5, \"content\": \"<x>\", \"lstrip\": 3}], \"model\": {\"type\": \"BPE\", " VOCAB ", \"merges\": []}}", "'lstrip'");

    rl_tokenizer *tok = NULL;
    rl_err err = {{0}};
    cr_assert_eq(rl_tok_load(&tok, "/nonexistent/tokenizer.json", &err), -1);
    cr_assert(strstr(err.msg, "/nonexistent/tokenizer.json"), "%s", err.msg);
}

Test(tokenizer, minimal_file_and_long_word)
{
    /* A hand-made tokenizer: merges in both forms, an id gap, bytes without tokens dropped. */
    const char *json = "{" PRE DEC "\"added_tokens\": [{\"id\": 9, \"content\": \"<s>\", \"special\": true}], "
                       "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2, \"abab\": 3}, "
                       "\"merges\": [\"a b\", [\"ab\", \"ab\"]]}}";
    char path[] = "/tmp/rl_tok_test_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
    close(fd);
    rl_tokenizer *tok = load_or_fail(path);
    unlink(path);
    cr_assert_eq(rl_tok_vocab_size(tok), 10);
    int32_t *ids;
    int n;
    rl_err err;
    cr_assert_eq(rl_tok_encode(tok, "ababa<s>zab", 11, &ids, &n, &err), 0, "%s", err.msg);
    int32_t want[] = {3, 0, 9, 2};
    cr_assert_eq(n, 4, "got %d ids", n);
    cr_assert_arr_eq(ids, want, sizeof want);
    free(ids);
    const char *b;
    size_t l;
    cr_assert_eq(rl_tok_token_bytes(tok, 5, &b, &l), -1, "id 5 is a gap");
    /* 200k letters in one pre-token: the heap path, in well under a second */
    size_t big = 200000;
    char *s = malloc(big);
    for (size_t i = 0; i < big; i++) s[i] = "ab"[i % 2];
    cr_assert_eq(rl_tok_encode(tok, s, big, &ids, &n, &err), 0, "%s", err.msg);
    cr_assert_eq(n, (int)(big / 4));
    for (int i = 0; i < n; i++) cr_assert_eq(ids[i], 3);
    free(ids);
    free(s);
    rl_tok_free(tok);
}

typedef struct shared_run {
    rl_tokenizer *tok;
    char *texts[64];
    size_t lens[64];
    int32_t *ids[64];
    int n_ids[64];
    int failures;
} shared_run;

static void *encode_all(void *arg)
{
    shared_run *r = arg;
    for (int rep = 0; rep < 20; rep++)
        for (int i = 0; i < 64; i++) {
            int32_t *ids;
            int n;
            rl_err err;
            if (rl_tok_encode(r->tok, r->texts[i], r->lens[i], &ids, &n, &err) || n != r->n_ids[i] ||
                memcmp(ids, r->ids[i], (size_t)n * sizeof *ids))
                __atomic_add_fetch(&r->failures, 1, __ATOMIC_RELAXED);
            free(ids);
        }
    return NULL;
}

Test(tokenizer, threads_share_one_tokenizer)
{
    need_qwen();
    shared_run r = {.tok = load_or_fail(QWEN)};
    rl_rng rng;
    rl_rng_init(&rng, 7);
    static const char *parts[] = {"Hello", " world", "<|im_end|>", "\xe6\x97\xa5\xe6\x9c\xac", " 12345", "e\xcc\x81", "\n\n", "DON'T", "\xff"};
    for (int i = 0; i < 64; i++) {
        /* every 8th text is long enough (> 4 KB) for the word cache */
        size_t n_parts = i % 8 ? 1 + rl_rng_u32(&rng) % 20 : 1200, len = 0;
        r.texts[i] = malloc(n_parts * 12 + 1);
        for (size_t k = 0; k < n_parts; k++) {
            const char *p = parts[rl_rng_u32(&rng) % 9];
            memcpy(r.texts[i] + len, p, strlen(p));
            len += strlen(p);
        }
        r.lens[i] = len;
        rl_err err;
        cr_assert_eq(rl_tok_encode(r.tok, r.texts[i], len, &r.ids[i], &r.n_ids[i], &err), 0, "%s", err.msg);
    }
    pthread_t th[4];
    for (int t = 0; t < 4; t++) pthread_create(&th[t], NULL, encode_all, &r);
    for (int t = 0; t < 4; t++) pthread_join(th[t], NULL);
    cr_assert_eq(r.failures, 0, "%d concurrent encodes differ from the single-threaded ones", r.failures);
    for (int i = 0; i < 64; i++) free(r.texts[i]), free(r.ids[i]);
    rl_tok_free(r.tok);
}

Test(tokenizer, random_bytes_round_trip)
{
    /* Random bytes (ASCII, UTF-8 pieces, junk bytes, special-token fragments): encoding never
     * fails, and decoding gives NFC of the input with invalid sequences as U+FFFD. */
    need_qwen();
    rl_tokenizer *tok = load_or_fail(QWEN);
    rl_rng rng;
    rl_rng_init(&rng, 99);
    static const char *parts[] = {"<|im_start|>", "<|im_", "|>", "e\xcc\x81", "\xea\xb0\x80", "\xe1\x86\xa8", "'s", " ", "\r\n", "\t"};
    char buf[256];
    int checked = 0;
    for (int t = 0; t < 2000; t++) {
        size_t len = 0, target = rl_rng_u32(&rng) % 200;
        while (len < target) {
            uint32_t k = rl_rng_u32(&rng) % 16;
            if (k < 10 && len + 12 < sizeof buf) {
                memcpy(buf + len, parts[k], strlen(parts[k]));
                len += strlen(parts[k]);
            } else
                buf[len++] = (char)(k < 13 ? 32 + rl_rng_u32(&rng) % 95 : rl_rng_u32(&rng) % 256);
        }
        int32_t *ids;
        int n;
        rl_err err;
        cr_assert_eq(rl_tok_encode(tok, buf, len, &ids, &n, &err), 0, "case %d: %s", t, err.msg);
        char *text, *clean;
        size_t text_len, clean_len;
        cr_assert_eq(rl_tok_decode(tok, ids, n, &text, &text_len, &err), 0, "case %d: %s", t, err.msg);
        cr_assert_eq(rl_tok_utf8_sanitize(buf, len, &clean, &clean_len, &err), 0);
        uint8_t *want = NULL;
        utf8proc_ssize_t want_len = utf8proc_map(clean ? (uint8_t *)clean : (uint8_t *)buf,
                                                 clean ? (utf8proc_ssize_t)clean_len : (utf8proc_ssize_t)len, &want,
                                                 UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        cr_assert_geq(want_len, 0);
        cr_assert(text_len == (size_t)want_len && !memcmp(text, want, text_len), "case %d: decode(encode(x)) != NFC(x)", t);
        checked++;
        free(want);
        free(clean);
        free(text);
        free(ids);
    }
    cr_assert_eq(checked, 2000);
    rl_tok_free(tok);
}
