/* json.c — see json.h. */
#include "io/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"

cJSON *rl_json_parse(const char *text, size_t len, const char *what, rl_err *err)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (root) {
        /* Only whitespace may follow the value. */
        const char *p = end, *stop = text + len;
        while (p < stop && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
        if (p < stop && *p != '\0') {
            cJSON_Delete(root);
            root = NULL;
            end = p;
        }
    }
    if (!root) {
        const char *at = end ? end : text;
        if (at < text || at > text + len) at = text;
        int line = 1, col = 1;
        for (const char *p = text; p < at; p++) {
            if (*p == '\n') { line++; col = 1; } else col++;
        }
        rl_err_set(err, "%s: invalid JSON at line %d, column %d", what, line, col);
    }
    return root;
}

cJSON *rl_json_parse_file(const char *path, rl_err *err)
{
    char *text;
    size_t len;
    if (rl_file_read_all(path, &text, &len, err)) return NULL;
    cJSON *root = rl_json_parse(text, len, path, err);
    free(text);
    return root;
}

int rl_json_is_integer(const cJSON *item)
{
    if (!cJSON_IsNumber(item)) return 0;
    double d = item->valuedouble;
    return isfinite(d) && d == floor(d) && fabs(d) <= 9007199254740992.0;
}

static const cJSON *field(const cJSON *obj, const char *key, int required, const char *what,
                          rl_err *err, int *failed)
{
    *failed = 0;
    const cJSON *item = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!item || cJSON_IsNull(item)) {
        if (required) {
            rl_err_set(err, "%s: missing field '%s'", what, key);
            *failed = 1;
        }
        return NULL;
    }
    return item;
}

int rl_json_int(const cJSON *obj, const char *key, int64_t *out, int required, const char *what,
                rl_err *err)
{
    int failed;
    const cJSON *item = field(obj, key, required, what, err, &failed);
    if (!item) return failed ? -1 : 0;
    if (!rl_json_is_integer(item)) return rl_err_set(err, "%s: field '%s' must be an integer", what, key);
    *out = (int64_t)item->valuedouble;
    return 0;
}

int rl_json_double(const cJSON *obj, const char *key, double *out, int required,
                   const char *what, rl_err *err)
{
    int failed;
    const cJSON *item = field(obj, key, required, what, err, &failed);
    if (!item) return failed ? -1 : 0;
    if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
        return rl_err_set(err, "%s: field '%s' must be a finite number", what, key);
    *out = item->valuedouble;
    return 0;
}

int rl_json_bool(const cJSON *obj, const char *key, int *out, int required, const char *what,
                 rl_err *err)
{
    int failed;
    const cJSON *item = field(obj, key, required, what, err, &failed);
    if (!item) return failed ? -1 : 0;
    if (!cJSON_IsBool(item)) return rl_err_set(err, "%s: field '%s' must be true or false", what, key);
    *out = cJSON_IsTrue(item);
    return 0;
}

int rl_json_string(const cJSON *obj, const char *key, const char **out, int required,
                   const char *what, rl_err *err)
{
    int failed;
    const cJSON *item = field(obj, key, required, what, err, &failed);
    if (!item) return failed ? -1 : 0;
    if (!cJSON_IsString(item)) return rl_err_set(err, "%s: field '%s' must be a string", what, key);
    *out = item->valuestring;
    return 0;
}
