/* test_env_train.c — `rlc grpo --env` end to end on the tiny fixture architecture (CPU): a
 * program environment (tests/rollout/fake_env.sh: three turns, reward 3), the calculator example
 * (examples/env_calculator.py), an environment that crashes (the run goes on with the failure
 * reward), the built-in kernel environment with the fake compiler and worker (a random model
 * calls no tool: the failure reward), and the options refused. */
#include <string.h>

#include "io/json.h"
#include "train_fixture.h"

TestSuite(cli_env_train, .init = tf_setup, .fini = tf_teardown);

#define COMMON "--prompts-per-step 2 --group-size 2 --max-new-tokens 4 --max-tokens 1024 --device cpu"

/* The metrics' reward_mean of each step into r (at most n); returns the count. */
static int rewards(const char *run, double *r, int n)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s/metrics.jsonl", tmp, run);
    char *text;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0, "%s", err.msg);
    int k = 0;
    for (char *line = strtok(text, "\n"); line && k < n; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        cr_assert(o, "%s", line);
        r[k++] = cJSON_GetObjectItemCaseSensitive(o, "reward_mean")->valuedouble;
        cJSON_Delete(o);
    }
    free(text);
    return k;
}

Test(cli_env_train, program_environment_rewards_the_episode)
{
    char out[16384];
    double r[4];
    int rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/env --steps 2 --max-turns 3 "
                "--env 'sh tests/rollout/fake_env.sh echo' " COMMON, rlc, model, rl_data, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "environment sh tests/rollout/fake_env.sh echo"), "%s", out);
    cr_assert_eq(rewards("env", r, 4), 2);
    cr_assert_float_eq(r[0], 3.0, 1e-9, "%s", out);
    cr_assert_float_eq(r[1], 3.0, 1e-9);
    /* a crashing environment fails episode 1 of each step; the run goes on */
    rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/crash --steps 2 --max-turns 2 "
            "--env 'sh tests/rollout/fake_env.sh crash' --env-fail-reward -1 " COMMON, rlc, model, rl_data, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "exited with status 3"), "%s", out);
    cr_assert_eq(rewards("crash", r, 4), 2);
    cr_assert_float_eq(r[0], (2.0 + 2.0 + 2.0 - 1.0) / 4, 1e-9, "%s", out);
}

Test(cli_env_train, calculator_example_runs)
{
    char out[16384], data[300];
    snprintf(data, sizeof data, "%s/calc.jsonl", tmp);
    FILE *f = fopen(data, "w");
    fprintf(f, "{\"prompt\": \"What is 17*23? Use calc.\", \"answer\": \"391\"}\n{\"prompt\": \"What is 2+2?\", \"answer\": 4}\n");
    fclose(f);
    int rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/calc --steps 2 --max-turns 3 "
                "--env 'python3 examples/env_calculator.py' " COMMON, rlc, model, data, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    double r[4];
    cr_assert_eq(rewards("calc", r, 4), 2);
    char path[300];
    snprintf(path, sizeof path, "%s/calc/metrics.jsonl", tmp);
    cr_assert_eq(count_lines(path), 2);
    for (int i = 0; i < 2; i++) cr_assert(r[i] >= 0 && r[i] <= 1, "%g", r[i]);
}

Test(cli_env_train, kernel_environment_without_tool_calls)
{
    char out[16384], data[300], task[300];
    snprintf(task, sizeof task, "%s/tasks/ew_chain", tmp);
    cr_assert_eq(sh(out, sizeof out,
                    "mkdir -p %s && cp tests/fixtures/kernel_env/tasks/ew_chain/spec.json %s/ && printf '# ew\\n' > "
                    "%s/prompt.md && printf 'int x;\\n' > %s/reference.cu",
                    task, task, task, task),
                 0, "%s", out);
    snprintf(data, sizeof data, "%s/k.jsonl", tmp);
    FILE *f = fopen(data, "w");
    fprintf(f, "{\"task\": \"%s\"}\n", task);
    fclose(f);
    setenv("FAKE_WORKER_MODE", "marks", 1);
    int rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/kenv --steps 1 --max-turns 1 --env kernel "
                "--kernel-nvcc tests/fixtures/kernel_env/fake_nvcc.sh --kernel-worker tests/fixtures/kernel_env/fake_worker.sh --kernel-no-sandbox "
                "--kernel-cache %s/cache --max-prompt-len 900 --max-episode-tokens 100 " COMMON, rlc, model, data, tmp, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    double r[2];
    cr_assert_eq(rewards("kenv", r, 2), 1);
    cr_assert_float_eq(r[0], -0.5, 1e-9, "%s", out);
}

Test(cli_env_train, options_refused)
{
    char out[8192];
    int rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/x --reward math --env 'cat' " COMMON, rlc, model,
                rl_data, tmp);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "--reward and --env"), "%s", out);
    rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/x " COMMON, rlc, model, rl_data, tmp);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "--reward (or --env) is required"), "%s", out);
}
