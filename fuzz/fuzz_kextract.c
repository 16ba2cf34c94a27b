/* fuzz_kextract.c — libFuzzer target: any bytes as a model's answer to a kernel prompt.
 *
 * Either a refusal with a one-line reason, or code that defines the entry point: NUL-terminated
 * at its length, no NUL inside, the entry point's name in it, and a fence language, block and
 * part counts that agree with each other. */
#include <stdint.h>
#include <string.h>

#include "reward/kernel_env/extract.h"

static void check(int ok)
{
    if (!ok) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rl_kextract x;
    rl_err err;
    err.msg[0] = '\0';
    if (rl_kextract_code((const char *)data, size, "rl_kernel", &x, &err)) {
        check(err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL);
        return 0;
    }
    check(x.code != NULL && x.len > 0 && x.code[x.len] == '\0' && strlen(x.code) == x.len);
    check(strstr(x.code, "rl_kernel") != NULL);
    check(memchr(x.lang, '\0', sizeof x.lang) != NULL);
    check(x.n_parts >= 1 && (x.kind == RL_KEXTRACT_BARE || x.n_parts <= x.n_blocks));
    check(x.kind == RL_KEXTRACT_FENCED || x.kind == RL_KEXTRACT_UNCLOSED || x.kind == RL_KEXTRACT_BARE);
    rl_kextract_free(&x);
    return 0;
}
