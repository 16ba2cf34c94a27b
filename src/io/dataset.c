/* dataset.c — JSON-lines datasets (TRL shapes); see dataset.h.
 *
 * The file is read whole and split on '\n' ('\r\n' accepted). Each line is checked for UTF-8
 * (utf8proc) and for "\u0000" escapes (cJSON would cut the string there without a word), then
 * parsed with cJSON; the example keeps the parsed object and points into it, so a line costs one
 * cJSON tree plus its message arrays and the extra-fields text. */
#include "io/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/file.h"
#include "io/json.h"

static int check_utf8(const char *line, size_t len, const char *where, rl_err *err)
{
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)line;
    size_t at = 0;
    while (at < len) {
        if (p[at] < 0x80) {
            at++;
            continue;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p + at, (utf8proc_ssize_t)(len - at), &cp);
        if (n <= 0) return rl_err_set(err, "%s: invalid UTF-8 at byte %zu", where, at + 1);
        at += (size_t)n;
    }
    return 0;
}

/* "\u0000" inside a string: cJSON would silently end the string there. Escapes are read in
 * pairs so that an escaped backslash followed by "u0000" is plain text. */
static int check_nul_escape(const char *line, size_t len, const char *where, rl_err *err)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (line[i] != '\\') continue;
        if (line[i + 1] == 'u' && i + 5 < len && !memcmp(line + i + 2, "0000", 4))
            return rl_err_set(err, "%s: a string contains \\u0000 at byte %zu", where, i + 1);
        i++;
    }
    return 0;
}

static int check_unique(const cJSON *obj, const char *where, rl_err *err)
{
    for (const cJSON *a = obj->child; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (!strcmp(a->string, b->string)) return rl_err_set(err, "%s: field '%.64s' appears twice", where, a->string);
    return 0;
}

/* A text or a list of messages. */
static int parse_text_or_messages(const cJSON *root, const char *key, const char **text, rl_chat_message **msgs,
                                  int *n_msgs, const char *where, rl_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return rl_err_set(err, "%s: field '%s' is missing", where, key);
    if (cJSON_IsString(v)) {
        if (!*v->valuestring) return rl_err_set(err, "%s: field '%s' is empty", where, key);
        *text = v->valuestring;
        return 0;
    }
    if (cJSON_IsArray(v)) return rl_chat_messages_parse(v, key, msgs, n_msgs, where, err);
    return rl_err_set(err, "%s: field '%s' must be a string or a list of messages", where, key);
}

static int parse_rl(rl_example *ex, const cJSON *root, const char *where, rl_err *err)
{
    if (parse_text_or_messages(root, "prompt", &ex->prompt, &ex->prompt_messages, &ex->n_prompt_messages, where, err))
        return -1;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "answer");
    if (!a || cJSON_IsNull(a)) return 0;
    if (cJSON_IsString(a)) {
        ex->answer = a->valuestring;
    } else if (rl_json_is_integer(a)) {
        snprintf(ex->answer_buf, sizeof ex->answer_buf, "%.0f", a->valuedouble);
        ex->answer = ex->answer_buf;
    } else if (cJSON_IsNumber(a)) {
        snprintf(ex->answer_buf, sizeof ex->answer_buf, "%.17g", a->valuedouble);
        ex->answer = ex->answer_buf;
    } else {
        return rl_err_set(err, "%s: field 'answer' must be a string or a number", where);
    }
    return 0;
}

static int parse_sft(rl_example *ex, const cJSON *root, const char *where, rl_err *err)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (m && !cJSON_IsNull(m)) {
        if (cJSON_GetObjectItemCaseSensitive(root, "prompt") || cJSON_GetObjectItemCaseSensitive(root, "completion"))
            return rl_err_set(err, "%s: both 'messages' and 'prompt'/'completion' given", where);
        if (!cJSON_IsArray(m)) return rl_err_set(err, "%s: field 'messages' must be a list of messages", where);
        if (rl_chat_messages_parse(m, "messages", &ex->messages, &ex->n_messages, where, err)) return -1;
        for (int i = 0; i < ex->n_messages; i++)
            if (!strcmp(ex->messages[i].role, "assistant")) return 0;
        return rl_err_set(err, "%s: 'messages' has no assistant message (nothing to train on)", where);
    }
    if (!cJSON_GetObjectItemCaseSensitive(root, "prompt"))
        return rl_err_set(err, "%s: neither 'messages' nor 'prompt' + 'completion' given", where);
    if (parse_text_or_messages(root, "prompt", &ex->prompt, &ex->prompt_messages, &ex->n_prompt_messages, where, err))
        return -1;
    return parse_text_or_messages(root, "completion", &ex->completion, &ex->completion_messages,
                                  &ex->n_completion_messages, where, err);
}

/* The optional "tools" field (a list of tool schemas for the chat template); null is absent. */
static int parse_tools(const cJSON *root, const cJSON **tools, const char *where, rl_err *err)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "tools");
    if (!t || cJSON_IsNull(t)) return 0;
    if (rl_chat_tools_check(t, where, err)) return -1;
    *tools = t;
    return 0;
}

/* The line's fields minus those the loader consumed, as compact JSON. */
static int make_extra(rl_example *ex, rl_ds_kind kind, const char *where, rl_err *err)
{
    static const char *const rl_keys[] = {"prompt", "answer", "tools"};
    static const char *const sft_keys[] = {"prompt", "completion", "messages", "tools"};
    cJSON *copy = cJSON_Duplicate(ex->fields, 1);
    if (!copy) return rl_err_oom(err, where, 0);
    const char *const *keys = kind == RL_DS_RL ? rl_keys : sft_keys;
    int n_keys = kind == RL_DS_RL ? 3 : 4;
    for (int k = 0; k < n_keys; k++) cJSON_DeleteItemFromObjectCaseSensitive(copy, keys[k]);
    ex->extra_json = cJSON_PrintUnformatted(copy);
    cJSON_Delete(copy);
    return ex->extra_json ? 0 : rl_err_oom(err, where, 0);
}

int rl_example_parse(rl_example *ex, const char *line, size_t len, rl_ds_kind kind, const char *what,
                     int line_no, rl_err *err)
{
    memset(ex, 0, sizeof *ex);
    ex->line = line_no;
    char where[300];
    snprintf(where, sizeof where, "%s:%d", what, line_no);
    if (check_utf8(line, len, where, err) || check_nul_escape(line, len, where, err)) return -1;
    ex->fields = rl_json_parse(line, len, where, err);
    if (!ex->fields) return -1;
    int rc = -1;
    if (!cJSON_IsObject(ex->fields)) {
        rl_err_set(err, "%s: the line is not a JSON object", where);
        goto done;
    }
    if (check_unique(ex->fields, where, err)) goto done;
    if ((kind == RL_DS_RL ? parse_rl : parse_sft)(ex, ex->fields, where, err) ||
        parse_tools(ex->fields, &ex->tools, where, err))
        goto done;
    rc = make_extra(ex, kind, where, err);
done:
    if (rc) rl_example_free(ex);
    return rc;
}

void rl_example_free(rl_example *ex)
{
    if (!ex) return;
    cJSON_Delete(ex->fields);
    free(ex->prompt_messages);
    free(ex->completion_messages);
    free(ex->messages);
    free(ex->extra_json);
    int line = ex->line;
    memset(ex, 0, sizeof *ex);
    ex->line = line;
}

static int blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
    return 1;
}

int rl_dataset_load(rl_dataset **out, const char *path, rl_ds_kind kind, rl_ds_on_error on_error,
                    rl_err *err)
{
    *out = NULL;
    char *text;
    size_t len;
    if (rl_file_read_all(path, &text, &len, err)) return -1;
    rl_dataset *ds = calloc(1, sizeof *ds);
    if (!ds) {
        free(text);
        return rl_err_oom(err, path, sizeof *ds);
    }
    int cap = 0, line_no = 0, rc = 0, n_lines = 0;
    for (size_t at = 0; at < len && rc == 0;) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + 1;
        line_no++;
        if (n && line[n - 1] == '\r') n--;
        if (blank(line, n)) continue;
        n_lines++;
        if (ds->n == cap) {
            int grown_cap = cap ? cap * 2 : 256;
            rl_example *grown = realloc(ds->examples, (size_t)grown_cap * sizeof *grown);
            if (!grown) {
                rc = rl_err_oom(err, path, (size_t)grown_cap * sizeof *grown);
                break;
            }
            ds->examples = grown;
            cap = grown_cap;
        }
        rl_err line_err;
        if (rl_example_parse(&ds->examples[ds->n], line, n, kind, path, line_no, &line_err) == 0) {
            ds->n++;
        } else if (on_error == RL_DS_SKIP) {
            if (ds->n_warnings < RL_DS_MAX_WARNINGS)
                snprintf(ds->warnings[ds->n_warnings++], sizeof ds->warnings[0], "%.250s", line_err.msg);
            ds->n_skipped++;
        } else {
            *err = line_err;
            rc = -1;
        }
    }
    free(text);
    if (rc == 0 && ds->n == 0)
        rc = n_lines ? rl_err_set(err, "%s: none of its %d lines is usable (first problem: %s)", path, n_lines,
                                  ds->warnings[0])
                     : rl_err_set(err, "%s: no data (empty file)", path);
    if (rc) {
        rl_dataset_free(ds);
        return -1;
    }
    *out = ds;
    return 0;
}

void rl_dataset_free(rl_dataset *ds)
{
    if (!ds) return;
    for (int i = 0; i < ds->n; i++) rl_example_free(&ds->examples[i]);
    free(ds->examples);
    free(ds);
}

static int parse_ids(const cJSON *arr, const char *key, int32_t **out, int *n_out, const char *where, rl_err *err)
{
    if (!cJSON_IsArray(arr)) return rl_err_set(err, "%s: field '%s' must be a list of token ids", where, key);
    int n = cJSON_GetArraySize(arr);
    if (n == 0) return rl_err_set(err, "%s: field '%s' is an empty list", where, key);
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) return rl_err_oom(err, where, (size_t)n * sizeof *ids);
    int i = 0;
    for (const cJSON *item = arr->child; item; item = item->next, i++) {
        if (!rl_json_is_integer(item) || item->valuedouble < 0 || item->valuedouble > INT32_MAX) {
            free(ids);
            return rl_err_set(err, "%s: %s[%d] is not a token id (an integer in [0, 2147483647])", where, key, i);
        }
        ids[i] = (int32_t)item->valuedouble;
    }
    *out = ids;
    *n_out = n;
    return 0;
}

/* The value of the request's one field v (r->kind set). */
static int request_value(rl_request *r, const cJSON *v, const char *where, rl_err *err)
{
    if (r->kind == RL_REQ_PROMPT) {
        if (!cJSON_IsString(v)) return rl_err_set(err, "%s: field 'prompt' must be a string", where);
        r->prompt = v->valuestring;
        return 0;
    }
    if (r->kind == RL_REQ_MESSAGES) {
        if (!cJSON_IsArray(v)) return rl_err_set(err, "%s: field 'messages' must be a list of messages", where);
        return rl_chat_messages_parse(v, "messages", &r->messages, &r->n_messages, where, err);
    }
    return parse_ids(v, v->string, &r->ids, &r->n_ids, where, err);
}

int rl_request_parse(rl_request *r, const char *line, size_t len, unsigned accept, const char *where, rl_err *err)
{
    static const struct { rl_request_kind kind; const char *key; } keys[] = {
        {RL_REQ_PROMPT, "prompt"}, {RL_REQ_MESSAGES, "messages"}, {RL_REQ_PROMPT_IDS, "prompt_ids"}, {RL_REQ_IDS, "ids"}};
    memset(r, 0, sizeof *r);
    if (check_utf8(line, len, where, err) || check_nul_escape(line, len, where, err)) return -1;
    r->fields = rl_json_parse(line, len, where, err);
    if (!r->fields) return -1;
    char names[64] = "";
    int n_found = 0, rc = -1;
    const cJSON *v = NULL;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        if (!(accept & keys[k].kind)) continue;
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s'%s'", names[0] ? ", " : "", keys[k].key);
        const cJSON *f = cJSON_IsObject(r->fields) ? cJSON_GetObjectItemCaseSensitive(r->fields, keys[k].key) : NULL;
        if (f) n_found++, v = f, r->kind = keys[k].kind;
    }
    if (!cJSON_IsObject(r->fields) || n_found != 1)
        rl_err_set(err, "%s: the line must be a JSON object with %s%s", where, strchr(names, ',') ? "exactly one of " : "",
                   names);
    else if (!check_unique(r->fields, where, err) && !request_value(r, v, where, err))
        rc = parse_tools(r->fields, &r->tools, where, err);
    if (rc) rl_request_free(r);
    return rc;
}

void rl_request_free(rl_request *r)
{
    cJSON_Delete(r->fields);
    free(r->messages);
    free(r->ids);
    memset(r, 0, sizeof *r);
}

int rl_request_sampling_parse(const rl_request *r, rl_request_sampling *s, const char *where, rl_err *err)
{
    memset(s, 0, sizeof *s);
    double max_tokens = 0, top_k = 0, n = 0;
    const struct {
        const char *key;
        rl_number_range range;
        double *value;
        int *has;
    } numbers[] = {
        {"max_tokens", {.lo = 1, .hi = 1e9, .whole = 1}, &max_tokens, &s->has_max_tokens},
        {"temperature", {.lo = 1e-4, .hi = 1e6, .or_zero = 1}, &s->temperature, &s->has_temperature},
        {"top_p", {.lo = 0, .hi = 1, .above_lo = 1}, &s->top_p, &s->has_top_p},
        {"top_k", {.lo = 0, .hi = 1e9, .whole = 1}, &top_k, &s->has_top_k},
        {"min_p", {.lo = 0, .hi = 1}, &s->min_p, &s->has_min_p},
        {"n", {.lo = 1, .hi = 1e6, .whole = 1}, &n, &s->has_n},
        {"seed", {.lo = 0, .hi = 1e15, .whole = 1}, &s->seed, &s->has_seed},
    };
    char what[96];
    for (size_t k = 0; k < sizeof numbers / sizeof numbers[0]; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->fields, numbers[k].key);
        if (!v) continue;
        snprintf(what, sizeof what, "%s: field '%s'", where, numbers[k].key);
        if (!cJSON_IsNumber(v)) {
            char range[160];
            rl_number_range_text(&numbers[k].range, range, sizeof range);
            return rl_err_set(err, "%s must be %s", what, range);
        }
        if (rl_number_check(v->valuedouble, &numbers[k].range, what, err)) return -1;
        *numbers[k].value = v->valuedouble;
        *numbers[k].has = 1;
    }
    s->max_tokens = (int)max_tokens;
    s->top_k = (int)top_k;
    s->n = (int)n;
    const cJSON *ignore = cJSON_GetObjectItemCaseSensitive(r->fields, "ignore_eos");
    if (ignore) {
        if (!cJSON_IsBool(ignore)) return rl_err_set(err, "%s: field 'ignore_eos' must be true or false", where);
        s->has_ignore_eos = 1;
        s->ignore_eos = cJSON_IsTrue(ignore);
    }
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(r->fields, "stop");
    if (!stop) return 0;
    s->has_stop = 1;
    if (cJSON_IsString(stop)) {
        s->stop[s->n_stop++] = stop->valuestring;
    } else {
        if (!cJSON_IsArray(stop) || cJSON_GetArraySize(stop) > RL_REQ_MAX_STOP)
            return rl_err_set(err, "%s: field 'stop' must be a string or a list of at most %d strings", where,
                              RL_REQ_MAX_STOP);
        for (const cJSON *item = stop->child; item; item = item->next) {
            if (!cJSON_IsString(item)) return rl_err_set(err, "%s: field 'stop' must be a string or a list of strings", where);
            s->stop[s->n_stop++] = item->valuestring;
        }
    }
    for (int j = 0; j < s->n_stop; j++)
        if (!s->stop[j][0]) return rl_err_set(err, "%s: stop string %d is empty", where, j);
    return 0;
}
