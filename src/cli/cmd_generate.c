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

#include "cli/commands.h"
#include "cli/device.h"
#include "cli/options.h"
#include "core/file.h"
#include "engine/generate.h"
#include "io/dataset.h"
#include "io/json.h"

static const char usage[] =
    "usage: rlc generate --model DIR [options] < requests.jsonl\n\n"
    "Generates completions with a Hugging Face model. Each input line is one of\n"
    "  {\"prompt_ids\": [token ids]}   {\"prompt\": \"text\"}   {\"messages\": [{\"role\": .., \"content\": ..}]}\n"
    "(messages use the Qwen chat format plus the assistant prompt). Each completion is one\n"
    "output line {\"request\", \"sample\", \"ids\", \"text\", \"logprobs\", \"finish_reason\"}.\n"
    "Request k samples with seed --seed + k. Without a tokenizer only prompt_ids are accepted and\n"
    "no text is written.\n\n";

typedef struct options {
    const char *model_dir, *tokenizer;
    int device;
    rl_gen_params params;
    rl_opt_list stop;
    int n_samples;
} options;

/* Returns RL_OPTS_CONTINUE to go on, or the exit status to return; *cli keeps the strings of a
 * --config file (the caller frees it; its table is gone with this frame). */
static int parse_args(options *o, rl_opts *cli, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->params = rl_gen_params_default();
    o->n_samples = 1;
    o->device = RL_DEVICE_AUTO;
    double temperature = o->params.sample.temperature, top_p = o->params.sample.top_p, min_p = o->params.sample.min_p;
    int64_t seed = (int64_t)o->params.seed;
    rl_opt list[] = {
        RL_OPT_S("model", &o->model_dir, "DIR", "model directory", .flags = RL_OPT_REQUIRED),
        RL_OPT_S("tokenizer", &o->tokenizer, "FILE", "tokenizer.json (default: DIR/tokenizer.json when there is one)"),
        RL_OPT_D("temperature", &temperature, 1e-4, 1e6, "sampling temperature, 0 = greedy", .range.or_zero = 1),
        RL_OPT_I("top-k", &o->params.sample.top_k, 0, 1000000000, "keep the K most likely tokens (0 = off)"),
        RL_OPT_D("top-p", &top_p, 0, 1, "nucleus sampling (1 = off)", .range.above_lo = 1),
        RL_OPT_D("min-p", &min_p, 0, 1, "drop tokens below P times the top probability (0 = off)"),
        RL_OPT_I("max-tokens", &o->params.max_new_tokens, 1, 1000000000, "new tokens per completion at most"),
        RL_OPT_L("seed", &seed, 0, 1e15, "request k samples with seed S + k"),
        RL_OPT_LST("stop", &o->stop, "STR", "stop when STR appears in the text; the text ends before it (repeatable)"),
        RL_OPT_I("n", &o->n_samples, 1, 1000000, "completions per request"),
        RL_OPT_DEVICE(&o->device),
        RL_OPT_END,
    };
    *cli = (rl_opts){.cmd = "generate", .usage = usage, .list = list};
    int rc = rl_opts_parse(cli, argc, argv);
    o->params.sample.temperature = (float)temperature;
    o->params.sample.top_p = (float)top_p;
    o->params.sample.min_p = (float)min_p;
    o->params.seed = (uint64_t)seed;
    o->params.stop = o->stop.items;
    o->params.n_stop = o->stop.n;
    return rc;
}

/* One request line -> its prompt ids (malloc'd). */
static int prompt_from_line(const rl_tokenizer *tok, const char *line, size_t len, int32_t **ids, int *n,
                            rl_err *err)
{
    *ids = NULL;
    rl_request req;
    if (rl_request_parse(&req, line, len, RL_REQ_PROMPT | RL_REQ_MESSAGES | RL_REQ_PROMPT_IDS, "input", err)) return -1;
    char *text = NULL;
    int rc = -1;
    if (req.kind == RL_REQ_PROMPT_IDS) {
        *ids = req.ids, *n = req.n_ids, req.ids = NULL;
        rc = 0;
    } else if (!tok) {
        rl_err_set(err, "\"prompt\" and \"messages\" need a tokenizer (--tokenizer FILE)");
    } else if (req.kind == RL_REQ_PROMPT) {
        rc = rl_tok_encode(tok, req.prompt, strlen(req.prompt), ids, n, err);
    } else if (!rl_tok_chat_format(req.messages, req.n_messages, 1, &text, err)) {
        rc = rl_tok_encode(tok, text, strlen(text), ids, n, err);
    }
    free(text);
    rl_request_free(&req);
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
        for (int j = 0; j < o->n_samples; j++) prompts[j] = (rl_gen_prompt){ids, n_ids};
        rl_gen_params params = o->params;
        params.seed += (uint64_t)request;
        rc = rl_engine_generate(engine, prompts, o->n_samples, &params, results, err);
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

static int run(options *o)
{
    int status = RL_EXIT_OK;
    rl_err err = {{0}};
    char default_tok[4096];
    if (!o->tokenizer && !rl_path_join(default_tok, sizeof default_tok, o->model_dir, "tokenizer.json") &&
        rl_file_exists(default_tok))
        o->tokenizer = default_tok;
    if (o->params.n_stop > 0 && !o->tokenizer) {
        fprintf(stderr, "rlc generate: --stop needs a tokenizer (--tokenizer FILE)\n");
        return RL_EXIT_USAGE;
    }
    rl_ctx ctx;
    rl_model model;
    rl_tokenizer *tok = NULL;
    rl_engine *engine = NULL;
    if ((status = rl_device_ctx("generate", &ctx, o->device, 0))) return status;
    if (rl_model_load(&model, &ctx, o->model_dir, &err)) {
        fprintf(stderr, "rlc generate: %s\n", err.msg);
        rl_ctx_free(&ctx);
        return RL_EXIT_FAILURE;
    }
    if ((o->tokenizer && rl_tok_load(&tok, o->tokenizer, &err)) || rl_engine_create(&engine, &model, tok, &err)) {
        fprintf(stderr, "rlc generate: %s\n", err.msg);
        status = RL_EXIT_FAILURE;
        goto done;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long request = 0;
    for (long no = 1; (len = getline(&line, &cap, stdin)) >= 0; no++) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (len == 0) continue;
        if (run_request(engine, tok, o, request, line, (size_t)len, &err)) {
            fprintf(stderr, "rlc generate: stdin line %ld: %s\n", no, err.msg);
            cJSON *obj = cJSON_CreateObject();
            cJSON_AddNumberToObject(obj, "request", (double)request);
            cJSON_AddStringToObject(obj, "error", err.msg);
            print_json(obj);
            status = RL_EXIT_FAILURE;
        }
        request++;
        fflush(stdout);
    }
    if (ferror(stdin)) {
        fprintf(stderr, "rlc generate: cannot read stdin: %s\n", strerror(errno));
        status = RL_EXIT_FAILURE;
    }
    free(line);
done:
    rl_engine_free(engine);
    if (tok) rl_tok_free(tok);
    rl_model_free(&model);
    rl_ctx_free(&ctx);
    return status;
}

int rl_cmd_generate(int argc, char **argv)
{
    options o;
    rl_opts cli;
    int status = parse_args(&o, &cli, argc, argv);
    if (status == RL_OPTS_CONTINUE) status = run(&o);
    rl_opts_free(&cli);
    return status;
}
