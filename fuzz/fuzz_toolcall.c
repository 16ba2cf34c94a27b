/* fuzz_toolcall.c — libFuzzer target: any bytes as a model's turn, parsed for tool calls
 * (rollout/toolcall.h), and the same bytes as an environment program's answer line.
 *
 * Tool calls: at most RL_TOOLCALL_MAX, each either good (a NUL-terminated non-empty name,
 * arguments an object, no error) or bad (no name, no arguments, a NUL-terminated reason). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rollout/toolcall.h"

static void check(int ok)
{
    if (!ok) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rl_toolcalls c;
    rl_toolcalls_parse((const char *)data, size, &c);
    check(c.n >= 0 && c.n <= RL_TOOLCALL_MAX && c.n_ignored >= 0);
    for (int i = 0; i < c.n; i++) {
        const rl_toolcall *t = &c.calls[i];
        check(memchr(t->name, '\0', sizeof t->name) != NULL && memchr(t->error, '\0', sizeof t->error) != NULL);
        if (t->error[0]) check(t->name[0] == '\0' && t->arguments == NULL);
        else check(t->name[0] != '\0' && cJSON_IsObject(t->arguments));
    }
    rl_toolcalls_free(&c);
    return 0;
}
