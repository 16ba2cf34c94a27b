/* test_kb_calibration.c — the sandbox calibration of the KernelBench (Python) worker (kworker.c):
 * a GPU driver that cannot start under a sandbox layer makes the first run drop layers until the
 * GPUs appear, and the calibration runs beside the first candidate's build, not after it on its
 * GPU run. A fake Python (tests/fixtures/kernel_env/fake_python.sh) stands in for the worker and
 * for torch's GPU probe. No GPU or torch needed. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/file.h"
#include "reward/kernel_env/kenv.h"
#include "reward/kernel_env/ksandbox.h"
#include "json_get.h"
#include "kb_fake.h"
#include "test_util.h"

#define FIX "tests/fixtures/kernel_env"
#define PROBLEM "tests/fixtures/kernelbench/problems/88_MinGPTNewGelu.py"

static rl_kenv_paths default_paths;

static const char *cand_src = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n";

/* Options for the fake Python with the sandbox on. */
static rl_kenv_opts fake_opts(void)
{
    static char cache[64];
    rl_kenv_opts o = kb_fake_opts(&default_paths, cache, sizeof cache, "kbcal", 10, 10);
    rl_err err;
    o.no_sandbox = 0;
    /* The GPU's lock file lives in $TMPDIR: tests running at once must not share one (a
     * calibration holds it exclusively). */
    static char tmp[64];
    snprintf(tmp, sizeof tmp, "/tmp/rlc-kbcal-tmp-%d", (int)getpid());
    cr_assert_eq(rl_mkdir_p(tmp, &err), 0, "%s", err.msg);
    setenv("TMPDIR", tmp, 1);
    return o;
}

static cJSON *eval_opts(const rl_kenv_opts *o, const char *mode, const char *src)
{
    setenv("FAKE_PY_MODE", mode, 1);
    rl_kenv_result r;
    rl_err err;
    cr_assert_eq(rl_kenv_eval(o, PROBLEM, src, strlen(src), &r, &err), 0, "%s", err.msg);
    cJSON *j = r.json;
    r.json = NULL;
    rl_kenv_result_free(&r);
    return j;
}

/* Removes fake_opts's cache and temporary directories. */
static void cleanup(void)
{
    rl_err err;
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/rlc-kbcal-cache-%d", (int)getpid());
    rl_remove_tree(dir, &err);
    snprintf(dir, sizeof dir, "/tmp/rlc-kbcal-tmp-%d", (int)getpid());
    rl_remove_tree(dir, &err);
}

static char *read_text(const char *path)
{
    char *text;
    size_t len;
    rl_err err;
    return rl_file_read_all(path, &text, &len, &err) == 0 ? text : NULL;
}

/* A GPU driver that cannot start under a sandbox layer (here: it must write outside the private
 * directories, which Landlock refuses): the first run calibrates, drops the layers one by one
 * until the GPUs appear, evaluates under that level and says so in "sandbox". */
Test(kb_calibration, sandbox_calibrates_to_the_driver)
{
    if (!rl_ksandbox_landlock_abi()) cr_skip_test("no Landlock here: nothing to calibrate");
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/rlc-kbench-driver-%d", (int)getpid());
    rl_err err;
    cr_assert_eq(rl_mkdir_p(dir, &err), 0, "%s", err.msg);
    setenv("FAKE_PY_NEEDS_DIR", dir, 1);
    setenv("FAKE_PY_GPUS", "1", 1);
    rl_kenv_opts o = fake_opts();
    cJSON *res = eval_opts(&o, "ok", cand_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "%s", tu_json_str(res, "failure"));
    cr_assert(strstr(tu_json_str(res, "sandbox"), "Landlock off"), "sandbox: %s", tu_json_str(res, "sandbox"));
    cJSON_Delete(res);
    unsetenv("FAKE_PY_NEEDS_DIR");
    unsetenv("FAKE_PY_GPUS");
    rl_remove_tree(dir, &err);
    cleanup();
}

/* The calibration (the Python worker's GPU probes) runs beside the first candidate's build, while
 * the GPU idles, not after it on the GPU run, where it held the first GPU slots (~11 s on the
 * H100): the first probe starts while the 2-second build still runs. */
Test(kb_calibration, sandbox_calibrates_during_the_first_build)
{
    char log[96];
    snprintf(log, sizeof log, "/tmp/rlc-kbench-probe-%d", (int)getpid());
    remove(log);
    setenv("FAKE_PY_PROBE_LOG", log, 1);
    setenv("FAKE_PY_GPUS", "1", 1);
    setenv("FAKE_PY_BUILD_SLEEP", "2", 1);
    rl_kenv_opts o = fake_opts();
    struct timespec t0;
    clock_gettime(CLOCK_REALTIME, &t0);
    cJSON *res = eval_opts(&o, "ok", cand_src);
    cr_assert_str_eq(tu_json_str(res, "status"), "ok", "%s", tu_json_str(res, "failure"));
    cr_assert(cJSON_GetObjectItemCaseSensitive(res, "build_seconds")->valuedouble >= 2, "the build slept 2 s");
    cJSON_Delete(res);
    char *text = read_text(log);
    double probe = text ? atof(text) : 0;
    free(text);
    remove(log);
    unsetenv("FAKE_PY_PROBE_LOG");
    unsetenv("FAKE_PY_GPUS");
    unsetenv("FAKE_PY_BUILD_SLEEP");
    double after = probe - (t0.tv_sec + t0.tv_nsec * 1e-9);
    cr_assert(probe > 0 && after < 1.5, "the first probe started %.2f s after the evaluation (the build takes 2 s)", after);
    cleanup();
}

/* While the calibration runs (it holds the sandbox level's lock for seconds), other candidates'
 * builds start: nothing on a candidate's way to its build waits for it. Two candidates at once, a
 * calibration of 2 x 2 s (two probes), builds of 2 s: both done in ~4 s; a second build that
 * waited for the calibration would end after ~6. */
typedef struct two_evals {
    const rl_kenv_opts *o;
    char src[160];
    double seconds;
    char status[32];
} two_evals;

static void *eval_thread(void *arg)
{
    two_evals *t = arg;
    rl_kenv_result r;
    rl_err err;
    cr_assert_eq(rl_kenv_eval(t->o, PROBLEM, t->src, strlen(t->src), &r, &err), 0, "%s", err.msg);
    const cJSON *es = cJSON_GetObjectItemCaseSensitive(r.json, "eval_seconds");
    t->seconds = cJSON_IsNumber(es) ? es->valuedouble : -1;
    snprintf(t->status, sizeof t->status, "%s", rl_kenv_status_names[r.status]);
    rl_kenv_result_free(&r);
    return NULL;
}

Test(kb_calibration, builds_do_not_wait_for_the_calibration)
{
    setenv("FAKE_PY_GPUS", "1", 1);
    setenv("FAKE_PY_PROBE_SLEEP", "2", 1);
    setenv("FAKE_PY_BUILD_SLEEP", "2", 1);
    setenv("FAKE_PY_MODE", "ok", 1);
    rl_kenv_opts o = fake_opts();
    two_evals t[2] = {{.o = &o}, {.o = &o}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        snprintf(t[i].src, sizeof t[i].src, "%s# candidate %d\n", cand_src, i);
        cr_assert_eq(pthread_create(&th[i], NULL, eval_thread, &t[i]), 0);
        if (i == 0) usleep(300 * 1000); /* the first one claims the calibration */
    }
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    unsetenv("FAKE_PY_PROBE_SLEEP");
    unsetenv("FAKE_PY_BUILD_SLEEP");
    unsetenv("FAKE_PY_GPUS");
    for (int i = 0; i < 2; i++) {
        cr_assert_str_eq(t[i].status, "ok", "candidate %d", i);
        cr_assert(t[i].seconds >= 2 && t[i].seconds < 5.5, "candidate %d took %.2f s (calibration 4 s, build 2 s)", i,
                  t[i].seconds);
    }
    cleanup();
}
