/* test_kernel_train.c — `rlc grpo --reward kernel` (and `rlc ppo`'s) and `rlc kernel-db` end to end on the tiny
 * fixture architecture, with the fake compiler and worker of tests/fixtures/kernel_env (no GPU):
 * every completion of every step lands in OUT/attempts.jsonl with its step and verdict (a random
 * model writes no code: "no_code", the failure reward), --resume keeps the attempts up to the
 * checkpoint, a missing task is refused at start-up naming the line (the same for rlc ppo, which
 * refuses --env), and kernel-db lists the
 * best kernel of each task, its code and the steps. And the loop learns from the verdicts: a
 * tiny model taught three short kernels (timed 4x, 1x, or found incorrect) samples the 4x one
 * more after GRPO (at lr 5e-4; at 2e-3 it forgets the kernels instead). */
#include <string.h>

#include "io/json.h"
#include "reward/kernel_env/attempts.h"
#include "train_fixture.h"

#define FIX "tests/fixtures/kernel_env"

TestSuite(cli_kernel_train, .init = tf_setup, .fini = tf_teardown);

static char task_dir[256], data[256], kopts[1024];
#define G2 "--group-size 2"      /* grpo's two completions per prompt */
#define S2 "--n-samples-per-prompt 2" /* ppo's */

static void make_task(void)
{
    char out[4096];
    snprintf(task_dir, sizeof task_dir, "%s/tasks/ew_chain", tmp);
    cr_assert_eq(sh(out, sizeof out,
                    "mkdir -p %s && cp " FIX "/tasks/ew_chain/spec.json %s/ && printf '# Task: ew_chain\\n\\nFour "
                    "elementwise ops.\\n' > %s/prompt.md && printf 'extern \"C\" int rl_kernel(const rl_kernel_args *a) "
                    "{ return 0; }\\n' > %s/reference.cu",
                    task_dir, task_dir, task_dir, task_dir),
                 0, "%s", out);
    snprintf(data, sizeof data, "%s/kernel.jsonl", tmp);
    FILE *f = fopen(data, "w");
    fprintf(f, "{\"task\": \"%s\"}\n{\"task\": \"%s\", \"note\": \"second\"}\n", task_dir, task_dir);
    fclose(f);
    snprintf(kopts, sizeof kopts,
             "--reward kernel --kernel-nvcc " FIX "/fake_nvcc.sh --kernel-worker " FIX "/fake_worker.sh "
             "--kernel-no-sandbox --kernel-cache "
             "%s/cache --prompts-per-step 2 --max-new-tokens 6 --max-prompt-len 900 --max-tokens 2048 "
             "--device cpu",
             tmp);
    setenv("FAKE_WORKER_MODE", "marks", 1);
}

static const char *path_of(const char *name)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    return path;
}

static cJSON *attempts(const char *run)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s/attempts.jsonl", tmp, run);
    cJSON *arr;
    rl_err err;
    cr_assert_eq(rl_kattempts_load(path, &arr, NULL, &err), 0, "%s", err.msg);
    return arr;
}

Test(cli_kernel_train, grpo_records_every_attempt_and_resumes)
{
    make_task();
    char out[16384];
    int rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/k --steps 2 %s " G2, rlc, model, data, tmp, kopts);
    cr_assert_eq(rc, 0, "%s", out);
    cJSON *arr = attempts("k");
    cr_assert_eq(cJSON_GetArraySize(arr), 8, "%s", out);
    int per_step[3] = {0};
    for (const cJSON *a = arr->child; a; a = a->next) {
        double step = cJSON_GetObjectItemCaseSensitive(a, "step")->valuedouble;
        cr_assert(step == 1 || step == 2);
        per_step[(int)step]++;
        const char *status = cJSON_GetObjectItemCaseSensitive(a, "status")->valuestring;
        cr_assert(!strcmp(status, "no_code") || !strcmp(status, "compile_error") || !strcmp(status, "ok"), "%s", status);
        cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(a, "reward")->valuedouble, -0.5, 1e-9);
    }
    cr_assert_eq(per_step[1], 4);
    cr_assert_eq(per_step[2], 4);
    cr_assert_eq(count_lines(path_of("k/metrics.jsonl")), 2);
    cJSON_Delete(arr);
    /* resume: the two steps' attempts stay, a third step adds four */
    rc = sh(out, sizeof out, "%s grpo --resume %s/k/model --out %s/k --steps 3", rlc, tmp, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    arr = attempts("k");
    cr_assert_eq(cJSON_GetArraySize(arr), 12, "%s", out);
    cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(arr, 11), "step")->valuedouble, 3, 0);
    cJSON_Delete(arr);
    rc = sh(out, sizeof out, "%s kernel-db %s/k", rlc, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, task_dir) && strstr(out, "12"), "%s", out);
}

/* rlc ppo --reward kernel: the same task lines, prompts and attempt database as GRPO's */
Test(cli_kernel_train, ppo_records_every_attempt_and_resumes)
{
    make_task();
    char out[16384];
    int rc = sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/p --steps 2 --kernel-memo %s " S2, rlc, model,
                data, tmp, kopts);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "2 prompts, reward kernel"), "%s", out);
    cJSON *arr = attempts("p");
    cr_assert_eq(cJSON_GetArraySize(arr), 8, "%s", out);
    int per_step[3] = {0};
    for (const cJSON *a = arr->child; a; a = a->next) {
        double step = cJSON_GetObjectItemCaseSensitive(a, "step")->valuedouble;
        cr_assert(step == 1 || step == 2);
        per_step[(int)step]++;
        cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(a, "task")->valuestring, task_dir);
        cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(a, "reward")->valuedouble, -0.5, 1e-9);
    }
    cr_assert_eq(per_step[1], 4);
    cr_assert_eq(per_step[2], 4);
    cJSON_Delete(arr);
    /* a third step's attempts are dropped by a resume from step 2's checkpoint: copy it aside,
     * run step 3, then resume the copy to step 4 */
    rc = sh(out, sizeof out, "cp -r %s/p/model %s/p2 && %s ppo --resume %s/p/model --out %s/p --steps 3", tmp, tmp, rlc,
            tmp, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    arr = attempts("p");
    cr_assert_eq(cJSON_GetArraySize(arr), 12, "%s", out);
    cJSON_Delete(arr);
    /* a correct attempt of step 2 (as a trained model would write): steps 3 and 4 rebuild their
     * prompts with it as an exemplar */
    FILE *f = fopen(path_of("p/attempts.jsonl"), "a");
    fprintf(f, "{\"step\":2,\"task\":\"%s\",\"status\":\"ok\",\"speedup\":2.5,\"reward\":0.4,"
               "\"source\":\"// PPO_EXEMPLAR\\nextern int rl_kernel(void) { return 0; }\"}\n", task_dir);
    fclose(f);
    rc = sh(out, sizeof out, "%s ppo --resume %s/p2 --out %s/p --steps 4", rlc, tmp, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_eq(sh(out, sizeof out, "grep -c PPO_EXEMPLAR %s", path_of("p/samples.jsonl")), 0, "no exemplar in the "
                 "step's prompts: %s", out);
    arr = attempts("p");
    cr_assert_eq(cJSON_GetArraySize(arr), 17, "%s", out);
    int last = 0;
    for (const cJSON *a = arr->child; a; a = a->next) {
        int step = (int)cJSON_GetObjectItemCaseSensitive(a, "step")->valuedouble;
        cr_assert(step >= last && step <= 4, "steps out of order: %d after %d", step, last);
        last = step;
    }
    cr_assert_eq(last, 4);
    cJSON_Delete(arr);
}

Test(cli_kernel_train, missing_task_is_refused_at_start)
{
    make_task();
    char bad[300], out[8192];
    snprintf(bad, sizeof bad, "%s/bad.jsonl", tmp);
    FILE *f = fopen(bad, "w");
    fprintf(f, "{\"task\": \"%s\"}\n{\"task\": \"%s/tasks/nope\"}\n", task_dir, tmp);
    fclose(f);
    int rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/bad --steps 1 %s " G2, rlc, model, bad, tmp, kopts);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "bad.jsonl:2") && strstr(out, "does not exist"), "%s", out);
    rc = sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/badp --steps 1 %s " S2, rlc, model, bad, tmp, kopts);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "bad.jsonl:2") && strstr(out, "does not exist"), "%s", out);
    rc = sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/badp --env kernel %s " S2, rlc, model, data, tmp, kopts);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "rlc ppo: --env is not supported; use rlc grpo --env"), "%s", out);
}

Test(cli_kernel_train, kernel_db_lists_best_code_and_steps)
{
    char path[300], out[16384];
    snprintf(path, sizeof path, "%s/db", tmp);
    rl_err err;
    cr_assert_eq(rl_mkdir_p(path, &err), 0);
    snprintf(path, sizeof path, "%s/db/attempts.jsonl", tmp);
    const char *text =
        "{\"step\":1,\"task\":\"a\",\"status\":\"ok\",\"speedup\":1.5,\"reward\":0.3,\"source\":\"A_SLOW\"}\n"
        "{\"step\":1,\"task\":\"b\",\"status\":\"incorrect\",\"speedup\":null,\"reward\":-0.5,\"source\":\"B_BAD\"}\n"
        "{\"step\":2,\"task\":\"a\",\"status\":\"ok\",\"speedup\":3.25,\"reward\":0.5,\"source\":\"A_FAST\"}\n"
        "{\"step\":2,\"task\":\"a\",\"status\":\"compile_error\",\"speedup\":null,\"reward\":-0.5,\"source\":\"x\"}\n";
    cr_assert_eq(rl_file_write_atomic(path, text, strlen(text), &err), 0);
    int rc = sh(out, sizeof out, "%s kernel-db %s/db --code", rlc, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "3.25x") && strstr(out, "A_FAST") && !strstr(out, "A_SLOW") && !strstr(out, "B_BAD"), "%s", out);
    rc = sh(out, sizeof out, "%s kernel-db %s --steps", rlc, path);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "50%") && strstr(out, "1.50x") && strstr(out, "3.25x"), "%s", out);
    rc = sh(out, sizeof out, "%s kernel-db %s/db --task zzz", rlc, tmp);
    cr_assert_eq(rc, 1, "%s", out);
    rc = sh(out, sizeof out, "%s kernel-db %s/none", rlc, tmp);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "none/attempts.jsonl"), "%s", out);
}

/* The loop learns from the evaluator's verdicts: a tiny model taught three short "kernels" by
 * SFT (the fake worker times them at 4x and 1x, or finds the third incorrect), then GRPO with
 * --reward kernel: the 4x kernel's share of the samples rises from the first steps to the last. */
Test(cli_kernel_train, grpo_learns_the_faster_kernel)
{
    make_task();
    char sft[300], tasks[300], out[16384];
    snprintf(sft, sizeof sft, "%s/variants.jsonl", tmp);
    snprintf(tasks, sizeof tasks, "%s/tasks.jsonl", tmp);
    FILE *f = fopen(sft, "w");
    const char *marks[] = {"FAKE_SPEEDUP=4", "FAKE_SPEEDUP=1", "FAKE_INCORRECT"};
    for (int v = 0; v < 3; v++)
        fprintf(f, "{\"prompt\": [{\"role\": \"user\", \"content\": \"Write ew.\"}], \"completion\": \"```cuda\\n// %s\\n"
                   "extern \\\"C\\\" int rl_kernel(const rl_kernel_args *a) { return 0; }\\n```\"}\n", marks[v]);
    fclose(f);
    f = fopen(tasks, "w");
    fprintf(f, "{\"task\": \"%s\", \"prompt\": \"Write ew.\"}\n", task_dir);
    fclose(f);
    int rc = sh(out, sizeof out, "%s sft --model %s --data %s --out %s/vsft --steps 400 --lr 1e-2 --max-tokens 512 --device cpu",
                rlc, model, sft, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    rc = sh(out, sizeof out, "%s grpo --model %s/vsft/model --data %s --out %s/vgrpo %s --steps 16 --group-size 8 --lr 5e-4 "
            "--max-prompt-len 64 --temperature 0.7 --kernel-memo --prompts-per-step 1 --max-new-tokens 120",
            rlc, tmp, tasks, tmp, kopts);
    cr_assert_eq(rc, 0, "%s", out);
    cJSON *arr = attempts("vgrpo");
    int first = 0, n_first = 0, last = 0, n_last = 0;
    for (const cJSON *a = arr->child; a; a = a->next) {
        int step = (int)cJSON_GetObjectItemCaseSensitive(a, "step")->valuedouble;
        int fast = strstr(cJSON_GetObjectItemCaseSensitive(a, "source")->valuestring, "FAKE_SPEEDUP=4") != NULL;
        if (step <= 3) first += fast, n_first++;
        if (step >= 14) last += fast, n_last++;
    }
    cJSON_Delete(arr);
    cr_assert(n_first == 24 && n_last == 24, "%d, %d attempts\n%s", n_first, n_last, out);
    cr_assert(last > first + 4, "the 4x kernel's share did not rise: %d/24 in steps 1-3, %d/24 in steps 14-16\n%s", first,
              last, out);
}
