/* fuzz_tokenizer_json.c — libFuzzer target: any byte string as a tokenizer.json file.
 *
 * Either refused with a message naming the file, or a tokenizer that encodes a fixed mixed
 * text (ASCII, accents, CJK, emoji, invalid UTF-8, a chat turn) to ids in range, decodes them
 * back, and gives each id in range bytes or a clean "not a token". The input goes through a
 * memfd, so rl_tok_load reads it by path as it reads a real file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/tokenizer.h"

static void check(int ok)
{
    if (!ok) __builtin_trap();
}

static const char TEXT[] = "Hello, world! 12345 caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80 \xff\xfe x\n\n  "
                           "<|im_start|>user\nwhat is 2+2?<|im_end|>\n\t'll 've";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("tokenizer.json", 0);
        check(fd >= 0);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    check(ftruncate(fd, 0) == 0);
    check(pwrite(fd, data, size, 0) == (ssize_t)size);

    rl_tokenizer *tok;
    rl_err err;
    if (rl_tok_load(&tok, path, &err)) {
        check(strncmp(err.msg, path, strlen(path)) == 0);
        return 0;
    }
    int vocab = rl_tok_vocab_size(tok);
    check(vocab > 0);
    for (int32_t id = -1; id <= vocab; id++) {
        const char *bytes;
        size_t len;
        int rc = rl_tok_token_bytes(tok, id, &bytes, &len);
        check(rc == 0 || rc == -1);
        if (id < 0 || id == vocab) check(rc == -1);
    }
    int32_t *ids = NULL;
    int n = 0;
    if (rl_tok_encode(tok, TEXT, sizeof TEXT - 1, &ids, &n, &err) == 0) {
        for (int i = 0; i < n; i++) check(ids[i] >= 0 && ids[i] < vocab);
        char *text;
        size_t len;
        check(rl_tok_decode(tok, ids, n, &text, &len, &err) == 0);
        check(strlen(text) == len);
        free(text);
    }
    free(ids);
    rl_tok_free(tok);
    return 0;
}
