/* test_tasks.c — the task suite in kernel_tasks/ as the evaluator will load it: every spec.json
 * through the evaluator's own parser (kspec.h), plus the suite's rules: enough tasks in every
 * category, small and non-tile-multiple trial sizes, timed inputs within 256 MiB, float32
 * tolerances tight enough to catch TF32/bf16, libraries declared and forbidden consistently
 * with what reference.cu includes, and prompts that state the entry point, sizes and tensors.
 * Running the references needs a GPU: tools/check_kernel_tasks.py does that. */
#include <dirent.h>
#include <string.h>

#include "core/file.h"
#include "reward/kernel_env/kspec.h"
#include "test_util.h"

#define TASKS_DIR "kernel_tasks"
#define MAX_TASKS 256

static const char *categories[] = {"elementwise", "reduction", "softmax", "norm", "matmul",
                                   "convolution", "pooling", "scan", "loss", "fused"};

static int list_tasks(char names[][128])
{
    DIR *d = opendir(TASKS_DIR);
    cr_assert_not_null(d, "cannot open %s (tests run from the repository root)", TASKS_DIR);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s/spec.json", TASKS_DIR, e->d_name);
        if (!rl_file_exists(path)) continue;
        cr_assert_lt(n, MAX_TASKS);
        snprintf(names[n++], 128, "%.127s", e->d_name);
    }
    closedir(d);
    return n;
}

static char *read_text(const char *task, const char *file)
{
    char path[512];
    char *text;
    size_t len;
    rl_err err;
    snprintf(path, sizeof path, "%s/%s/%s", TASKS_DIR, task, file);
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0, "%s", err.msg);
    return text;
}

static int64_t extent(const rl_kspec *s, const rl_ktensor *t, int i, const int64_t *dims)
{
    return t->shape[i] >= 0 ? t->shape[i] : dims[-(t->shape[i] + 1)];
}

static int dtype_bytes(rl_kdtype d) { return d == RL_KDT_F16 || d == RL_KDT_BF16 ? 2 : 4; }

static void check_task(const char *name, int *per_category)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/%s", TASKS_DIR, name);
    rl_kspec s;
    rl_err err = {{0}};
    cr_assert_eq(rl_kspec_load(&s, dir, &err), 0, "%s: %s", name, err.msg);
    cr_assert_str_eq(s.name, name, "%s: spec name '%s' differs from its directory", name, s.name);
    int cat = -1;
    for (int i = 0; i < (int)(sizeof categories / sizeof categories[0]); i++)
        if (!strcmp(s.category, categories[i])) cat = i;
    cr_assert_geq(cat, 0, "%s: unknown category '%s'", name, s.category);
    per_category[cat]++;
    cr_assert(!s.kernelbench[0] || (!strncmp(s.kernelbench, "level", 5) && strstr(s.kernelbench, ".py")),
              "%s: kernelbench '%s' is not levelN/<problem>.py", name, s.kernelbench);

    /* Trial sizes: at least three, one with a tiny dim, one with a dim that is no tile multiple. */
    cr_assert_geq(s.n_trials, 3, "%s: %d trial sizes, want >= 3", name, s.n_trials);
    int tiny = 0, ragged = 0;
    for (int k = 0; k < s.n_trials; k++)
        for (int d = 0; d < s.n_dims; d++) {
            tiny |= s.trial_dims[k][d] <= 7;
            ragged |= s.trial_dims[k][d] > 32 && s.trial_dims[k][d] % 32 != 0;
        }
    cr_assert(tiny && ragged, "%s: trial sizes need a dim <= 7 and one > 32 that is not a multiple of 32", name);

    /* Every dim sizes some tensor; timed inputs stay within 256 MiB each. */
    for (int d = 0; d < s.n_dims; d++) {
        int used = 0;
        for (int i = 0; i < s.n_inputs + s.n_outputs; i++) {
            const rl_ktensor *t = i < s.n_inputs ? &s.inputs[i] : &s.outputs[i - s.n_inputs];
            for (int j = 0; j < t->rank; j++) used |= t->shape[j] == -(d + 1);
        }
        cr_assert(used, "%s: dim '%s' sizes no tensor", name, s.dim_names[d]);
    }
    for (int i = 0; i < s.n_inputs; i++) {
        double bytes = dtype_bytes(s.inputs[i].dtype);
        for (int j = 0; j < s.inputs[i].rank; j++) bytes *= (double)extent(&s, &s.inputs[i], j, s.dims);
        cr_assert_leq(bytes, 256.0 * (1 << 20), "%s: input '%s' is %.0f MiB at the timed size", name, s.inputs[i].name,
                      bytes / (1 << 20));
    }

    /* Tolerance: explicit, and for float32 outputs tight enough that TF32 or bf16 math fails. */
    cr_assert(s.atol >= 0 && s.rtol >= 0, "%s: no explicit tolerance", name);
    for (int o = 0; o < s.n_outputs; o++)
        if (s.outputs[o].dtype == RL_KDT_F32)
            /* atol scales with the output's RMS: TF32 errors reach ~5e-4 of it (more at the max). */
            cr_assert(s.atol <= 2e-4 && s.rtol <= 1e-4, "%s: f32 tolerance atol %g rtol %g lets TF32 pass", name, s.atol, s.rtol);
        else if (s.outputs[o].dtype == RL_KDT_I32)
            cr_assert(s.atol == 0 && s.rtol == 0, "%s: int32 outputs must match exactly", name);

    /* The usual cheats stay forbidden everywhere. */
    int need = RL_KFORBID_STREAMS | RL_KFORBID_GRAPHS | RL_KFORBID_THREADS;
    cr_assert_eq(s.forbid & need, need, "%s: streams, graphs and threads must be forbidden", name);

    /* reference.cu: the entry point, and libraries declared exactly when it includes them. */
    char *ref = read_text(name, "reference.cu");
    cr_assert(strstr(ref, "extern \"C\" int rl_kernel(const rl_kernel_args *args)"), "%s: reference lacks the entry point", name);
    cr_assert(strstr(ref, "#include \"rl_kernel.h\""), "%s: reference does not include rl_kernel.h", name);
    int uses_blas = strstr(ref, "<cublas_v2.h>") != NULL, uses_dnn = strstr(ref, "<cudnn.h>") != NULL;
    cr_assert_eq(!!(s.library & RL_KLIB_CUBLAS), uses_blas, "%s: spec.library and the cuBLAS include disagree", name);
    cr_assert_eq(!!(s.library & RL_KLIB_CUDNN), uses_dnn, "%s: spec.library and the cuDNN include disagree", name);
    if (s.library) cr_assert(s.forbid & RL_KFORBID_LIBRARY, "%s: uses a library but does not forbid calling it", name);
    if (uses_blas) cr_assert(strstr(ref, "CUBLAS_PEDANTIC_MATH"), "%s: cuBLAS fp32 without pedantic math may use TF32", name);
    if (uses_dnn) cr_assert(strstr(ref, "CUDNN_FMA_MATH"), "%s: cuDNN fp32 without FMA math may use TF32", name);
    free(ref);

    /* prompt.md: entry point, every dim, every tensor, and the library rule. */
    char *prompt = read_text(name, "prompt.md");
    cr_assert(strstr(prompt, "rl_kernel(const rl_kernel_args *args)") && strstr(prompt, "args->dims"),
              "%s: prompt does not state the entry point", name);
    for (int d = 0; d < s.n_dims; d++) {
        char want[96];
        snprintf(want, sizeof want, "| %d | `%s` | %lld |", d, s.dim_names[d], (long long)s.dims[d]);
        cr_assert(strstr(prompt, want), "%s: prompt lacks the dims row '%s'", name, want);
    }
    for (int i = 0; i < s.n_inputs + s.n_outputs; i++) {
        const rl_ktensor *t = i < s.n_inputs ? &s.inputs[i] : &s.outputs[i - s.n_inputs];
        char want[96];
        snprintf(want, sizeof want, "`args->%s[%d]` | `%s` |", i < s.n_inputs ? "inputs" : "outputs",
                 i < s.n_inputs ? i : i - s.n_inputs, t->name);
        cr_assert(strstr(prompt, want), "%s: prompt lacks '%s'", name, want);
    }
    if (s.library) cr_assert(strstr(prompt, "Do not call"), "%s: prompt does not forbid the library", name);
    cr_assert(strstr(prompt, "default stream"), "%s: prompt does not state the stream rule", name);
    free(prompt);
}

Test(tasks, suite_loads_and_follows_the_rules)
{
    static char names[MAX_TASKS][128];
    int n = list_tasks(names);
    cr_assert_geq(n, 40, "only %d tasks in %s", n, TASKS_DIR);
    int per_category[sizeof categories / sizeof categories[0]] = {0};
    for (int i = 0; i < n; i++) check_task(names[i], per_category);
    for (size_t c = 0; c < sizeof categories / sizeof categories[0]; c++)
        cr_assert_geq(per_category[c], c == 0 || c == 4 ? 5 : 1, "category %s has %d tasks", categories[c], per_category[c]);
}

Test(tasks, kernelbench_level1_and_level2_are_both_mirrored)
{
    static char names[MAX_TASKS][128];
    int n = list_tasks(names), l1 = 0, l2 = 0;
    for (int i = 0; i < n; i++) {
        char dir[256];
        rl_kspec s;
        rl_err err;
        snprintf(dir, sizeof dir, "%s/%.127s", TASKS_DIR, names[i]);
        cr_assert_eq(rl_kspec_load(&s, dir, &err), 0, "%s", err.msg);
        l1 += !strncmp(s.kernelbench, "level1/", 7);
        l2 += !strncmp(s.kernelbench, "level2/", 7);
    }
    cr_assert(l1 >= 30 && l2 >= 5, "%d level-1 and %d level-2 mirrors", l1, l2);
}
