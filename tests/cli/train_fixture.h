/* train_fixture.h — what the training-command tests share: a temporary directory holding a
 * random model of the tiny fixture architecture with the demo tokenizer (init/), SFT data
 * (sft.jsonl: "a+b=" -> "c") and RL prompts (rl.jsonl), the rlc binary of $BUILD, and helpers
 * to run a shell command and count lines. Tests run from the repository root. */
#ifndef RL_TESTS_CLI_TRAIN_FIXTURE_H
#define RL_TESTS_CLI_TRAIN_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>

#include "backend/ctx.h"
#include "core/file.h"
#include "io/tokenizer.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "test_util.h"

static char tmp[64], model[128], sft_data[128], rl_data[128], rlc[256];

static void tf_setup(void)
{
    const char *b = getenv("BUILD");
    snprintf(rlc, sizeof rlc, "%s/rlc", b ? b : "build");
    snprintf(tmp, sizeof tmp, "/tmp/rlc-cli-XXXXXX");
    cr_assert(mkdtemp(tmp));
    snprintf(model, sizeof model, "%s/init", tmp);
    snprintf(sft_data, sizeof sft_data, "%s/sft.jsonl", tmp);
    snprintf(rl_data, sizeof rl_data, "%s/rl.jsonl", tmp);
    /* a random model with the fixture's architecture and the demo tokenizer's vocabulary */
    rl_err err;
    rl_ctx ctx;
    rl_tokenizer *tok;
    rl_model_config cfg;
    rl_model m;
    cr_assert_eq(rl_ctx_create(&ctx, RL_BACKEND_CPU, 0, &err), 0);
    cr_assert_eq(rl_tok_load(&tok, "examples/demo/tokenizer.json", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_config_load(&cfg, "tests/fixtures/models/qwen3-tiny-tied/config.json", &err), 0, "%s", err.msg);
    cfg.vocab_size = rl_tok_vocab_size(tok);
    cr_assert_eq(rl_model_init_random(&m, &ctx, &cfg, 3, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_model_save(&m, model, RL_F32, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_checkpoint_copy_tokenizer("examples/demo", model, &err), 0, "%s", err.msg);
    rl_model_free(&m);
    rl_tok_free(tok);
    rl_ctx_free(&ctx);
    FILE *f = fopen(sft_data, "w"), *g = fopen(rl_data, "w");
    for (int i = 0; i < 12; i++) {
        fprintf(f, "{\"prompt\": \"%d+%d=\", \"completion\": \"%d\"}\n", i, i + 1, 2 * i + 1);
        fprintf(g, "{\"prompt\": [{\"role\": \"user\", \"content\": \"%d+%d=\"}], \"answer\": %d}\n", i, i + 1, 2 * i + 1);
    }
    fclose(f);
    fclose(g);
}

static void tf_teardown(void)
{
    rl_err err;
    rl_remove_tree(tmp, &err);
}

/* Runs a shell command line; returns its exit status, output (stdout and stderr) in out. */
static int sh(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sh(char *out, size_t size, const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[2200];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* 1 when the two files have the same bytes. */
static inline int same_file(const char *a, const char *b)
{
    char out[256];
    return sh(out, sizeof out, "cmp %s %s", a, b) == 0;
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

#endif
