/* report.c — see report.h. The page is built in memory (a growing buffer), then written
 * atomically. The metrics go in as {"runs": [{"label", "series": {key: [[x, y], ...]}}]}; the
 * script (report_page.c) groups the keys and draws them. */
#include "train/report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file.h"
#include "io/json.h"

typedef struct buf {
    char *data;
    size_t len, cap;
    int oom;
} buf;

static void put(buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->len + n + 1) cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) {
            b->oom = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

static void printf_(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void printf_(buf *b, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    put(b, text, n < (int)sizeof text ? (size_t)n : sizeof text - 1);
}

/* Text as HTML: & < > " ' escaped. */
static void escaped(buf *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': puts_(b, "&amp;"); break;
        case '<': puts_(b, "&lt;"); break;
        case '>': puts_(b, "&gt;"); break;
        case '"': puts_(b, "&quot;"); break;
        case '\'': puts_(b, "&#39;"); break;
        default: put(b, s, 1);
        }
    }
}

/* Calls fn for each JSON line of path (1-based line numbers). A line that is not a JSON object
 * is an error, except a last line with no newline (a write cut short). Blank lines are skipped. */
static int each_line(const char *path, int (*fn)(void *user, const cJSON *o, int line, rl_err *err), void *user,
                     int *n_lines, rl_err *err)
{
    char *text;
    size_t len;
    if (rl_file_read_all(path, &text, &len, err)) return -1;
    int rc = 0, line = 0;
    *n_lines = 0;
    for (char *p = text; rc == 0 && *p;) {
        char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        line++;
        size_t k = 0;
        while (k < n && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r')) k++;
        if (k < n) {
            cJSON *o = cJSON_ParseWithLength(p, n);
            if (o && cJSON_IsObject(o)) {
                rc = fn(user, o, line, err);
                ++*n_lines;
            } else if (end) {
                rc = rl_err_set(err, "%s:%d: not a JSON object: '%.*s%s'", path, line, (int)(n > 60 ? 60 : n), p,
                                n > 60 ? "..." : "");
            }
            cJSON_Delete(o);
        }
        p = end ? end + 1 : p + n;
    }
    free(text);
    return rc;
}

/* metrics line -> series[key] gets [x, y] for every numeric key but "step" */
static int add_metrics(void *user, const cJSON *o, int line, rl_err *err)
{
    cJSON *series = user;
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(o, "step");
    double x = cJSON_IsNumber(step) ? step->valuedouble : line;
    for (const cJSON *m = o->child; m; m = m->next) {
        if (!cJSON_IsNumber(m) || !strcmp(m->string, "step")) continue;
        cJSON *arr = cJSON_GetObjectItemCaseSensitive(series, m->string);
        if (!arr) arr = cJSON_AddArrayToObject(series, m->string);
        cJSON *pt = cJSON_CreateArray();
        if (!arr || !pt) {
            cJSON_Delete(pt);
            return rl_err_oom(err, "report", 0);
        }
        cJSON_AddItemToArray(pt, cJSON_CreateNumber(x));
        cJSON_AddItemToArray(pt, cJSON_CreateNumber(m->valuedouble));
        cJSON_AddItemToArray(arr, pt);
    }
    return 0;
}

/* The last RL_REPORT_SAMPLE_ROWS sample lines, as a ring of parsed objects. */
typedef struct samples {
    cJSON *rows[RL_REPORT_SAMPLE_ROWS];
    int n;
} samples;

static int add_sample(void *user, const cJSON *o, int line, rl_err *err)
{
    samples *s = user;
    cJSON *copy = cJSON_Duplicate(o, 1);
    if (!copy) return rl_err_oom(err, "report samples", 0);
    int at = s->n % RL_REPORT_SAMPLE_ROWS;
    cJSON_Delete(s->rows[at]);
    s->rows[at] = copy;
    s->n++;
    return 0;
}

static void cell_text(buf *b, const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    puts_(b, "<td>");
    if (cJSON_IsString(v)) escaped(b, v->valuestring);
    puts_(b, "</td>");
}

static void cell_number(buf *b, const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    puts_(b, "<td class=num>");
    if (cJSON_IsNumber(v)) printf_(b, "%.4g", v->valuedouble);
    puts_(b, "</td>");
}

/* The samples table of one run (the last rows of its samples.jsonl). */
static int samples_table(buf *b, const rl_report_run *run, rl_err *err)
{
    puts_(b, "<h3>");
    escaped(b, run->label);
    puts_(b, "</h3>\n");
    if (!run->samples || !rl_file_exists(run->samples)) {
        puts_(b, "<p class=note>no samples.jsonl</p>\n");
        return 0;
    }
    samples s = {0};
    int n_lines;
    if (each_line(run->samples, add_sample, &s, &n_lines, err)) {
        for (int i = 0; i < RL_REPORT_SAMPLE_ROWS; i++) cJSON_Delete(s.rows[i]);
        return -1;
    }
    int shown = s.n < RL_REPORT_SAMPLE_ROWS ? s.n : RL_REPORT_SAMPLE_ROWS;
    printf_(b, "<p class=note>the last %d of %d samples</p>\n", shown, s.n);
    puts_(b, "<table class=samples><tr><th>step</th><th>prompt</th><th>completion</th><th>answer</th>"
             "<th>reward</th><th>advantage</th><th>loss</th><th>tokens</th><th>reward error</th></tr>\n");
    for (int i = 0; i < shown; i++) {
        const cJSON *o = s.rows[(s.n - shown + i) % RL_REPORT_SAMPLE_ROWS];
        puts_(b, "<tr>");
        cell_number(b, o, "step");
        cell_text(b, o, "prompt");
        cell_text(b, o, "completion");
        cell_text(b, o, "answer");
        cell_number(b, o, "reward");
        cell_number(b, o, "advantage");
        cell_number(b, o, "loss");
        cell_number(b, o, "tokens");
        cell_text(b, o, "reward_error");
        puts_(b, "</tr>\n");
    }
    puts_(b, "</table>\n");
    for (int i = 0; i < RL_REPORT_SAMPLE_ROWS; i++) cJSON_Delete(s.rows[i]);
    return 0;
}

/* The embedded data: every '<' as \u003c, so nothing in a label closes the script element. */
static int data_json(buf *b, const rl_report_run *runs, int n, rl_err *err)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "runs");
    int rc = root && arr ? 0 : rl_err_oom(err, "report", 0);
    for (int i = 0; rc == 0 && i < n; i++) {
        cJSON *run = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, run);
        cJSON_AddStringToObject(run, "label", runs[i].label);
        cJSON *series = cJSON_AddObjectToObject(run, "series");
        int n_lines = 0;
        rc = each_line(runs[i].metrics, add_metrics, series, &n_lines, err);
        if (rc == 0 && n_lines == 0)
            rc = rl_err_set(err, "%s: no steps in it (an empty run: did it fail before its first step?)", runs[i].metrics);
    }
    char *text = rc == 0 ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (rc == 0 && !text) rc = rl_err_oom(err, "report", 0);
    for (const char *p = text; rc == 0 && *p; p++) {
        if (*p == '<') puts_(b, "\\u003c");
        else put(b, p, 1);
    }
    free(text);
    return rc;
}

int rl_report_write(const rl_report_run *runs, int n, const char *out_path, rl_err *err)
{
    if (n < 1) return rl_err_set(err, "report: no runs");
    buf b = {0};
    puts_(&b, "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>\n<title>rlc report</title>\n<style>");
    puts_(&b, rl_report_css);
    puts_(&b, "</style></head>\n<body>\n<h1>rlc report</h1>\n<p class=note>");
    for (int i = 0; i < n; i++) {
        puts_(&b, i ? ", " : "runs: ");
        escaped(&b, runs[i].label);
    }
    puts_(&b, "</p>\n<div id=report-status data-state=loading>drawing the plots (this needs JavaScript)</div>\n"
              "<div id=report-errors></div>\n<div id=legend></div>\n<div id=plots></div>\n"
              "<h2>Sample completions</h2>\n");
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) rc = samples_table(&b, &runs[i], err);
    puts_(&b, "<script type=\"application/json\" id=report-data>");
    if (rc == 0) rc = data_json(&b, runs, n, err);
    puts_(&b, "</script>\n<script>");
    puts_(&b, rl_report_js);
    puts_(&b, "</script>\n</body></html>\n");
    if (rc == 0 && b.oom) rc = rl_err_oom(err, "report page", b.cap * 2);
    if (rc == 0) rc = rl_file_write_atomic(out_path, b.data, b.len, err);
    free(b.data);
    return rc;
}

int rl_report_dirs(const char *const *dirs, int n, const char *out_path, rl_err *err)
{
    rl_report_run *runs = calloc((size_t)(n > 0 ? n : 1), sizeof *runs);
    char (*paths)[2][4200] = calloc((size_t)(n > 0 ? n : 1), sizeof *paths);
    int rc = runs && paths ? 0 : rl_err_oom(err, "report", 0);
    for (int i = 0; rc == 0 && i < n; i++) {
        struct stat st;
        if (stat(dirs[i], &st) != 0) rc = rl_err_set(err, "%s: no such run directory", dirs[i]);
        else if (!S_ISDIR(st.st_mode)) rc = rl_err_set(err, "%s: not a directory (give a run's --out directory)", dirs[i]);
        else if (rl_path_join(paths[i][0], sizeof paths[i][0], dirs[i], "metrics.jsonl") ||
                 rl_path_join(paths[i][1], sizeof paths[i][1], dirs[i], "samples.jsonl"))
            rc = rl_err_set(err, "%s: path too long", dirs[i]);
        else if (!rl_file_exists(paths[i][0]))
            rc = rl_err_set(err, "%s: no metrics.jsonl in it (not the --out directory of an rlc training run?)", dirs[i]);
        else
            runs[i] = (rl_report_run){dirs[i], paths[i][0], paths[i][1]};
    }
    if (rc == 0) rc = rl_report_write(runs, n, out_path, err);
    free(runs);
    free(paths);
    return rc;
}
