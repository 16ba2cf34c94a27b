/* test_env_kernel.c — the built-in kernel environment with the fake compiler and worker
 * (tests/fixtures/kernel_env/, "marks" mode): tools answer from one evaluation per distinct
 * code (profile shows the speedup, compile the compiler's log), submit ends the episode with the
 * kernel reward, the last turn submits what stands, turns without a (good) tool call are told
 * how to call one, and each evaluation is recorded once in the attempt database. No GPU. */
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "reward/kernel_env/attempts.h"
#include "rollout/env.h"
#include "test_util.h"

#define FIX "tests/fixtures/kernel_env"
#define TASK "tests/fixtures/kernel_env/tasks/ew_chain"
#define CODE(mark) "```cuda\n#include \"rl_kernel.h\"\n// " mark "\nextern \"C\" int rl_kernel(const rl_kernel_args *a) { return 0; }\n```\n"

Test(env_kernel, tools_submit_and_the_database)
{
    char dir[64], db[128], cache[128];
    snprintf(dir, sizeof dir, "/tmp/rlc-envk-%d", (int)getpid());
    snprintf(db, sizeof db, "%s/attempts.jsonl", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    rl_err err;
    cr_assert_eq(rl_mkdir_p(dir, &err), 0);
    setenv("FAKE_WORKER_MODE", "marks", 1);
    rl_env_options eo = {.kernel = {.attempts = db, .keep_upto = -1, .nvcc = FIX "/fake_nvcc.sh",
                                    .worker = FIX "/fake_worker.sh", .cache_dir = cache,
                                    .no_sandbox = 1}}; /* the stand-in worker forks */
    rl_env *env;
    cr_assert_eq(rl_env_create(&env, "kernel", &eo, &err), 0, "%s", err.msg);
    cJSON *fields = cJSON_Parse("{\"task\": \"" TASK "\"}");
    cr_assert_eq(rl_env_begin(env, 4, 3, &err), 0, "%s", err.msg);
    rl_env_turn t[3] = {
        {.episode = 0, .turn = 0, .fields = fields,
         .text = "Plan.\n" CODE("FAKE_SPEEDUP=4") "<tool_call>\n{\"name\": \"profile\", \"arguments\": {}}\n</tool_call>"},
        {.episode = 1, .turn = 0, .fields = fields,
         .text = "<tool_call>{\"name\": \"compile\", \"arguments\": {\"code\": \"int rl_kernel( { SYNTAX_ERROR }\"}}</tool_call>"},
        {.episode = 2, .turn = 0, .fields = fields, .text = "I am thinking about it."},
    };
    cr_assert_eq(rl_env_step(env, t, 3, &err), 0, "%s", err.msg);
    for (int i = 0; i < 3; i++) cr_assert(!t[i].done && !t[i].failure && t[i].observation, "turn %d", i);
    cr_assert(strstr(t[0].observation, "profile: correct") && strstr(t[0].observation, "speedup 4.00x"), "%s", t[0].observation);
    /* per-kernel times (the worker's "profile"), the slowest first, both sides */
    cr_assert(strstr(t[0].observation, "\nyours: 2 kernels, 0.7500 ms on the GPU\n  0.5000 ms  x2  fake_main(float const*, float*)\n"
                                       "  0.2500 ms  x1  fake_tail\nreference: 1 kernel, 1.5000 ms on the GPU\n  1.5000 ms  x1  ref_kernel"),
              "%s", t[0].observation);
    cr_assert(strstr(t[1].observation, "compile error") && strstr(t[1].observation, "expected a ';'"), "%s", t[1].observation);
    cr_assert(strstr(t[2].observation, "No tool call"), "%s", t[2].observation);
    for (int i = 0; i < 3; i++) free(t[i].observation), t[i].observation = NULL;
    rl_env_turn u[3] = {
        {.episode = 0, .turn = 1, .fields = fields, .text = "<tool_call>{\"name\": \"submit\"}</tool_call>"},
        {.episode = 1, .turn = 1, .fields = fields, .last = 1, .text = "Done."},
        {.episode = 2, .turn = 1, .fields = fields, .text = "<tool_call>{\"name\": \"check\", \"arguments\": 3}</tool_call><tool_call>{\"name\": \"rm\"}</tool_call>"},
    };
    cr_assert_eq(rl_env_step(env, u, 3, &err), 0, "%s", err.msg);
    cr_assert(u[0].done && !u[0].observation);
    cr_assert_float_eq(u[0].reward, 0.6f, 1e-6);
    cr_assert(u[1].done, "the last turn must end the episode");
    cr_assert_float_eq(u[1].reward, -0.5f, 1e-6);
    cr_assert(!u[2].done && u[2].observation, "episode 2");
    cr_assert(strstr(u[2].observation, "tool: bad tool call: \"arguments\" is not an object") && strstr(u[2].observation, "rm: bad tool call: unknown tool"),
              "%s", u[2].observation);
    free(u[2].observation);
    cJSON *lines;
    cr_assert_eq(rl_kattempts_load(db, &lines, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(cJSON_GetArraySize(lines), 2, "one evaluation per distinct code");
    cr_assert_float_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(lines, 0), "step")->valuedouble, 4, 0);
    cJSON_Delete(lines);
    cJSON_Delete(fields);
    rl_env_free(env);
    rl_remove_tree(dir, &err);
}
