/* test_device_opt.c — the --device option of `rlc logprobs` and `rlc generate` (the binary in
 * $BUILD, default build/; src/cli/device.c): a bad value is refused by name with exit
 * status 2; cpu and auto give the same log-probs as each other (auto is the CPU where no GPU
 * is visible, CUDA elsewhere: the two then differ by bf16 rounding only, checked to 5e-2);
 * cuda either works or, where no device is visible, fails (status 1) with the backend's message. */
#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/ctx.h"
#include "core/file.h"
#include "io/json.h"
#include "run_rlc.h"
#include "test_util.h"

#define MODEL "tests/fixtures/models/qwen3-tiny-tied"

static const char *INPUT = "{\"ids\": [5, 17, 300, 2, 41, 9]}\n";

/* The "logprobs" array of the single output line, into out[5]. */
static void logprobs_of(const char *out, double *lp)
{
    rl_err err = {{0}};
    cJSON *obj = rl_json_parse(out, strlen(out), "output", &err);
    cr_assert(obj, "%s (output '%s')", err.msg, out);
    const cJSON *arr = cJSON_GetObjectItem(obj, "logprobs");
    cr_assert_eq(cJSON_GetArraySize(arr), 5);
    for (int i = 0; i < 5; i++) lp[i] = cJSON_GetArrayItem(arr, i)->valuedouble;
    cJSON_Delete(obj);
}

Test(cli_device, bad_value_is_refused_by_name)
{
    const char *cmds[] = {"logprobs --model " MODEL " --device gpu0", "generate --model " MODEL " --device gpu0"};
    for (int c = 0; c < 2; c++) {
        int status;
        char *err_text, *out = tu_run_rlc(cmds[c], INPUT, &status, &err_text);
        cr_expect_eq(status, 2, "%s: status %d", cmds[c], status);
        cr_expect(strstr(err_text, "--device must be cpu, cuda or auto, got 'gpu0'"), "%s: stderr '%s'", cmds[c],
                  err_text);
        cr_expect_str_empty(out);
        free(out);
        free(err_text);
    }
}

Test(cli_device, cpu_and_auto_agree)
{
    int s1, s2;
    char *e1, *e2;
    char *o1 = tu_run_rlc("logprobs --model " MODEL " --device cpu", INPUT, &s1, &e1);
    char *o2 = tu_run_rlc("logprobs --model " MODEL " --device auto", INPUT, &s2, &e2);
    cr_assert_eq(s1, 0, "stderr: %s", e1);
    cr_assert_eq(s2, 0, "stderr: %s", e2);
    double a[5], b[5];
    logprobs_of(o1, a);
    logprobs_of(o2, b);
    double tol = rl_cuda_available() ? 5e-2 : 0.0;
    for (int i = 0; i < 5; i++)
        cr_expect(fabs(a[i] - b[i]) <= tol, "logprob %d: cpu %.9g auto %.9g (tol %g)", i, a[i], b[i], tol);
    free(o1);
    free(o2);
    free(e1);
    free(e2);
}

Test(cli_device, cuda_works_or_says_why)
{
    int status;
    char *err_text, *out = tu_run_rlc("logprobs --model " MODEL " --device cuda", INPUT, &status, &err_text);
    if (rl_cuda_available()) {
        cr_expect_eq(status, 0, "stderr: %s", err_text);
        double lp[5];
        logprobs_of(out, lp);
    } else {
        cr_expect_eq(status, 1);
        cr_expect(strstr(err_text, "rlc logprobs: --device cuda: "), "stderr '%s'", err_text);
        cr_expect(strstr(err_text, "CUDA"), "stderr '%s'", err_text);
    }
    free(out);
    free(err_text);
}
