/* toolcall.c — see toolcall.h. A scan for the tags (no regular expressions: the text is the
 * model's, of any size), the body handed to cJSON with its length. */
#include "rollout/toolcall.h"

#include <stdio.h>
#include <string.h>

#define OPEN "<tool_call>"
#define CLOSE "</tool_call>"

static const char *find(const char *s, const char *end, const char *pat)
{
    size_t n = strlen(pat);
    if ((size_t)(end - s) < n) return NULL;
    return memmem(s, (size_t)(end - s), pat, n);
}

static void bad(rl_toolcall *c, const char *why)
{
    c->name[0] = '\0';
    c->arguments = NULL;
    snprintf(c->error, sizeof c->error, "%s", why);
}

/* One call's body [s, e). */
static void parse_body(const char *s, const char *e, rl_toolcall *c)
{
    const char *parse_end = NULL;
    cJSON *obj = cJSON_ParseWithLengthOpts(s, (size_t)(e - s), &parse_end, 0);
    if (!obj || !cJSON_IsObject(obj)) {
        cJSON_Delete(obj);
        { bad(c, "the tool call is not a JSON object {\"name\": ..., \"arguments\": {...}}"); return; }
    }
    for (const char *p = parse_end; p && p < e; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') {
            cJSON_Delete(obj);
            { bad(c, "text after the tool call's JSON object"); return; }
        }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
    cJSON *args = cJSON_DetachItemFromObjectCaseSensitive(obj, "arguments");
    if (!cJSON_IsString(name) || !name->valuestring[0] || strlen(name->valuestring) >= sizeof c->name) {
        cJSON_Delete(obj), cJSON_Delete(args);
        { bad(c, "the tool call has no \"name\" string (at most 63 bytes)"); return; }
    }
    if (cJSON_IsString(args)) { /* arguments written as a JSON string */
        cJSON *inner = cJSON_Parse(args->valuestring);
        cJSON_Delete(args);
        args = inner;
        if (!cJSON_IsObject(args)) {
            cJSON_Delete(obj), cJSON_Delete(args);
            { bad(c, "\"arguments\" is a string that does not hold a JSON object"); return; }
        }
    } else if (!args) {
        args = cJSON_CreateObject();
    } else if (!cJSON_IsObject(args)) {
        cJSON_Delete(obj), cJSON_Delete(args);
        { bad(c, "\"arguments\" is not an object"); return; }
    }
    snprintf(c->name, sizeof c->name, "%s", name->valuestring);
    c->arguments = args;
    c->error[0] = '\0';
    cJSON_Delete(obj);
}

void rl_toolcalls_parse(const char *text, size_t len, rl_toolcalls *out)
{
    memset(out, 0, sizeof *out);
    const char *s = text, *end = text + len;
    while (s < end) {
        const char *open = find(s, end, OPEN), *think = find(s, end, "<think>");
        if (think && (!open || think < open)) { /* skip the reasoning section (to its end, or all) */
            const char *close = find(think, end, "</think>");
            s = close ? close + 8 : end;
            continue;
        }
        if (!open) break;
        const char *body = open + strlen(OPEN), *close = find(body, end, CLOSE);
        if (out->n == RL_TOOLCALL_MAX) {
            out->n_ignored++;
            s = close ? close + strlen(CLOSE) : end;
            continue;
        }
        rl_toolcall *c = &out->calls[out->n++];
        if (!close) {
            bad(c, "the tool call is cut off (no </tool_call>)");
            break;
        }
        parse_body(body, close, c);
        s = close + strlen(CLOSE);
    }
}

void rl_toolcalls_free(rl_toolcalls *c)
{
    for (int i = 0; i < c->n; i++) cJSON_Delete(c->calls[i].arguments);
    memset(c, 0, sizeof *c);
}
