/* test_demo_kernel.c — the kernel demo's summary of an attempt database: samples named by the
 * variant they reproduce (trailing whitespace aside; anything else is "other"), each variant's
 * measured speedup, per step the correct and near-best shares (>= 90% of the task's best), and
 * the variant counts of the first and last three steps. The training itself needs a GPU
 * (`make demo-kernel`). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "train/demo/demo_kernel.h"
#include "test_util.h"

/* One attempt line with the source of examples/demo_kernel/TASK.VARIANT.cu (or "x"). */
static void line(FILE *f, int step, const char *task, const char *variant, double speedup)
{
    char path[256], *src = NULL;
    size_t len;
    rl_err err;
    snprintf(path, sizeof path, "examples/demo_kernel/%s.%s.cu", task, variant);
    if (strcmp(variant, "other")) cr_assert_eq(rl_file_read_all(path, &src, &len, &err), 0, "%s", err.msg);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", step);
    char t[128];
    snprintf(t, sizeof t, "tests/fixtures/kernel_env/tasks/%s", task);
    cJSON_AddStringToObject(o, "task", t);
    cJSON_AddStringToObject(o, "status", speedup > 0 ? "ok" : "incorrect");
    if (speedup > 0) cJSON_AddNumberToObject(o, "speedup", speedup);
    else cJSON_AddNullToObject(o, "speedup");
    cJSON_AddNumberToObject(o, "reward", speedup > 0 ? 0.2 : -0.5);
    cJSON_AddStringToObject(o, "source", src ? src : "x");
    char *text = cJSON_PrintUnformatted(o);
    fprintf(f, "%s\n", text);
    free(text), free(src);
    cJSON_Delete(o);
}

Test(demo_kernel, summary_of_an_attempt_database)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/rlc-demo-kernel-%d.jsonl", (int)getpid());
    FILE *f = fopen(path, "w");
    line(f, 1, "rowsum_naive", "naive", 1.0);
    line(f, 1, "rowsum_naive", "wrong", 0);
    line(f, 1, "rowsum_naive", "warp", 3.0);
    line(f, 1, "swiglu_2k", "other", 0);
    for (int s = 2; s <= 5; s++) {
        line(f, s, "rowsum_naive", "warp", 3.0);
        line(f, s, "rowsum_naive", s < 4 ? "naive" : "shared", s < 4 ? 1.0 : 2.8);
    }
    fclose(f);
    rl_demo_kernel_config c = rl_demo_kernel_defaults();
    rl_demo_kernel_result *r = malloc(sizeof *r);
    rl_err err;
    cr_assert_eq(rl_demo_kernel_summarize(&c, path, r, &err), 0, "%s", err.msg);
    unlink(path);
    cr_assert_eq(r->n_steps, 5);
    cr_assert_eq(r->steps[0].n, 4);
    cr_assert_eq(r->steps[0].n_correct, 2);
    cr_assert_eq(r->steps[0].n_best, 1);
    cr_assert_eq(r->steps[4].n_best, 2, "2.8x is within 90%% of 3x");
    cr_assert_float_eq(r->best[0], 3.0, 1e-12);
    cr_assert_float_eq(r->speedup[0][1], 3.0, 1e-12);
    cr_assert_float_eq(r->speedup[0][3], 0.0, 1e-12, "the wrong variant has no speedup");
    cr_assert_eq(r->first[0][0], 3);   /* naive in steps 1-3 */
    cr_assert_eq(r->last[0][2], 2);    /* shared in steps 3-5 */
    cr_assert_eq(r->first[1][4], 1);   /* swiglu: one "other" */
    free(r);
}
