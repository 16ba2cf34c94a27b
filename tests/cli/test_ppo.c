/* test_ppo.c — `rlc ppo` end to end on the tiny fixture architecture (train_fixture.h): a run
 * writes the policy, the value model (transformers' Qwen3ForTokenClassification layout, its own
 * optimizer and ppo_state.json) and a metrics line per step with the PPO fields (and the greedy
 * accuracy on --eval-data every --eval-every steps); --resume
 * continues; the same with --critic shared; a value model with another vocabulary, a reward
 * program answering NaN and bad options are refused with messages naming them. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/json.h"
#include "train_fixture.h"

TestSuite(cli_ppo, .init = tf_setup, .fini = tf_teardown);

#define PPO_ARGS "--reward math --prompts-per-step 2 --n-samples-per-prompt 2 --max-new-tokens 4 --device cpu"

Test(cli_ppo, run_resume_and_metrics)
{
    char out[8192], path[300];
    int rc = sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/ppo --steps 2 --kl-coef 0.1 --target-kl 0.5 "
                "--reward-clip 0.3 --missing-eos-penalty 0.5 --num-mini-batches 2 --ppo-epochs 2 --eval-data %s "
                "--eval-every 2 " PPO_ARGS, rlc, model, rl_data, tmp, rl_data);
    cr_assert_eq(rc, 0, "%s", out);
    const char *files[] = {"model/config.json", "model/optimizer.safetensors", "model/value/config.json",
                           "model/value/model.safetensors", "model/value/optimizer.safetensors",
                           "model/value/ppo_state.json", "model/value/tokenizer.json"};
    for (int i = 0; i < 7; i++) {
        snprintf(path, sizeof path, "%s/ppo/%s", tmp, files[i]);
        cr_assert(rl_file_exists(path), "missing %s", path);
    }
    snprintf(path, sizeof path, "%s/ppo/model/value/config.json", tmp);
    char *text;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0);
    cr_assert(strstr(text, "Qwen3ForTokenClassification"), "%s", text);
    free(text);
    snprintf(path, sizeof path, "%s/ppo/metrics.jsonl", tmp);
    cr_assert_eq(count_lines(path), 2);
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0);
    const char *fields[] = {"value_loss", "vf_clip_frac", "explained_variance", "kl", "kl_k3", "clip_frac",
                            "return_mean", "advantage_mean", "value_mean", "entropy", "reward_mean",
                            "reward_used_mean", "tokens_per_s", "gen_seconds", "peak_mem_gib", "kl_coef"};
    cJSON *j = rl_json_parse(text, strchr(text, '\n') - text, path, &err);
    cr_assert(j, "%s", err.msg);
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        const cJSON *v = cJSON_GetObjectItem(j, fields[i]);
        cr_assert(cJSON_IsNumber(v) && isfinite(v->valuedouble), "metrics field %s missing: %s", fields[i], text);
    }
    cr_assert(cJSON_GetObjectItem(j, "entropy")->valuedouble > 0, "%s", text);
    cr_assert(!cJSON_GetObjectItem(j, "eval_accuracy"), "step 1 is not an evaluation step: %s", text);
    cJSON *j2 = rl_json_parse(strchr(text, '\n') + 1, strlen(strchr(text, '\n') + 1), path, &err);
    cr_assert(j2, "%s", err.msg);
    const cJSON *acc = cJSON_GetObjectItem(j2, "eval_accuracy");
    cr_assert(cJSON_IsNumber(acc) && acc->valuedouble >= 0 && acc->valuedouble <= 1, "%s", text);
    cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(j2, "eval_reward")), "%s", text);
    cJSON_Delete(j2);
    /* the math reward scores 0; a random model runs out of tokens: -0.5, clipped to -0.3 */
    double used = cJSON_GetObjectItem(j, "reward_used_mean")->valuedouble;
    cr_assert(used < 0 && used >= -0.3 - 1e-6, "%s", text);
    cr_assert(cJSON_GetObjectItem(j, "value_loss")->valuedouble > 0, "%s", text);
    cJSON_Delete(j);
    free(text);
    rc = sh(out, sizeof out, "%s ppo --resume %s/ppo/model --out %s/ppo --steps 3", rlc, tmp, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "from step 2"), "%s", out);
    cr_assert_eq(count_lines(path), 3);
}

/* --critic shared: no value model loaded; OUT/model/value is still a value model transformers
 * reads (the policy's trunk + the head), ppo_state.json names the critic, and --resume continues
 * with it (the saved options bring --critic back). */
Test(cli_ppo, shared_critic_run_and_resume)
{
    char out[8192], path[300];
    int rc = sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/sh --steps 2 --critic shared " PPO_ARGS, rlc, model,
                rl_data, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "a value head on the policy (--critic shared)"), "%s", out);
    const char *files[] = {"model/value/config.json", "model/value/model.safetensors",
                           "model/value/optimizer.safetensors", "model/value/ppo_state.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/sh/%s", tmp, files[i]);
        cr_assert(rl_file_exists(path), "missing %s", path);
    }
    char *text;
    size_t len;
    rl_err err;
    snprintf(path, sizeof path, "%s/sh/model/value/config.json", tmp);
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0);
    cr_assert(strstr(text, "Qwen3ForTokenClassification"), "%s", text);
    free(text);
    snprintf(path, sizeof path, "%s/sh/model/value/ppo_state.json", tmp);
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0);
    cr_assert(strstr(text, "\"critic\":\t\"shared\"") || strstr(text, "\"critic\": \"shared\""), "%s", text);
    free(text);
    rc = sh(out, sizeof out, "%s ppo --resume %s/sh/model --out %s/sh --steps 3", rlc, tmp, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "from step 2") && strstr(out, "--critic shared"), "%s", out);
    snprintf(path, sizeof path, "%s/sh/metrics.jsonl", tmp);
    cr_assert_eq(count_lines(path), 3);
    /* refused: an unknown critic, and a value model for a shared one */
    cr_assert_eq(sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/x --reward math --critic both", rlc, model,
                    rl_data, tmp), 2);
    cr_assert(strstr(out, "--critic"), "%s", out);
    rc = sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/x --critic shared --value-model %s --steps 1 " PPO_ARGS,
            rlc, model, rl_data, tmp, model);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "--value-model") && strstr(out, "shared critic"), "%s", out);
    snprintf(path, sizeof path, "%s/x", tmp);
    cr_assert(access(path, F_OK) != 0, "a refused run wrote %s", path);
}

Test(cli_ppo, bad_input)
{
    char out[16384];
    /* a value model whose vocabulary is not the policy's */
    cr_assert_eq(sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/v --value-model tests/fixtures/models/qwen3-tiny-untied "
                    "--steps 1 " PPO_ARGS, rlc, model, rl_data, tmp), 1);
    cr_assert(strstr(out, "value model tests/fixtures/models/qwen3-tiny-untied: vocab_size 384 differs"), "%s", out);
    char path[300];
    snprintf(path, sizeof path, "%s/v/model", tmp);
    cr_assert(access(path, F_OK) != 0, "a refused run wrote %s", path);
    /* a reward program answering NaN */
    char reward[256];
    snprintf(reward, sizeof reward, "%s/nan.sh", tmp);
    FILE *f = fopen(reward, "w");
    fprintf(f, "#!/bin/sh\nwhile read line; do echo '{\"reward\": NaN}'; done\n");
    fclose(f);
    chmod(reward, 0755);
    int rc = sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/n --steps 1 --prompts-per-step 2 --max-new-tokens 2 "
                "--device cpu --reward 'cmd:%s'", rlc, model, rl_data, tmp, reward);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "rlc ppo:") && (strstr(out, "NaN") || strstr(out, "nan") || strstr(out, "finite")), "%s", out);
    snprintf(path, sizeof path, "%s/n/model", tmp);
    cr_assert(access(path, F_OK) != 0, "a run whose first step failed wrote %s", path);
    /* ... and an infinite one (beyond float) */
    f = fopen(reward, "w");
    fprintf(f, "#!/bin/sh\nwhile read line; do echo '{\"reward\": 1e999}'; done\n");
    fclose(f);
    rc = sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/i --steps 1 --prompts-per-step 2 --max-new-tokens 2 "
            "--device cpu --reward 'cmd:%s'", rlc, model, rl_data, tmp, reward);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "rlc ppo:") && (strstr(out, "inf") || strstr(out, "finite") || strstr(out, "float")), "%s", out);
    snprintf(path, sizeof path, "%s/i/model", tmp);
    cr_assert(access(path, F_OK) != 0, "a run whose first step failed wrote %s", path);
    /* a KL penalty without the reference it is measured against (no --model) */
    rc = sh(out, sizeof out, "%s ppo --value-model %s --data %s --out %s/r --reward math --kl-coef 0.05 --device cpu", rlc,
            model, rl_data, tmp);
    cr_assert(rc == 1 || rc == 2, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "--model"), "%s", out);
    snprintf(path, sizeof path, "%s/r/model", tmp);
    cr_assert(access(path, F_OK) != 0, "a refused run wrote %s", path);
    cr_assert_eq(sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/x --reward math --gamma 0", rlc, model, rl_data,
                    tmp), 2);
    cr_assert(strstr(out, "--gamma"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/x --reward math --lam 1.5", rlc, model, rl_data,
                    tmp), 2);
    cr_assert(strstr(out, "--lam"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/x --reward math --gamma 1.5", rlc, model, rl_data,
                    tmp), 2);
    cr_assert(strstr(out, "--gamma"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/x --reward math --lam -0.1", rlc, model, rl_data,
                    tmp), 2);
    cr_assert(strstr(out, "--lam"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/x --reward math --entropy-coef -1", rlc, model,
                    rl_data, tmp), 2);
    cr_assert(strstr(out, "--entropy-coef"), "%s", out);
    snprintf(path, sizeof path, "%s/x", tmp);
    cr_assert(access(path, F_OK) != 0, "a refused command line wrote %s", path);
    cr_assert_eq(sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/x --reward math --gpus 2", rlc, model, rl_data,
                    tmp), 2);
    cr_assert(strstr(out, "--gpus 2"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/x --reward math --prompts-per-step 2 "
                    "--num-mini-batches 3", rlc, model, rl_data, tmp), 2);
    cr_assert(strstr(out, "--num-mini-batches"), "%s", out);
    cr_assert_eq(sh(out, sizeof out, "%s ppo --help", rlc), 0);
    cr_assert(strstr(out, "--cliprange-value") && strstr(out, "--vf-lr") && strstr(out, "--critic-warmup"), "%s", out);
}

/* A reward program that answers garbage from step 3 of 5 on: rlc ppo stops naming it, step 2 (policy,
 * value model, both optimizers, the reward statistics) is on disk, and resuming with a working
 * program ends with exactly the models of a run that never broke. */
Test(cli_ppo, broken_reward_saves_the_last_step_and_resumes)
{
    char out[8192], path[300], a[300], b[300];
    const char *common = "--steps 5 --prompts-per-step 2 --n-samples-per-prompt 2 --max-new-tokens 3 --device cpu "
                         "--lr 1e-2 --temperature 2";
    int rc = sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/broken %s --reward "
                "'cmd:sh tests/reward/fake_reward.sh garbage_after 8'", rlc, model, rl_data, tmp, common);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "ppo step 3: reward program 'sh tests/reward/fake_reward.sh garbage_after 8'"), "%s", out);
    snprintf(path, sizeof path, "%s/broken/model", tmp);
    char want[1024];
    snprintf(want, sizeof want, "step 2, the last completed, was saved to %s", path);
    cr_assert(strstr(out, want), "%s", out);
    snprintf(a, sizeof a, "%s/broken/metrics.jsonl", tmp);
    cr_assert_eq(count_lines(a), 2);
    rc = sh(out, sizeof out, "%s ppo --resume %s --reward 'cmd:sh tests/reward/fake_reward.sh len'", rlc, path);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_eq(count_lines(a), 5);
    snprintf(a, sizeof a, "%s/broken/samples.jsonl", tmp);
    cr_assert_eq(count_lines(a), 5 * 4, "4 samples a step, the failed step's not among them: %d", count_lines(a));
    rc = sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/whole %s --reward 'cmd:sh tests/reward/fake_reward.sh len'",
            rlc, model, rl_data, tmp, common);
    cr_assert_eq(rc, 0, "%s", out);
    const char *files[] = {"model.safetensors", "value/model.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(a, sizeof a, "%s/broken/model/%s", tmp, files[i]);
        snprintf(b, sizeof b, "%s/whole/model/%s", tmp, files[i]);
        cr_assert(same_file(a, b), "the resumed run's %s differs from the unbroken run's", files[i]);
    }
    snprintf(b, sizeof b, "%s/model.safetensors", model);
    snprintf(a, sizeof a, "%s/broken/model/model.safetensors", tmp);
    cr_assert(!same_file(a, b), "the policy did not change at all: the comparison proves nothing");
}
