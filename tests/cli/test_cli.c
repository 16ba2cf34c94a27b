/* test_cli.c — `rlc logprobs` and `rlc generate` end to end (the binary in $BUILD, default
 * build/): log-probs and greedy completions equal transformers' (the model fixtures), bad
 * lines (malformed JSON, ids outside the vocabulary, sequences longer than
 * max_position_embeddings) are reported with their line number and keep the output aligned,
 * bad options and unreadable stdin are refused, completions stop at max_position_embeddings;
 * generate runs all lines together (per-line sampling parameters override the command line,
 * a line's completion is the same as when it runs alone, --stream writes the same lines as they
 * finish); tokenize renders chat lines with the tokenizer's template. */
#include <sys/wait.h>
#include <unistd.h>

#include "core/file.h"
#include "model/model_fixture.h"
#include "run_rlc.h"

static char *read_text(const char *path)
{
    char *text;
    size_t len;
    rl_err err = {{0}};
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0, "%s", err.msg);
    return text;
}

/* The JSON object on output line `line` (0-based). */
static cJSON *output_line(const char *out, int line)
{
    for (int i = 0; i < line; i++) {
        out = strchr(out, '\n');
        cr_assert(out, "output has fewer than %d lines", line + 1);
        out++;
    }
    const char *end = strchr(out, '\n');
    rl_err err = {{0}};
    cJSON *obj = rl_json_parse(out, end ? (size_t)(end - out) : strlen(out), "output", &err);
    cr_assert(obj, "%s", err.msg);
    return obj;
}

Test(cli, logprobs_match_transformers)
{
    model_fixture f;
    mf_load(&f, "qwen3-tiny-untied");
    size_t n;
    float *ref = mf_tensor(&f, "logp", &n);
    /* Line 1: the fixture's second sequence; line 2 is broken; line 3: its first sequence. */
    char input[4096], args[512];
    int at = 0;
    at += snprintf(input + at, sizeof input - at, "{\"ids\": [");
    for (int t = f.cu_seqlens[1]; t < f.cu_seqlens[2]; t++)
        at += snprintf(input + at, sizeof input - at, t > f.cu_seqlens[1] ? ", %d" : "%d", f.tokens[t]);
    at += snprintf(input + at, sizeof input - at, "]}\n{\"ids\": \"oops\"}\n{\"ids\": [");
    for (int t = 0; t < f.cu_seqlens[1]; t++) at += snprintf(input + at, sizeof input - at, t ? ", %d" : "%d", f.tokens[t]);
    snprintf(input + at, sizeof input - at, "]}\n");
    snprintf(args, sizeof args, "logprobs --model %s", f.model_dir);
    int status;
    char *errors, *out = tu_run_rlc(args, input, &status, &errors);
    cr_assert_eq(status, 1, "a bad line makes the status 1");
    cr_assert(strstr(errors, "rlc logprobs: stdin line 2: "), "stderr: %s", errors);
    const int lines[2] = {0, 2}, seqs[2] = {1, 0};
    for (int k = 0; k < 2; k++) {
        cJSON *obj = output_line(out, lines[k]);
        const cJSON *lp = cJSON_GetObjectItem(obj, "logprobs");
        int first = f.cu_seqlens[seqs[k]], len = f.cu_seqlens[seqs[k] + 1] - first;
        cr_assert_eq(cJSON_GetArraySize(lp), len - 1);
        for (int t = 1; t < len; t++) {
            double got = cJSON_GetArrayItem(lp, t - 1)->valuedouble, want = ref[first + t];
            cr_assert(fabs(got - want) <= 1e-4 * fabs(want), "line %d token %d: %.7g, transformers %.7g", lines[k], t, got, want);
        }
        cJSON_Delete(obj);
    }
    cJSON *bad = output_line(out, 1);
    cr_assert(cJSON_GetObjectItem(bad, "error"), "bad line must give an error object");
    cJSON_Delete(bad);
    free(errors);
    free(out);
    free(ref);
    mf_free(&f);
}

Test(cli, generate_greedy_matches_transformers)
{
    model_fixture f;
    mf_load(&f, "llama3-tiny");
    char input[4096], args[512];
    int at = 0;
    for (int i = 0; i < f.n_prompts; i++) {
        at += snprintf(input + at, sizeof input - at, "{\"prompt_ids\": [");
        for (int t = 0; t < f.prompt_len[i]; t++)
            at += snprintf(input + at, sizeof input - at, t ? ", %d" : "%d", f.prompts[i][t]);
        at += snprintf(input + at, sizeof input - at, "]}\n%s", i == 0 ? "{\"prompt\": \"no tokenizer\"}\n" : "");
    }
    snprintf(args, sizeof args, "generate --model %s --temperature 0 --max-tokens %d --n 2", f.model_dir, f.max_new_tokens);
    int status;
    char *errors, *out = tu_run_rlc(args, input, &status, &errors);
    cr_assert_eq(status, 1);
    cr_assert(strstr(errors, "stdin line 2: \"prompt\" and \"messages\" need a tokenizer"), "stderr: %s", errors);
    /* Output: 2 samples of request 0, the error line of request 1, then 2 per request. */
    int line = 0;
    for (int i = 0; i < f.n_prompts; i++) {
        for (int j = 0; j < 2; j++) {
            cJSON *obj = output_line(out, line++);
            const cJSON *ids = cJSON_GetObjectItem(obj, "ids");
            cr_assert_eq(cJSON_GetObjectItem(obj, "sample")->valueint, j);
            cr_assert_eq(cJSON_GetArraySize(ids), f.output_len[i], "prompt %d: %d tokens, transformers %d", i,
                         cJSON_GetArraySize(ids), f.output_len[i]);
            for (int t = 0; t < f.output_len[i]; t++)
                cr_assert_eq(cJSON_GetArrayItem(ids, t)->valueint, f.outputs[i][t], "prompt %d token %d", i, t);
            cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(obj, "logprobs")), f.output_len[i]);
            cJSON_Delete(obj);
        }
        if (i == 0) {
            cJSON *bad = output_line(out, line++);
            cr_assert_eq(cJSON_GetObjectItem(bad, "request")->valueint, 1);
            cr_assert(cJSON_GetObjectItem(bad, "error"));
            cJSON_Delete(bad);
        }
    }
    free(errors);
    free(out);
    mf_free(&f);
}

Test(cli, usage_errors)
{
    int status;
    char *errors;
    free(tu_run_rlc("generate --temperature", "", &status, &errors));
    cr_assert_eq(status, 2);
    free(errors);
    free(tu_run_rlc("logprobs", "", &status, &errors));
    cr_assert_eq(status, 2);
    cr_assert(strstr(errors, "rlc logprobs: --model DIR is required"), "%s", errors);
    free(errors);
    char *help = tu_run_rlc("generate --help", "", &status, &errors);
    cr_assert_eq(status, 0);
    cr_assert(strstr(help, "--top-p"), "%s", help);
    free(help);
    free(errors);
    free(tu_run_rlc("demo-kernel --loss-norm bogus", "", &status, &errors));
    cr_assert_eq(status, 2);
    cr_assert(strstr(errors, "--loss-norm") && strstr(errors, "bogus"), "%s", errors);
    free(errors);
    free(tu_run_rlc("demo-kernel --kl-beta -1", "", &status, &errors));
    cr_assert_eq(status, 2);
    cr_assert(strstr(errors, "--kl-beta"), "%s", errors);
    free(errors);
    free(tu_run_rlc("logprobs --model tests/fixtures/no-such-model", "", &status, &errors));
    cr_assert_eq(status, 1);
    cr_assert(strstr(errors, "rlc logprobs: ") && strstr(errors, "no-such-model"), "%s", errors);
    free(errors);
}

/* Writes `count` ids (i % 500, all in the tiny models' vocabulary) as a JSON array. */
static int ids_text(char *buf, size_t cap, int count)
{
    int at = snprintf(buf, cap, "[");
    for (int i = 0; i < count; i++) at += snprintf(buf + at, cap - (size_t)at, i ? ",%d" : "%d", i % 500);
    return at + snprintf(buf + at, cap - (size_t)at, "]");
}

Test(cli, logprobs_bad_lines_name_the_line)
{
    /* qwen3-tiny-tied: vocab 512, max_position_embeddings 1024 */
    static char input[16384];
    int at = snprintf(input, sizeof input, "{\"ids\": [1, 2, 3]}\n{\"ids\": [1, 512]}\n\n{\"ids\": [1, -4]}\n"
                                           "{\"ids\": [1, 2\n{\"ids\": ");
    at += ids_text(input + at, sizeof input - (size_t)at, 1025);
    snprintf(input + at, sizeof input - (size_t)at, "}\n{\"ids\": []}\n");
    int status;
    char *errors, *out = tu_run_rlc("logprobs --model tests/fixtures/models/qwen3-tiny-tied", input, &status, &errors);
    cr_assert_eq(status, 1);
    const char *want[] = {"stdin line 2: model: token 512 at position 1 is outside the vocabulary [0, 512)",
                          "stdin line 4: input: ids[1] is not a token id", "stdin line 5: input: invalid JSON",
                          "stdin line 6: \"ids\" has 1025 tokens, more than the model's max_position_embeddings = 1024",
                          "stdin line 7: input: field 'ids' is an empty list"};
    for (int i = 0; i < 5; i++) cr_expect(strstr(errors, want[i]), "missing '%s' in stderr: %s", want[i], errors);
    cJSON *good = output_line(out, 0);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(good, "logprobs")), 2);
    cJSON_Delete(good);
    for (int line = 1; line < 6; line++) {
        cJSON *bad = output_line(out, line);
        cr_expect(cJSON_IsString(cJSON_GetObjectItem(bad, "error")), "output line %d is not an error", line);
        cJSON_Delete(bad);
    }
    free(errors);
    free(out);
}

Test(cli, generate_stops_at_max_position_embeddings)
{
    static char input[16384];
    int at = snprintf(input, sizeof input, "{\"prompt_ids\": ");
    at += ids_text(input + at, sizeof input - (size_t)at, 1020);
    at += snprintf(input + at, sizeof input - (size_t)at, "}\n{\"prompt_ids\": ");
    at += ids_text(input + at, sizeof input - (size_t)at, 1024);
    snprintf(input + at, sizeof input - (size_t)at, "}\n{\"prompt_ids\": [7, 512]}\n");
    int status;
    char *errors, *out = tu_run_rlc("generate --model tests/fixtures/models/qwen3-tiny-tied --temperature 0 --max-tokens 30",
                                    input, &status, &errors);
    cr_assert_eq(status, 1);
    cJSON *obj = output_line(out, 0);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(obj, "ids")), 4, "1020 + 4 = max_position_embeddings 1024");
    cr_expect_str_eq(cJSON_GetObjectItem(obj, "finish_reason")->valuestring, "length");
    cJSON_Delete(obj);
    cr_expect(strstr(errors, "stdin line 2: ") && strstr(errors, "the prompt has 1024 tokens, leaving no room for new ones"),
              "stderr: %s", errors);
    cr_expect(strstr(errors, "stdin line 3: ") && strstr(errors, "token 512 at position 1 is outside the vocabulary"),
              "stderr: %s", errors);
    free(errors);
    free(out);
}

Test(cli, bad_options_and_stdin_are_refused)
{
    const char *cases[][2] = {
        {"generate --model tests/fixtures/models/qwen3-tiny-tied --max-tokens 0", "--max-tokens must be an integer in [1, "},
        {"generate --model tests/fixtures/models/qwen3-tiny-tied --n 1.5", "--n must be an integer"},
        {"generate --model tests/fixtures/models/qwen3-tiny-tied --top-p 0", "--top-p must be a number in (0, 1], got '0'"},
        {"generate --model tests/fixtures/models/qwen3-tiny-tied --temperature 1e-30", "--temperature must be 0 or a number in [0.0001, 1000000], got '1e-30'"},
        {"generate --model tests/fixtures/models/qwen3-tiny-tied --bogus 1", "unknown option '--bogus'"},
        {"generate --model tests/fixtures/models/qwen3-tiny-tied --max-num-seqs 64 --max-num-batched-tokens 32",
         "--max-num-batched-tokens (32) must be >= --max-num-seqs (64)"},
        {"generate --model tests/fixtures/models/qwen3-tiny-tied --gpu-memory-utilization 0", "--gpu-memory-utilization must be a number in (0, 1]"},
        {"logprobs --model tests/fixtures/models/qwen3-tiny-tied --temperature 1e-300", "--temperature must be a number in [0.0001, 1000000], got '1e-300'"},
        {"logprobs --model tests/fixtures/models/qwen3-tiny-tied --temperature inf", "--temperature must be a number"},
        {"tokenize --tokenizer tests/fixtures/tokenizer/flags_tokenizer.json --json --jsonl", "exclude each other"},
        {"generate --model tests/fixtures/models/qwen3-tiny-tied --thinking maybe", "--thinking must be"},
        {"grpo --thinking 0", "--thinking must be"},
    };
    int status;
    char err_path[64];
    snprintf(err_path, sizeof err_path, "/tmp/rlc-test-cli-%d.err", (int)getpid());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *errors;
        free(tu_run_rlc(cases[i][0], "", &status, &errors));
        cr_expect_eq(status, 2, "%s: status %d", cases[i][0], status);
        cr_expect(strstr(errors, cases[i][1]), "%s: stderr: %s", cases[i][0], errors);
        free(errors);
    }
    /* stdin that cannot be read (a directory) is an error, not an empty input */
    const char *cmds[] = {"logprobs --model tests/fixtures/models/qwen3-tiny-tied",
                          "generate --model tests/fixtures/models/qwen3-tiny-tied",
                          "tokenize --tokenizer tests/fixtures/tokenizer/flags_tokenizer.json"};
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    for (int i = 0; i < 3; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s/rlc %s < tests > /dev/null 2> %s", build, cmds[i], err_path);
        int rc = system(cmd);
        char *errors = read_text(err_path);
        cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "%s: status %d", cmds[i], rc);
        cr_expect(strstr(errors, "cannot read stdin: Is a directory"), "%s: stderr: %s", cmds[i], errors);
        free(errors);
    }
    unlink(err_path);
}

/* The output lines of one run, one cJSON object each (caller frees). */
static int output_lines(const char *out, cJSON **objs, int max)
{
    int n = 0;
    for (const char *at = out; *at && n < max; n++) {
        const char *end = strchr(at, '\n');
        rl_err err = {{0}};
        objs[n] = rl_json_parse(at, end ? (size_t)(end - at) : strlen(at), "output", &err);
        cr_assert(objs[n], "%s", err.msg);
        at = end ? end + 1 : at + strlen(at);
    }
    return n;
}

static int same_json(const cJSON *a, const cJSON *b) { return cJSON_Compare(a, b, 1); }

Test(cli, generate_lines_carry_their_own_sampling_parameters)
{
    static const char input[] =
        "{\"prompt_ids\": [5, 6, 7], \"max_tokens\": 3, \"temperature\": 0}\n"
        "{\"prompt_ids\": [8, 9], \"n\": 3, \"seed\": 12, \"top_k\": 5, \"top_p\": 0.9, \"min_p\": 0.01}\n"
        "{\"prompt_ids\": [8, 9], \"top_p\": 1.5}\n"
        "{\"prompt_ids\": [10], \"ignore_eos\": true, \"max_tokens\": 7, \"stop\": []}\n";
    const char *base = "generate --model tests/fixtures/models/qwen3-tiny-tied --max-tokens 5 --seed 3";
    int status;
    char *errors, *out = tu_run_rlc(base, input, &status, &errors);
    cr_assert_eq(status, 1, "line 3 is bad");
    cr_assert(strstr(errors, "stdin line 3: input: field 'top_p' must be a number in (0, 1], got 1.5"), "%s", errors);
    cJSON *all[16];
    int n = output_lines(out, all, 16);
    cr_assert_eq(n, 1 + 3 + 1 + 1, "%s", out);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(all[0], "ids")), 3, "line 1's max_tokens");
    for (int j = 0; j < 3; j++) cr_assert_eq(cJSON_GetObjectItem(all[1 + j], "sample")->valueint, j);
    cr_assert(cJSON_GetObjectItem(all[4], "error"));
    cr_assert_eq(cJSON_GetObjectItem(all[4], "request")->valueint, 2);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(all[5], "ids")), 7);
    cr_assert_str_eq(cJSON_GetObjectItem(all[5], "finish_reason")->valuestring, "length");

    /* Line 2 alone, with its parameters given on the command line instead, draws the same
     * (its own seed 12 replaces --seed + 1) */
    char *errors_alone, *errors_stream;
    char *alone = tu_run_rlc("generate --model tests/fixtures/models/qwen3-tiny-tied --max-tokens 5 --n 3 --seed 12 "
                             "--top-k 5 --top-p 0.9 --min-p 0.01",
                             "{\"prompt_ids\": [8, 9]}\n", &status, &errors_alone);
    cr_assert_eq(status, 0);
    cJSON *one[3];
    cr_assert_eq(output_lines(alone, one, 3), 3);
    for (int j = 0; j < 3; j++) {
        cJSON_DeleteItemFromObject(one[j], "request");
        cJSON_DeleteItemFromObject(all[1 + j], "request");
        cr_assert(same_json(one[j], all[1 + j]), "sample %d differs when its line runs alone", j);
        cJSON_Delete(one[j]);
    }
    /* --stream: the same lines, each written as it finishes */
    char *streamed = tu_run_rlc("generate --model tests/fixtures/models/qwen3-tiny-tied --max-tokens 5 --seed 3 --stream",
                                input, &status, &errors_stream);
    cr_assert_eq(status, 1);
    cJSON *got[16];
    int n_got = output_lines(streamed, got, 16);
    cr_assert_eq(n_got, n);
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int k = 0; k < n_got; k++) {
            cJSON *a = cJSON_Duplicate(got[k], 1), *b = cJSON_Duplicate(all[i], 1);
            if (i >= 1 && i <= 3) cJSON_DeleteItemFromObject(a, "request");
            found += same_json(a, b);
            cJSON_Delete(a), cJSON_Delete(b);
        }
        cr_assert_eq(found, 1, "output line %d is not among the streamed lines", i);
    }
    for (int i = 0; i < n; i++) cJSON_Delete(all[i]);
    for (int i = 0; i < n_got; i++) cJSON_Delete(got[i]);
    free(errors), free(out), free(alone), free(streamed), free(errors_alone), free(errors_stream);
}

/* `rlc tokenize --jsonl` renders {"messages"} lines with the tokenizer's chat template (the
 * demo's ChatML), and refuses them, line by line, for a tokenizer without one. */
Test(cli, tokenize_renders_chat_lines)
{
    const char *input = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"add_generation_prompt\": true}\n"
                        "{\"text\": \"hi\"}\n{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}]}\n";
    int status;
    char *errors, *out = tu_run_rlc("tokenize --tokenizer examples/demo/tokenizer.json --jsonl", input, &status, &errors);
    cr_assert_eq(status, 1, "the third line is bad");
    cJSON *obj = output_line(out, 0);
    cr_expect_str_eq(cJSON_GetObjectItem(obj, "text")->valuestring, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    cr_expect_str_eq(cJSON_GetObjectItem(obj, "decoded")->valuestring, cJSON_GetObjectItem(obj, "text")->valuestring);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(obj, "ids")), 10);
    cJSON_Delete(obj);
    obj = output_line(out, 1);
    cr_expect(!cJSON_GetObjectItem(obj, "text") && cJSON_GetArraySize(cJSON_GetObjectItem(obj, "ids")) > 0);
    cJSON_Delete(obj);
    obj = output_line(out, 2);
    cr_expect(strstr(cJSON_GetObjectItem(obj, "error")->valuestring, "role 'robot' is not one of"));
    cJSON_Delete(obj);
    cr_expect(strstr(errors, "stdin line 3: "), "stderr: %s", errors);
    free(out), free(errors);

    out = tu_run_rlc("tokenize --tokenizer tests/fixtures/tokenizer/flags_tokenizer.json --jsonl", input, &status, &errors);
    cr_assert_eq(status, 1);
    cr_expect(strstr(errors, "stdin line 1: tests/fixtures/tokenizer: no chat template"), "stderr: %s", errors);
    free(out), free(errors);
}
