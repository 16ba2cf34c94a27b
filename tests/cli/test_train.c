/* test_train.c — `rlc sft` and `rlc grpo` end to end on the tiny fixture architecture with
 * the demo tokenizer: a run writes an HF checkpoint and metrics, --resume continues and appends,
 * Ctrl-C (SIGINT) stops after the current step with a checkpoint and exit status 130, and bad
 * options are refused with a message naming them. Runs $BUILD/rlc (tests/run.sh sets BUILD). */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/ctx.h"
#include "core/file.h"
#include "io/json.h"
#include "io/tokenizer.h"
#include "model/model.h"
#include "train/checkpoint.h"
#include "test_util.h"

static char tmp[64], model[128], sft_data[128], rl_data[128], rlc[256];

static void setup(void)
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

static void teardown(void)
{
    rl_err err;
    rl_remove_tree(tmp, &err);
}

/* Runs a shell command line; returns its exit status, output in out. */
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

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

TestSuite(cli_train, .init = setup, .fini = teardown);

Test(cli_train, sft_run_and_resume)
{
    char out[8192], path[256];
    int rc = sh(out, sizeof out, "%s sft --model %s --data %s --out %s/sft --steps 3 --max-tokens 64 --lr 1e-3 --device cpu",
                rlc, model, sft_data, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "model saved to"), "%s", out);
    snprintf(path, sizeof path, "%s/sft/metrics.jsonl", tmp);
    cr_assert_eq(count_lines(path), 3);
    const char *files[] = {"config.json", "model.safetensors", "tokenizer.json", "optimizer.safetensors", "trainer_state.json"};
    for (int i = 0; i < 5; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s/sft/model/%s", tmp, files[i]);
        cr_assert(rl_file_exists(p), "missing %s", p);
    }
    /* resume: the saved options come back; only --steps changes */
    rc = sh(out, sizeof out, "%s sft --resume %s/sft/model --out %s/sft --steps 5", rlc, tmp, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "from step 3"), "%s", out);
    cr_assert_eq(count_lines(path), 5);
}

Test(cli_train, grpo_interrupted_saves_and_exits_130)
{
    char metrics[256], ckpt[256];
    snprintf(metrics, sizeof metrics, "%s/grpo/metrics.jsonl", tmp);
    snprintf(ckpt, sizeof ckpt, "%s/grpo/model", tmp);
    pid_t pid = fork();
    if (pid == 0) {
        char out_dir[256];
        snprintf(out_dir, sizeof out_dir, "%s/grpo", tmp);
        freopen("/dev/null", "w", stdout);
        execl(rlc, "rlc", "grpo", "--model", model, "--data", rl_data, "--out", out_dir, "--reward", "math",
              "--steps", "100000", "--prompts-per-step", "2", "--group-size", "2", "--max-new-tokens", "3",
              "--device", "cpu", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 600 && count_lines(metrics) < 1; i++) usleep(50000);
    cr_assert(count_lines(metrics) >= 1, "no step finished within 30 s");
    kill(pid, SIGINT);
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "status %d", st);
    rl_train_state s;
    rl_err err;
    cr_assert_eq(rl_checkpoint_load_state(ckpt, &s, NULL, &err), 0, "%s", err.msg);
    cr_assert(s.step >= 1 && s.step == count_lines(metrics), "checkpoint step %lld, %d metric lines",
              (long long)s.step, count_lines(metrics));
}

/* --deterministic: every step's train-vs-rollout mismatch is exactly 0; --tis-cap adds the
 * importance weights' mean to the metrics. */
Test(cli_train, grpo_deterministic_mismatch_and_tis_in_metrics)
{
    char out[8192], path[256];
    int rc = sh(out, sizeof out,
                "%s grpo --model %s --data %s --out %s/det --reward math --steps 2 --prompts-per-step 2 --group-size 2 "
                "--max-new-tokens 4 --device cpu --deterministic --tis-cap 2",
                rlc, model, rl_data, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    snprintf(path, sizeof path, "%s/det/metrics.jsonl", tmp);
    char *text;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0, "%s", err.msg);
    int lines = 0;
    for (char *line = text; *line; lines++) {
        char *end = strchr(line, '\n');
        cJSON *j = rl_json_parse(line, end ? (size_t)(end - line) : strlen(line), path, &err);
        cr_assert(j, "%s", err.msg);
        cr_assert_eq(cJSON_GetObjectItem(j, "rollout_logp_diff_max")->valuedouble, 0.0, "line %d: %s", lines, line);
        cr_assert_eq(cJSON_GetObjectItem(j, "rollout_logp_diff_mean")->valuedouble, 0.0);
        cr_assert_eq(cJSON_GetObjectItem(j, "tis_weight_mean")->valuedouble, 1.0);
        cJSON_Delete(j);
        line = end ? end + 1 : line + strlen(line);
    }
    cr_assert_eq(lines, 2);
    free(text);
}

Test(cli_train, bad_options)
{
    char out[16384]; /* grpo --help is several KiB */
    cr_assert_eq(sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/x --reward maths", rlc, model, rl_data, tmp), 1);
    cr_assert(strstr(out, "rlc grpo: unknown reward 'maths'"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/x", rlc, model, rl_data, tmp), 2);
    cr_assert(strstr(out, "--reward") && strstr(out, "required"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s sft --model %s --data %s --out %s/x --steps many", rlc, model, sft_data, tmp), 2);
    cr_assert(strstr(out, "--steps must be an integer in [0, 1000000000000], got 'many'"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s sft --model %s --data %s --out %s/x --lr nan", rlc, model, sft_data, tmp), 2);
    cr_assert(strstr(out, "--lr must be a number in [0, 10], got 'nan'"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/x --reward math --temperature 1e999", rlc,
                    model, rl_data, tmp), 2);
    cr_assert(strstr(out, "--temperature must be a number in [0.0001, 1000000], got '1e999'"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s sft --model %s --data %s/none.jsonl --out %s/x", rlc, model, tmp, tmp), 1);
    cr_assert(strstr(out, "none.jsonl"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s grpo --help", rlc), 0);
    cr_assert(strstr(out, "--kl-beta") && strstr(out, "--variant"), "%s", out);
}
