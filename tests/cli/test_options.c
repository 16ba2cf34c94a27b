/* test_options.c — the option parser every command shares (src/cli/options.c), through the
 * built binary ($BUILD/rlc): both value forms, flags and --no-flags, --config files and their
 * order against the command line, ranges, choices, repeatable and positional arguments,
 * required options, and --help listing each option with its default and range. Usage errors
 * exit with status 2 and one message format. */
#include <unistd.h>

#include "run_rlc.h"
#include "test_util.h"

#define TOK "tests/fixtures/tokenizer/flags_tokenizer.json"
#define MODEL "tests/fixtures/models/qwen3-tiny-tied"

/* Runs rlc with args and input; returns the exit status, stdout in *out and stderr in *errors. */
static int rlc(const char *args, const char *input, char **out, char **errors)
{
    int status;
    *out = tu_run_rlc(args, input, &status, errors);
    return status;
}

static char *write_config(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/rlc-test-options-%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
    return path;
}

Test(options, forms_and_config_order)
{
    char *out, *err, args[512];
    cr_assert_eq(rlc("tokenize --tokenizer=" TOK " --json", "hi", &out, &err), 0, "%s", err);
    cr_expect(out[0] == '[', "--json as a flag: %s", out);
    free(out), free(err);
    cr_assert_eq(rlc("tokenize --tokenizer " TOK " --json=false", "hi", &out, &err), 0, "%s", err);
    cr_expect(out[0] != '[', "--json=false: %s", out);
    free(out), free(err);
    /* the config sets both; a later --no-json wins over it, an earlier --json loses to it */
    const char *cfg = write_config("{\"tokenizer\": \"" TOK "\", \"json\": true}");
    snprintf(args, sizeof args, "tokenize --config %s --no-json", cfg);
    cr_assert_eq(rlc(args, "hi", &out, &err), 0, "%s", err);
    cr_expect(out[0] != '[', "%s", out);
    free(out), free(err);
    cfg = write_config("{\"tokenizer\": \"" TOK "\", \"json\": false}");
    snprintf(args, sizeof args, "tokenize --json --config=%s", cfg);
    cr_assert_eq(rlc(args, "hi", &out, &err), 0, "%s", err);
    cr_expect(out[0] != '[', "%s", out);
    free(out), free(err);
    unlink(cfg);
}

Test(options, usage_errors_have_one_format)
{
    const char *cfg = write_config("{\"model\": \"" MODEL "\", \"max_tokens\": 0}");
    char with_config[256];
    snprintf(with_config, sizeof with_config, "generate --config %s", cfg);
    const char *cases[][2] = {
        {"generate --model " MODEL " --n 0", "rlc generate: --n must be an integer in [1, 1000000], got '0'"},
        {"generate --model " MODEL " --min-p 1.5", "rlc generate: --min-p must be a number in [0, 1], got '1.5'"},
        {"generate --model " MODEL " --device tpu", "rlc generate: --device must be cpu, cuda or auto, got 'tpu'"},
        {"generate --model " MODEL " --top-k", "rlc generate: --top-k needs a value"},
        {"generate --model " MODEL " --no-top-k", "rlc generate: unknown option '--no-top-k' (see --help)"},
        {"generate --model " MODEL " extra", "rlc generate: unexpected argument 'extra' (see --help)"},
        {"generate", "rlc generate: --model DIR is required (see --help)"},
        {"info", "rlc info: MODEL_DIR is required (see --help)"},
        {"info a b", "rlc info: unexpected argument 'b' (see --help)"},
        {"tokenize --tokenizer " TOK " --json=maybe", "rlc tokenize: --json is a flag (true or false), got 'maybe'"},
        {"sft --data x --out y", "rlc sft: --model (or --resume) is required"},
        {"grpo --model m --data x --out y --reward math --variant ppo",
         "rlc grpo: --variant must be grpo, dapo, dr_grpo, rloo or reinforce_pp, got 'ppo'"},
        {"grpo --model m --data x --out y --reward math --schedule cosin",
         "rlc grpo: --schedule must be constant, linear or cosine, got 'cosin'"},
        {"kernel-eval --gpus 17", "rlc kernel-eval: --gpus must be 0 or an integer in [1, 16], got '17'"},
        {"demo --held-out 0", "rlc demo: --held-out must be an integer in [1, 1073741824], got '0'"},
        {"demo --precision fp16", "rlc demo: --precision must be auto, bf16 or fp32, got 'fp16'"},
        {"demo --device cpu --precision bf16",
         "rlc demo: --precision bf16: the CPU backend computes in fp32 only (bf16 needs --device cuda)"},
        {"report", "rlc report: RUN_DIR is required (see --help)"},
        {"report a -o", "rlc report: -o needs a value"},
        {"report a -x y", "rlc report: unknown option '-x' (see --help)"},
        {"report a -o b --reward-errors zero", "rlc report: unknown option '--reward-errors' (see --help)"},
        {with_config, "--max-tokens must be an integer in [1, 1000000000], got '0'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out, *err;
        int status = rlc(cases[i][0], "", &out, &err);
        cr_expect_eq(status, 2, "%s: status %d", cases[i][0], status);
        cr_expect(strstr(err, cases[i][1]), "%s: stderr '%s' lacks '%s'", cases[i][0], err, cases[i][1]);
        free(out), free(err);
    }
    char *out, *err, want[128];
    snprintf(want, sizeof want, "rlc generate: %s: --max-tokens must be", cfg);
    cr_expect_eq(rlc(with_config, "", &out, &err), 2);
    cr_expect(strstr(err, want), "a config file's error names the file: %s", err);
    free(out), free(err);
    unlink(cfg);
}

Test(options, repeated_values_and_help)
{
    char *out, *err;
    /* 17 --stop values: one more than the list holds */
    char args[1024] = "generate --model " MODEL;
    for (int i = 0; i < 17; i++) strcat(args, " --stop x");
    cr_expect_eq(rlc(args, "", &out, &err), 2);
    cr_expect(strstr(err, "at most 16 --stop values"), "%s", err);
    free(out), free(err);
    /* every command's help comes from its table: each option with its default and range */
    const char *commands[] = {"generate", "logprobs", "tokenize", "info", "demo", "kernel-eval", "sft", "grpo", "report"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "%s --help", commands[i]);
        cr_expect_eq(rlc(cmd, "", &out, &err), 0, "%s", cmd);
        cr_expect(strstr(out, "usage: rlc ") && strstr(out, "--config FILE.json"), "%s: %s", cmd, out);
        free(out), free(err);
    }
    /* a later source's values of a repeatable option replace an earlier one's */
    const char *cfg = write_config("{\"stop\": [\"a\", \"b\"]}");
    char with_config[256];
    snprintf(with_config, sizeof with_config, "grpo --stop x --config %s --help", cfg);
    cr_expect_eq(rlc(with_config, "", &out, &err), 0);
    cr_expect(strstr(out, "(repeatable) [a, b]"), "%s", out);
    free(out), free(err);
    snprintf(with_config, sizeof with_config, "grpo --config %s --stop c --stop d --help", cfg);
    cr_expect_eq(rlc(with_config, "", &out, &err), 0);
    cr_expect(strstr(out, "(repeatable) [c, d]"), "%s", out);
    free(out), free(err);
    unlink(cfg);
    cr_expect_eq(rlc("sft --help", "", &out, &err), 0);
    cr_expect(strstr(out, "--schedule constant|linear|cosine") && strstr(out, "[cosine]"), "%s", out);
    cr_expect(strstr(out, "--grad-accum N") && strstr(out, "[1; [1, 1048576]]"), "%s", out);
    free(out), free(err);
    /* a positional that takes the rest (at most 16) and a one-letter alias */
    cr_expect_eq(rlc("report --help", "", &out, &err), 0);
    cr_expect(strstr(out, "RUN_DIR ...") && strstr(out, "-o, --out FILE") && strstr(out, "[report.html]"), "%s", out);
    free(out), free(err);
    char many[256] = "report";
    for (int i = 0; i < 17; i++) strcat(many, " d");
    cr_expect_eq(rlc(many, "", &out, &err), 2);
    cr_expect(strstr(err, "at most 16 RUN_DIR values"), "%s", err);
    free(out), free(err);
    cr_expect_eq(rlc("report /nonexistent/a -o /nonexistent/r.html /nonexistent/b", "", &out, &err), 1);
    cr_expect(strstr(err, "rlc report: /nonexistent/a: no such run directory"), "positionals around -o: %s", err);
    free(out), free(err);
}
