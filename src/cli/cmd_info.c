/* cmd_info.c — `rlc info MODEL_DIR`: what a Hugging Face checkpoint is and what it needs.
 *
 * Loads config.json and the safetensors files the way training does (every header validated,
 * every tensor the config implies present with its shape, nothing else), then prints the
 * architecture, sizes, parameter count, tensors per stored dtype, the files, the chat template
 * family (io/chat.h) or why there is none, what CUDA computes in under --precision auto
 * (backend/ctx.h), and the memory the weights need in bf16 and for full training. Any problem: the message on stderr, exit 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/ctx.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/file.h"
#include "io/chat.h"
#include "io/config.h"
#include "io/safetensors.h"

/* Bytes per parameter for full fine-tuning with AdamW: bf16 working weights (2), fp32 master
 * weights (4), fp32 gradients (4), fp32 first and second moments (4 + 4). */
#define TRAIN_BYTES_PER_PARAM 18

#define STRINGIFY(x) #x
#define TEXT(x) STRINGIFY(x)

static const char usage[] =
    "usage: rlc info MODEL_DIR\n\n"
    "Checks a Hugging Face model directory (config.json, model.safetensors or\n"
    "model.safetensors.index.json + shards) and describes it: architecture, sizes, parameter\n"
    "count, tensors per dtype, files, the chat template family (docs/chat.md), and memory for the\n"
    "weights (bf16) and for training (bf16 weights + fp32 master + fp32 grads + AdamW m, v =\n"
    TEXT(TRAIN_BYTES_PER_PARAM) " bytes per parameter, without activations or KV cache). Exits 1 with a\n"
    "message naming the file and the problem if anything is missing or inconsistent.\n\n";

static const char *human(double bytes, char *buf, size_t size)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) bytes /= 1024, u++;
    snprintf(buf, size, u ? "%.2f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void print_config(const rl_model_config *c)
{
    printf("architecture   %s (model_type %s)\n", c->architecture, c->model_type);
    printf("layers         %d\n", c->n_layers);
    printf("hidden         %d, intermediate %d (SwiGLU)\n", c->hidden_size, c->intermediate_size);
    printf("attention      %d query heads, %d key/value heads, head_dim %d%s%s\n", c->n_heads, c->n_kv_heads,
           c->head_dim, c->qk_norm ? ", q/k RMSNorm" : "", c->attention_bias ? ", q/k/v biases" : "");
    printf("vocab          %d (%s embeddings)\n", c->vocab_size, c->tie_word_embeddings ? "tied" : "untied");
    printf("positions      %d, rope_theta %g", c->max_position_embeddings, c->rope_theta);
    if (c->rope_scaling.type == RL_ROPE_LLAMA3)
        printf(", llama3 scaling (factor %g, low %g, high %g, original %d)", c->rope_scaling.factor,
               c->rope_scaling.low_freq_factor, c->rope_scaling.high_freq_factor,
               c->rope_scaling.original_max_position_embeddings);
    printf("\nrms_norm_eps   %g\n", c->rms_norm_eps);
    printf("tokens         bos ");
    if (c->bos_token_id >= 0) printf("%d", c->bos_token_id);
    else printf("none");
    printf(", eos");
    for (int i = 0; i < c->n_eos; i++) printf(" %d", c->eos_token_ids[i]);
    if (c->n_eos == 0) printf(" none");
    printf("\ntorch_dtype    %s\n", rl_dtype_name(c->torch_dtype));
}

static void print_tensors(const rl_safetensors *st)
{
    int count[3] = {0};
    size_t bytes[3] = {0};
    for (int i = 0; i < rl_safetensors_count(st); i++) {
        const rl_st_tensor *t = rl_safetensors_at(st, i);
        count[t->dtype]++;
        bytes[t->dtype] += t->n_bytes;
    }
    char h[32];
    printf("tensors        %d\n", rl_safetensors_count(st));
    const rl_dtype order[3] = {RL_BF16, RL_F16, RL_F32};
    for (int k = 0; k < 3; k++) {
        rl_dtype d = order[k];
        if (count[d])
            printf("  %-4s         %d tensors, %zu bytes (%s)\n", rl_dtype_name(d), count[d], bytes[d],
                   human((double)bytes[d], h, sizeof h));
    }
    printf("files          %d\n", rl_safetensors_n_files(st));
    for (int i = 0; i < rl_safetensors_n_files(st); i++) {
        struct stat sb;
        const char *path = rl_safetensors_file(st, i);
        long long size = stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
        printf("  %s  %lld bytes (%s)\n", base_name(path), size, human((double)size, h, sizeof h));
    }
}

static int run(const char *dir)
{
    rl_err err = {{0}};
    char path[4096];
    if (rl_path_join(path, sizeof path, dir, "config.json")) {
        fprintf(stderr, "rlc info: %s: path too long\n", dir);
        return RL_EXIT_FAILURE;
    }
    rl_model_config cfg;
    if (rl_config_load(&cfg, path, &err)) {
        fprintf(stderr, "rlc info: %s\n", err.msg);
        return RL_EXIT_FAILURE;
    }
    rl_safetensors *st;
    if (rl_safetensors_open_dir(&st, dir, &err)) {
        fprintf(stderr, "rlc info: %s\n", err.msg);
        return RL_EXIT_FAILURE;
    }
    rl_tensor_spec *specs = NULL;
    int n_specs = 0;
    if (rl_config_tensor_specs(&cfg, &specs, &n_specs, &err) || rl_safetensors_check_specs(st, specs, n_specs, &err)) {
        fprintf(stderr, "rlc info: %s: %s\n", dir, err.msg);
        free(specs);
        rl_safetensors_close(st);
        return RL_EXIT_FAILURE;
    }
    free(specs);
    int64_t n_params = rl_config_param_count(&cfg);
    char h1[32], h2[32];
    printf("model          %s\n", dir);
    print_config(&cfg);
    double p = (double)n_params;
    printf("parameters     %lld (%.2f %s)\n", (long long)n_params, p >= 1e9 ? p / 1e9 : p >= 1e6 ? p / 1e6 : p / 1e3,
           p >= 1e9 ? "B" : p >= 1e6 ? "M" : "K");
    printf("cuda compute   %s (--precision auto: fp32 below %dM parameters, bf16 above; the CPU computes in fp32)\n",
           n_params < RL_FP32_AUTO_MAX_PARAMS ? "fp32" : "bf16", RL_FP32_AUTO_MAX_PARAMS / 1000000);
    print_tensors(st);
    rl_chat_template chat;
    if (rl_chat_template_load(&chat, dir, &err) == 0) printf("chat template  %s\n", rl_chat_family_name(chat.family));
    else printf("chat template  none: %s\n", err.msg);
    printf("memory         weights in bf16: %s; training: %s (%d bytes/param: bf16 weights, fp32 master,\n"
           "               fp32 grads, AdamW m and v; activations and KV cache not included)\n",
           human(2.0 * (double)n_params, h1, sizeof h1), human((double)TRAIN_BYTES_PER_PARAM * (double)n_params, h2, sizeof h2),
           TRAIN_BYTES_PER_PARAM);
    rl_safetensors_close(st);
    return RL_EXIT_OK;
}

int rl_cmd_info(int argc, char **argv)
{
    const char *dir = NULL;
    rl_opt list[] = {
        RL_OPT_P("MODEL_DIR", &dir, "the model directory to check", .flags = RL_OPT_REQUIRED),
        RL_OPT_END,
    };
    rl_opts cli = {.cmd = "info", .usage = usage, .list = list};
    int status = rl_opts_parse(&cli, argc, argv);
    if (status == RL_OPTS_CONTINUE) status = run(dir);
    rl_opts_free(&cli);
    return status;
}
