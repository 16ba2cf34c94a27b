/* test_kreward.c — the kernel reward of the trainers with the fake compiler and worker
 * (tests/fixtures/kernel_env/, the worker's "marks" mode: the candidate's text decides its
 * verdict): a step's completions scored together, rewards ordered correct-fast > correct-slow >
 * failures, answers without code and bad tasks failed with their reason, every attempt in the
 * database; the database on resume (later steps and a torn line dropped); contrastive prompts
 * built from it; task checks; Python extraction. No GPU needed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "reward/kernel_env/attempts.h"
#include "reward/kernel_env/kbpch.h"
#include "reward/kernel_env/kreward.h"
#include "reward/kernel_env/prompt.h"
#include "json_get.h"
#include "test_util.h"

#define FIX "tests/fixtures/kernel_env"
#define TASK "tests/fixtures/kernel_env/tasks/ew_chain"

static char dir[64], db_path[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/rlc-kreward-%d", (int)getpid());
    rl_err err;
    cr_assert_eq(rl_mkdir_p(dir, &err), 0, "%s", err.msg);
    snprintf(db_path, sizeof db_path, "%s/attempts.jsonl", dir);
    setenv("FAKE_WORKER_MODE", "marks", 1);
}

static void teardown(void)
{
    rl_err err;
    rl_remove_tree(dir, &err);
}

TestSuite(kreward, .init = setup, .fini = teardown);

static rl_kreward *make_memo(int64_t keep, int memo);
static rl_kreward *make(int64_t keep) { return make_memo(keep, 0); }

static rl_kreward *make_memo(int64_t keep, int memo)
{
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    rl_kreward_opts o = {.attempts = db_path, .keep_upto = keep, .nvcc = FIX "/fake_nvcc.sh",
                         .worker = FIX "/fake_worker.sh", .cache_dir = cache, .jobs = 3, .memo = memo,
                         .no_sandbox = 1}; /* the stand-in worker is a shell script: it forks */
    rl_kreward *k;
    rl_err err;
    cr_assert_eq(rl_kreward_create(&k, &o, &err), 0, "%s", err.msg);
    return k;
}

#define KERNEL(mark) \
    "Analysis: fuse the chain.\n```cuda\n#include \"rl_kernel.h\"\n// " mark "\n" \
    "extern \"C\" int rl_kernel(const rl_kernel_args *a) { return 0; }\n```\n"

static cJSON *lines(void)
{
    cJSON *arr;
    int torn;
    rl_err err;
    cr_assert_eq(rl_kattempts_load(db_path, &arr, &torn, &err), 0, "%s", err.msg);
    cr_assert_eq(torn, 0);
    return arr;
}

Test(kreward, a_step_scored_together_and_recorded)
{
    rl_kreward *k = make(-1);
    rl_kreward_set_step(k, 7);
    cJSON *good = cJSON_Parse("{\"task\": \"" TASK "\"}"), *bad = cJSON_Parse("{\"task\": \"no/such/task\"}");
    cJSON *none = cJSON_Parse("{\"prompt\": \"x\"}");
    const cJSON *fields[] = {good, good, good, good, bad, none};
    const char *answers[] = {KERNEL("FAKE_SPEEDUP=4"), KERNEL("FAKE_SPEEDUP=1"), KERNEL("FAKE_INCORRECT"),
                             "I would write a kernel but here is none.", KERNEL("FAKE_SPEEDUP=8"),
                             KERNEL("FAKE_SPEEDUP=8")};
    float r[6];
    rl_err err;
    cr_assert_eq(rl_kreward_score(k, fields, answers, 6, r, &err), 0, "%s", err.msg);
    cr_assert_float_eq(r[0], 0.6, 1e-6, "4x: %g", r[0]);
    cr_assert_float_eq(r[1], 0.2, 1e-6, "1x: %g", r[1]);
    for (int i = 2; i < 6; i++) cr_assert_float_eq(r[i], RL_KREWARD_FAIL, 1e-6, "%d: %g", i, r[i]);
    cJSON *arr = lines();
    cr_assert_eq(cJSON_GetArraySize(arr), 6);
    const char *want[] = {"ok", "ok", "incorrect", "no_code", "bad_task", "bad_task"};
    for (int i = 0; i < 6; i++) {
        const cJSON *a = cJSON_GetArrayItem(arr, i);
        cr_assert_str_eq(tu_json_str(a, "status"), want[i], "line %d", i);
        cr_assert_float_eq(tu_json_num(a, "step"), 7, 0);
        cr_assert_eq(strlen(tu_json_str(a, "hash")), 16);
    }
    cr_assert_float_eq(tu_json_num(cJSON_GetArrayItem(arr, 0), "speedup"), 4, 1e-9);
    cr_assert(strstr(tu_json_str(cJSON_GetArrayItem(arr, 0), "source"), "FAKE_SPEEDUP=4"));
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(arr, 2), "speedup")));
    cr_assert(strstr(tu_json_str(cJSON_GetArrayItem(arr, 2), "reason"), "correct_random"));
    cr_assert(strstr(tu_json_str(cJSON_GetArrayItem(arr, 3), "reason"), "rl_kernel"), "%s",
              tu_json_str(cJSON_GetArrayItem(arr, 3), "reason"));
    cr_assert(strstr(tu_json_str(cJSON_GetArrayItem(arr, 4), "reason"), "no/such/task"));
    cr_assert(strstr(tu_json_str(cJSON_GetArrayItem(arr, 5), "reason"), "\"task\""));
    cJSON_Delete(arr);

    /* the next prompt of the task shows the correct attempts with their speedups */
    rl_kprompt_opts po;
    rl_kprompt_opts_default(&po);
    po.buckets = 3;
    po.n_best = 1;
    po.n_diverse = 2;
    char *text;
    size_t len;
    cr_assert_eq(rl_kprompt_build(TASK, db_path, &po, &text, &len, &err), 0, "%s", err.msg);
    cr_assert(strstr(text, "speedup 4.00x") && strstr(text, "speedup 1.00x (from a slower group)"), "%s", text);
    cr_assert(!strstr(text, "FAKE_INCORRECT"), "an incorrect attempt was shown");
    free(text);
    cJSON_Delete(good), cJSON_Delete(bad), cJSON_Delete(none);
    rl_kreward_free(k);
}

Test(kreward, resume_drops_later_steps_and_a_torn_line)
{
    const char *text = "{\"step\":1,\"task\":\"t\",\"status\":\"ok\",\"speedup\":2,\"source\":\"a\"}\n"
                       "{\"step\":2,\"task\":\"t\",\"status\":\"ok\",\"speedup\":3,\"source\":\"b\"}\n"
                       "{\"step\":3,\"task\":\"t\",\"status\":\"ok\",\"speedup\":4,\"source\":\"c\"}\n"
                       "{\"step\":3,\"task\":\"t\",\"sta";
    rl_err err;
    cr_assert_eq(rl_file_write_atomic(db_path, text, strlen(text), &err), 0);
    rl_kattempts db;
    cr_assert_eq(rl_kattempts_open(&db, db_path, 2, &err), 0, "%s", err.msg);
    cr_assert_eq(db.n, 2);
    cr_assert_eq(db.n_dropped, 2);
    rl_kattempt a = {3, "t", "incorrect", 0, 0, 1, -0.5, "wrong", "src", 3, 0};
    cr_assert_eq(rl_kattempts_append(&db, &a, &err), 0, "%s", err.msg);
    rl_kattempts_close(&db);
    cJSON *arr = lines();
    cr_assert_eq(cJSON_GetArraySize(arr), 3);
    cr_assert_str_eq(tu_json_str(cJSON_GetArrayItem(arr, 2), "status"), "incorrect");
    cJSON_Delete(arr);
    /* a bad line that is not the last one is an error naming it */
    const char *broken = "{\"step\":1,\"task\":\"t\"}\nnot json\n{\"step\":2,\"task\":\"t\"}\n";
    cr_assert_eq(rl_file_write_atomic(db_path, broken, strlen(broken), &err), 0);
    cr_assert_eq(rl_kattempts_open(&db, db_path, 5, &err), -1);
    cr_assert(strstr(err.msg, "attempts.jsonl:2"), "%s", err.msg);
    /* a fresh run empties it */
    cr_assert_eq(rl_kattempts_open(&db, db_path, -1, &err), 0, "%s", err.msg);
    rl_kattempts_close(&db);
    cr_assert_eq(rl_kattempts_load(db_path, &arr, NULL, &err), 0);
    cr_assert_eq(cJSON_GetArraySize(arr), 0);
    cJSON_Delete(arr);
}

Test(kreward, task_checks)
{
    rl_err err;
    cr_assert_eq(rl_kreward_check_task(TASK, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_kreward_check_task("tests/fixtures/kernelbench/problems/76_Gemm_Add_ReLU.py", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_kreward_check_task("kernel_tasks/nope", &err), -1);
    cr_assert(strstr(err.msg, "kernel_tasks/nope") && strstr(err.msg, "does not exist"), "%s", err.msg);
    char py[160];
    snprintf(py, sizeof py, "%s/problem.py", dir);
    cr_assert_eq(rl_file_write_atomic(py, "import torch\nclass Model:\n    pass\n", 35, &err), 0);
    cr_assert_eq(rl_kreward_check_task(py, &err), -1);
    cr_assert(strstr(err.msg, "get_inputs"), "%s", err.msg);
    cr_assert_eq(rl_kreward_check_task("/no/such/problem.py", &err), -1);
    cr_assert(strstr(err.msg, "/no/such/problem.py"), "%s", err.msg);
}

Test(kreward, python_extraction)
{
    const char *code;
    size_t len;
    rl_err err;
    const char *two = "Plan:\n```python\nclass ModelNew: draft\n```\nFinal:\n```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n```\n";
    cr_assert_eq(rl_kreward_extract_python(two, strlen(two), &code, &len, &err), 0, "%s", err.msg);
    cr_assert(len > 0 && !strncmp(code, "import torch", 12) && !memchr(code, '`', len), "%.*s", (int)len, code);
    const char *unclosed = "```py\nclass ModelNew(nn.Module):\n    x = 1\n";
    cr_assert_eq(rl_kreward_extract_python(unclosed, strlen(unclosed), &code, &len, &err), 0, "%s", err.msg);
    cr_assert(!strncmp(code, "class ModelNew", 14) && code + len == unclosed + strlen(unclosed));
    const char *cuda_only = "```cuda\n__global__ void k() {}\n```\n";
    cr_assert_eq(rl_kreward_extract_python(cuda_only, strlen(cuda_only), &code, &len, &err), -1);
    cr_assert(strstr(err.msg, "ModelNew"), "%s", err.msg);
}

Test(kreward, memo_reuses_the_first_verdict)
{
    rl_kreward *k = make_memo(-1, 1);
    cJSON *good = cJSON_Parse("{\"task\": \"" TASK "\"}");
    const cJSON *fields[] = {good, good};
    const char *answers[] = {KERNEL("FAKE_SPEEDUP=4"), KERNEL("FAKE_INCORRECT")};
    float r[2];
    rl_err err;
    for (int step = 1; step <= 2; step++) {
        rl_kreward_set_step(k, step);
        cr_assert_eq(rl_kreward_score(k, fields, answers, 2, r, &err), 0, "%s", err.msg);
        cr_assert_float_eq(r[0], 0.6, 1e-6);
        cr_assert_float_eq(r[1], RL_KREWARD_FAIL, 1e-6);
    }
    cJSON *arr = lines();
    cr_assert_eq(cJSON_GetArraySize(arr), 4);
    for (int i = 0; i < 4; i++) {
        const cJSON *a = cJSON_GetArrayItem(arr, i);
        cr_assert_eq(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "memo")), i >= 2, "line %d", i);
        cr_assert_str_eq(tu_json_str(a, "status"), i % 2 ? "incorrect" : "ok");
    }
    cr_assert_float_eq(tu_json_num(cJSON_GetArrayItem(arr, 2), "speedup"), 4, 1e-9);
    cJSON_Delete(arr);
    cJSON_Delete(good);
    rl_kreward_free(k);
}

/* KernelBench tasks: the answer's ```python block defining ModelNew goes to the Python worker
 * (here the fake one); an answer without one fails as no_code. */
Test(kreward, kernelbench_task_through_the_python_worker)
{
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    rl_kreward_opts o = {.attempts = db_path, .keep_upto = -1, .nvcc = FIX "/fake_nvcc.sh", .worker = FIX "/fake_worker.sh",
                         .python = FIX "/fake_python.sh", .cache_dir = cache};
    setenv("FAKE_PY_MODE", "ok", 1);
    rl_kreward *k;
    rl_err err;
    cr_assert_eq(rl_kreward_create(&k, &o, &err), 0, "%s", err.msg);
    cJSON *kb = cJSON_Parse("{\"task\": \"tests/fixtures/kernelbench/problems/76_Gemm_Add_ReLU.py\"}");
    const cJSON *fields[] = {kb, kb};
    const char *answers[] = {"Fuse it.\n```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n```\n",
                             "```cuda\n__global__ void k() {}\n```\n"};
    float r[2];
    cr_assert_eq(rl_kreward_score(k, fields, answers, 2, r, &err), 0, "%s", err.msg);
    cr_assert_float_eq(r[0], 0.4, 1e-6, "2x: %g", r[0]);
    cr_assert_float_eq(r[1], RL_KREWARD_FAIL, 1e-6);
    cJSON *arr = lines();
    cr_assert_str_eq(tu_json_str(cJSON_GetArrayItem(arr, 0), "status"), "ok");
    cr_assert(!strncmp(tu_json_str(cJSON_GetArrayItem(arr, 0), "source"), "import torch", 12));
    cr_assert_str_eq(tu_json_str(cJSON_GetArrayItem(arr, 1), "status"), "no_code");
    cJSON_Delete(arr);
    cJSON_Delete(kb);
    rl_kreward_free(k);
}

/* The prompt of a KernelBench task shows the problem file and asks for a ```python ModelNew. */
Test(kreward, kernelbench_prompt)
{
    char *text;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_kprompt_build("tests/fixtures/kernelbench/problems/76_Gemm_Add_ReLU.py", NULL, NULL, &text, &len, &err), 0,
                 "%s", err.msg);
    cr_assert(strstr(text, "```python\n") && strstr(text, "class Model") && strstr(text, "def get_inputs"), "%s", text);
    cr_assert(strstr(text, "class ModelNew") && strstr(text, "load_inline") && !strstr(text, "```cuda"), "%s", text);
    free(text);
}

/* Several training ranks (rank_gpu, rank_gpus: set by the trainer under --gpus N): a rank's pool
 * is its own GPU (the ordinal-th of CUDA_VISIBLE_DEVICES) and the GPUs no rank trains on, never
 * another rank's, which may be training while this rank evaluates; an ordinal the worker does
 * not see, or --kernel-gpus > 1 with ranks, is an error at start. */
static void rank_pool(int rank_gpu, int rank_gpus, const char *allowed, const char *needed)
{
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    rl_kreward_opts o = {.keep_upto = -1, .nvcc = FIX "/fake_nvcc.sh", .worker = FIX "/fake_worker.sh",
                         .cache_dir = cache, .jobs = 4, .no_sandbox = 1, .rank_gpu = rank_gpu, .rank_gpus = rank_gpus};
    rl_kreward *k;
    rl_err err;
    cr_assert_eq(rl_kreward_create(&k, &o, &err), 0, "%s", err.msg);
    enum { N = 8 };
    const char *tasks[N], *codes[N];
    size_t lens[N];
    char src[N][160];
    for (int i = 0; i < N; i++) { /* distinct sources: each one compiled and run */
        snprintf(src[i], sizeof src[i], "#include \"rl_kernel.h\"\n// %d %d\nextern \"C\" int rl_kernel(const rl_kernel_args *a) { return 0; }\n",
                 rank_gpus, i);
        tasks[i] = TASK, codes[i] = src[i], lens[i] = strlen(src[i]);
    }
    rl_kreward_eval ev[N];
    cr_assert_eq(rl_kreward_eval_many(k, tasks, codes, lens, N, ev, &err), 0, "%s", err.msg);
    int saw_needed = 0;
    for (int i = 0; i < N; i++) {
        const char *d = ev[i].reason ? strstr(ev[i].reason, "devices=") : NULL;
        cr_assert(d, "candidate %d: %s", i, ev[i].reason ? ev[i].reason : "(none)");
        char one[16];
        snprintf(one, sizeof one, ",%.*s,", (int)strcspn(d + 8, "\" ,"), d + 8);
        cr_assert(strstr(allowed, one), "candidate %d ran on %s, allowed %s", i, one, allowed);
        saw_needed |= !strcmp(one, needed);
        rl_kreward_eval_free(&ev[i]);
    }
    cr_assert(saw_needed, "the rank's own GPU %s was not used", needed);
    rl_kreward_free(k);
}

Test(kreward, a_rank_evaluates_on_its_own_gpu_and_free_ones)
{
    setenv("CUDA_VISIBLE_DEVICES", "4,6,7,9", 1);
    setenv("FAKE_WORKER_GPUS", "4", 1);
    setenv("FAKE_WORKER_MODE", "env", 1);
    rank_pool(2, 4, ",6,", ",6,");     /* four ranks on four GPUs: its own alone */
    rank_pool(2, 2, ",6,7,9,", ",6,"); /* two ranks: its own, and 7 and 9, where no rank trains */
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    rl_kreward_opts o = {.keep_upto = -1, .nvcc = FIX "/fake_nvcc.sh", .worker = FIX "/fake_worker.sh",
                         .cache_dir = cache, .no_sandbox = 1, .rank_gpu = 5, .rank_gpus = 5};
    rl_kreward *k;
    rl_err err;
    cr_assert_neq(rl_kreward_create(&k, &o, &err), 0);
    cr_assert(strstr(err.msg, "GPU 4 asked for, but the worker sees 4 GPUs"), "%s", err.msg);
    o.rank_gpu = 1;
    o.gpus = 2;
    cr_assert_neq(rl_kreward_create(&k, &o, &err), 0);
    cr_assert(strstr(err.msg, "--kernel-gpus 2 with several training ranks"), "%s", err.msg);
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("FAKE_WORKER_GPUS");
}

/* A run with KernelBench tasks (kb_tasks, set from the data) starts the precompiled torch
 * header at creation, so it is ready by the first evaluation; one without does not. */
Test(kreward, kernelbench_tasks_start_the_pch_at_creation)
{
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    rl_kreward_opts o = {.keep_upto = -1, .nvcc = FIX "/fake_nvcc.sh", .worker = FIX "/fake_worker.sh",
                         .python = FIX "/fake_python.sh", .cache_dir = cache, .no_sandbox = 1};
    rl_kreward *k;
    rl_err err;
    cr_assert_eq(rl_kreward_create(&k, &o, &err), 0, "%s", err.msg);
    rl_kreward_free(k);
    cr_assert(!rl_kbpch_wait(1), "no KernelBench task, no PCH build");
    o.kb_tasks = 1;
    cr_assert_eq(rl_kreward_create(&k, &o, &err), 0, "%s", err.msg);
    cr_assert(rl_kbpch_wait(30), "the PCH build started at creation and finished");
    rl_kreward_free(k);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "ls %s/kb-pch-*/ready >/dev/null 2>&1", cache);
    cr_assert_eq(system(cmd), 0, "no %s/kb-pch-*/ready", cache);
}
