/* options.c — see options.h. */
#include "cli/options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"

static char **copied;
static int n_copied;

void rl_opts_free(void)
{
    for (int i = 0; i < n_copied; i++) free(copied[i]);
    free(copied);
    copied = NULL;
    n_copied = 0;
}

static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_'))) return 0;
    return *a == *b;
}

static rl_opt *find(rl_opt *opts, const char *name, size_t len)
{
    char buf[128];
    if (len >= sizeof buf) return NULL;
    memcpy(buf, name, len);
    buf[len] = '\0';
    for (rl_opt *o = opts; o->name; o++)
        if (same_name(o->name, buf)) return o;
    return NULL;
}

static int set_value(const char *cmd, rl_opt *o, const char *text, int from_config)
{
    char *end;
    errno = 0;
    switch (o->type) {
    case RL_OPT_INT:
    case RL_OPT_I64: {
        long long v = strtoll(text, &end, 10);
        if (errno || *end || end == text || (o->type == RL_OPT_INT && (v < -2147483647LL || v > 2147483647LL))) {
            fprintf(stderr, "rlc %s: --%s needs an integer, got '%s'\n", cmd, o->name, text);
            return -1;
        }
        if (o->type == RL_OPT_INT) *(int *)o->value = (int)v;
        else *(int64_t *)o->value = v;
        break;
    }
    case RL_OPT_DOUBLE: {
        double v = strtod(text, &end);
        if (errno || *end || end == text || !isfinite(v)) {
            fprintf(stderr, "rlc %s: --%s needs a finite number, got '%s'\n", cmd, o->name, text);
            return -1;
        }
        *(double *)o->value = v;
        break;
    }
    case RL_OPT_STRING:
        if (from_config) {
            char *c = strdup(text), **grown = realloc(copied, (size_t)(n_copied + 1) * sizeof *copied);
            if (!c || !grown) {
                free(c);
                fprintf(stderr, "rlc %s: out of memory\n", cmd);
                return -1;
            }
            copied = grown;
            copied[n_copied++] = c;
            text = c;
        }
        *(const char **)o->value = text;
        break;
    case RL_OPT_FLAG:
        if (!strcmp(text, "1") || !strcmp(text, "true")) *(int *)o->value = 1;
        else if (!strcmp(text, "0") || !strcmp(text, "false")) *(int *)o->value = 0;
        else {
            fprintf(stderr, "rlc %s: --%s is a flag (true or false), got '%s'\n", cmd, o->name, text);
            return -1;
        }
        break;
    }
    o->set = 1;
    return 0;
}

int rl_opts_apply_json(const char *cmd, rl_opt *opts, const cJSON *j, const char *what)
{
    if (!cJSON_IsObject(j)) {
        fprintf(stderr, "rlc %s: %s: must be a JSON object of option names to values\n", cmd, what);
        return -1;
    }
    for (const cJSON *it = j->child; it; it = it->next) {
        rl_opt *o = find(opts, it->string, strlen(it->string));
        char text[64];
        const char *value = text;
        if (!o || !strcmp(o->name, "config")) {
            fprintf(stderr, "rlc %s: %s: unknown option '%s'\n", cmd, what, it->string);
            return -1;
        }
        if (cJSON_IsNull(it)) continue;
        if (cJSON_IsString(it)) {
            value = it->valuestring;
        } else if (cJSON_IsBool(it)) {
            snprintf(text, sizeof text, "%s", cJSON_IsTrue(it) ? "true" : "false");
        } else if (cJSON_IsNumber(it)) {
            if (rl_json_is_integer(it)) snprintf(text, sizeof text, "%lld", (long long)it->valuedouble);
            else snprintf(text, sizeof text, "%.17g", it->valuedouble);
        } else {
            fprintf(stderr, "rlc %s: %s: option '%s' must be a string, number or boolean\n", cmd, what, it->string);
            return -1;
        }
        if (set_value(cmd, o, value, 1) != 0) {
            fprintf(stderr, "rlc %s: (in %s)\n", cmd, what);
            return -1;
        }
    }
    return 0;
}

static int load_config(const char *cmd, rl_opt *opts, const char *path)
{
    rl_err err;
    cJSON *j = rl_json_parse_file(path, &err);
    if (!j) {
        fprintf(stderr, "rlc %s: %s\n", cmd, err.msg);
        return -1;
    }
    int rc = rl_opts_apply_json(cmd, opts, j, path);
    cJSON_Delete(j);
    return rc;
}

int rl_opts_parse(const char *cmd, rl_opt *opts, int argc, char **argv, const char *usage_head)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            rl_opts_usage(stdout, opts, usage_head);
            return 1;
        }
        if (strncmp(a, "--", 2)) {
            fprintf(stderr, "rlc %s: unexpected argument '%s' (options start with --; see --help)\n", cmd, a);
            return -1;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (len == 6 && !strncmp(name, "config", 6)) {
            const char *path = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!path) {
                fprintf(stderr, "rlc %s: --config needs a file\n", cmd);
                return -1;
            }
            if (load_config(cmd, opts, path) != 0) return -1;
            continue;
        }
        rl_opt *o = find(opts, name, len);
        int negated = 0;
        if (!o && len > 3 && !strncmp(name, "no-", 3)) {
            o = find(opts, name + 3, len - 3);
            negated = o && o->type == RL_OPT_FLAG;
            if (!negated) o = NULL;
        }
        if (!o) {
            fprintf(stderr, "rlc %s: unknown option '--%.*s' (see --help)\n", cmd, (int)len, name);
            return -1;
        }
        if (o->type == RL_OPT_FLAG && !eq) {
            *(int *)o->value = !negated;
            o->set = 1;
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!value) {
            fprintf(stderr, "rlc %s: --%s needs a value\n", cmd, o->name);
            return -1;
        }
        if (set_value(cmd, o, value, 0) != 0) return -1;
    }
    return 0;
}

static void format_value(const rl_opt *o, char *out, size_t size)
{
    switch (o->type) {
    case RL_OPT_INT: snprintf(out, size, "%d", *(const int *)o->value); break;
    case RL_OPT_I64: snprintf(out, size, "%lld", (long long)*(const int64_t *)o->value); break;
    case RL_OPT_DOUBLE: snprintf(out, size, "%g", *(const double *)o->value); break;
    case RL_OPT_STRING: {
        const char *s = *(const char *const *)o->value;
        snprintf(out, size, "%s", s ? s : "");
        break;
    }
    case RL_OPT_FLAG: snprintf(out, size, "%s", *(const int *)o->value ? "on" : "off"); break;
    }
}

void rl_opts_usage(FILE *out, const rl_opt *opts, const char *usage_head)
{
    fputs(usage_head, out);
    for (const rl_opt *o = opts; o->name; o++) {
        char def[96], left[64];
        format_value(o, def, sizeof def);
        snprintf(left, sizeof left, "--%s%s", o->name,
                 o->type == RL_OPT_FLAG ? "" : o->type == RL_OPT_STRING ? " S" : " N");
        fprintf(out, "  %-24s %s", left, o->help);
        if (def[0]) fprintf(out, " [%s]", def);
        fputc('\n', out);
    }
    fputs("  --config FILE.json       read options from a JSON object {\"option-name\": value}\n"
          "  --help                   this text\n",
          out);
}

cJSON *rl_opts_to_json(const rl_opt *opts)
{
    cJSON *j = cJSON_CreateObject();
    for (const rl_opt *o = opts; o->name; o++) {
        switch (o->type) {
        case RL_OPT_INT: cJSON_AddNumberToObject(j, o->name, *(const int *)o->value); break;
        case RL_OPT_I64: cJSON_AddNumberToObject(j, o->name, (double)*(const int64_t *)o->value); break;
        case RL_OPT_DOUBLE: cJSON_AddNumberToObject(j, o->name, *(const double *)o->value); break;
        case RL_OPT_STRING: {
            const char *s = *(const char *const *)o->value;
            if (s) cJSON_AddStringToObject(j, o->name, s);
            else cJSON_AddNullToObject(j, o->name);
            break;
        }
        case RL_OPT_FLAG: cJSON_AddBoolToObject(j, o->name, *(const int *)o->value); break;
        }
    }
    return j;
}
