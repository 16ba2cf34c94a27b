/* test_kb_light.c — the light headers of KernelBench builds (kblight.h, kb_light/): runs
 * kb_light_units.py (kb_kernelcheck.py and the worker's --light-check on objects nvcc builds:
 * a build whose two passes made different kernels is caught and removed) and kb_device_pass.py
 * (every CUDA source of tests/fixtures/kernelbench/ compiles in nvcc's device pass against the
 * stand-in for torch/types.h; needs torch's headers, scripts/torch-headers.sh) and
 * kb_host_pass.py (each builds whole with the light host header and the operators
 * kb_hostops.py finds in its text, its kernels those of its host code; an operator hidden from
 * the scan fails to build; the macro sets of the two headers differ only as listed); and the
 * chain from rl_kenv_compile to nvcc's environment with the real worker and a stand-in torch
 * (tests/fixtures/kernelbench/fake_torch). Each script
 * exits 77 when what it needs is missing: skipped, saying why. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/file.h"
#include "json_get.h"
#include "reward/kernel_env/kenv.h"
#include "test_util.h"

static void run_script(const char *cmd, const char *what)
{
    int rc = system(cmd);
    int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    if (code == 77) cr_skip_test("%s: skipped (its output says why)", what);
    cr_assert_eq(code, 0, "%s failed (exit status %d)", what, code);
}

Test(kb_light, kernel_check_catches_passes_that_differ)
{
    run_script("PYTHONDONTWRITEBYTECODE=1 python3 tests/reward/kernel_env/kb_light_units.py", "kb_light_units.py");
}

Test(kb_light, fixtures_compile_in_the_device_pass_against_the_stand_in, .timeout = 600)
{
    run_script("PYTHONDONTWRITEBYTECODE=1 python3 tests/reward/kernel_env/kb_device_pass.py --jobs 2",
               "kb_device_pass.py");
}

Test(kb_light, fixtures_build_with_the_light_host_header, .timeout = 600)
{
    run_script("PYTHONDONTWRITEBYTECODE=1 python3 tests/reward/kernel_env/kb_host_pass.py --jobs 2", "kb_host_pass.py");
}

/* rl_kenv_compile of the gelu fixture with the real kernelbench_worker.py under python3 and the
 * stand-in torch: the build-only run gets --light-check, the worker writes the operator list
 * of the text (of the fixture's ATen/ops: contiguous, empty_like, t) into the build directory,
 * load_inline's environment has kb_light's -I and then that directory's, and the result says
 * "light_host": "3 operators" (the chain the H100 A/B of 2026-11-27 missed with a stale rlc). */
Test(kb_light, the_build_only_run_gives_the_host_passes_the_operator_list)
{
    if (system("python3 -c 1 >/dev/null 2>&1") != 0) cr_skip_test("no python3");
    char cache[64], pypath[PATH_MAX + 64], cwd[PATH_MAX];
    cr_assert(getcwd(cwd, sizeof cwd));
    snprintf(cache, sizeof cache, "/tmp/rlc-kb-light-chain-%d", (int)getpid());
    const char *old = getenv("PYTHONPATH");
    char *saved = old ? strdup(old) : NULL;
    snprintf(pypath, sizeof pypath, "%s/tests/fixtures/kernelbench/fake_torch", cwd);
    setenv("PYTHONPATH", pypath, 1);
    unsetenv("NVCC_PREPEND_FLAGS");
    rl_kenv_paths paths;
    rl_kenv_opts o;
    rl_kenv_opts_default(&o, &paths);
    rl_err err;
    cr_assert_eq(rl_kenv_load_protocol(&o, &err), 0, "%s", err.msg);
    o.python = "python3";
    o.cache_dir = cache;
    o.no_sandbox = 1;
    o.kb_no_pch = 1;
    char *src;
    size_t len;
    cr_assert_eq(rl_file_read_all("tests/fixtures/kernelbench/candidates/gelu_inline_ok.py", &src, &len, &err), 0, "%s",
                 err.msg);
    rl_kenv_result r;
    cr_assert_eq(rl_kenv_compile(&o, "tests/fixtures/kernelbench/problems/88_MinGPTNewGelu.py", src, len, &r, &err), 0,
                 "%s", err.msg);
    free(src);
    if (saved) setenv("PYTHONPATH", saved, 1), free(saved);
    else unsetenv("PYTHONPATH");
    char *json = cJSON_PrintUnformatted(r.json);
    cr_assert_str_eq(tu_json_str(r.json, "status"), "ok", "%s", json);
    cr_assert_str_eq(tu_json_str(r.json, "kb_header"), "light", "%s", json);
    cr_assert_str_eq(tu_json_str(r.json, "light_host"), "3 operators", "%s", json);
    const cJSON *bp = cJSON_GetObjectItemCaseSensitive(r.json, "build_phases"); /* where its seconds went */
    cr_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(bp, "import")) &&
                  cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(bp, "build")) &&
                  cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(bp, "check")),
              "build_phases: %s", json);
    free(json);
    rl_kenv_result_free(&r);
    char pattern[128];
    snprintf(pattern, sizeof pattern, "%s/kb-*/rl_test_gelu_tanh/env.txt", cache);
    glob_t g;
    cr_assert_eq(glob(pattern, 0, NULL, &g), 0, "no %s: load_inline did not run", pattern);
    char *env;
    cr_assert_eq(rl_file_read_all(g.gl_pathv[0], &env, &len, &err), 0, "%s", err.msg);
    char *ops = strstr(env, "/rlc_kb_ops");
    cr_assert(strstr(env, "/kb_light -I") && ops && ops > strstr(env, "/kb_light"), "NVCC_PREPEND_FLAGS: %s", env);
    char header[PATH_MAX];
    snprintf(header, sizeof header, "%.*s/rlc_kb_ops/rlc_kb_ops.h", (int)(strrchr(g.gl_pathv[0], '/') - g.gl_pathv[0]) -
                                                                        (int)strlen("/rl_test_gelu_tanh"), g.gl_pathv[0]);
    free(env);
    globfree(&g);
    char *body;
    cr_assert_eq(rl_file_read_all(header, &body, &len, &err), 0, "%s", err.msg);
    cr_assert(strstr(body, "#include <ATen/ops/contiguous.h>\n#include <ATen/ops/empty_like.h>\n#include <ATen/ops/t.h>\n"),
              "%s", body);
    free(body);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", cache);
    cr_assert_eq(system(rm), 0);
}
