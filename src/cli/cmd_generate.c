/* cmd_generate.c — `rlc generate`: completions for prompts read as JSON lines, on the CPU or a
 * GPU (--device).
 *
 * Each stdin line is one request: {"prompt_ids": [...]}, {"prompt": "text"} or {"messages":
 * [{"role": ..., "content": ...}, ...]} (rendered with the Qwen chat format and the assistant
 * generation prompt). Each request gets --n completions, written one JSON line each:
 * {"request": k, "sample": j, "ids": [...], "text": "...", "logprobs": [...],
 * "finish_reason": "eos" | "stop" | "length"} (no "text" without a tokenizer). Request k draws
 * with seed --seed + k, so outputs do not depend on how the input is split into runs. A bad
 * line gets {"request": k, "error": ...}, is reported on stderr with its line number, and
 * makes the exit status 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/backend_opt.h"
#include "cli/commands.h"
#include "core/file.h"
#include "engine/generate.h"
#include "io/json.h"

#define MAX_STOP 16

static void usage(FILE *out)
{
    fprintf(out,
            "usage: rlc generate --model DIR [options] < requests.jsonl\n\n"
            "Generates completions with a Hugging Face model. Each input line is one of\n"
            "  {\"prompt_ids\": [token ids]}   {\"prompt\": \"text\"}   {\"messages\": [{\"role\": .., \"content\": ..}]}\n"
            "(messages use the Qwen chat format plus the assistant prompt). Each completion is one\n"
            "output line {\"request\", \"sample\", \"ids\", \"text\", \"logprobs\", \"finish_reason\"}.\n\n"
            "  --model DIR        model directory (required)\n"
            "  --tokenizer FILE   tokenizer.json (default DIR/tokenizer.json; without one, only\n"
            "                     prompt_ids are accepted and no text is written)\n"
            "  --temperature T    sampling temperature, 0 = greedy (default 1)\n"
            "  --top-k K          keep the K most likely tokens (default 0 = off)\n"
            "  --top-p P          nucleus sampling (default 1 = off)\n"
            "  --min-p P          drop tokens below P times the top probability (default 0 = off)\n"
            "  --max-tokens N     new tokens per completion at most (default 256)\n"
            "  --seed S           request k samples with seed S + k (default 0)\n"
            "  --stop STR         stop when STR appears in the text; the text ends before it\n"
            "                     (repeatable, up to %d)\n"
            "  --n N              completions per request (default 1)\n" RL_BACKEND_OPT_HELP
            "  --help             this text\n",
            MAX_STOP);
}

typedef struct options {
    const char *model_dir, *tokenizer, *device;
    rl_gen_params params;
    const char *stop[MAX_STOP];
    int n_samples;
} options;

/* Parses a number option; -1 with a message on stderr when it is not one in [lo, hi] (an
 * integer when whole is set). */
static int number_arg(const char *opt, const char *text, double lo, double hi, int whole, double *out)
{
    char *end;
    *out = strtod(text, &end);
    if (*end || end == text || !(*out >= lo && *out <= hi) || (whole && *out != (double)(long long)*out)) {
        fprintf(stderr, "rlc generate: %s must be %s in [%g, %g], got '%s'\n", opt,
                whole ? "an integer" : "a number", lo, hi, text);
        return -1;
    }
    return 0;
}

/* Returns 0 to go on, or the exit status to return. */
static int parse_args(options *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->params = rl_gen_params_default();
    o->params.stop = o->stop;
    o->n_samples = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        }
        if (!val) {
            fprintf(stderr, "rlc generate: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "--model")) o->model_dir = val;
        else if (!strcmp(a, "--tokenizer")) o->tokenizer = val;
        else if (!strcmp(a, "--device")) o->device = val;
        else if (!strcmp(a, "--temperature")) {
            if (number_arg(a, val, 0, 1e6, 0, &x)) return 2;
            if (x > 0 && x < 1e-4) {
                fprintf(stderr, "rlc generate: --temperature must be 0 (greedy) or at least 0.0001, got '%s'\n",
                        val);
                return 2;
            }
            o->params.sample.temperature = (float)x;
        } else if (!strcmp(a, "--top-k")) {
            if (number_arg(a, val, 0, 1e9, 1, &x)) return 2;
            o->params.sample.top_k = (int)x;
        } else if (!strcmp(a, "--top-p")) {
            if (number_arg(a, val, 0, 1, 0, &x)) return 2;
            if (x == 0) {
                fprintf(stderr, "rlc generate: --top-p must be above 0, got '%s'\n", val);
                return 2;
            }
            o->params.sample.top_p = (float)x;
        } else if (!strcmp(a, "--min-p")) {
            if (number_arg(a, val, 0, 1, 0, &x)) return 2;
            o->params.sample.min_p = (float)x;
        } else if (!strcmp(a, "--max-tokens")) {
            if (number_arg(a, val, 1, 1e9, 1, &x)) return 2;
            o->params.max_new_tokens = (int)x;
        } else if (!strcmp(a, "--seed")) {
            if (number_arg(a, val, 0, 9007199254740992.0, 1, &x)) return 2;
            o->params.seed = (uint64_t)x;
        } else if (!strcmp(a, "--n")) {
            if (number_arg(a, val, 1, 1e6, 1, &x)) return 2;
            o->n_samples = (int)x;
        } else if (!strcmp(a, "--stop")) {
            if (o->params.n_stop == MAX_STOP) {
                fprintf(stderr, "rlc generate: at most %d --stop strings\n", MAX_STOP);
                return 2;
            }
            o->stop[o->params.n_stop++] = val;
        } else {
            fprintf(stderr, "rlc generate: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!o->model_dir) {
        fprintf(stderr, "rlc generate: --model DIR is required\n");
        usage(stderr);
        return 2;
    }
    return 0;
}

static int ids_from_json(const cJSON *arr, int32_t **ids, int *n, rl_err *err)
{
    *n = cJSON_GetArraySize(arr);
    *ids = malloc((size_t)(*n ? *n : 1) * sizeof **ids);
    if (!*ids) return rl_err_oom(err, "prompt ids", (size_t)*n * sizeof **ids);
    int i = 0;
    for (const cJSON *item = arr->child; item; item = item->next, i++) {
        if (!rl_json_is_integer(item) || item->valuedouble < 0 || item->valuedouble > INT32_MAX)
            return rl_err_set(err, "\"prompt_ids\"[%d] is not a token id (a non-negative integer)", i);
        (*ids)[i] = (int32_t)item->valuedouble;
    }
    return 0;
}

static int messages_text(const cJSON *arr, char **text, rl_err *err)
{
    int n = cJSON_GetArraySize(arr);
    rl_chat_message *msgs = calloc((size_t)(n ? n : 1), sizeof *msgs);
    if (!msgs) return rl_err_oom(err, "messages", (size_t)n * sizeof *msgs);
    int i = 0, rc = 0;
    for (const cJSON *m = arr->child; m && !rc; m = m->next, i++) {
        char what[64];
        snprintf(what, sizeof what, "messages[%d]", i);
        if (!cJSON_IsObject(m)) rc = rl_err_set(err, "%s is not an object", what);
        else if (rl_json_string(m, "role", &msgs[i].role, 1, what, err) ||
                 rl_json_string(m, "content", &msgs[i].content, 1, what, err))
            rc = -1;
    }
    if (!rc) rc = rl_tok_chat_format(msgs, n, 1, text, err);
    free(msgs);
    return rc;
}

/* One request line -> its prompt ids (malloc'd). */
static int prompt_from_line(const rl_tokenizer *tok, const char *line, size_t len, int32_t **ids, int *n,
                            rl_err *err)
{
    *ids = NULL;
    cJSON *in = rl_json_parse(line, len, "input", err);
    if (!in) return -1;
    const cJSON *prompt_ids = cJSON_GetObjectItemCaseSensitive(in, "prompt_ids");
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(in, "prompt");
    const cJSON *messages = cJSON_GetObjectItemCaseSensitive(in, "messages");
    char *text = NULL;
    int rc = -1;
    if (!cJSON_IsObject(in) || !!prompt_ids + !!prompt + !!messages != 1)
        rl_err_set(err, "line must be a JSON object with one of \"prompt_ids\", \"prompt\", \"messages\"");
    else if (prompt_ids)
        rc = cJSON_IsArray(prompt_ids) ? ids_from_json(prompt_ids, ids, n, err)
                                       : rl_err_set(err, "\"prompt_ids\" must be an array of token ids");
    else if (!tok)
        rl_err_set(err, "\"prompt\" and \"messages\" need a tokenizer (--tokenizer FILE)");
    else if (prompt && !cJSON_IsString(prompt))
        rl_err_set(err, "\"prompt\" must be a string");
    else if (messages && !cJSON_IsArray(messages))
        rl_err_set(err, "\"messages\" must be an array of {\"role\", \"content\"} objects");
    else if (prompt)
        rc = rl_tok_encode(tok, prompt->valuestring, strlen(prompt->valuestring), ids, n, err);
    else if (!messages_text(messages, &text, err))
        rc = rl_tok_encode(tok, text, strlen(text), ids, n, err);
    free(text);
    cJSON_Delete(in);
    return rc;
}

static void print_json(cJSON *obj)
{
    char *s = cJSON_PrintUnformatted(obj);
    puts(s ? s : "{\"error\": \"out of memory\"}");
    free(s);
    cJSON_Delete(obj);
}

static void print_result(long request, int sample, const rl_gen_result *r)
{
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddNumberToObject(obj, "request", (double)request);
    cJSON_AddNumberToObject(obj, "sample", sample);
    cJSON *ids = cJSON_AddArrayToObject(obj, "ids");
    for (int i = 0; i < r->n_ids; i++) cJSON_AddItemToArray(ids, cJSON_CreateNumber(r->ids[i]));
    if (r->text) cJSON_AddStringToObject(obj, "text", r->text);
    cJSON_AddItemToObject(obj, "logprobs", cJSON_CreateFloatArray(r->logprobs, r->n_ids));
    cJSON_AddStringToObject(obj, "finish_reason", rl_finish_name(r->finish));
    print_json(obj);
}

static int run_request(rl_engine *engine, const rl_tokenizer *tok, const options *o, long request,
                       const char *line, size_t len, rl_err *err)
{
    int32_t *ids = NULL;
    int n_ids = 0;
    if (prompt_from_line(tok, line, len, &ids, &n_ids, err)) {
        free(ids);
        return -1;
    }
    rl_gen_prompt *prompts = malloc((size_t)o->n_samples * sizeof *prompts);
    rl_gen_result *results = calloc((size_t)o->n_samples, sizeof *results);
    int rc = -1;
    if (!prompts || !results) {
        rl_err_oom(err, "requests", (size_t)o->n_samples * sizeof *results);
    } else {
        for (int j = 0; j < o->n_samples; j++) prompts[j] = (rl_gen_prompt){.ids = ids, .n_ids = n_ids};
        rl_gen_params params = o->params;
        params.seed += (uint64_t)request;
        rc = rl_engine_generate(engine, prompts, o->n_samples, &params, results, NULL, NULL, err);
        for (int j = 0; j < o->n_samples; j++) {
            if (!rc) print_result(request, j, &results[j]);
            rl_gen_result_free(&results[j]);
        }
    }
    free(results);
    free(prompts);
    free(ids);
    return rc;
}

int rl_cmd_generate(int argc, char **argv)
{
    options o;
    int status = parse_args(&o, argc, argv);
    if (status) return status < 0 ? 0 : status;

    rl_err err = {{0}};
    char default_tok[4096];
    if (!o.tokenizer && !rl_path_join(default_tok, sizeof default_tok, o.model_dir, "tokenizer.json") &&
        rl_file_exists(default_tok))
        o.tokenizer = default_tok;
    if (o.params.n_stop > 0 && !o.tokenizer) {
        fprintf(stderr, "rlc generate: --stop needs a tokenizer (--tokenizer FILE)\n");
        return 2;
    }
    rl_ctx ctx;
    rl_model model;
    rl_tokenizer *tok = NULL;
    rl_engine *engine = NULL;
    if (rl_backend_opt_ctx(&ctx, o.device, &err)) {
        fprintf(stderr, "rlc generate: %s\n", err.msg);
        return 2;
    }
    if (rl_model_load(&model, &ctx, o.model_dir, &err)) {
        fprintf(stderr, "rlc generate: %s\n", err.msg);
        rl_ctx_free(&ctx);
        return 1;
    }
    if ((o.tokenizer && rl_tok_load(&tok, o.tokenizer, &err)) || rl_engine_create(&engine, &model, tok, NULL, &err)) {
        fprintf(stderr, "rlc generate: %s\n", err.msg);
        status = 1;
        goto done;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long request = 0;
    for (long no = 1; (len = getline(&line, &cap, stdin)) >= 0; no++) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (len == 0) continue;
        if (run_request(engine, tok, &o, request, line, (size_t)len, &err)) {
            fprintf(stderr, "rlc generate: stdin line %ld: %s\n", no, err.msg);
            cJSON *obj = cJSON_CreateObject();
            cJSON_AddNumberToObject(obj, "request", (double)request);
            cJSON_AddStringToObject(obj, "error", err.msg);
            print_json(obj);
            status = 1;
        }
        request++;
        fflush(stdout);
    }
    if (ferror(stdin)) {
        fprintf(stderr, "rlc generate: cannot read stdin: %s\n", strerror(errno));
        status = 1;
    }
    free(line);
done:
    rl_engine_free(engine);
    if (tok) rl_tok_free(tok);
    rl_model_free(&model);
    rl_ctx_free(&ctx);
    return status;
}
