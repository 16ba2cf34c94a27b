/* test_kenv_kernelbench.c — KernelBench tasks (a problem .py, a ModelNew candidate) through
 * rl_kenv_eval with a fake Python (tests/fixtures/kernel_env/fake_python.sh) standing in for
 * `python3 kernelbench_worker.py`: each verdict and its reward; a crashing, hanging, flooding,
 * garbage-printing, nonce-forging or malformed-result worker fails the candidate only; a
 * missing python, worker, problem or torch is status "error" without reward; the protocol's
 * parameters, the candidate's text and the GPU reach the child; fatal static findings; and the
 * GPU count falls back to torch. Also `rlc kernel-eval` itself (--python, --protocol, overrides,
 * --batch). No GPU or torch needed. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/file.h"
#include "core/timer.h"
#include "reward/kernel_env/kbpch.h"
#include "reward/kernel_env/kenv.h"
#include "reward/kernel_env/kworker.h"
#include "reward/kernel_env/ksandbox.h"
#include "reward/kernel_env/kpool.h"
#include "run_rlc.h"
#include "json_get.h"
#include "kb_fake.h"
#include "test_util.h"

#define FIX "tests/fixtures/kernel_env"
#define PROBLEM "tests/fixtures/kernelbench/problems/88_MinGPTNewGelu.py"
#define CAND "tests/fixtures/kernelbench/candidates/gelu_inline_ok.py"


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

static const char *cand_src = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n";

static rl_kenv_opts fake_opts(void)
{
    static char cache[64];
    rl_kenv_opts o = kb_fake_opts(&default_paths, cache, sizeof cache, "kbench", 2, 1);
    /* The fakes are shell scripts that fork and write their reports to /tmp: orchestration
     * is tested here without the sandbox (test_ksandbox.c and the test below cover it). */
    o.no_sandbox = 1;
    return o;
}

static cJSON *eval_opts(const rl_kenv_opts *o, const char *mode, const char *src)
{
    setenv("FAKE_PY_MODE", mode, 1);
    cJSON *res = eval_json(o, PROBLEM, src);
    return res;
}

static cJSON *eval(const char *mode)
{
    rl_kenv_opts o = fake_opts();
    return eval_opts(&o, mode, cand_src);
}

Test(kbench, task_kind)
{
    cr_assert(rl_kenv_is_kernelbench("level1/19_ReLU.py"));
    cr_assert(rl_kenv_is_kernelbench(PROBLEM));
    cr_assert(!rl_kenv_is_kernelbench("kernel_tasks/softmax"));
    cr_assert(!rl_kenv_is_kernelbench(".py"));
    cr_assert(!rl_kenv_is_kernelbench("x.pyc"));
}

Test(kbench, ok_result)
{
    cJSON *res = eval("ok");
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "failure: %s", tu_json_str(res, "failure"));
    cr_assert_str_eq(tu_json_str(res, "task"), "88_MinGPTNewGelu");
    cr_assert_float_eq(tu_json_num(res, "speedup"), 2.0, 1e-9);
    cr_assert_float_eq(tu_json_num(res, "reward"), 0.4, 1e-9);
    cr_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(res, "checks")));
    cr_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(res, "ref_ms")));
    cr_assert(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(res, "static")));
    cr_assert_float_eq(tu_json_num(res, "ref_solo_ms"), 2.0, 1e-9);
    cr_assert(tu_json_num(res, "worker_seconds") >= 0);
    cJSON_Delete(res);
}

Test(kbench, verdicts_and_rewards)
{
    struct { const char *mode, *status; double reward; } cases[] = {
        {"incorrect", "incorrect", -0.5},
        {"compile_error", "compile_error", -0.5},
        {"noisy", "ok", 0.2}, /* speedup 4 but noisy: no credit above 1x */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *res = eval(cases[i].mode);
        cr_assert_str_eq(tu_json_str(res, "status"), cases[i].status, "%s: %s", cases[i].mode, tu_json_str(res, "failure"));
        cr_assert_float_eq(tu_json_num(res, "reward"), cases[i].reward, 1e-9, "%s", cases[i].mode);
        cJSON_Delete(res);
    }
    cJSON *res = eval("incorrect");
    cr_assert(strstr(tu_json_str(res, "failure"), "correct_adversarial"), "%s", tu_json_str(res, "failure"));
    cJSON_Delete(res);
}

Test(kbench, worker_failures_fail_the_candidate_only)
{
    struct { const char *mode, *status, *want; } cases[] = {
        {"crash", "crash", "signal 11"},
        {"exit3", "crash", "status 3 and no result; stderr: Traceback"},
        {"hang", "timeout", "wall-time limit of 3 s"}, /* timeout_s + compile_timeout_s */
        {"garbage", "crash", "no result"},
        {"flood", "crash", "more than"},
        {"wrong_nonce", "crash", "no result"},
        {"bad_status", "crash", "malformed result (status 'great'"},
        {"ok_no_timing", "crash", "malformed result (status ok without 'ref_ms'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double t0 = rl_time_now();
        cJSON *res = eval(cases[i].mode);
        double dt = rl_time_now() - t0;
        cr_assert(dt < 10, "%s: took %.1f s", cases[i].mode, dt);
        cr_assert_str_eq(tu_json_str(res, "status"), cases[i].status, "%s: status %s (%s)", cases[i].mode, tu_json_str(res, "status"),
                         tu_json_str(res, "failure"));
        cr_assert(strstr(tu_json_str(res, "failure"), cases[i].want), "%s: failure '%s' lacks '%s'", cases[i].mode,
                  tu_json_str(res, "failure"), cases[i].want);
        cr_assert_float_eq(tu_json_num(res, "reward"), -0.5, 1e-12, "%s", cases[i].mode);
        cr_assert(isnan(tu_json_num(res, "speedup")), "%s: a speedup from a failed worker", cases[i].mode);
        cJSON_Delete(res);
    }
}

Test(kbench, evaluator_problems_are_errors_without_reward)
{
    rl_kenv_opts o = fake_opts();
    o.python = "/nonexistent/python3";
    cJSON *res = eval_opts(&o, "ok", cand_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "error");
    cr_assert(strstr(tu_json_str(res, "failure"), "/nonexistent/python3: cannot run the Python worker"), "%s", tu_json_str(res, "failure"));
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(res, "reward")));
    cJSON_Delete(res);

    res = eval("no_torch");
    cr_assert_str_eq(tu_json_str(res, "status"), "error");
    cr_assert(strstr(tu_json_str(res, "failure"), "PyTorch cannot be imported"), "%s", tu_json_str(res, "failure"));
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(res, "reward")));
    cJSON_Delete(res);

    o = fake_opts();
    o.kb_worker = "/nonexistent/kernelbench_worker.py";
    res = eval_opts(&o, "ok", cand_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "error");
    cr_assert(strstr(tu_json_str(res, "failure"), "no KernelBench worker"), "%s", tu_json_str(res, "failure"));
    cJSON_Delete(res);

    o = fake_opts();
    res = eval_json(&o, "tests/fixtures/kernelbench/problems/no_such_problem.py", cand_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "error");
    cr_assert(strstr(tu_json_str(res, "failure"), "no_such_problem.py: no such KernelBench problem file"), "%s", tu_json_str(res, "failure"));
    cr_assert_str_eq(tu_json_str(res, "task"), "no_such_problem");
    cJSON_Delete(res);
}

/* The real worker under the real python3, where torch is missing (this machine): a clear
 * error, not a crash. Skipped where torch is installed (a GPU machine) or python3 is absent. */
Test(kbench, real_worker_without_torch)
{
    if (system("python3 -c 1 >/dev/null 2>&1") != 0) cr_skip_test("no python3");
    if (system("python3 -c 'import torch' >/dev/null 2>&1") == 0) cr_skip_test("torch is installed here");
    rl_kenv_opts o = fake_opts();
    o.python = "python3";
    char *src;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(CAND, &src, &len, &err), 0, "%s", err.msg);
    cJSON *res = eval_json(&o, PROBLEM, src);
    free(src);
    cr_assert_str_eq(tu_json_str(res, "status"), "error", "%s", tu_json_str(res, "failure"));
    cr_assert(strstr(tu_json_str(res, "failure"), "PyTorch cannot be imported"), "%s", tu_json_str(res, "failure"));
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(res, "reward")));
    cJSON_Delete(res);
}

static char *read_text(const char *path)
{
    char *text;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0, "%s", err.msg);
    return text;
}

Test(kbench, protocol_candidate_and_device_reach_the_worker)
{
    char out[96], path[128];
    snprintf(out, sizeof out, "/tmp/rlc-kbench-args-%d", (int)getpid());
    setenv("FAKE_PY_OUT", out, 1);
    rl_kenv_opts o = fake_opts();
    o.proto.random_trials = 7;
    o.proto.timed = 11;
    o.proto.warmup = 2;
    o.proto.input_copies = 5;
    o.proto.l2_flush_factor = 3;
    o.proto.max_spread = 0.125;
    o.proto.spread_repeats = 4;
    o.proto.ref_slowdown_limit = 2.5;
    o.proto.ref_slowdown_min_ms = 0.5;
    o.proto.tol.atol[1] = 0.25; /* f16 */
    o.devices = "5";
    cJSON *res = eval_opts(&o, "args", cand_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "%s", tu_json_str(res, "failure"));
    cJSON_Delete(res);

    char *args = read_text(out);
    const char *want[] = {"src/reward/kernel_env/kernelbench_worker.py --ref " PROBLEM " --cand ", " --nonce-stdin ",
                          "--trials 7 ", "--timed 11 ", "--warmup 2 ", "--copies 5 ", "--flush-factor 3 ",
                          "--max-spread 0.125 ", "--spread-repeats 4 ", "--ref-slowdown-limit 2.5 ",
                          "--ref-slowdown-min-ms 0.5 ", "--tol f32 1.0000000000000001e-05 1.0000000000000001e-05 ",
                          "--tol f16 0.25 0.001 ", "--tol bf16 ", "--tol i32 0 0"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) cr_assert(strstr(args, want[i]), "no '%s' in: %s", want[i], args);
    free(args);
    snprintf(path, sizeof path, "%s.env", out);
    char *env = read_text(path);
    snprintf(path, sizeof path, "%s.cand", out);
    char *cand = read_text(path);
    cr_assert_str_eq(cand, cand_src, "the worker must get the candidate's text");
    free(cand);
    snprintf(path, sizeof path, "%s.path", out);
    char *cand_path = read_text(path);
    cr_assert(!rl_file_exists(cand_path), "the candidate's directory is left behind: %s", cand_path);
    /* load_inline builds in <cache>/kb-<hash of source, arch, python>, first in a build-only run
     * without a GPU (outside the pool), then the GPU run finds the modules built. */
    char want_env[512];
    snprintf(want_env, sizeof want_env, "devices=5 bytecode=1 ext=%s/kb-", o.cache_dir);
    cr_assert(!strncmp(env, want_env, strlen(want_env)) && strstr(env, " arch=9.0a\n"), "env: %s", env);
    free(env);
    free(cand_path);
    snprintf(path, sizeof path, "%s.all", out);
    char *all = read_text(path);
    char *second = strchr(all, '\n');
    cr_assert(second && strstr(all, "devices= ") && strstr(all, "--build-only") < second && !strstr(second, "--build-only"),
              "first a build-only run with no device, then the GPU run:\n%s", all);
    free(all);
    remove(path);
    const char *suffix[] = {"", ".env", ".cand", ".path", ".all"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s%s", out, suffix[i]);
        remove(path);
    }
}

static const char *pool_device;
static int pool_acquired, pool_released;

static const char *pool_acquire(void *ctx)
{
    (void)ctx;
    pool_acquired++;
    return "3";
}

static void pool_release(void *ctx, const char *device)
{
    (void)ctx;
    pool_device = device;
    pool_released++;
}

Test(kbench, gpu_pool)
{
    char out[96], path[128];
    snprintf(out, sizeof out, "/tmp/rlc-kbench-pool-%d", (int)getpid());
    setenv("FAKE_PY_OUT", out, 1);
    rl_kenv_opts o = fake_opts();
    o.gpu_acquire = pool_acquire;
    o.gpu_release = pool_release;
    cJSON *res = eval_opts(&o, "args", cand_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "%s", tu_json_str(res, "failure"));
    cJSON_Delete(res);
    cr_assert(pool_acquired == 1 && pool_released == 1 && !strcmp(pool_device, "3"));
    snprintf(path, sizeof path, "%s.env", out);
    char *env = read_text(path);
    cr_assert(!strncmp(env, "devices=3 ", 10), "%s", env);
    free(env);
    const char *suffix[] = {"", ".env", ".cand", ".path", ".all"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s%s", out, suffix[i]);
        remove(path);
    }
}

Test(kbench, fatal_static_finding_is_disallowed)
{
    const char *src = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                      "        import time\n";
    char out[96];
    snprintf(out, sizeof out, "/tmp/rlc-kbench-static-%d", (int)getpid());
    setenv("FAKE_PY_OUT", out, 1);
    remove(out);
    rl_kenv_opts o = fake_opts();
    cJSON *res = eval_opts(&o, "args", src);
    cr_assert_str_eq(tu_json_str(res, "status"), "disallowed");
    cr_assert(strstr(tu_json_str(res, "failure"), "introspection") && strstr(tu_json_str(res, "failure"), "line 6"), "%s", tu_json_str(res, "failure"));
    cr_assert_float_eq(tu_json_num(res, "reward"), -0.75, 1e-12);
    cr_assert(!rl_file_exists(out), "the worker ran without --keep-going");
    cJSON_Delete(res);

    o.keep_going = 1;
    res = eval_opts(&o, "ok", src);
    cr_assert_str_eq(tu_json_str(res, "status"), "disallowed");
    cr_assert_str_eq(tu_json_str(res, "dynamic_status"), "ok");
    cr_assert_float_eq(tu_json_num(res, "speedup"), 2.0, 1e-9, "keep-going runs the worker");
    cJSON_Delete(res);
}

/* Numeric settings are measured fairly by the worker, not thrown out: a ModelNew that turns TF32
 * on is reported (non-fatal) and still evaluated; --require-kernel reaches the worker. */
Test(kbench, numeric_settings_run_and_require_kernel_passes)
{
    const char *src = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                      "        torch.backends.cudnn.benchmark = True\n";
    char out[96];
    snprintf(out, sizeof out, "/tmp/rlc-kbench-flags-%d", (int)getpid());
    setenv("FAKE_PY_OUT", out, 1);
    remove(out);
    rl_kenv_opts o = fake_opts();
    o.require_kernel = 1;
    cJSON *res = eval_opts(&o, "args", src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "%s", tu_json_str(res, "failure"));
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "static");
    cr_assert(cJSON_GetArraySize(st) == 1 && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(st->child, "fatal")),
              "global_state is reported, not fatal");
    cJSON_Delete(res);
    char *args = read_text(out);
    cr_assert(strstr(args, " --require-kernel "), "no --require-kernel in: %s", args);
    free(args);
    remove(out);
    o.require_kernel = 0;
    res = eval_opts(&o, "args", src);
    cJSON_Delete(res);
    args = read_text(out);
    cr_assert(!strstr(args, "--require-kernel"), "--require-kernel without the option: %s", args);
    free(args);
    const char *suffix[] = {"", ".env", ".cand", ".path", ".all"};
    for (int i = 0; i < 5; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s%s", out, suffix[i]);
        remove(path);
    }
}

Test(kbench, gpu_count_falls_back_to_torch)
{
    rl_kenv_opts o = fake_opts();
    setenv("FAKE_PY_GPUS", "2", 1);
    cr_assert_eq(rl_kenv_count_gpus(&o), 2);
    setenv("FAKE_PY_GPUS", "0", 1);
    cr_assert_eq(rl_kenv_count_gpus(&o), 0);
}

/* ---- the command line ---- */

Test(kbench, cli_single_and_batch)
{
    char out[96], path[128], args[1024];
    snprintf(out, sizeof out, "/tmp/rlc-kbench-cliargs-%d", (int)getpid());
    setenv("FAKE_PY_OUT", out, 1);
    setenv("FAKE_PY_MODE", "args", 1);
    int status;
    char *err;
    snprintf(args, sizeof args, "kernel-eval --no-sandbox --python %s/fake_python.sh --trials 9 --timed 4 --json %s %s", FIX,
             PROBLEM, CAND);
    char *text = tu_run_rlc(args, "", &status, &err);
    cr_assert_eq(status, 0, "stderr: %s", err);
    cr_assert(strstr(text, "\"status\":\"ok\"") && strstr(text, "\"task\":\"88_MinGPTNewGelu\""), "%s", text);
    free(text);
    free(err);
    char *wargs = read_text(out);
    cr_assert(strstr(wargs, "--trials 9 ") && strstr(wargs, "--timed 4 ") && strstr(wargs, "--warmup 3 "),
              "flags override single protocol values: %s", wargs);
    free(wargs);

    /* A protocol file of one's own: its values reach the worker; a bad one stops rlc. */
    char proto[96];
    snprintf(proto, sizeof proto, "/tmp/rlc-kbench-proto-%d.json", (int)getpid());
    char *good = read_text("src/reward/kernel_env/protocol.json");
    char *at = strstr(good, "\"warmup\": 3");
    cr_assert(at);
    at[10] = '7';
    FILE *f = fopen(proto, "w");
    fputs(good, f);
    fclose(f);
    free(good);
    snprintf(args, sizeof args, "kernel-eval --no-sandbox --protocol %s --python %s/fake_python.sh %s %s", proto, FIX, PROBLEM,
             CAND);
    text = tu_run_rlc(args, "", &status, &err);
    cr_assert_eq(status, 0, "stderr: %s", err);
    cr_assert(strstr(text, "status   ok"), "%s", text);
    free(text);
    free(err);
    wargs = read_text(out);
    cr_assert(strstr(wargs, "--warmup 7 "), "%s", wargs);
    free(wargs);
    f = fopen(proto, "w");
    fputs("{\"timed\": 30}", f);
    fclose(f);
    text = tu_run_rlc(args, "", &status, &err);
    cr_assert_eq(status, 1);
    cr_assert(strstr(err, proto) && strstr(err, "missing field"), "%s", err);
    free(text);
    free(err);
    remove(proto);

    /* Batch: JSON lines in and out, ids echoed, a KernelBench source request and a bad line. */
    setenv("FAKE_PY_MODE", "ok", 1);
    char input[1024];
    snprintf(input, sizeof input,
             "{\"id\": \"a\", \"task\": \"%s\", \"candidate\": \"%s\"}\n"
             "{\"id\": 2, \"task\": \"%s\", \"source\": \"import torch\\n\"}\n"
             "not json\n",
             PROBLEM, CAND, PROBLEM);
    snprintf(args, sizeof args, "kernel-eval --batch --no-sandbox --gpus 2 --python %s/fake_python.sh", FIX);
    text = tu_run_rlc(args, input, &status, &err);
    cr_assert_eq(status, 0, "stderr: %s", err);
    int lines = 0, ok = 0;
    for (const char *p = text; (p = strchr(p, '\n')) != NULL; p++) lines++;
    for (const char *p = text; (p = strstr(p, "\"status\":\"ok\"")) != NULL; p++) ok++;
    cr_assert(lines == 3 && ok == 2, "%d lines, %d ok:\n%s", lines, ok, text);
    cr_assert(strstr(text, "\"id\":\"a\"") && strstr(text, "\"id\":2") && strstr(text, "\"id\":3"), "%s", text);
    cr_assert(strstr(text, "stdin line 3"), "%s", text);
    free(text);
    free(err);
    const char *suffix[] = {"", ".env", ".cand", ".path", ".all"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s%s", out, suffix[i]);
        remove(path);
    }
}

/* With the sandbox on (ksandbox.h), a well-behaved worker still runs: the fake Python (a shell
 * script: it may fork, the Python worker's sandbox allows processes) reads its stdin, writes
 * its result and gets status ok; the record says which layers were applied. */
Test(kbench, sandboxed_worker_runs)
{
    setenv("FAKE_PY_PHASES", "1", 1);
    rl_kenv_opts o = fake_opts();
    o.no_sandbox = 0;
    cJSON *res = eval_opts(&o, "ok", cand_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "%s", tu_json_str(res, "failure"));
    cr_assert(strstr(tu_json_str(res, "sandbox"), "seccomp"), "sandbox: %s", tu_json_str(res, "sandbox"));
    /* the build run and the GPU run: one record, no key twice; the build run's phases and the
     * GPU run's both there (where a candidate's seconds went: bench/kernel_eval_throughput.py) */
    int n_checks = 0, n_worker = 0, n_phases = 0, n_build_phases = 0;
    for (const cJSON *c = res->child; c; c = c->next) {
        n_checks += !strcmp(c->string, "checks"), n_worker += !strcmp(c->string, "worker_seconds");
        n_phases += !strcmp(c->string, "phases"), n_build_phases += !strcmp(c->string, "build_phases");
    }
    cr_assert(n_checks == 1 && n_worker == 1 && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(res, "build_seconds")),
              "checks %d, worker_seconds %d, build_seconds", n_checks, n_worker);
    cr_assert(n_phases == 1 && n_build_phases == 1, "phases %d, build_phases %d", n_phases, n_build_phases);
    cr_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "build_phases"), "import")));
    cr_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(res, "phases"), "timing")));
    unsetenv("FAKE_PY_PHASES");
    cJSON_Delete(res);
}

/* The precompiled torch header (kbpch.h): the first KernelBench build of a process starts
 * kb_pch.py in the background, once per directory, and goes without it; once the PCH is ready
 * both runs of every candidate get CXX=kb_cxx.sh and RLC_KB_PCH=DIR (one answer per candidate,
 * so that ninja never rebuilds in the GPU run). A PCH that cannot be built, or --kb-no-pch,
 * leaves the builds as they were (no CXX). */
static char *pch_lines(const char *out)
{
    char path[160];
    snprintf(path, sizeof path, "%s.pch", out);
    char *text = read_text(path);
    remove(path);
    return text;
}

Test(kbench, precompiled_header_reaches_both_runs)
{
    char out[96], log[128], path[160], pch[128], want[700];
    snprintf(out, sizeof out, "/tmp/rlc-kbench-pch-%d", (int)getpid());
    snprintf(log, sizeof log, "%s.log", out);
    snprintf(pch, sizeof pch, "/tmp/rlc-kbench-pchdir-%d", (int)getpid());
    setenv("FAKE_PY_OUT", out, 1);
    setenv("FAKE_PY_PCH_LOG", log, 1);
    rl_err err;
    rl_remove_tree(pch, &err);
    remove(log);
    snprintf(path, sizeof path, "%s.pch", out);
    remove(path);
    rl_kenv_opts o = fake_opts();
    o.kb_pch = pch;
    cJSON *res = eval_opts(&o, "args", cand_src); /* starts the build; both runs without it */
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "%s", tu_json_str(res, "failure"));
    cJSON_Delete(res);
    cr_assert(rl_kbpch_wait(30), "the PCH build did not finish");
    char *env = pch_lines(out);
    cr_assert(!strcmp(env, "cxx=unset pch=unset\ncxx=unset pch=unset\n") ||
                  (strstr(env, "kb_cxx.sh") && !strstr(env, "unset")),
              "one answer for both runs of a candidate:\n%s", env);
    free(env);
    /* kb_pch.py built the PCH with the compiler CXX names: kb_cxx.sh must run that one */
    snprintf(path, sizeof path, "%s.runs", out);
    remove(path);
    setenv("FAKE_PY_RUN_LOG", path, 1);
    setenv("CXX", "/opt/fake gcc/bin/g++", 1);
    for (int round = 0; round < 2; round++) {
        res = eval_opts(&o, "args", cand_src);
        cr_assert_str_eq(tu_json_str(res, "status"), "ok", "%s", tu_json_str(res, "failure"));
        cJSON_Delete(res);
    }
    unsetenv("CXX");
    unsetenv("FAKE_PY_RUN_LOG");
    char *runs = read_text(path);
    remove(path);
    cr_assert_str_eq(runs, "build nvcc=unset kbcxx=/opt/fake gcc/bin/g++\ngpu nvcc=unset kbcxx=/opt/fake gcc/bin/g++\n"
                           "build nvcc=unset kbcxx=/opt/fake gcc/bin/g++\ngpu nvcc=unset kbcxx=/opt/fake gcc/bin/g++\n",
                     "RLC_KB_CXX in both runs of both candidates");
    free(runs);
    char *built = read_text(log);
    snprintf(want, sizeof want, "%s\n", pch);
    cr_assert_str_eq(built, want, "kb_pch.py runs once per directory: %s", built);
    free(built);
    env = pch_lines(out);
    char line[400];
    snprintf(line, sizeof line, "/src/reward/kernel_env/kb_cxx.sh pch=%s\n", pch);
    int lines = 0, with = 0;
    for (char *l = strtok(env, "\n"); l; l = strtok(NULL, "\n"), lines++) {
        size_t n = strlen(l), m = strlen(line) - 1; /* line ends in a newline */
        with += !strncmp(l, "cxx=/", 5) && n >= m && !strncmp(l + n - m, line, m);
    }
    cr_assert(lines == 4 && with == 4, "build and GPU runs of both candidates with the PCH:\n%s", env);
    free(env);

    /* no PCH: a failed build, or --kb-no-pch */
    char pch2[160];
    snprintf(pch2, sizeof pch2, "%s-b", pch);
    o.kb_pch = pch2;
    setenv("FAKE_PY_NO_PCH", "1", 1);
    res = eval_opts(&o, "args", cand_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "a failed PCH build fails no candidate: %s", tu_json_str(res, "failure"));
    cJSON_Delete(res);
    cr_assert(!rl_kbpch_wait(30), "a failed build is no PCH");
    res = eval_opts(&o, "args", cand_src);
    cJSON_Delete(res);
    unsetenv("FAKE_PY_NO_PCH");
    env = pch_lines(out);
    cr_assert_str_eq(env, "cxx=unset pch=unset\ncxx=unset pch=unset\ncxx=unset pch=unset\ncxx=unset pch=unset\n");
    free(env);
    o.kb_pch = pch;
    o.kb_no_pch = 1;
    res = eval_opts(&o, "args", cand_src);
    cJSON_Delete(res);
    env = pch_lines(out);
    cr_assert_str_eq(env, "cxx=unset pch=unset\ncxx=unset pch=unset\n", "--kb-no-pch");
    free(env);
    const char *suffix[] = {"", ".env", ".cand", ".path", ".all", ".log"};
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s%s", out, suffix[i]);
        remove(path);
    }
    rl_remove_tree(pch, &err);
    rl_remove_tree(pch2, &err);
    unsetenv("FAKE_PY_PCH_LOG");
}

/* kb_cxx.sh puts -I<pch>/KEY first for the command's last -O flag (none without one), only when
 * that key's PCH exists, and passes every argument on unchanged. */
Test(kbench, cxx_wrapper_picks_the_pch_of_the_optimization_level)
{
    char dir[96], cmd[512];
    snprintf(dir, sizeof dir, "/tmp/rlc-kbench-cxx-%d", (int)getpid());
    rl_err err;
    snprintf(cmd, sizeof cmd, "%s/O3/torch", dir);
    cr_assert_eq(rl_mkdir_p(cmd, &err), 0, "%s", err.msg);
    snprintf(cmd, sizeof cmd, "%s/O3/torch/extension.h.gch", dir);
    cr_assert_eq(rl_file_write_atomic(cmd, "", 0, &err), 0, "%s", err.msg);
    const char *cases[][2] = {
        {"-O2 -O3 -c 'a b.cpp'", "cc -I%s/O3 -O2 -O3 -c a b.cpp\n"}, /* the last -O counts */
        {"-O3 -O2 -c x.cpp", "cc -O3 -O2 -c x.cpp\n"},               /* no O2 PCH */
        {"-c x.cpp", "cc -c x.cpp\n"},                                /* no "none" PCH */
    };
    for (int i = 0; i < 3; i++) {
        /* RLC_KB_CXX is split into words, as ninja's shell splits CXX ("ccache g++") */
        snprintf(cmd, sizeof cmd, "RLC_KB_CXX='echo cc' RLC_KB_PCH=%s sh src/reward/kernel_env/kb_cxx.sh %s", dir, cases[i][0]);
        FILE *p = popen(cmd, "r");
        cr_assert(p);
        char got[512] = "", want[512];
        size_t n = fread(got, 1, sizeof got - 1, p);
        got[n] = 0;
        pclose(p);
        snprintf(want, sizeof want, cases[i][1], dir);
        cr_assert_str_eq(got, want, "%s", cases[i][0]);
    }
    rl_remove_tree(dir, &err);
}

/* The build directory (TORCH_EXTENSIONS_DIR) is <cache>/kb-<hash of the text>: the G samples of
 * a group that wrote the same text share one build (load_inline finds it done: ninja does
 * nothing), a different text never shares one. */
static char *ext_dir_of(const rl_kenv_opts *o, const char *src, const char *out)
{
    cJSON *res = eval_opts(o, "args", src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "%s", tu_json_str(res, "failure"));
    cJSON_Delete(res);
    char path[160];
    snprintf(path, sizeof path, "%s.env", out);
    char *env = read_text(path), *ext = strstr(env, " ext="), *dir = NULL;
    cr_assert(ext, "%s", env);
    dir = strndup(ext + 5, strcspn(ext + 5, " \n"));
    free(env);
    return dir;
}

Test(kbench, identical_texts_share_their_build)
{
    char out[96];
    snprintf(out, sizeof out, "/tmp/rlc-kbench-share-%d", (int)getpid());
    setenv("FAKE_PY_OUT", out, 1);
    rl_kenv_opts o = fake_opts();
    o.kb_no_pch = 1;
    static const char other[] = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x + 0\n";
    char *a = ext_dir_of(&o, cand_src, out), *b = ext_dir_of(&o, cand_src, out), *c = ext_dir_of(&o, other, out);
    cr_assert_str_eq(a, b, "the same text, the same build directory");
    cr_assert_str_neq(a, c, "another text, another build directory");
    free(a), free(b), free(c);
    const char *suffix[] = {"", ".env", ".cand", ".path", ".all", ".pch"};
    for (int i = 0; i < 6; i++) {
        char path[160];
        snprintf(path, sizeof path, "%s%s", out, suffix[i]);
        remove(path);
    }
}

/* The light torch/extension.h (kblight.h): the build-only run of a candidate whose text names
 * torch/extension.h gets NVCC_PREPEND_FLAGS=-I<kb_light> before the caller's own flags, the GPU
 * run never does; a build that fails with it is built again as written, and that build decides
 * (a real error stays a compile_error, a candidate that needs the full header is ok), and so is
 * one whose two nvcc passes made different kernels (the worker's --light-check, or a launch that
 * fails with "invalid device function" after the light build: built again, --drop-build); a text without
 * the include or cpp_extension, and --kb-no-light, leave nvcc's flags as they were. */
static void light_case(const rl_kenv_opts *o, const char *mode, const char *src, const char *log, const char *status,
                       const char *header, const char *want_runs)
{
    remove(log);
    cJSON *res = eval_opts(o, mode, src);
    cr_assert_str_eq(tu_json_str(res, "status"), status, "%s: %s", mode, tu_json_str(res, "failure"));
    cr_assert_str_eq(tu_json_str(res, "kb_header"), header, "%s", mode);
    if (!strcmp(status, "ok")) cr_assert_float_eq(tu_json_num(res, "speedup"), 2.0, 1e-9);
    cr_assert(tu_json_num(res, "build_seconds") > 0, "%s: the build's time", mode);
    cJSON_Delete(res);
    char *runs = read_text(log);
    cr_assert_str_eq(runs, want_runs, "%s", mode);
    free(runs);
}

Test(kbench, light_header_only_in_the_build_and_never_decides)
{
    char log[96], light[PATH_MAX], first[PATH_MAX + 96], want[3 * PATH_MAX];
    snprintf(log, sizeof log, "/tmp/rlc-kbench-light-%d.log", (int)getpid());
    setenv("FAKE_PY_RUN_LOG", log, 1);
    setenv("NVCC_PREPEND_FLAGS", "-DUSER_FLAG", 1);
    cr_assert(realpath("src/reward/kernel_env/kb_light", light));
    snprintf(first, sizeof first, "build nvcc=-I%s -DUSER_FLAG kbcxx=unset\n", light);
    const char *build = "build nvcc=-DUSER_FLAG kbcxx=unset\n", *gpu = "gpu nvcc=-DUSER_FLAG kbcxx=unset\n";
    static const char with_ext[] = "import torch\nfrom torch.utils.cpp_extension import load_inline\n"
                                   "cuda_src = '#include <torch/extension.h>\\n'\n"
                                   "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n";
    rl_kenv_opts o = fake_opts();
    o.kb_no_pch = 1;
    snprintf(want, sizeof want, "%s%s", first, gpu);
    light_case(&o, "ok", with_ext, log, "ok", "light", want);
    snprintf(want, sizeof want, "%s%s%s", first, build, gpu);
    light_case(&o, "light_fails", with_ext, log, "ok", "original after light failed", want);
    snprintf(want, sizeof want, "%s%s", first, build);
    light_case(&o, "compile_error", with_ext, log, "compile_error", "original after light failed", want);
    snprintf(want, sizeof want, "%s%s%s", first, build, gpu); /* the build-only run's --light-check */
    light_case(&o, "light_mismatch", with_ext, log, "ok", "original after light mismatch", want);
    snprintf(want, sizeof want, "%s%s%s%s", first, gpu, build, gpu); /* caught at launch: built again */
    light_case(&o, "light_launch_fails", with_ext, log, "ok", "original after light launch failure", want);
    snprintf(want, sizeof want, "%s%s", build, gpu);
    light_case(&o, "light_fails", cand_src, log, "ok", "", want); /* no torch/extension.h in the text */
    o.kb_no_light = 1;
    light_case(&o, "light_fails", with_ext, log, "ok", "", want);
    remove(log);
    unsetenv("FAKE_PY_RUN_LOG");
    unsetenv("NVCC_PREPEND_FLAGS");
}

/* rlc kernel-eval --sandbox-diag: the probes of both workers under every variant. The fake
 * Python's "driver" needs to write a directory outside the private ones (FAKE_PY_NEEDS_DIR):
 * the full sandbox hides its GPU, Landlock alone hides it, the variants without Landlock or
 * with every path writable see it, and rlc exits 1 naming the failure; the native fake worker
 * sees its GPUs under every variant. */
Test(kbench, sandbox_diag_names_the_layer)
{
    if (!rl_ksandbox_landlock_abi()) cr_skip_test("no Landlock here: no file layer to diagnose");
    char dir[64], args[512];
    snprintf(dir, sizeof dir, "/tmp/rlc-kbench-diag-%d", (int)getpid());
    rl_err err;
    cr_assert_eq(rl_mkdir_p(dir, &err), 0, "%s", err.msg);
    setenv("FAKE_PY_NEEDS_DIR", dir, 1);
    setenv("FAKE_PY_GPUS", "1", 1);
    setenv("FAKE_WORKER_GPUS", "2", 1);
    snprintf(args, sizeof args, "kernel-eval --sandbox-diag --worker %s/fake_worker.sh --python %s/fake_python.sh", FIX, FIX);
    int status;
    char *err_text;
    char *text = tu_run_rlc(args, "", &status, &err_text);
    cr_assert_eq(status, 1, "the full sandbox hides the fake GPU: exit 1\n%s\n%s", text, err_text);
    const char *want[] = {"native full            devices  2", "native: the full sandbox sees every GPU",
                          "python off             devices  1", "python full            devices  0",
                          "python landlock        devices  0", "python seccomp         devices  1",
                          "python full-landlock   devices  1", "python full+write-all  devices  1",
                          "python full-data       devices  0", "python: the full sandbox hides the GPU"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) cr_assert(strstr(text, want[i]), "no '%s' in:\n%s", want[i], text);
    free(text);
    free(err_text);
    text = tu_run_rlc("kernel-eval --sandbox-diag --batch", "", &status, &err_text);
    cr_assert_eq(status, 2, "--sandbox-diag with --batch is a usage error");
    cr_assert(strstr(err_text, "--sandbox-diag takes no"), "%s", err_text);
    free(text);
    free(err_text);
    text = tu_run_rlc("kernel-eval --sandbox-diag --sandbox-trace /nonexistent.so", "", &status, &err_text);
    cr_assert(status == 2 && strstr(err_text, "/nonexistent.so: no such file"), "%d %s", status, err_text);
    free(text);
    free(err_text);
    unsetenv("FAKE_PY_NEEDS_DIR");
    unsetenv("FAKE_PY_GPUS");
    unsetenv("FAKE_WORKER_GPUS");
    rl_remove_tree(dir, &err);
}

/* The GPU workers' LD_PRELOAD: the driver thread-name shim beside the worker, then what the
 * caller passes, then the environment's own LD_PRELOAD; no shim there: said by the return. */
Test(kbench, preload_shim_beside_the_worker)
{
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    char worker[256], shim[300], out[8192], want[8400];
    snprintf(worker, sizeof worker, "%s/rlc-kernel-worker", build);
    snprintf(shim, sizeof shim, "%s/librlc-kenv-preload.so", build);
    char real[4096];
    cr_assert(realpath(shim, real), "%s (make builds it)", shim);
    rl_kenv_opts o = fake_opts();
    o.worker = worker;
    setenv("LD_PRELOAD", "/x/user.so", 1);
    cr_assert_eq(rl_kworker_preload(&o, "/t/trace.so", out, sizeof out), 1);
    unsetenv("LD_PRELOAD");
    snprintf(want, sizeof want, "LD_PRELOAD=%s:/t/trace.so:/x/user.so", real);
    cr_assert_str_eq(out, want);
    cr_assert_eq(rl_kworker_preload(&o, NULL, out, sizeof out), 1);
    snprintf(want, sizeof want, "LD_PRELOAD=%s", real);
    cr_assert_str_eq(out, want);
    o.worker = "/nonexistent/rlc-kernel-worker";
    cr_assert_eq(rl_kworker_preload(&o, NULL, out, sizeof out), 0, "no shim there");
}
