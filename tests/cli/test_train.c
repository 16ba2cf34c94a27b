/* test_train.c — `rlc sft` and `rlc grpo` end to end on the tiny fixture architecture with
 * the demo tokenizer: a run writes an HF checkpoint and metrics, --resume continues and appends,
 * Ctrl-C (SIGINT) stops after the current step with a checkpoint and exit status 130, a reward
 * program that breaks in the middle of a run stops it with the last completed step saved (and
 * --resume then ends bit-identical to a run that never broke), --reward-errors zero scores
 * broken answers 0 and logs them, samples.jsonl gets a few samples per step, and bad options are
 * refused with a message naming them. Runs $BUILD/rlc (tests/run.sh sets BUILD). */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "io/json.h"
#include "train_fixture.h"

TestSuite(cli_train, .init = tf_setup, .fini = tf_teardown);

Test(cli_train, sft_run_and_resume)
{
    char out[8192], path[256];
    int rc = sh(out, sizeof out, "%s sft --model %s --data %s --out %s/sft --steps 3 --max-tokens 64 --lr 1e-3 --device cpu",
                rlc, model, sft_data, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "model saved to"), "%s", out);
    snprintf(path, sizeof path, "%s/sft/metrics.jsonl", tmp);
    cr_assert_eq(count_lines(path), 3);
    snprintf(path, sizeof path, "%s/sft/samples.jsonl", tmp);
    cr_assert_eq(count_lines(path), 3 * 4, "4 samples a step by default");
    snprintf(path, sizeof path, "%s/sft/metrics.jsonl", tmp);
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

/* A user's reward program answers garbage from step 3 of 5 on: rlc stops naming the program and
 * the answer, step 2 is on disk, and resuming with a fixed program gives exactly the model an
 * unbroken run gives. */
Test(cli_train, grpo_broken_reward_saves_the_last_step_and_resumes)
{
    char out[8192], path[256], a[256], b[256];
    const char *common = "--steps 5 --prompts-per-step 2 --group-size 2 --max-new-tokens 3 --device cpu --lr 1e-2 "
                         "--temperature 2";
    int rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/broken %s --reward "
                "'cmd:sh tests/reward/fake_reward.sh garbage_after 8'", rlc, model, rl_data, tmp, common);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "grpo step 3: reward program 'sh tests/reward/fake_reward.sh garbage_after 8': completion 0: "
                          "printed a line that is not one JSON object: 'hello there'"), "%s", out);
    snprintf(path, sizeof path, "%s/broken/model", tmp);
    char want[1024];
    snprintf(want, sizeof want, "step 2, the last completed, was saved to %s; once the cause is fixed, continue with: "
             "rlc grpo --resume %s", path, path);
    cr_assert(strstr(out, want), "%s", out);
    rl_train_state s;
    rl_err err;
    cr_assert_eq(rl_checkpoint_load_state(path, &s, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(s.step, 2);
    snprintf(a, sizeof a, "%s/broken/metrics.jsonl", tmp);
    cr_assert_eq(count_lines(a), 2);
    rc = sh(out, sizeof out, "%s grpo --resume %s --reward 'cmd:sh tests/reward/fake_reward.sh len'", rlc, path);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "from step 2"), "%s", out);
    cr_assert_eq(count_lines(a), 5);
    snprintf(a, sizeof a, "%s/broken/samples.jsonl", tmp);
    cr_assert_eq(count_lines(a), 5 * 4, "4 samples a step, the failed step's not among them");
    rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/whole %s --reward 'cmd:sh tests/reward/fake_reward.sh len'",
            rlc, model, rl_data, tmp, common);
    cr_assert_eq(rc, 0, "%s", out);
    snprintf(a, sizeof a, "%s/broken/model/model.safetensors", tmp);
    snprintf(b, sizeof b, "%s/whole/model/model.safetensors", tmp);
    cr_assert(same_file(a, b), "the resumed run's weights differ from the unbroken run's");
    snprintf(b, sizeof b, "%s/model.safetensors", model);
    cr_assert(!same_file(a, b), "the weights did not change at all: the comparison proves nothing");
}

/* A full disk (metrics.jsonl on /dev/full): the step that could not be recorded is complete, so it
 * is saved, and the message names the file. */
Test(cli_train, full_disk_saves_the_finished_step)
{
    char out[8192], dir[256];
    snprintf(dir, sizeof dir, "%s/full", tmp);
    cr_assert_eq(sh(out, sizeof out, "mkdir -p %s && ln -s /dev/full %s/metrics.jsonl", dir, dir), 0, "%s", out);
    int rc = sh(out, sizeof out, "%s sft --model %s --data %s --out %s --steps 3 --max-tokens 64 --device cpu", rlc,
                model, sft_data, dir);
    cr_assert_eq(rc, 1, "%s", out);
    char want[512];
    snprintf(want, sizeof want, "%s/metrics.jsonl: write failed: No space left on device", dir);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert(strstr(out, "step 1, the last completed, was saved to"), "%s", out);
    snprintf(want, sizeof want, "%s/model", dir);
    rl_train_state s;
    rl_err err;
    cr_assert_eq(rl_checkpoint_load_state(want, &s, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(s.step, 1);
}

/* --reward-errors zero: broken answers (garbage, infinite, a crash) score 0, are counted per
 * step in metrics.jsonl and logged whole in reward_errors.jsonl; the run goes on. */
Test(cli_train, grpo_reward_errors_zero_counts_and_logs)
{
    char out[8192], path[256];
    int rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/zero --steps 2 --prompts-per-step 2 --group-size 3 "
                "--max-new-tokens 3 --device cpu --reward 'cmd:sh tests/reward/fake_reward.sh broken_every 4' "
                "--reward-errors zero --log-samples 2", rlc, model, rl_data, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    /* 6 answers a step: garbage, inf, crash (restart), garbage, inf, crash */
    snprintf(path, sizeof path, "%s/zero/reward_errors.jsonl", tmp);
    cr_assert_eq(count_lines(path), 12);
    char *text;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0, "%s", err.msg);
    cJSON *first = rl_json_parse(text, strcspn(text, "\n"), path, &err);
    cr_assert(first, "%s", err.msg);
    cr_expect(strstr(cJSON_GetObjectItem(first, "error")->valuestring, "not one JSON object"));
    cr_expect(cJSON_IsString(cJSON_GetObjectItem(first, "completion")));
    cr_expect(strstr(cJSON_GetObjectItem(first, "prompt")->valuestring, "+"));
    cJSON_Delete(first);
    free(text);
    snprintf(path, sizeof path, "%s/zero/metrics.jsonl", tmp);
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0, "%s", err.msg);
    cr_expect(strstr(text, "\"reward_errors\": 6"), "%s", text);
    free(text);
    snprintf(path, sizeof path, "%s/zero/samples.jsonl", tmp);
    cr_assert_eq(count_lines(path), 2 * 2);
    /* the same program stops a run in the default mode, before any step */
    rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/stop --steps 2 --prompts-per-step 2 --group-size 3 "
            "--max-new-tokens 3 --device cpu --reward 'cmd:sh tests/reward/fake_reward.sh broken_every 4'",
            rlc, model, rl_data, tmp);
    cr_assert_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "grpo step 1: reward program") && !strstr(out, "was saved"), "%s", out);
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
    cr_assert(strstr(out, "--kl-beta") && strstr(out, "--variant") && strstr(out, "--reward-errors"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/x --reward math --reward-errors skip", rlc,
                    model, rl_data, tmp), 2);
    cr_assert(strstr(out, "--reward-errors must be stop or zero, got 'skip'"), "%s", out);
}
