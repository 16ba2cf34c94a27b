/* cmd_generate.c — `rlc generate`: completions for every request line of stdin, generated
 * together by the engine (an offline batch, like vLLM's LLM.generate), on the CPU or a GPU.
 *
 * Each stdin line is one request: {"prompt_ids": [...]}, {"prompt": "text"} or {"messages":
 * [{"role": ..., "content": ...}, ...]} (parsed by io/dataset.c), optionally with its own
 * sampling parameters (max_tokens, temperature, top_p, top_k, min_p, n, seed, stop,
 * ignore_eos), which override the command line for that request. Request k gets n completions,
 * written one JSON line each: {"request": k, "sample": j, "ids": [...], "text": "...",
 * "logprobs": [...], "finish_reason": "eos" | "stop" | "length"} (no "text" without a
 * tokenizer), in input order, or as each finishes with --stream. Request k draws with seed
 * --seed + k (or its own seed) and sample j as its Philox row, so a completion does not depend
 * on the other lines. A bad request gets {"request": k, "error": ...}, is reported on stderr
 * with its line number, and makes the exit status 1; the others still run. */
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
    "Generates completions with a Hugging Face model for all input lines together. Each line is one of\n"
    "  {\"prompt_ids\": [token ids]}   {\"prompt\": \"text\"}   {\"messages\": [{\"role\": .., \"content\": ..}]}\n"
    "(messages are rendered by the model's chat template with the assistant prompt, a line's\n"
    "\"tools\" included, --thinking; see docs/chat.md), and may set its own max_tokens, temperature,\n"
    "top_p, top_k, min_p, n, seed, stop (a string or a list) and ignore_eos. Each completion is one\n"
    "output line {\"request\", \"sample\", \"ids\", \"text\", \"logprobs\", \"finish_reason\"}, in input\n"
    "order (--stream: as each finishes). Request k samples with seed --seed + k unless it sets its\n"
    "own. Without a tokenizer only prompt_ids are accepted and no text\n"
    "is written.\n\n";

typedef struct options {
    const char *model_dir, *tokenizer;
    int device, precision, stream, thinking_off;
    rl_gen_params params;
    rl_opt_list stop;
    int n_samples;
    rl_engine_options engine;
} options;

/* One stdin line: its prompt, parameters and place in the engine call. */
typedef struct request {
    long line;
    rl_request req; /* keeps the line's stop strings */
    int32_t *ids;
    int n_ids, n, first;
    rl_gen_params params;
    char *error;       /* the line could not be read */
    int error_printed; /* one error line per request */
} request;

typedef struct run_state {
    request *reqs;
    int n_reqs;
    int *req_of;             /* prompt index -> request */
    unsigned char *printed;  /* prompt index -> its line is out (--stream) */
    int status;
} run_state;

/* Returns RL_OPTS_CONTINUE to go on, or the exit status to return; *cli keeps the strings of a
 * --config file (the caller frees it; its table is gone with this frame). */
static int parse_args(options *o, rl_opts *cli, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->params = rl_gen_params_default();
    o->n_samples = 1;
    o->device = RL_DEVICE_AUTO;
    o->engine = rl_engine_options_default();
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
        RL_OPT_F("ignore-eos", &o->params.ignore_eos, "do not stop at end-of-sequence tokens"),
        RL_OPT_F("stream", &o->stream, "write each completion as soon as it finishes"),
        RL_OPT_THINKING(&o->thinking_off),
        RL_OPT_I("max-num-seqs", &o->engine.max_num_seqs, 1, 65536, "sequences generated at once"),
        RL_OPT_I("max-num-batched-tokens", &o->engine.max_num_batched_tokens, 1, 1 << 24,
                 "tokens per engine step (prefill chunks and decoding), >= --max-num-seqs"),
        RL_OPT_D("gpu-memory-utilization", &o->engine.gpu_memory_utilization, 0, 1,
                 "fraction of the free memory the KV cache may take", .range.above_lo = 1),
        RL_OPT_I("max-model-len", &o->engine.max_model_len, 0, 1 << 24,
                 "prompt + completion at most (0 = the model's max_position_embeddings)"),
        RL_OPT_DEVICE(&o->device),
        RL_OPT_PRECISION(&o->precision),
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
    if (rc == RL_OPTS_CONTINUE && o->engine.max_num_batched_tokens < o->engine.max_num_seqs)
        return rl_opts_fail(cli, "--max-num-batched-tokens (%d) must be >= --max-num-seqs (%d)",
                            o->engine.max_num_batched_tokens, o->engine.max_num_seqs);
    return rc;
}

/* The line's prompt ids (malloc'd) and parameters: the command line's with the line's own on top. */
static int read_request(request *q, const options *o, const rl_tokenizer *tok, long k, const char *text, size_t len,
                        rl_err *err)
{
    if (rl_request_parse(&q->req, text, len, RL_REQ_PROMPT | RL_REQ_MESSAGES | RL_REQ_PROMPT_IDS, "input", err))
        return -1;
    rl_request_sampling s;
    if (rl_request_sampling_parse(&q->req, &s, "input", err)) return -1;
    q->params = o->params;
    q->params.seed = o->params.seed + (uint64_t)k;
    q->n = s.has_n ? s.n : o->n_samples;
    if (s.has_max_tokens) q->params.max_new_tokens = s.max_tokens;
    if (s.has_temperature) q->params.sample.temperature = (float)s.temperature;
    if (s.has_top_p) q->params.sample.top_p = (float)s.top_p;
    if (s.has_top_k) q->params.sample.top_k = s.top_k;
    if (s.has_min_p) q->params.sample.min_p = (float)s.min_p;
    if (s.has_seed) q->params.seed = (uint64_t)s.seed;
    if (s.has_ignore_eos) q->params.ignore_eos = s.ignore_eos;
    if (s.has_stop) {
        /* the strings live in the line's JSON, kept with the request */
        const char **stop = malloc((size_t)s.n_stop * sizeof *stop);
        if (!stop) return rl_err_oom(err, "stop strings", (size_t)s.n_stop * sizeof *stop);
        memcpy(stop, s.stop, (size_t)s.n_stop * sizeof *stop);
        q->params.stop = stop;
        q->params.n_stop = s.n_stop;
    }
    if (q->params.n_stop > 0 && !tok) return rl_err_set(err, "stop strings need a tokenizer (--tokenizer FILE)");
    if (q->req.kind == RL_REQ_PROMPT_IDS) {
        q->ids = q->req.ids, q->n_ids = q->req.n_ids, q->req.ids = NULL;
        return 0;
    }
    if (!tok) return rl_err_set(err, "\"prompt\" and \"messages\" need a tokenizer (--tokenizer FILE)");
    if (q->req.kind == RL_REQ_PROMPT) return rl_tok_encode(tok, q->req.prompt, strlen(q->req.prompt), &q->ids, &q->n_ids, err);
    char *chat = NULL;
    rl_chat_options chat_opt = {.add_generation_prompt = 1, .enable_thinking = !o->thinking_off, .tools = q->req.tools};
    int rc = rl_tok_chat_format(tok, q->req.messages, q->req.n_messages, &chat_opt, &chat, err) ||
             rl_tok_encode(tok, chat, strlen(chat), &q->ids, &q->n_ids, err);
    free(chat);
    return rc ? -1 : 0;
}

static void request_free(request *q, const options *o)
{
    if (q->params.stop != o->params.stop) free((void *)q->params.stop);
    rl_request_free(&q->req);
    free(q->ids);
    free(q->error);
}

static void print_json(cJSON *obj)
{
    char *s = cJSON_PrintUnformatted(obj);
    puts(s ? s : "{\"error\": \"out of memory\"}");
    free(s);
    cJSON_Delete(obj);
    fflush(stdout);
}

static void print_error(run_state *st, long k, const char *msg)
{
    if (st->reqs[k].error_printed++) return;
    fprintf(stderr, "rlc generate: stdin line %ld: %s\n", st->reqs[k].line, msg);
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddNumberToObject(obj, "request", (double)k);
    cJSON_AddStringToObject(obj, "error", msg);
    print_json(obj);
    st->status = RL_EXIT_FAILURE;
}

/* One completion's line, or its request's error (once per request). */
static void print_result(run_state *st, long k, int sample, const rl_gen_result *r)
{
    if (r->error) {
        print_error(st, k, r->error);
        return;
    }
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddNumberToObject(obj, "request", (double)k);
    cJSON_AddNumberToObject(obj, "sample", sample);
    cJSON *ids = cJSON_AddArrayToObject(obj, "ids");
    for (int i = 0; i < r->n_ids; i++) cJSON_AddItemToArray(ids, cJSON_CreateNumber(r->ids[i]));
    if (r->text) cJSON_AddStringToObject(obj, "text", r->text);
    cJSON_AddItemToObject(obj, "logprobs", cJSON_CreateFloatArray(r->logprobs, r->n_ids));
    cJSON_AddStringToObject(obj, "finish_reason", rl_finish_name(r->finish));
    print_json(obj);
}

static void on_done(void *user, int index, const rl_gen_result *r)
{
    run_state *st = user;
    int k = st->req_of[index];
    st->printed[index] = 1;
    print_result(st, k, index - st->reqs[k].first, r);
}

/* Reads every stdin line into st->reqs (a bad line keeps its error). */
static int read_stdin(run_state *st, const options *o, const rl_tokenizer *tok)
{
    char *line = NULL;
    size_t cap = 0, n_cap = 0;
    ssize_t len;
    for (long no = 1; (len = getline(&line, &cap, stdin)) >= 0; no++) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (len == 0) continue;
        if ((size_t)st->n_reqs == n_cap) {
            n_cap = n_cap ? 2 * n_cap : 64;
            request *grown = realloc(st->reqs, n_cap * sizeof *grown);
            if (!grown) {
                fprintf(stderr, "rlc generate: out of memory reading stdin\n");
                free(line);
                return -1;
            }
            st->reqs = grown;
        }
        request *q = &st->reqs[st->n_reqs];
        memset(q, 0, sizeof *q);
        q->line = no;
        rl_err err = {{0}};
        if (read_request(q, o, tok, st->n_reqs, line, (size_t)len, &err)) q->error = strdup(err.msg);
        st->n_reqs++;
    }
    free(line);
    if (ferror(stdin)) {
        fprintf(stderr, "rlc generate: cannot read stdin: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

/* All readable requests through one engine call; results printed in input order or streamed. */
static int generate_all(run_state *st, const options *o, rl_engine *engine)
{
    int n = 0;
    for (int k = 0; k < st->n_reqs; k++)
        if (!st->reqs[k].error) st->reqs[k].first = n, n += st->reqs[k].n;
    for (int k = 0; o->stream && k < st->n_reqs; k++)
        if (st->reqs[k].error) print_error(st, k, st->reqs[k].error);
    if (n == 0) return 0;
    rl_gen_prompt *prompts = calloc((size_t)n, sizeof *prompts);
    rl_gen_result *results = calloc((size_t)n, sizeof *results);
    st->req_of = malloc((size_t)n * sizeof *st->req_of);
    st->printed = calloc((size_t)n, 1);
    if (!prompts || !results || !st->req_of || !st->printed) {
        fprintf(stderr, "rlc generate: out of memory for %d completions\n", n);
        free(prompts), free(results);
        return -1;
    }
    for (int k = 0; k < st->n_reqs; k++) {
        const request *q = &st->reqs[k];
        for (int j = 0; !q->error && j < q->n; j++) {
            prompts[q->first + j] = (rl_gen_prompt){.ids = q->ids, .n_ids = q->n_ids, .params = &q->params, .sample = j};
            st->req_of[q->first + j] = k;
        }
    }
    rl_err err = {{0}};
    int rc = rl_engine_generate(engine, prompts, n, &o->params, results, o->stream ? on_done : NULL, st, &err);
    /* in input order; with --stream only what the callback did not get (a failed call) */
    for (int k = 0; k < st->n_reqs; k++) {
        const request *q = &st->reqs[k];
        if (q->error && !o->stream) print_error(st, k, q->error);
        for (int j = 0; !q->error && j < q->n; j++)
            if (!st->printed[q->first + j]) print_result(st, k, j, &results[q->first + j]);
    }
    if (rc) st->status = RL_EXIT_FAILURE;
    for (int i = 0; i < n; i++) rl_gen_result_free(&results[i]);
    free(results);
    free(prompts);
    return 0;
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
    run_state st = {0};
    if ((status = rl_device_ctx("generate", &ctx, o->device, o->precision, 0, 0))) return status;
    if (rl_model_load(&model, &ctx, o->model_dir, &err)) {
        fprintf(stderr, "rlc generate: %s\n", err.msg);
        rl_ctx_free(&ctx);
        return RL_EXIT_FAILURE;
    }
    if ((o->tokenizer && rl_tok_load(&tok, o->tokenizer, &err)) ||
        rl_engine_create(&engine, &model, tok, &o->engine, &err)) {
        fprintf(stderr, "rlc generate: %s\n", err.msg);
        status = RL_EXIT_FAILURE;
        goto done;
    }
    if (read_stdin(&st, o, tok) || generate_all(&st, o, engine)) status = RL_EXIT_FAILURE;
    else status = st.status;
done:
    for (int k = 0; k < st.n_reqs; k++) request_free(&st.reqs[k], o);
    free(st.reqs);
    free(st.req_of);
    free(st.printed);
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
