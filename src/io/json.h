/* json.h — cJSON (Debian's libcjson) plus typed field access with errors that name the file.
 *
 * Every getter takes `what` (usually the file name) for the message: "config.json: field
 * 'hidden_size' must be a positive integer, got -3". Getters with a default leave *out
 * unchanged when the key is absent; a present key of the wrong type is always an error. */
#ifndef RL_IO_JSON_H
#define RL_IO_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* Parses text (len bytes, need not be NUL-terminated); on error the message gives the line and
 * column. The caller frees the result with cJSON_Delete. */
cJSON *rl_json_parse(const char *text, size_t len, const char *what, rl_err *err);
cJSON *rl_json_parse_file(const char *path, rl_err *err);

/* present: 1 = key must exist, 0 = optional (leaves *out as is). */
int rl_json_int(const cJSON *obj, const char *key, int64_t *out, int required, const char *what,
                rl_err *err);
int rl_json_double(const cJSON *obj, const char *key, double *out, int required,
                   const char *what, rl_err *err);
int rl_json_bool(const cJSON *obj, const char *key, int *out, int required, const char *what,
                 rl_err *err);
/* *out points into obj (valid while obj lives). */
int rl_json_string(const cJSON *obj, const char *key, const char **out, int required,
                   const char *what, rl_err *err);

/* A number that is an exact integer (no fraction, within int64). */
int rl_json_is_integer(const cJSON *item);

#endif
