/* test_prompt.c — the CUDA-L1-style prompt builder: task text and reference included, the
 * fastest earlier variant first, the diverse pick preferring a different approach over a
 * near-copy of the best, other tasks and incorrect entries left out, fences that survive
 * backticks in code, and errors that name the store line. Also the Jaccard distance itself. */
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "reward/kernel_env/extract.h"
#include "reward/kernel_env/prompt.h"
#include "test_util.h"

static char dir[256];

static void write_file(const char *name, const char *text)
{
    char path[512];
    rl_err err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(rl_file_write_atomic(path, text, strlen(text), &err), 0, "%s", err.msg);
}

static void make_task(void)
{
    snprintf(dir, sizeof dir, "/tmp/rl_test_prompt_%d/softmax_rows", (int)getpid());
    rl_err err;
    cr_assert_eq(rl_mkdir_p(dir, &err), 0, "%s", err.msg);
    write_file("prompt.md", "# Task: softmax_rows\n\nSoftmax over each row.\n");
    write_file("reference.cu", "extern \"C\" int rl_kernel(const rl_kernel_args *args) { return REFERENCE_MARK; }\n");
}

static void remove_task(void)
{
    static const char *files[] = {"prompt.md", "reference.cu", "../store.jsonl"};
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    snprintf(path, sizeof path, "%s", dir);
    *strrchr(path, '/') = 0;
    rmdir(path);
}

/* Sources: A fastest (shared memory), A2 a near copy of A, B a different approach (warp
 * shuffles), slower. */
#define SRC_A "extern \\\"C\\\" int rl_kernel(const rl_kernel_args *a) { smem_tile_kernel<<<grid, block, shared_bytes>>>(x, y, rows, cols); return 0; } // VARIANT_A"
#define SRC_A2 "extern \\\"C\\\" int rl_kernel(const rl_kernel_args *a) { smem_tile_kernel<<<grid, block, shared_bytes>>>(x, y, rows, cols); return 0; } // VARIANT_A2"
#define SRC_B "extern \\\"C\\\" int rl_kernel(const rl_kernel_args *a) { warp_shuffle_online<<<n_rows, 32>>>(in, out, n); return 0; } // VARIANT_B"

static char *build(const char *store, const rl_kprompt_opts *o)
{
    char *out = NULL;
    size_t len = 0;
    rl_err err = {{0}};
    char store_path[512];
    if (store) {
        write_file("../store.jsonl", store);
        snprintf(store_path, sizeof store_path, "%s/../store.jsonl", dir);
    }
    cr_assert_eq(rl_kprompt_build(dir, store ? store_path : NULL, o, &out, &len, &err), 0, "%s", err.msg);
    cr_assert_eq(strlen(out), len);
    return out;
}

Test(prompt, task_and_reference_without_store, .init = make_task, .fini = remove_task)
{
    char *p = build(NULL, NULL);
    cr_assert(strstr(p, "Softmax over each row."), "%s", p);
    cr_assert(strstr(p, "REFERENCE_MARK"), "reference missing:\n%s", p);
    cr_assert_null(strstr(p, "Earlier attempts"), "no store, yet attempts shown:\n%s", p);
    cr_assert(strstr(p, "performance analysis"), "%s", p);
    cr_assert(strstr(p, "exactly one ```cuda code block"), "%s", p);
    free(p);
}

Test(prompt, best_first_then_most_different, .init = make_task, .fini = remove_task)
{
    const char *store =
        "{\"task\": \"softmax_rows\", \"source\": \"" SRC_A2 "\", \"result\": {\"speedup\": 2.9, \"correct\": true}}\n"
        "{\"task\": \"kernel_tasks/softmax_rows\", \"source\": \"" SRC_B "\", \"result\": {\"speedup\": 1.4, \"status\": \"ok\"}}\n"
        "\n"
        "{\"task\": \"softmax_rows\", \"source\": \"" SRC_A "\", \"result\": {\"speedup\": 3.1, \"correct\": true}}\n"
        "{\"task\": \"layernorm\", \"source\": \"// OTHER_TASK rl_kernel\", \"result\": {\"speedup\": 9.0, \"correct\": true}}\n"
        "{\"task\": \"softmax_rows\", \"source\": \"// WRONG_ONE rl_kernel\", \"result\": {\"speedup\": 8.0, \"correct\": false}}\n"
        "{\"task\": \"softmax_rows\", \"source\": \"// CHEAT_ONE rl_kernel\", \"result\": {\"speedup\": 50.0, \"status\": \"cheat\"}}\n";
    rl_kprompt_opts o;
    rl_kprompt_opts_default(&o);
    o.n_best = 1;
    o.n_diverse = 1;
    char *p = build(store, &o);
    const char *a = strstr(p, "VARIANT_A\n"), *b = strstr(p, "VARIANT_B");
    cr_assert(a && b, "best or diverse variant missing:\n%s", p);
    cr_assert(a < b, "the fastest must come first:\n%s", p);
    cr_assert(strstr(p, "speedup 3.10x (the fastest so far)"), "%s", p);
    cr_assert(strstr(p, "speedup 1.40x (a different approach)"), "%s", p);
    cr_assert_null(strstr(p, "VARIANT_A2"), "the near copy beat the different approach:\n%s", p);
    cr_assert_null(strstr(p, "OTHER_TASK"), "another task's entry leaked in");
    cr_assert_null(strstr(p, "WRONG_ONE"), "an incorrect entry was shown");
    cr_assert_null(strstr(p, "CHEAT_ONE"), "a cheat was shown");
    free(p);

    o.n_diverse = 2; /* the near copy comes last, when nothing else is left */
    p = build(store, &o);
    cr_assert(strstr(p, "VARIANT_A2"), "%s", p);
    cr_assert(strstr(p, "VARIANT_B") < strstr(p, "VARIANT_A2"), "%s", p);
    free(p);
}

Test(prompt, duplicates_collapse_to_best_speedup, .init = make_task, .fini = remove_task)
{
    const char *store =
        "{\"task\": \"softmax_rows\", \"source\": \"" SRC_B "\", \"result\": {\"speedup\": 1.2, \"correct\": true}}\n"
        "{\"task\": \"softmax_rows\", \"source\": \"" SRC_B "\", \"result\": {\"speedup\": 1.7, \"correct\": true}}\n";
    char *p = build(store, NULL);
    cr_assert(strstr(p, "speedup 1.70x"), "%s", p);
    cr_assert_null(strstr(p, "Attempt 2"), "a duplicate was shown twice:\n%s", p);
    free(p);
}

Test(prompt, long_sources_are_skipped, .init = make_task, .fini = remove_task)
{
    const char *store = "{\"task\": \"softmax_rows\", \"source\": \"" SRC_B "\", \"result\": {\"speedup\": 1.2, \"correct\": true}}\n";
    rl_kprompt_opts o;
    rl_kprompt_opts_default(&o);
    o.max_source = 20;
    char *p = build(store, &o);
    cr_assert_null(strstr(p, "Earlier attempts"), "%s", p);
    free(p);
}

Test(prompt, backticks_in_code_get_a_longer_fence, .init = make_task, .fini = remove_task)
{
    const char *store = "{\"task\": \"softmax_rows\", \"source\": \"/* ```cuda example``` */ extern \\\"C\\\" int rl_kernel("
                        "const rl_kernel_args *a) { return 0; }\", \"result\": {\"speedup\": 1.5, \"correct\": true}}\n";
    char *p = build(store, NULL);
    cr_assert(strstr(p, "````cuda\n/* ```cuda example``` */"), "%s", p);
    /* The extractor reads the prompt's own attempt back whole. */
    const char *att = strstr(p, "### Attempt 1");
    rl_kextract x;
    rl_err err;
    cr_assert_eq(rl_kextract_code(att, strlen(att), "rl_kernel", &x, &err), 0, "%s", err.msg);
    cr_assert(strstr(x.code, "```cuda example```"), "%s", x.code);
    rl_kextract_free(&x);
    free(p);
}

Test(prompt, bad_store_lines_name_the_line, .init = make_task, .fini = remove_task)
{
    struct { const char *store, *msg; } cases[] = {
        {"{\"task\": \"softmax_rows\", \"source\": \"x\", \"result\": {\"speedup\": 1, \"correct\": true}}\n{not json\n",
         "store.jsonl:2"},
        {"{\"task\": \"softmax_rows\", \"result\": {\"speedup\": 1}}\n", "'source'"},
        {"{\"task\": \"softmax_rows\", \"source\": \"x\", \"result\": 3}\n", "'result' must be an object"},
        {"{\"task\": \"softmax_rows\", \"source\": \"x\", \"result\": {\"speedup\": \"fast\"}}\n", "speedup"},
        {"[1, 2]\n", "must be an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file("../store.jsonl", cases[i].store);
        char store_path[512];
        snprintf(store_path, sizeof store_path, "%s/../store.jsonl", dir);
        char *out = (char *)1;
        size_t len = 7;
        rl_err err = {{0}};
        cr_assert_eq(rl_kprompt_build(dir, store_path, NULL, &out, &len, &err), -1, "case %zu accepted", i);
        cr_assert(strstr(err.msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i, err.msg, cases[i].msg);
        cr_assert_null(out);
        cr_assert_eq(len, 0);
    }
}

Test(prompt, missing_files_are_reported, .init = make_task, .fini = remove_task)
{
    char *out;
    size_t len;
    rl_err err = {{0}};
    cr_assert_eq(rl_kprompt_build("/nonexistent/task", NULL, NULL, &out, &len, &err), -1);
    cr_assert(strstr(err.msg, "/nonexistent/task/prompt.md"), "%s", err.msg);
    char store_path[512];
    snprintf(store_path, sizeof store_path, "%s/no_store.jsonl", dir);
    cr_assert_eq(rl_kprompt_build(dir, store_path, NULL, &out, &len, &err), -1);
    cr_assert(strstr(err.msg, "no_store.jsonl"), "%s", err.msg);
}

Test(prompt, real_task_prompt)
{
    char *out;
    size_t len;
    rl_err err = {{0}};
    cr_assert_eq(rl_kprompt_build("kernel_tasks/softmax", NULL, NULL, &out, &len, &err), 0, "%s", err.msg);
    cr_assert(strstr(out, "# Task: softmax"), "%s", out);
    cr_assert(strstr(out, "block_merge(m, s, sm, ss);"), "the reference source is missing");
    free(out);
}

Test(prompt_distance, jaccard)
{
    cr_assert_float_eq(rl_kprompt_distance("a b c", 5, "a b c", 5), 0.0, 1e-12);
    cr_assert_float_eq(rl_kprompt_distance("a b", 3, "c d", 3), 1.0, 1e-12);
    /* {a, b, c} vs {b, c, d}: 2 common of 4 */
    double d = rl_kprompt_distance("a+b*c", 5, "b(c)[d]", 7);
    cr_assert_float_eq(d, 0.5, 1e-12, "distance %f", d);
    /* repetition and punctuation do not matter */
    cr_assert_float_eq(rl_kprompt_distance("x x x;", 6, "{x}", 3), 0.0, 1e-12);
    cr_assert_float_eq(rl_kprompt_distance("", 0, "", 0), 0.0, 1e-12);
    cr_assert_float_eq(rl_kprompt_distance("", 0, "k", 1), 1.0, 1e-12);
    /* numbers and identifiers with digits are tokens: 1.5f differs from 2.5f */
    cr_assert_float_eq(rl_kprompt_distance("y = 1.5f", 8, "y = 2.5f", 8), 2.0 / 3.0, 1e-12);
}
