/* fuzz_math.c — libFuzzer target: the math reward on any text, as a model's completion is.
 *
 * The input is up to three strings separated by 0xFF bytes. Extraction always gives a
 * NUL-terminated answer within the buffer it is given (sizes 1 to 64 too); equality of answers
 * is symmetric and transitive (exact rationals, else normalised text), and the whole check
 * neither crashes nor overflows its 128-bit arithmetic (UBSan) on any of them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reward/math.h"

static void check(int ok)
{
    if (!ok) __builtin_trap();
}

/* Extraction into a small buffer: NUL-terminated inside it, and a prefix of the full answer. */
static void check_truncation(const char *text, const char *full, size_t size)
{
    char out[64];
    memset(out, 'x', sizeof out);
    int found = rl_math_extract(text, out, size);
    check(memchr(out, '\0', size) != NULL);
    check(found ? strncmp(out, full, strlen(out)) == 0 : out[0] == '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    check(buf != NULL);
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *s[3] = {buf, "", ""};
    int n = 1;
    for (size_t i = 0; i < size && n < 3; i++)
        if ((uint8_t)buf[i] == 0xFF) buf[i] = '\0', s[n++] = buf + i + 1;

    char ans[3][1024];
    for (int k = 0; k < 3; k++) {
        int found = rl_math_extract(s[k], ans[k], sizeof ans[k]);
        check(found ? strlen(ans[k]) < sizeof ans[k] : ans[k][0] == '\0');
        char boxed[1024];
        if (rl_math_boxed(s[k], boxed, sizeof boxed)) check(found && strcmp(boxed, ans[k]) == 0);
    }
    check_truncation(s[0], ans[0], 1 + (size % 64));

    int ab = rl_math_equal(ans[0], ans[1]), bc = rl_math_equal(ans[1], ans[2]);
    int ac = rl_math_equal(ans[0], ans[2]);
    check(ab == rl_math_equal(ans[1], ans[0]));
    check(!(ab && bc) || ac);
    check(!(ab && ac) || bc);
    rl_math_check(s[0], s[1]);
    rl_math_check(s[1], s[2]);
    free(buf);
    return 0;
}
