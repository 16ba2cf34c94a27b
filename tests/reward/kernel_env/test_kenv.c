/* test_kenv.c — the evaluator's host side with a fake compiler and a fake worker
 * (tests/fixtures/kernel_env/): result JSON for each outcome, the reward function, the compile
 * cache, isolation from crashing / hanging / flooding / forging workers, static findings, the
 * plan and the protocol parameters the worker receives, and the GPU device given to the child.
 * No GPU needed. (KernelBench tasks: test_kenv_kernelbench.c.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "core/timer.h"
#include "reward/kernel_env/kenv.h"
#include "reward/kernel_env/kpool.h"
#include "reward/kernel_env/kspec.h"
#include "json_get.h"
#include "test_util.h"

#define FIX "tests/fixtures/kernel_env"
#define TASK "tests/fixtures/kernel_env/tasks/ew_chain"


static rl_kenv_paths default_paths; /* what the options' default strings point into */

/* rl_kenv_eval's record (the JSON of docs/kernel-env.md), its typed fields checked against it. */
static cJSON *eval_json(const rl_kenv_opts *o, const char *task, const char *src)
{
    rl_kenv_result r;
    rl_err err;
    cr_assert_eq(rl_kenv_eval(o, task, src, strlen(src), &r, &err), 0, "%s", err.msg);
    cJSON *j = r.json;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status"), *rw = cJSON_GetObjectItemCaseSensitive(j, "reward");
    cr_assert(cJSON_IsString(st) && !strcmp(st->valuestring, rl_kenv_status_names[r.status]), "typed status %s",
              rl_kenv_status_names[r.status]);
    cr_assert_eq(r.has_reward, cJSON_IsNumber(rw));
    if (r.has_reward) cr_assert_eq(r.reward, rw->valuedouble);
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(j, "speedup");
    if (r.timed) cr_assert(cJSON_IsNumber(sp) && r.speedup == sp->valuedouble && r.ref_ms > 0 && r.cand_ms > 0);
    cr_assert_eq(r.findings.n, cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "static")));
    r.json = NULL;
    rl_kenv_result_free(&r);
    return j;
}

static const char *good_src = "#include \"rl_kernel.h\"\nextern \"C\" int rl_kernel(const rl_kernel_args *a) { return 0; }\n";

static rl_kenv_opts fake_opts(const char *cache)
{
    rl_kenv_opts o;
    rl_kenv_opts_default(&o, &default_paths);
    rl_err err;
    cr_assert_eq(rl_kenv_load_protocol(&o, &err), 0, "%s", err.msg);
    o.nvcc = FIX "/fake_nvcc.sh";
    o.worker = FIX "/fake_worker.sh";
    o.cache_dir = cache;
    o.include_dir = "src/reward/kernel_env/include";
    o.proto.timeout_s = 3;
    o.proto.compile_timeout_s = 3;
    /* The fakes are shell scripts that fork and write their reports to /tmp: orchestration
     * is tested here without the sandbox (test_ksandbox.c and the test below cover it). */
    o.no_sandbox = 1;
    return o;
}

static char cache_dir[64];

static void make_cache(void)
{
    snprintf(cache_dir, sizeof cache_dir, "/tmp/rlc-kenv-test-%d", (int)getpid());
}

static void drop_cache(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache_dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(kenv, .init = make_cache, .fini = drop_cache);

static cJSON *eval(const char *mode, const char *src)
{
    setenv("FAKE_WORKER_MODE", mode, 1);
    rl_kenv_opts o = fake_opts(cache_dir);
    cJSON *res = eval_json(&o, TASK, src);
    return res;
}

Test(kenv, reward_function)
{
    double r;
    cr_assert_eq(rl_kenv_reward("ok", 1.0, 0, &r), 0);
    cr_assert_float_eq(r, 0.2, 1e-12);
    rl_kenv_reward("ok", 2.0, 0, &r);
    cr_assert_float_eq(r, 0.4, 1e-12);
    rl_kenv_reward("ok", 16.0, 0, &r);
    cr_assert_float_eq(r, 1.0, 1e-12);
    rl_kenv_reward("ok", 1000.0, 0, &r);
    cr_assert_float_eq(r, 1.0, 1e-12, "clipped at 16x");
    rl_kenv_reward("ok", 0.5, 0, &r);
    cr_assert_float_eq(r, 0.0, 1e-12);
    rl_kenv_reward("ok", 0.01, 0, &r);
    cr_assert_float_eq(r, 0.0, 1e-12, "clipped at half speed");
    rl_kenv_reward("ok", NAN, 0, &r);
    cr_assert_float_eq(r, 0.0, 1e-12, "NaN speedup counts as the slowest");
    rl_kenv_reward("ok", 4.0, 1, &r);
    cr_assert_float_eq(r, 0.2, 1e-12, "noisy: no credit above 1x");
    rl_kenv_reward("ok", 0.7, 1, &r);
    cr_assert(r < 0.2 && r > 0, "noisy and slower keeps its penalty: %g", r);
    double prev = -1;
    for (double s = 0.25; s < 40; s *= 1.1) {
        rl_kenv_reward("ok", s, 0, &r);
        cr_assert(r >= prev && r >= 0 && r <= 1, "not monotone/bounded at %g: %g", s, r);
        prev = r;
    }
    const char *fails[] = {"compile_error", "incorrect", "crash", "timeout"};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(rl_kenv_reward(fails[i], 10, 0, &r), 0);
        cr_assert_float_eq(r, -0.5, 1e-12, "%s", fails[i]);
    }
    rl_kenv_reward("cheat", 10, 0, &r);
    cr_assert_float_eq(r, -1.0, 1e-12);
    cr_assert_eq(rl_kenv_reward("disallowed", 10, 0, &r), 0);
    cr_assert(r > -1.0 && r < -0.5, "disallowed sits between a failure and a cheat: %g", r);
    cr_assert_eq(rl_kenv_reward("error", 1, 0, &r), -1);
    cr_assert_eq(rl_kenv_reward("bogus", 1, 0, &r), -1);
}

Test(kenv, ok_result_and_cache)
{
    cJSON *res = eval("ok", good_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "failure: %s", tu_json_str(res, "failure"));
    cr_assert_str_eq(tu_json_str(res, "task"), "ew_chain");
    cr_assert_float_eq(tu_json_num(res, "speedup"), 2.0, 1e-9);
    cr_assert_float_eq(tu_json_num(res, "reward"), 0.4, 1e-9);
    const cJSON *comp = cJSON_GetObjectItemCaseSensitive(res, "compile");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(comp, "ok")));
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(comp, "cached")));
    cr_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(res, "checks")));
    cr_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(res, "ref_ms")));
    cJSON_Delete(res);
    res = eval("ok", good_src);
    comp = cJSON_GetObjectItemCaseSensitive(res, "compile");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(comp, "cached")), "second compile of the same source not cached");
    cJSON_Delete(res);
}

Test(kenv, compile_error_returns_the_log)
{
    cJSON *res = eval("ok", "int rl_kernel( { SYNTAX_ERROR }");
    cr_assert_str_eq(tu_json_str(res, "status"), "compile_error");
    cr_assert_float_eq(tu_json_num(res, "reward"), -0.5, 1e-12);
    const cJSON *comp = cJSON_GetObjectItemCaseSensitive(res, "compile");
    const cJSON *log = cJSON_GetObjectItemCaseSensitive(comp, "log");
    cr_assert(cJSON_IsString(log) && strstr(log->valuestring, "error: expected a ';'"), "log: %s",
              cJSON_IsString(log) ? log->valuestring : "(none)");
    cJSON_Delete(res);
}

Test(kenv, compile_timeout)
{
    double t0 = rl_time_now();
    cJSON *res = eval("ok", "// HANG_COMPILER\n");
    cr_assert(rl_time_now() - t0 < 10, "compile limit not enforced");
    cr_assert_str_eq(tu_json_str(res, "status"), "compile_error");
    const cJSON *log = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "compile"), "log");
    cr_assert(strstr(log->valuestring, "timed out"), "%s", log->valuestring);
    cJSON_Delete(res);
}

Test(kenv, worker_failures_fail_the_candidate_only)
{
    struct { const char *mode, *status, *want; } cases[] = {
        {"crash", "crash", "signal 11"},
        {"hang", "timeout", "wall-time limit"},
        {"flood", "crash", "more than"},
        {"forged", "crash", "no result"},
        {"incorrect", "incorrect", "correct_random"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double t0 = rl_time_now();
        cJSON *res = eval(cases[i].mode, good_src);
        cr_assert(rl_time_now() - t0 < 10, "%s: took too long", cases[i].mode);
        cr_assert_str_eq(tu_json_str(res, "status"), cases[i].status, "%s: status %s (%s)", cases[i].mode, tu_json_str(res, "status"),
                         tu_json_str(res, "failure"));
        cr_assert(strstr(tu_json_str(res, "failure"), cases[i].want), "%s: failure '%s' lacks '%s'", cases[i].mode,
                  tu_json_str(res, "failure"), cases[i].want);
        cr_assert_float_eq(tu_json_num(res, "reward"), -0.5, 1e-12, "%s", cases[i].mode);
        cJSON_Delete(res);
    }
}

Test(kenv, noisy_caps_the_reward)
{
    cJSON *res = eval("noisy", good_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok");
    cr_assert_float_eq(tu_json_num(res, "speedup"), 4.0, 1e-9);
    cr_assert_float_eq(tu_json_num(res, "reward"), 0.2, 1e-9);
    cJSON_Delete(res);
}

Test(kenv, fatal_static_finding_is_disallowed)
{
    const char *src = "#include \"rl_kernel.h\"\n#include <thread>\nextern \"C\" int rl_kernel(const rl_kernel_args *a) {\n"
                      "  std::thread([] {}).detach();\n  return 0;\n}\n";
    setenv("FAKE_WORKER_PLAN", "/dev/null", 1);
    cJSON *res = eval("ok", src);
    cr_assert_str_eq(tu_json_str(res, "status"), "disallowed");
    cr_assert(strstr(tu_json_str(res, "failure"), "host_thread") && strstr(tu_json_str(res, "failure"), "line 4"), "%s", tu_json_str(res, "failure"));
    cr_assert_float_eq(tu_json_num(res, "reward"), -0.75, 1e-12);
    cr_assert_null(cJSON_GetObjectItemCaseSensitive(res, "speedup"), "the worker must not run without --keep-going");
    cJSON_Delete(res);

    setenv("FAKE_WORKER_MODE", "ok", 1);
    rl_kenv_opts o = fake_opts(cache_dir);
    o.keep_going = 1;
    res = eval_json(&o, TASK, src);
    cr_assert_str_eq(tu_json_str(res, "status"), "disallowed");
    cr_assert_str_eq(tu_json_str(res, "dynamic_status"), "ok");
    cr_assert_null(cJSON_GetObjectItemCaseSensitive(res, "dynamic_failure"), "the worker found nothing");
    cr_assert_float_eq(tu_json_num(res, "speedup"), 2.0, 1e-9, "keep-going runs the worker");
    cJSON_Delete(res);

    /* A cheat the worker saw outranks the static rule. */
    setenv("FAKE_WORKER_MODE", "cheat", 1);
    res = eval_json(&o, TASK, src);
    cr_assert_str_eq(tu_json_str(res, "status"), "cheat");
    cr_assert_str_eq(tu_json_str(res, "dynamic_status"), "cheat");
    cr_assert(strstr(tu_json_str(res, "failure"), "timed_outputs"), "%s", tu_json_str(res, "failure"));
    cr_assert_float_eq(tu_json_num(res, "reward"), -1.0, 1e-12);
    cJSON_Delete(res);
}

Test(kenv, plan_and_device_reach_the_worker)
{
    char plan_path[96];
    snprintf(plan_path, sizeof plan_path, "/tmp/rlc-kenv-plan-%d.txt", (int)getpid());
    setenv("FAKE_WORKER_PLAN", plan_path, 1);
    cJSON *res = eval("planfile", good_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "%s", tu_json_str(res, "failure"));
    cJSON_Delete(res);
    char *plan;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(plan_path, &plan, &len, &err), 0, "%s", err.msg);
    remove(plan_path);
    cr_assert(!strncmp(plan, "rlplan 1\ndims 1 dimsets 6\n1\n7\n33\n1000\n65537\n16777216\ninputs 1\n0 0 0 0 2 63 1 -1\n", 80),
              "plan:\n%s", plan);
    free(plan);

    setenv("FAKE_WORKER_MODE", "env", 1);
    rl_kenv_opts o = fake_opts(cache_dir);
    o.devices = "5";
    res = eval_json(&o, TASK, good_src);
    cr_assert_str_eq(tu_json_str(res, "failure"), "devices=5");
    cJSON_Delete(res);
}

Test(kenv, protocol_parameters_reach_the_worker)
{
    char args_path[96];
    snprintf(args_path, sizeof args_path, "/tmp/rlc-kenv-args-%d.txt", (int)getpid());
    setenv("FAKE_WORKER_ARGS", args_path, 1);
    setenv("FAKE_WORKER_MODE", "args", 1);
    setenv("FAKE_WORKER_PLAN", "/dev/null", 1);
    rl_kenv_opts o = fake_opts(cache_dir);
    o.proto.random_trials = 7;
    o.proto.timed = 11;
    o.proto.warmup = 2;
    o.proto.input_copies = 5;
    o.proto.watchdog_ms = 1234;
    o.proto.mem_cap_mb = 99;
    o.proto.l2_flush_factor = 3;
    o.proto.max_spread = 0.125;
    o.proto.spread_repeats = 4;
    rl_err err;
    cJSON *res = eval_json(&o, TASK, good_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "%s", tu_json_str(res, "failure"));
    cJSON_Delete(res);
    char *args;
    size_t len;
    cr_assert_eq(rl_file_read_all(args_path, &args, &len, &err), 0, "%s", err.msg);
    remove(args_path);
    const char *want[] = {"--trials 7 ", "--timed 11 ", "--warmup 2 ", "--copies 5 ", "--watchdog-ms 1234 ",
                          "--mem-cap-mb 99 ", "--flush-factor 3 ", "--max-spread 0.125 ", "--spread-repeats 4"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) cr_assert(strstr(args, want[i]), "no '%s' in: %s", want[i], args);
    free(args);
}

Test(kenv, plan_tolerance_defaults_come_from_the_protocol)
{
    /* A spec without "tolerance": the plan's output line carries the protocol's f32 default. */
    const char *text = "{\"name\": \"t\", \"dims\": [{\"name\": \"n\", \"value\": 5}], \"inputs\": [],"
                       " \"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"n\"]}]}";
    rl_kspec spec;
    rl_err err;
    cr_assert_eq(rl_kspec_parse(&spec, text, strlen(text), "spec.json", &err), 0, "%s", err.msg);
    rl_kenv_opts o = fake_opts(cache_dir);
    o.proto.tol.atol[RL_KDT_F32] = 0.25;
    o.proto.tol.rtol[RL_KDT_F32] = 0.5;
    char plan[1024];
    cr_assert_eq(rl_kspec_write_plan(&spec, &o.proto.tol, plan, sizeof plan, &err), 0, "%s", err.msg);
    cr_assert(strstr(plan, "outputs 1\n0 0.25 0.5 1 -1\n"), "plan:\n%s", plan);
}

Test(kenv, evaluator_errors_have_no_reward)
{
    rl_kenv_opts o = fake_opts(cache_dir);
    cJSON *res = eval_json(&o, FIX "/no_such_task", good_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "error");
    cr_assert(strstr(tu_json_str(res, "failure"), "no_such_task/spec.json"), "%s", tu_json_str(res, "failure"));
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(res, "reward")));
    cJSON_Delete(res);

    o.worker = "/nonexistent/rlc-kernel-worker";
    res = eval_json(&o, TASK, good_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "error");
    cr_assert(strstr(tu_json_str(res, "failure"), "cannot run the worker"), "%s", tu_json_str(res, "failure"));
    cJSON_Delete(res);

    rl_kenv_opts unloaded;
    rl_kenv_opts_default(&unloaded, &default_paths);
    res = eval_json(&unloaded, TASK, good_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "error");
    cr_assert(strstr(tu_json_str(res, "failure"), "no protocol"), "%s", tu_json_str(res, "failure"));
    cJSON_Delete(res);
}

Test(kenv, count_gpus)
{
    rl_kenv_opts o = fake_opts(cache_dir);
    setenv("FAKE_WORKER_GPUS", "3", 1);
    cr_assert_eq(rl_kenv_count_gpus(&o), 3);
    o.worker = "/nonexistent/worker";
    o.python = "/nonexistent/python3";
    cr_assert_eq(rl_kenv_count_gpus(&o), 0);
}

/* The episode tools: compile runs no worker and returns the compiler's output; check runs the
 * worker with --check-only and accepts an ok without timings; profile is the whole protocol. */
Test(kenv, compile_check_profile_tools)
{
    char args_path[96];
    snprintf(args_path, sizeof args_path, "%s-args", cache_dir);
    setenv("FAKE_WORKER_ARGS", args_path, 1);
    setenv("FAKE_WORKER_MODE", "args", 1);
    rl_kenv_opts o = fake_opts(cache_dir);
    rl_kenv_result r;
    rl_err err;
    remove(args_path);
    cr_assert_eq(rl_kenv_compile(&o, TASK, good_src, strlen(good_src), &r, &err), 0);
    cr_assert_eq(r.status, RL_KENV_OK, "%s", r.failure ? r.failure : "");
    cr_assert(!r.timed && !rl_file_exists(args_path), "compile must not run the worker");
    rl_kenv_result_free(&r);

    const char *bad = "#include \"rl_kernel.h\"\nextern \"C\" int rl_kernel(const rl_kernel_args *a) { SYNTAX_ERROR }\n";
    cr_assert_eq(rl_kenv_compile(&o, TASK, bad, strlen(bad), &r, &err), 0);
    cr_assert_eq(r.status, RL_KENV_COMPILE_ERROR);
    cr_assert(r.compile_log && r.compile_log[0], "the compiler's output comes back");
    rl_kenv_result_free(&r);

    setenv("FAKE_WORKER_MODE", "args", 1);
    cr_assert_eq(rl_kenv_check(&o, TASK, good_src, strlen(good_src), &r, &err), 0);
    char *args = NULL;
    size_t n = 0;
    cr_assert_eq(rl_file_read_all(args_path, &args, &n, &err), 0, "%s", err.msg);
    cr_assert(strstr(args, "--check-only"), "check passes --check-only: %s", args);
    /* every worker run gets its GPU's lock file (correctness shared, timing exclusive) */
    cr_assert(strstr(args, "--gpu-lock ") && strstr(args, "rlc-gpu-0.lock"), "no GPU lock: %s", args);
    free(args);
    rl_kenv_result_free(&r);
    remove(args_path);

    cr_assert_eq(rl_kenv_profile(&o, TASK, good_src, strlen(good_src), &r, &err), 0);
    cr_assert(r.status == RL_KENV_OK && r.timed && r.speedup == 2.0, "profile times");
    cr_assert_eq(rl_file_read_all(args_path, &args, &n, &err), 0, "%s", err.msg);
    cr_assert(!strstr(args, "--check-only"), "profile runs the timing: %s", args);
    free(args);
    rl_kenv_result_free(&r);
    remove(args_path);
}
