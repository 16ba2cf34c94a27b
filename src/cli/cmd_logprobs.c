/* cmd_logprobs.c — `rlc logprobs`: per-token log-probs of token sequences under a model.
 *
 * Reads one JSON object {"ids": [...]} per stdin line and writes one {"logprobs": [...]} per
 * line: the log-prob of each token after the first given the tokens before it (n - 1 values,
 * from the model's forward, logits divided by --temperature; fp32 on the CPU, bf16 activations
 * with fp32 log-softmax on CUDA, chosen by --device). A bad line gets
 * {"error": ...} in its place (output lines stay aligned with input lines), is reported on
 * stderr with its line number, and makes the exit status 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ctx.h"
#include "cli/commands.h"
#include "cli/device.h"
#include "cli/options.h"
#include "io/dataset.h"
#include "io/json.h"
#include "model/model.h"

static const char usage[] =
    "usage: rlc logprobs --model DIR [options] < requests.jsonl\n\n"
    "Scores token sequences with a Hugging Face model (config.json + safetensors).\n"
    "Each input line is {\"ids\": [token ids]}; each output line is {\"logprobs\": [...]}, the\n"
    "log-prob of every token after the first given the ones before it.\n\n";

static void print_line(const char *key, cJSON *value)
{
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddItemToObject(obj, key, value);
    char *s = cJSON_PrintUnformatted(obj);
    puts(s ? s : "{\"error\": \"out of memory\"}");
    free(s);
    cJSON_Delete(obj);
}

typedef struct scorer {
    rl_model *model;
    rl_acts *acts; /* grown to the longest line so far */
    int capacity;
    float *logp;   /* host */
    float *d_logp; /* backend */
    float inv_temperature;
} scorer;

static int score_line(scorer *s, const char *line, size_t len, rl_err *err)
{
    rl_request req;
    if (rl_request_parse(&req, line, len, RL_REQ_IDS, "input", err)) return -1;
    const int32_t *ids = req.ids;
    int n = req.n_ids, rc = -1;
    /* before the activations grow to n tokens */
    if (n > s->model->config.max_position_embeddings) {
        rl_err_set(err, "\"ids\" has %d tokens, more than the model's max_position_embeddings = %d", n,
                   s->model->config.max_position_embeddings);
        goto done;
    }
    if (n > s->capacity) {
        rl_ctx *ctx = s->model->ctx;
        rl_acts_free(s->acts);
        free(s->logp);
        rl_free(ctx, s->d_logp);
        s->acts = NULL;
        s->capacity = 0;
        s->logp = malloc((size_t)n * sizeof(float));
        s->d_logp = rl_alloc(ctx, (size_t)n * sizeof(float));
        if (!s->logp || !s->d_logp) {
            rl_err_oom(err, "log-probs", (size_t)n * sizeof(float));
            goto done;
        }
        if (rl_acts_create(&s->acts, s->model, n, RL_ACTS_INFER, err)) goto done;
        s->capacity = n;
    }
    int32_t cu[2] = {0, n};
    if (rl_model_forward(s->model, s->acts, ids, cu, 1, s->inv_temperature, s->d_logp, NULL, err)) goto done;
    if (rl_memcpy(s->model->ctx, s->logp, s->d_logp, (size_t)n * sizeof(float), RL_D2H)) {
        rl_ctx_error(s->model->ctx, err);
        goto done;
    }
    print_line("logprobs", cJSON_CreateFloatArray(s->logp + 1, n - 1));
    rc = 0;
done:
    rl_request_free(&req);
    return rc;
}

static int run(const char *dir, int device, int precision, double temperature)
{
    rl_err err = {{0}};
    rl_ctx ctx;
    rl_model model;
    int status = rl_device_ctx("logprobs", &ctx, device, precision, 0, 0);
    if (status) return status;
    if (rl_model_load(&model, &ctx, dir, &err)) {
        fprintf(stderr, "rlc logprobs: %s\n", err.msg);
        rl_ctx_free(&ctx);
        return RL_EXIT_FAILURE;
    }
    scorer s = {.model = &model, .inv_temperature = (float)(1.0 / temperature)};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    for (long no = 1; (len = getline(&line, &cap, stdin)) >= 0; no++) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if (len == 0) continue;
        if (score_line(&s, line, (size_t)len, &err)) {
            fprintf(stderr, "rlc logprobs: stdin line %ld: %s\n", no, err.msg);
            print_line("error", cJSON_CreateString(err.msg));
            status = RL_EXIT_FAILURE;
        }
        fflush(stdout);
    }
    if (ferror(stdin)) {
        fprintf(stderr, "rlc logprobs: cannot read stdin: %s\n", strerror(errno));
        status = RL_EXIT_FAILURE;
    }
    free(line);
    free(s.logp);
    rl_free(&ctx, s.d_logp);
    rl_acts_free(s.acts);
    rl_model_free(&model);
    rl_ctx_free(&ctx);
    return status;
}

int rl_cmd_logprobs(int argc, char **argv)
{
    const char *dir = NULL;
    int device = RL_DEVICE_AUTO, precision = RL_PRECISION_AUTO;
    double temperature = 1.0;
    rl_opt list[] = {
        RL_OPT_S("model", &dir, "DIR", "model directory", .flags = RL_OPT_REQUIRED),
        RL_OPT_D("temperature", &temperature, 1e-4, 1e6, "divide the logits by T before the softmax"),
        RL_OPT_DEVICE(&device),
        RL_OPT_PRECISION(&precision),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "logprobs", .usage = usage, .list = list};
    int status = rl_opts_parse(&cli, argc, argv);
    if (status == RL_OPTS_CONTINUE) status = run(dir, device, precision, temperature);
    rl_opts_free(&cli);
    return status;
}
