/* test_kspec.c — spec.json parsing of the kernel environment: a full spec, defaults, every kind
 * of broken spec (the message must name the field), the worker plan, and every task directory
 * in the repository (test tasks and kernel_tasks/) parses. */
#include <dirent.h>
#include <string.h>

#include "reward/kernel_env/kspec.h"
#include "test_util.h"

/* Dtype defaults as the caller passes them (rlc: from protocol.json; test_kproto checks that
 * file holds these values). */
static const rl_ktol tol_def = {{1e-5, 1e-3, 1e-2, 0}, {1e-5, 1e-3, 1e-2, 0}};

static const char *full_spec =
    "{\"name\": \"softmax\", \"category\": \"softmax\", \"description\": \"d\", \"kernelbench\": \"level1/23_Softmax.py\","
    " \"dims\": [{\"name\": \"rows\", \"value\": 4096}, {\"name\": \"cols\", \"value\": 1000}],"
    " \"trial_dims\": [[1, 1], [7, 33]],"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"rows\", \"cols\"],"
    "   \"dist\": {\"kind\": \"uniform\", \"low\": -2, \"high\": 3}, \"adversarial\": [\"nan\", \"huge\"], \"mutable\": true},"
    "  {\"name\": \"w\", \"dtype\": \"bf16\", \"shape\": [16, \"cols\"]}],"
    " \"outputs\": [{\"name\": \"y\", \"dtype\": \"f16\", \"shape\": [\"rows\", \"cols\"]}],"
    " \"tolerance\": {\"atol\": 1e-4, \"rtol\": 2e-4},"
    " \"forbid\": [\"streams\", \"library\"], \"library\": [\"cublas\"]}";

Test(kspec, full_spec_fields)
{
    rl_kspec s;
    rl_err err;
    int rc = rl_kspec_parse(&s, full_spec, strlen(full_spec), "spec.json", &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_str_eq(s.name, "softmax");
    cr_assert_str_eq(s.kernelbench, "level1/23_Softmax.py");
    cr_assert_eq(s.n_dims, 2);
    cr_assert_eq(s.dims[0], 4096);
    cr_assert_eq(s.dims[1], 1000);
    cr_assert_eq(s.n_trials, 2);
    cr_assert_eq(s.trial_dims[1][0], 7);
    cr_assert_eq(s.trial_dims[1][1], 33);
    cr_assert_eq(s.n_inputs, 2);
    cr_assert_eq(s.inputs[0].shape[0], -1);
    cr_assert_eq(s.inputs[0].shape[1], -2);
    cr_assert_eq(s.inputs[0].dist_uniform, 1);
    cr_assert_float_eq(s.inputs[0].p0, -2.0, 0);
    cr_assert_float_eq(s.inputs[0].p1, 3.0, 0);
    cr_assert_eq(s.inputs[0].adversarial, (1 << 2) | (1 << 4));
    cr_assert_eq(s.inputs[0].mutable_, 1);
    cr_assert_eq(s.inputs[1].dtype, RL_KDT_BF16);
    cr_assert_eq(s.inputs[1].shape[0], 16);
    cr_assert_eq(s.inputs[1].dist_uniform, 0, "default distribution is normal(0, 1)");
    cr_assert_float_eq(s.inputs[1].p1, 1.0, 0);
    cr_assert_eq(s.outputs[0].dtype, RL_KDT_F16);
    cr_assert_eq(s.forbid, RL_KFORBID_STREAMS | RL_KFORBID_LIBRARY);
    cr_assert_eq(s.library, RL_KLIB_CUBLAS);
    double atol, rtol;
    rl_kspec_tolerance(&s, &tol_def, RL_KDT_F16, &atol, &rtol);
    cr_assert(atol == 1e-4 && rtol == 2e-4, "spec tolerance wins: %g %g", atol, rtol);
}

Test(kspec, defaults)
{
    const char *text = "{\"name\": \"t\", \"dims\": [{\"name\": \"n\", \"value\": 5}],"
                       " \"inputs\": [], \"outputs\": [{\"name\": \"y\", \"dtype\": \"i32\", \"shape\": [\"n\"]}]}";
    rl_kspec s;
    rl_err err;
    cr_assert_eq(rl_kspec_parse(&s, text, strlen(text), "spec.json", &err), 0, "%s", err.msg);
    cr_assert_eq(s.forbid, RL_KFORBID_STREAMS | RL_KFORBID_GRAPHS | RL_KFORBID_LIBRARY | RL_KFORBID_THREADS,
                 "everything is forbidden by default");
    cr_assert_eq(s.library, 0);
    double atol, rtol;
    rl_kspec_tolerance(&s, &tol_def, RL_KDT_F32, &atol, &rtol);
    cr_assert(atol == 1e-5 && rtol == 1e-5, "f32 default %g %g", atol, rtol);
    rl_kspec_tolerance(&s, &tol_def, RL_KDT_BF16, &atol, &rtol);
    cr_assert(atol == 1e-2 && rtol == 1e-2, "bf16 default %g %g", atol, rtol);
    rl_kspec_tolerance(&s, &tol_def, RL_KDT_I32, &atol, &rtol);
    cr_assert(atol == 0 && rtol == 0, "i32 exact");
}

/* Replaces the first occurrence of from in full_spec with to, parses, expects failure whose
 * message contains want. */
static void expect_error(const char *from, const char *to, const char *want)
{
    char text[4096];
    const char *at = strstr(full_spec, from);
    cr_assert(at, "test bug: '%s' not in the spec", from);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - full_spec), full_spec, to, at + strlen(from));
    rl_kspec s;
    rl_err err = {{0}};
    cr_assert_eq(rl_kspec_parse(&s, text, strlen(text), "bad/spec.json", &err), -1, "accepted: %s", text);
    cr_assert(strstr(err.msg, want) && strstr(err.msg, "bad/spec.json"), "message '%s' lacks '%s'", err.msg, want);
}

Test(kspec, broken_specs_name_the_problem)
{
    expect_error("\"f32\"", "\"f64\"", "dtype 'f64'");
    expect_error("[\"rows\", \"cols\"]", "[\"rows\", \"width\"]", "'width'");
    expect_error("[16, \"cols\"]", "[-16, \"cols\"]", "shape entry 0");
    expect_error("\"uniform\", \"low\": -2, \"high\": 3", "\"uniform\", \"low\": 3, \"high\": 3", "'high'");
    expect_error("\"uniform\"", "\"cauchy\"", "cauchy");
    expect_error("[\"nan\", \"huge\"]", "[\"nan\", \"quiet\"]", "quiet");
    expect_error("[\"streams\", \"library\"]", "[\"streams\", \"warp\"]", "warp");
    expect_error("[\"cublas\"]", "[\"cutlass\"]", "cutlass");
    expect_error("[7, 33]", "[7]", "trial_dims[1]");
    expect_error("[1, 1]", "[1, 0]", "trial_dims[0][1]");
    expect_error("\"value\": 4096", "\"value\": 0", "dims[0]");
    expect_error("\"value\": 4096", "\"value\": 1.5", "value");
    expect_error("{\"name\": \"cols\", \"value\": 1000}", "{\"name\": \"rows\", \"value\": 1000}", "twice");
    expect_error("\"outputs\": [{\"name\": \"y\", \"dtype\": \"f16\", \"shape\": [\"rows\", \"cols\"]}]", "\"outputs\": []",
                 "'outputs'");
    expect_error("\"atol\": 1e-4", "\"atol\": -1", "atol");
    expect_error("\"tolerance\": {\"atol\": 1e-4, \"rtol\": 2e-4}", "\"tolerance\": 3", "tolerance");
    expect_error("\"name\": \"softmax\"", "\"name\": 5", "name");
    expect_error("{\"name\": \"softmax\"", "[{\"name\": \"softmax\"", "");
}

Test(kspec, plan_text)
{
    rl_kspec s;
    rl_err err;
    cr_assert_eq(rl_kspec_parse(&s, full_spec, strlen(full_spec), "spec.json", &err), 0, "%s", err.msg);
    char plan[2048];
    cr_assert_eq(rl_kspec_write_plan(&s, &tol_def, plan, sizeof plan, &err), 0, "%s", err.msg);
    const char *want = "rlplan 1\ndims 2 dimsets 3\n1 1\n7 33\n4096 1000\n"
                       "inputs 2\n0 1 1 -2 3 20 2 -1 -2\n2 0 0 0 1 0 2 16 -2\n"
                       "outputs 1\n1 0.0001 0.00020000000000000001 2 -1 -2\n";
    cr_assert_str_eq(plan, want);
    char tiny[16];
    cr_assert_eq(rl_kspec_write_plan(&s, &tol_def, tiny, sizeof tiny, &err), -1);
    cr_assert(strstr(err.msg, "does not fit"), "%s", err.msg);
}

static int load_all(const char *root)
{
    DIR *d = opendir(root);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
        rl_kspec s;
        rl_err err;
        cr_assert_eq(rl_kspec_load(&s, dir, &err), 0, "%s", err.msg);
        cr_assert_str_eq(s.name, e->d_name, "%s: spec name '%s' differs from the directory", dir, s.name);
        n++;
    }
    closedir(d);
    return n;
}

Test(kspec, repository_tasks_parse)
{
    int n = load_all("tests/fixtures/kernel_env/tasks");
    cr_assert_geq(n, 8, "only %d test tasks", n);
    load_all("kernel_tasks");
}

Test(kspec, missing_files)
{
    rl_kspec s;
    rl_err err;
    cr_assert_eq(rl_kspec_load(&s, "tests/fixtures/kernel_env/no_such_task", &err), -1);
    cr_assert(strstr(err.msg, "no_such_task/spec.json"), "%s", err.msg);
}
