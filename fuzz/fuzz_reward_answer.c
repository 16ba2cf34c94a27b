/* fuzz_reward_answer.c — libFuzzer target: any bytes as the line a reward program printed.
 *
 * Either a finite float reward that the line's JSON really holds, or a refusal whose message
 * quotes the line (cut at 120 bytes) and fits the buffer given. Never a reward from a refused
 * line. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "reward/external.h"

static void check(int ok)
{
    if (!ok) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1);
    check(line != NULL);
    memcpy(line, data, size);
    line[size] = '\0';
    float reward = NAN;
    char why[256];
    size_t why_size = 1 + size % sizeof why;
    memset(why, 'x', sizeof why);
    if (rl_reward_parse_answer(line, &reward, why, why_size) == 0) {
        check(isfinite(reward));
        cJSON *obj = cJSON_Parse(line);
        check(obj != NULL);
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(obj, "reward");
        check(cJSON_IsNumber(r) && (float)r->valuedouble == reward);
        cJSON_Delete(obj);
    } else {
        check(isnan(reward));
        check(memchr(why, '\0', why_size) != NULL);
    }
    free(line);
    return 0;
}
