/* json_get.h — reading fields of a cJSON result in tests: a missing or mistyped field reads as
 * "" or NaN, so the assertion that uses it fails with the value shown. */
#ifndef RL_TESTS_JSON_GET_H
#define RL_TESTS_JSON_GET_H

#include <cjson/cJSON.h>
#include <math.h>

static inline const char *tu_json_str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static inline double tu_json_num(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

#endif
