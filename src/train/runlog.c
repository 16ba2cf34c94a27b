/* runlog.c — see runlog.h. Lines are built with cJSON (it escapes the texts) and written
 * unformatted, one per line. */
#include "train/runlog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "train/sft.h"

int rl_runlog_open(rl_runlog *l, const char *dir, const char *prefix, int per_step, int append, const rl_tokenizer *tok,
                   rl_err *err)
{
    memset(l, 0, sizeof *l);
    l->per_step = per_step;
    l->append = append;
    l->tok = tok;
    char path[4096], name[256];
    snprintf(name, sizeof name, "%ssamples.jsonl", prefix);
    if (rl_path_join(path, sizeof path, dir, name)) return rl_err_set(err, "path too long: %s", dir);
    snprintf(name, sizeof name, "%sreward_errors.jsonl", prefix);
    if (rl_path_join(l->errors_path, sizeof l->errors_path, dir, name)) return rl_err_set(err, "path too long: %s", dir);
    if (!append) remove(l->errors_path); /* a fresh run's file holds only its own errors */
    if (per_step > 0 && !(l->samples = fopen(path, append ? "a" : "w")))
        return rl_err_set(err, "%s: cannot open for writing: %s", path, strerror(errno));
    return 0;
}

void rl_runlog_close(rl_runlog *l)
{
    if (l->samples) fclose(l->samples);
    if (l->errors) fclose(l->errors);
    l->samples = l->errors = NULL;
}

/* Adds text (NULL: null) under key, cut to RL_RUNLOG_MAX_TEXT bytes at a UTF-8 boundary when
 * cut is set; *truncated is set when it was. */
static void add_text(cJSON *o, const char *key, const char *text, int cut, int *truncated)
{
    if (!text) {
        cJSON_AddNullToObject(o, key);
        return;
    }
    size_t n = strlen(text);
    if (!cut || n <= RL_RUNLOG_MAX_TEXT) {
        cJSON_AddStringToObject(o, key, text);
        return;
    }
    n = RL_RUNLOG_MAX_TEXT;
    while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80) n--;
    char *part = malloc(n + 1);
    if (!part) return;
    memcpy(part, text, n);
    part[n] = '\0';
    cJSON_AddStringToObject(o, key, part);
    free(part);
    *truncated = 1;
}

/* Writes o as one line to f (o is deleted). */
static int write_line(FILE *f, cJSON *o, const char *what, rl_err *err)
{
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text) return rl_err_oom(err, what, 0);
    int bad = fputs(text, f) < 0 || fputc('\n', f) == EOF;
    free(text);
    if (bad) return rl_err_set(err, "%s: write failed: %s", what, strerror(errno));
    return 0;
}

static int flush(FILE *f, const char *what, rl_err *err)
{
    if (f && fflush(f) != 0) return rl_err_set(err, "%s: write failed: %s", what, strerror(errno));
    return 0;
}

static int log_failures(rl_runlog *l, const rl_runlog_rl *s, rl_err *err)
{
    const rl_reward_failure *f;
    int n = s->reward ? rl_reward_failures(s->reward, &f) : 0;
    if (n == 0) return 0;
    if (!l->errors && !(l->errors = fopen(l->errors_path, "a")))
        return rl_err_set(err, "%s: cannot open for writing: %s", l->errors_path, strerror(errno));
    for (int i = 0; i < n; i++) {
        const rl_reward_item *it = &s->items[f[i].index];
        cJSON *o = cJSON_CreateObject();
        int cut = 0;
        cJSON_AddNumberToObject(o, "step", (double)s->step);
        cJSON_AddNumberToObject(o, "index", f[i].index);
        cJSON_AddStringToObject(o, "error", f[i].why);
        add_text(o, "prompt", it->prompt, 0, &cut);
        add_text(o, "completion", it->completion, 0, &cut);
        add_text(o, "answer", it->answer, 0, &cut);
        if (write_line(l->errors, o, "reward_errors.jsonl", err)) return -1;
    }
    return flush(l->errors, "reward_errors.jsonl", err);
}

/* The failure message of completion i, or NULL. */
static const char *failure_of(const rl_reward *r, int i)
{
    const rl_reward_failure *f;
    int n = r ? rl_reward_failures(r, &f) : 0;
    for (int k = 0; k < n; k++)
        if (f[k].index == i) return f[k].why;
    return NULL;
}

int rl_runlog_rl_step(rl_runlog *l, const rl_runlog_rl *s, rl_err *err)
{
    if (!l) return 0;
    if (log_failures(l, s, err)) return -1;
    if (!l->samples || s->n < 1) return 0;
    int group = s->group_size > 0 && s->n % s->group_size == 0 ? s->group_size : 1, n_groups = s->n / group;
    int count = l->per_step < s->n ? l->per_step : s->n;
    for (int i = 0; i < count; i++) {
        int g = i % n_groups, member = (i / n_groups) % group, k = g * group + member;
        const rl_reward_item *it = &s->items[k];
        cJSON *o = cJSON_CreateObject();
        int cut = 0;
        cJSON_AddNumberToObject(o, "step", (double)s->step);
        cJSON_AddStringToObject(o, "kind", "rl");
        cJSON_AddNumberToObject(o, "group", g);
        add_text(o, "prompt", it->prompt, 1, &cut);
        add_text(o, "completion", it->completion, 1, &cut);
        add_text(o, "answer", it->answer, 1, &cut);
        cJSON_AddNumberToObject(o, "reward", s->rewards[k]);
        if (s->advantages) cJSON_AddNumberToObject(o, "advantage", s->advantages[k]);
        if (s->lengths) cJSON_AddNumberToObject(o, "tokens", s->lengths[k]);
        const char *why = failure_of(s->reward, k);
        if (why) cJSON_AddStringToObject(o, "reward_error", why);
        if (cut) cJSON_AddBoolToObject(o, "truncated", 1);
        if (write_line(l->samples, o, "samples.jsonl", err)) return -1;
    }
    return flush(l->samples, "samples.jsonl", err);
}

int rl_runlog_sft_step(rl_runlog *l, int64_t step, const rl_sft_example *ex, const int *items, const double *loss,
                       int n, rl_err *err)
{
    if (!l || !l->samples || !l->tok) return 0;
    int count = l->per_step < n ? l->per_step : n;
    for (int i = 0; i < count; i++) {
        const rl_sft_example *e = &ex[items[i]];
        int n_prompt = e->n_prompt > 0 ? e->n_prompt : 0;
        char *prompt = NULL, *completion = NULL;
        size_t len;
        if (rl_tok_decode(l->tok, e->ids, n_prompt, &prompt, &len, err) ||
            rl_tok_decode(l->tok, e->ids + n_prompt, e->n_ids - n_prompt, &completion, &len, err)) {
            free(prompt);
            return rl_err_prefix(err, "samples.jsonl: ");
        }
        cJSON *o = cJSON_CreateObject();
        int cut = 0;
        cJSON_AddNumberToObject(o, "step", (double)step);
        cJSON_AddStringToObject(o, "kind", "sft");
        cJSON_AddNumberToObject(o, "index", items[i]);
        add_text(o, "prompt", prompt, 1, &cut);
        add_text(o, "completion", completion, 1, &cut);
        cJSON_AddNumberToObject(o, "tokens", e->n_ids);
        cJSON_AddNumberToObject(o, "loss", loss[i]);
        if (cut) cJSON_AddBoolToObject(o, "truncated", 1);
        free(prompt);
        free(completion);
        if (write_line(l->samples, o, "samples.jsonl", err)) return -1;
    }
    return flush(l->samples, "samples.jsonl", err);
}
