/* ktasks.c — see ktasks.h. */
#include "rollout/ktasks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "io/json.h"
#include "reward/kernel_env/kreward.h"

void rl_ktasks_free(rl_ktasks *kt)
{
    for (int i = 0; i < kt->n; i++) {
        if (kt->lines) cJSON_Delete(kt->lines[i]);
        if (kt->text) free(kt->text[i]);
        if (kt->ids) free(kt->ids[i]);
    }
    free(kt->lines), free(kt->task), free(kt->fixed), free(kt->text), free(kt->ids), free(kt->n_ids), free(kt->attempts);
    memset(kt, 0, sizeof *kt);
}

/* Prompt of task i with opts o, chat-formatted and tokenised into *text / *ids. */
static int render(rl_ktasks *kt, int i, const rl_kprompt_opts *o, const char *store, char **text, int32_t **ids,
                  int *n_ids, rl_err *err)
{
    char *body;
    size_t len;
    *text = NULL;
    *ids = NULL;
    if (kt->fixed[i]) {
        len = strlen(kt->fixed[i]);
        if (!(body = strdup(kt->fixed[i]))) return rl_err_oom(err, "prompt", len);
    } else if (rl_kprompt_build(kt->task[i], store, o, &body, &len, err)) {
        return -1;
    }
    if (kt->suffix) {
        size_t n = strlen(kt->suffix);
        char *g = realloc(body, len + n + 1);
        if (!g) {
            free(body);
            return rl_err_oom(err, "prompt", len + n);
        }
        memcpy(g + len, kt->suffix, n + 1);
        body = g;
    }
    rl_chat_message m = {.role = "user", .content = body};
    rl_chat_options opt = {.add_generation_prompt = 1, .enable_thinking = kt->enable_thinking};
    int rc = rl_tok_chat_format(kt->tok, &m, 1, &opt, text, err);
    free(body);
    if (rc == 0) rc = rl_tok_encode(kt->tok, *text, strlen(*text), ids, n_ids, err);
    if (rc) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

/* The longest variant of task i's prompt that fits: every exemplar first, then fewer, then none
 * without the reference source. Replaces the task's current prompt. */
static int fit(rl_ktasks *kt, int i, const char *store, uint64_t seed, rl_err *err)
{
    rl_kprompt_opts o = kt->popts;
    o.seed = seed;
    int shown = o.n_best + o.n_diverse;
    for (int attempt = 0;; attempt++) {
        char *text;
        int32_t *ids;
        int n_ids;
        if (render(kt, i, &o, store, &text, &ids, &n_ids, err)) return -1;
        if (n_ids <= kt->max_prompt) {
            free(kt->text[i]), free(kt->ids[i]);
            kt->text[i] = text, kt->ids[i] = ids, kt->n_ids[i] = n_ids;
            if (n_ids > kt->max_ids) kt->max_ids = n_ids;
            return 0;
        }
        free(text), free(ids);
        if (store && shown > 0) { /* one exemplar fewer */
            shown--;
            o.n_best = shown < o.n_best ? shown : o.n_best;
            o.n_diverse = shown - o.n_best;
            if (shown == 0) store = NULL;
        } else if (o.show_reference) {
            o.show_reference = 0;
        } else {
            return rl_err_set(err, "task %s: the prompt has %d tokens even without exemplars and the reference "
                                   "(--max-prompt-len %d)", kt->task[i], n_ids, kt->max_prompt);
        }
    }
}

int rl_ktasks_load(rl_ktasks *kt, const char *data, const rl_tokenizer *tok, const char *attempts, int max_prompt,
                   const char *suffix, int enable_thinking, rl_err *err)
{
    memset(kt, 0, sizeof *kt);
    kt->tok = tok;
    kt->suffix = suffix;
    kt->enable_thinking = enable_thinking;
    kt->max_prompt = max_prompt;
    rl_kprompt_opts_default(&kt->popts);
    kt->popts.n_best = 1;
    kt->popts.n_diverse = 2;
    kt->popts.buckets = 3;
    if (attempts && !(kt->attempts = strdup(attempts))) return rl_err_oom(err, "attempts path", 0);
    char *text = NULL;
    size_t len = 0;
    if (rl_file_read_all(data, &text, &len, err)) return -1;
    int cap = 0, line_no = 0, rc = 0;
    for (size_t pos = 0; rc == 0 && pos < len;) {
        size_t eol = pos;
        while (eol < len && text[eol] != '\n') eol++;
        size_t a = pos, b = eol;
        pos = eol + 1;
        line_no++;
        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
        if (a == b) continue;
        char what[4200];
        snprintf(what, sizeof what, "%s:%d", data, line_no);
        if (kt->n == cap) {
            cap = cap ? 2 * cap : 16;
            cJSON **l = realloc(kt->lines, (size_t)cap * sizeof *l);
            const char **t = realloc(kt->task, (size_t)cap * sizeof *t);
            const char **fx = realloc(kt->fixed, (size_t)cap * sizeof *fx);
            if (l) kt->lines = l;
            if (t) kt->task = t;
            if (fx) kt->fixed = fx;
            if (!l || !t || !fx) {
                rc = rl_err_oom(err, "kernel tasks", (size_t)cap * 16);
                break;
            }
        }
        cJSON *obj = rl_json_parse(text + a, b - a, what, err);
        const char *task = NULL, *own = NULL;
        if (!obj) rc = -1;
        else if (!cJSON_IsObject(obj)) rc = rl_err_set(err, "%s: a line must be an object {\"task\": ...}", what);
        else if (rl_json_string(obj, "task", &task, 1, what, err) || rl_json_string(obj, "prompt", &own, 0, what, err)) rc = -1;
        else if (rl_kreward_check_task(task, err)) rc = rl_err_prefix(err, "%s: ", what);
        if (rc) {
            cJSON_Delete(obj);
            break;
        }
        kt->lines[kt->n] = obj;
        kt->fixed[kt->n] = own;
        kt->task[kt->n++] = task;
    }
    free(text);
    if (rc == 0 && kt->n == 0) rc = rl_err_set(err, "%s: no task lines", data);
    if (rc == 0) {
        kt->text = calloc((size_t)kt->n, sizeof *kt->text);
        kt->ids = calloc((size_t)kt->n, sizeof *kt->ids);
        kt->n_ids = calloc((size_t)kt->n, sizeof *kt->n_ids);
        if (!kt->text || !kt->ids || !kt->n_ids) rc = rl_err_oom(err, "kernel prompts", (size_t)kt->n * 24);
    }
    for (int i = 0; rc == 0 && i < kt->n; i++)
        if (fit(kt, i, NULL, 0, err)) rc = -1;
    if (rc) rl_ktasks_free(kt);
    return rc;
}

int rl_ktasks_rebuild(rl_ktasks *kt, int64_t step, const int *which, int n, rl_err *err)
{
    const char *store = kt->attempts && rl_file_exists(kt->attempts) ? kt->attempts : NULL;
    for (int k = 0; k < n; k++) {
        int i = which[k], seen = 0;
        for (int j = 0; j < k && !seen; j++) seen = which[j] == i;
        if (seen || kt->fixed[i]) continue;
        if (fit(kt, i, store, (uint64_t)step * 1000003u + (uint64_t)i, err)) return -1;
    }
    return 0;
}
