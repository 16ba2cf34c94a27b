/* options.c — see options.h. */
#include "cli/options.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "io/json.h"

void rl_opts_free(rl_opts *o)
{
    for (int i = 0; i < o->n_copied; i++) free(o->copied[i]);
    free(o->copied);
    o->copied = NULL;
    o->n_copied = 0;
}

int rl_opts_fail(const rl_opts *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rlc %s: ", o->cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return RL_EXIT_USAGE;
}

/* Option names match with '-' and '_' taken as the same (config files may use either). */
static int same_name(const char *a, const char *b, size_t len_b)
{
    size_t i = 0;
    for (; a[i] && i < len_b; i++)
        if (a[i] != b[i] && !((a[i] == '-' || a[i] == '_') && (b[i] == '-' || b[i] == '_'))) return 0;
    return !a[i] && i == len_b;
}

static rl_opt *find(rl_opts *o, const char *name, size_t len)
{
    for (rl_opt *p = o->list; p->name; p++)
        if (p->type != RL_OPT_POS && same_name(p->name, name, len)) return p;
    return NULL;
}

rl_opt *rl_opts_find(rl_opts *o, const char *name) { return find(o, name, strlen(name)); }

const char *const rl_opt_thinking_names[] = {"on", "off", NULL};

static void choices_text(const rl_opt *p, const char *sep, const char *last_sep, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (int k = 0; p->choices[k] && at < size; k++)
        at += (size_t)snprintf(out + at, size - at, "%s%s", k == 0 ? "" : p->choices[k + 1] ? sep : last_sep,
                               p->choices[k]);
}

/* Sets p from text. `prefix` is "" for the command line, else "FILE: ". */
static int set_value(rl_opts *o, rl_opt *p, const char *text, const char *prefix, int copy)
{
    char what[160];
    snprintf(what, sizeof what, "%s--%s", prefix, p->name);
    switch (p->type) {
    case RL_OPT_INT:
    case RL_OPT_I64:
    case RL_OPT_DOUBLE: {
        rl_err err;
        double x;
        if (rl_number_parse(text, &p->range, what, &x, &err)) {
            rl_opts_fail(o, "%s", err.msg);
            return -1;
        }
        if (p->type == RL_OPT_INT) *(int *)p->value = (int)x;
        else if (p->type == RL_OPT_I64) *(int64_t *)p->value = (int64_t)x;
        else *(double *)p->value = x;
        break;
    }
    case RL_OPT_CHOICE: {
        int k = 0;
        while (p->choices[k] && strcmp(p->choices[k], text)) k++;
        if (!p->choices[k]) {
            char names[256];
            choices_text(p, ", ", " or ", names, sizeof names);
            rl_opts_fail(o, "%s must be %s, got '%s'", what, names, text);
            return -1;
        }
        *(int *)p->value = k;
        break;
    }
    case RL_OPT_FLAG:
        if (!strcmp(text, "1") || !strcmp(text, "true")) *(int *)p->value = 1;
        else if (!strcmp(text, "0") || !strcmp(text, "false")) *(int *)p->value = 0;
        else {
            rl_opts_fail(o, "%s is a flag (true or false), got '%s'", what, text);
            return -1;
        }
        break;
    case RL_OPT_STRING:
    case RL_OPT_LIST:
    case RL_OPT_POS: {
        if (copy) {
            char *c = strdup(text), **grown = realloc(o->copied, (size_t)(o->n_copied + 1) * sizeof *grown);
            if (grown) o->copied = grown;
            if (!c || !grown) {
                free(c);
                rl_opts_fail(o, "out of memory");
                return -1;
            }
            o->copied[o->n_copied++] = c;
            text = c;
        }
        if (p->type != RL_OPT_LIST && !(p->flags & RL_OPT_REPEAT)) {
            *(const char **)p->value = text;
            break;
        }
        rl_opt_list *l = p->value;
        if (!p->set || p->source != o->source) l->n = 0; /* a new source's values replace the old */
        if (l->n == RL_OPT_LIST_MAX) {
            rl_opts_fail(o, "%sat most %d %s%s values", prefix, RL_OPT_LIST_MAX, p->type == RL_OPT_POS ? "" : "--",
                         p->name);
            return -1;
        }
        l->items[l->n++] = text;
        break;
    }
    }
    p->set = 1;
    p->source = o->source;
    return 0;
}

/* One JSON value of a config file, as the text the command line would carry. */
static int json_text(const cJSON *v, char *buf, size_t size, const char **out)
{
    if (cJSON_IsString(v)) *out = v->valuestring;
    else if (cJSON_IsBool(v)) *out = cJSON_IsTrue(v) ? "true" : "false";
    else if (cJSON_IsNumber(v) && rl_json_is_integer(v)) snprintf(buf, size, "%lld", (long long)v->valuedouble), *out = buf;
    else if (cJSON_IsNumber(v)) snprintf(buf, size, "%.17g", v->valuedouble), *out = buf;
    else return -1;
    return 0;
}

int rl_opts_apply_json(rl_opts *o, const cJSON *j, const char *what)
{
    if (!cJSON_IsObject(j)) {
        rl_opts_fail(o, "%s: must be a JSON object of option names to values", what);
        return -1;
    }
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s: ", what);
    o->source++;
    for (const cJSON *it = j->child; it; it = it->next) {
        rl_opt *p = find(o, it->string, strlen(it->string));
        if (!p) {
            rl_opts_fail(o, "%s: unknown option '%s'", what, it->string);
            return -1;
        }
        if (cJSON_IsNull(it)) continue;
        char text[64];
        const char *value;
        if (p->type == RL_OPT_LIST && cJSON_IsArray(it)) {
            for (const cJSON *e = it->child; e; e = e->next) {
                if (!cJSON_IsString(e)) {
                    rl_opts_fail(o, "%s: option '%s' must be a list of strings", what, it->string);
                    return -1;
                }
                if (set_value(o, p, e->valuestring, prefix, 1)) return -1;
            }
            if (!it->child) ((rl_opt_list *)p->value)->n = 0, p->set = 1, p->source = o->source;
            continue;
        }
        if (json_text(it, text, sizeof text, &value)) {
            rl_opts_fail(o, "%s: option '%s' must be a string, number or boolean", what, it->string);
            return -1;
        }
        if (set_value(o, p, value, prefix, 1)) return -1;
    }
    return 0;
}

static int load_config(rl_opts *o, const char *path)
{
    rl_err err;
    cJSON *j = rl_json_parse_file(path, &err);
    if (!j) {
        rl_opts_fail(o, "--config: %s", err.msg);
        return -1;
    }
    int rc = rl_opts_apply_json(o, j, path);
    cJSON_Delete(j);
    return rc;
}

const char *rl_opts_peek(int argc, char **argv, const char *name)
{
    size_t len = strlen(name);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) || strncmp(a + 2, name, len)) continue;
        if (a[2 + len] == '=') return a + 3 + len;
        if (!a[2 + len] && i + 1 < argc) return argv[i + 1];
    }
    return NULL;
}

static int check_required(rl_opts *o)
{
    for (rl_opt *p = o->list; p->name; p++) {
        if (!(p->flags & RL_OPT_REQUIRED) || p->set) continue;
        if (p->type == RL_OPT_POS) return rl_opts_fail(o, "%s is required (see --help)", p->name);
        return rl_opts_fail(o, "--%s%s%s is required (see --help)", p->name, p->arg ? " " : "", p->arg ? p->arg : "");
    }
    return RL_OPTS_CONTINUE;
}

int rl_opts_parse(rl_opts *o, int argc, char **argv)
{
    o->source++;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            rl_opts_usage(stdout, o);
            return 0;
        }
        if (a[0] == '-' && a[1] && a[1] != '-' && !a[2]) { /* -x VALUE */
            rl_opt *p = o->list;
            while (p->name && p->alias != a[1]) p++;
            if (!p->name) return rl_opts_fail(o, "unknown option '%s' (see --help)", a);
            if (i + 1 >= argc) return rl_opts_fail(o, "%s needs a value", a);
            if (set_value(o, p, argv[++i], "", 0)) return RL_EXIT_USAGE;
            continue;
        }
        if (strncmp(a, "--", 2)) {
            rl_opt *p = o->list;
            while (p->name && !(p->type == RL_OPT_POS && (!p->set || (p->flags & RL_OPT_REPEAT)))) p++;
            if (!p->name || (a[0] == '-' && a[1]))
                return rl_opts_fail(o, "unexpected argument '%s' (see --help)", a);
            if (set_value(o, p, a, "", 0)) return RL_EXIT_USAGE;
            continue;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (same_name("config", name, len)) {
            const char *path = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!path) return rl_opts_fail(o, "--config needs a file");
            if (load_config(o, path)) return RL_EXIT_USAGE;
            o->source++; /* back on the command line */
            continue;
        }
        rl_opt *p = find(o, name, len);
        int negated = 0;
        if (!p && len > 3 && !strncmp(name, "no-", 3)) {
            p = find(o, name + 3, len - 3);
            negated = 1;
            if (p && (p->type != RL_OPT_FLAG || eq)) p = NULL;
        }
        if (!p) return rl_opts_fail(o, "unknown option '--%.*s' (see --help)", (int)len, name);
        if (p->type == RL_OPT_FLAG && !eq) {
            *(int *)p->value = !negated;
            p->set = 1;
            continue;
        }
        const char *value = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!value) return rl_opts_fail(o, "--%s needs a value", p->name);
        if (set_value(o, p, value, "", 0)) return RL_EXIT_USAGE;
    }
    return check_required(o);
}

/* The current value as help shows it (so `--help` after other options shows what they set);
 * "" when there is none to show. */
static void format_value(const rl_opt *p, char *out, size_t size)
{
    out[0] = '\0';
    switch (p->type) {
    case RL_OPT_INT: snprintf(out, size, "%d", *(const int *)p->value); break;
    case RL_OPT_I64: snprintf(out, size, "%lld", (long long)*(const int64_t *)p->value); break;
    case RL_OPT_DOUBLE: snprintf(out, size, "%g", *(const double *)p->value); break;
    case RL_OPT_CHOICE: snprintf(out, size, "%s", p->choices[*(const int *)p->value]); break;
    case RL_OPT_FLAG: snprintf(out, size, "%s", *(const int *)p->value ? "on" : "off"); break;
    case RL_OPT_STRING: {
        const char *s = *(const char *const *)p->value;
        snprintf(out, size, "%s", s ? s : "");
        break;
    }
    case RL_OPT_LIST: {
        const rl_opt_list *l = p->value;
        for (int k = 0, at = 0; k < l->n && at < (int)size; k++)
            at += snprintf(out + at, size - (size_t)at, "%s%s", k ? ", " : "", l->items[k]);
        break;
    }
    case RL_OPT_POS: break;
    }
}

void rl_opts_usage(FILE *out, const rl_opts *o)
{
    fputs(o->usage, out);
    for (const rl_opt *p = o->list; p->name; p++) {
        char left[128], def[160], range[160] = "", names[256] = "";
        if (p->type == RL_OPT_CHOICE) choices_text(p, "|", "|", names, sizeof names);
        if (p->type == RL_OPT_POS) snprintf(left, sizeof left, "%s%s", p->name, p->flags & RL_OPT_REPEAT ? " ..." : "");
        else if (p->alias)
            snprintf(left, sizeof left, "-%c, --%s %s", p->alias, p->name, p->arg ? p->arg : "S");
        else
            snprintf(left, sizeof left, "--%s%s%s", p->name, p->type == RL_OPT_FLAG ? "" : " ",
                     p->type == RL_OPT_CHOICE ? names : p->type == RL_OPT_FLAG ? "" : p->arg ? p->arg : "S");
        format_value(p, def, sizeof def);
        if (p->type == RL_OPT_INT || p->type == RL_OPT_I64 || p->type == RL_OPT_DOUBLE)
            snprintf(range, sizeof range, "%s%c%.15g, %.15g]", p->range.or_zero ? "0 or " : "",
                     p->range.above_lo ? '(' : '[', p->range.lo, p->range.hi);
        fprintf(out, "  %-24s %s", left, p->help);
        if (p->flags & RL_OPT_REQUIRED) fputs(" (required)", out);
        if (def[0] || range[0]) fprintf(out, " [%s%s%s]", def, def[0] && range[0] ? "; " : "", range);
        fputc('\n', out);
    }
    fputs("  --config FILE.json       read options from a JSON object {\"option-name\": value}\n"
          "  --help                   this text\n",
          out);
}

cJSON *rl_opts_to_json(const rl_opts *o)
{
    cJSON *j = cJSON_CreateObject();
    for (const rl_opt *p = o->list; j && p->name; p++) {
        switch (p->type) {
        case RL_OPT_INT: cJSON_AddNumberToObject(j, p->name, *(const int *)p->value); break;
        case RL_OPT_I64: cJSON_AddNumberToObject(j, p->name, (double)*(const int64_t *)p->value); break;
        case RL_OPT_DOUBLE: cJSON_AddNumberToObject(j, p->name, *(const double *)p->value); break;
        case RL_OPT_CHOICE: cJSON_AddStringToObject(j, p->name, p->choices[*(const int *)p->value]); break;
        case RL_OPT_FLAG: cJSON_AddBoolToObject(j, p->name, *(const int *)p->value); break;
        case RL_OPT_STRING: {
            const char *s = *(const char *const *)p->value;
            if (s) cJSON_AddStringToObject(j, p->name, s);
            else cJSON_AddNullToObject(j, p->name);
            break;
        }
        case RL_OPT_LIST: {
            const rl_opt_list *l = p->value;
            cJSON *arr = cJSON_AddArrayToObject(j, p->name);
            for (int k = 0; arr && k < l->n; k++) cJSON_AddItemToArray(arr, cJSON_CreateString(l->items[k]));
            break;
        }
        case RL_OPT_POS: break;
        }
    }
    return j;
}
