/* test_extract.c — the code extractor on the answer shapes models produce: one or several
 * fenced blocks in every fence style, a lost closing fence, code in prose, <think> drafts,
 * non-C blocks, truncated code, and the reasons given when nothing usable is found. */
#include <string.h>

#include "reward/kernel_env/extract.h"
#include "test_util.h"

#define KERNEL_A "#include \"rl_kernel.h\"\n__global__ void k(float *y) { y[0] = 1.0f; }\n" \
                 "extern \"C\" int rl_kernel(const rl_kernel_args *args)\n{\n    k<<<1, 1>>>((float *)args->outputs[0]);\n    return 0;\n}"
#define KERNEL_B "#include \"rl_kernel.h\"\n__global__ void k2(float *y) { if (threadIdx.x == 0) { y[1] = 2.0f; } }\n" \
                 "extern \"C\" int rl_kernel(const rl_kernel_args *args) {\n    k2<<<1, 32>>>((float *)args->outputs[0]);\n    return 0;\n}"

static rl_kextract ok_extract(const char *answer)
{
    rl_kextract x;
    rl_err err = {{0}};
    int rc = rl_kextract_code(answer, strlen(answer), "rl_kernel", &x, &err);
    cr_assert_eq(rc, 0, "extraction failed: %s\nanswer:\n%s", err.msg, answer);
    return x;
}

static void expect_code(const char *answer, const char *code, rl_kextract_kind kind)
{
    rl_kextract x = ok_extract(answer);
    cr_assert_str_eq(x.code, code, "wrong code picked from:\n%s\n--- got:\n%s", answer, x.code);
    cr_assert_eq(x.len, strlen(code));
    cr_assert_eq(x.kind, kind, "kind %d, expected %d", x.kind, kind);
    cr_assert_geq(x.n_parts, 1, "n_parts %d", x.n_parts);
    rl_kextract_free(&x);
}

static void expect_fail(const char *answer, const char *reason_part)
{
    rl_kextract x;
    rl_err err = {{0}};
    int rc = rl_kextract_code(answer, strlen(answer), "rl_kernel", &x, &err);
    cr_assert_eq(rc, -1, "extraction should fail for:\n%s\ngot:\n%s", answer, rc == 0 ? x.code : "");
    cr_assert(strstr(err.msg, reason_part), "reason '%s' lacks '%s'", err.msg, reason_part);
    cr_assert_null(x.code);
}

Test(extract, single_cuda_block)
{
    expect_code("Here is my kernel.\n\n```cuda\n" KERNEL_A "\n```\n\nIt is fast.", KERNEL_A, RL_KEXTRACT_FENCED);
}

Test(extract, fence_languages)
{
    const char *fences[] = {"```cpp", "```c++", "```", "~~~", "~~~cuda", "````cuda", "```CUDA", "``` cuda", "```cu",
                            "```c", "```{.cuda}"};
    for (size_t i = 0; i < sizeof fences / sizeof fences[0]; i++) {
        char close[8];
        snprintf(close, sizeof close, "%.*s", fences[i][0] == '~' ? 3 : (int)strspn(fences[i], "`"), fences[i]);
        char answer[1024];
        snprintf(answer, sizeof answer, "Answer:\n%s\n%s\n%s\n", fences[i], KERNEL_A, close);
        rl_kextract x = ok_extract(answer);
        cr_assert_str_eq(x.code, KERNEL_A, "fence '%s'", fences[i]);
        cr_assert_eq(x.kind, RL_KEXTRACT_FENCED, "fence '%s'", fences[i]);
        rl_kextract_free(&x);
    }
}

Test(extract, language_word_is_reported)
{
    rl_kextract x = ok_extract("```c++\n" KERNEL_A "\n```");
    cr_assert_str_eq(x.lang, "c++");
    cr_assert_eq(x.n_blocks, 1);
    rl_kextract_free(&x);
}

Test(extract, last_block_with_entry_wins)
{
    expect_code("First try:\n```cuda\n" KERNEL_A "\n```\nBetter:\n```cuda\n" KERNEL_B "\n```\n", KERNEL_B, RL_KEXTRACT_FENCED);
}

Test(extract, later_block_without_entry_is_ignored)
{
    expect_code("```cuda\n" KERNEL_A "\n```\nCompile with:\n```\nnvcc -O3 x.cu\n```\nand a helper:\n"
                "```cuda\n__device__ float sq(float v) { return v * v; }\n```\n",
                KERNEL_A, RL_KEXTRACT_FENCED);
}

Test(extract, non_c_blocks_are_ignored)
{
    expect_code("```python\n# calls rl_kernel(args) from python\nrl_kernel(args)\n```\n```cuda\n" KERNEL_A "\n```\n"
                "```bash\nnvcc rl_kernel.cu\n```", KERNEL_A, RL_KEXTRACT_FENCED);
}

Test(extract, missing_closing_fence)
{
    expect_code("Final version:\n```cuda\n" KERNEL_A "\n", KERNEL_A, RL_KEXTRACT_UNCLOSED);
}

Test(extract, truncated_last_block_falls_back_to_earlier_whole_one)
{
    expect_code("```cuda\n" KERNEL_A "\n```\nLet me refine it:\n```cuda\nextern \"C\" int rl_kernel(const rl_kernel_args *a)\n{\n"
                "    for (int i = 0; i < 4; i++) {\n", KERNEL_A, RL_KEXTRACT_FENCED);
}

Test(extract, truncated_only_block_is_rejected)
{
    expect_fail("```cuda\nextern \"C\" int rl_kernel(const rl_kernel_args *a)\n{\n    if (a) {\n        return 0;\n",
                "cut off");
}

Test(extract, think_section_is_ignored)
{
    expect_code("<think>\nMaybe:\n```cuda\n" KERNEL_B "\n```\nno, simpler.\n</think>\nFinal:\n```cuda\n" KERNEL_A "\n```",
                KERNEL_A, RL_KEXTRACT_FENCED);
}

Test(extract, template_opened_think_only_closing_tag)
{
    /* Chat templates that open <think> in the prompt leave only </think> in the answer. */
    expect_code("drafting ```cuda\n" KERNEL_B "\n```\n</think>\n\n```cuda\n" KERNEL_A "\n```", KERNEL_A, RL_KEXTRACT_FENCED);
}

Test(extract, code_only_inside_think_is_not_an_answer)
{
    expect_fail("<think>\n```cuda\n" KERNEL_A "\n```\n</think>\nI could not finish.", "no code");
    expect_fail("<think>\nplanning the kernel ```cuda\n" KERNEL_A "\n```", "inside a <think>");
}

Test(extract, uppercase_think_tags)
{
    expect_code("<THINK>```cuda\n" KERNEL_B "\n```</THINK>\n```cuda\n" KERNEL_A "\n```", KERNEL_A, RL_KEXTRACT_FENCED);
}

Test(extract, bare_code_in_prose)
{
    expect_code("Here is the implementation:\n\n" KERNEL_A "\n\nThis uses one thread.", KERNEL_A, RL_KEXTRACT_BARE);
}

Test(extract, bare_code_starting_with_comment_and_braces_in_strings)
{
    const char *code = "// fast version\nstatic const char *msg = \"}}\";\nextern \"C\" int rl_kernel(const rl_kernel_args *a)\n{\n"
                       "    /* { not a brace */\n    return a ? 0 : 1;\n}";
    char answer[1024];
    snprintf(answer, sizeof answer, "Sure.\n%s\nDone, braces in strings: '}'.", code);
    expect_code(answer, code, RL_KEXTRACT_BARE);
}

Test(extract, braces_in_comments_and_literals_do_not_count)
{
    const char *code = "extern \"C\" int rl_kernel(const rl_kernel_args *a)\n{\n    char c = '{';\n"
                       "    const char *s = \"{{\\\"\";\n    // }\n    /* } } */\n    return c == s[0] ? 0 : 1;\n}";
    char answer[1024];
    snprintf(answer, sizeof answer, "```cuda\n%s\n```", code);
    expect_code(answer, code, RL_KEXTRACT_FENCED);
}

Test(extract, indented_fence)
{
    expect_code("1. The code:\n   ```cuda\n" KERNEL_A "\n   ```\n", KERNEL_A, RL_KEXTRACT_FENCED);
}

Test(extract, crlf_line_endings)
{
    const char *code = "extern \"C\" int rl_kernel(const rl_kernel_args *a)\r\n{\r\n    return a ? 0 : 1;\r\n}";
    char answer[512];
    snprintf(answer, sizeof answer, "Code:\r\n```cuda\r\n%s\r\n```\r\n", code);
    rl_kextract x = ok_extract(answer);
    cr_assert(strstr(x.code, "return a ? 0 : 1;"), "got %s", x.code);
    cr_assert(!strstr(x.code, "```"), "fence leaked into the code: %s", x.code);
    rl_kextract_free(&x);
}

Test(extract, longer_fence_contains_shorter_one)
{
    /* A ```` block may hold ``` lines (e.g. a doc comment quoting markdown). */
    const char *code = "/*\n```\nexample\n```\n*/\nextern \"C\" int rl_kernel(const rl_kernel_args *a) { return a ? 0 : 1; }";
    char answer[512];
    snprintf(answer, sizeof answer, "````cuda\n%s\n````\n", code);
    expect_code(answer, code, RL_KEXTRACT_FENCED);
}

Test(extract, declaration_only_is_rejected)
{
    expect_fail("```cuda\nextern \"C\" int rl_kernel(const rl_kernel_args *args);\n```", "does not define");
}

Test(extract, wrong_entry_name_is_rejected)
{
    expect_fail("```cuda\nextern \"C\" int rl_kernel_v2(const rl_kernel_args *a) { return 0; }\n```", "no code block defines rl_kernel");
    expect_fail("```cuda\n__global__ void my_rl_kernel(float *y) { }\n```", "no code block defines rl_kernel");
}

Test(extract, reasons_name_the_blocks)
{
    rl_kextract x;
    rl_err err = {{0}};
    const char *answer = "```python\nprint(1)\n```\n```json\n{}\n```\n";
    cr_assert_eq(rl_kextract_code(answer, strlen(answer), "rl_kernel", &x, &err), -1);
    cr_assert(strstr(err.msg, "2 blocks: python, json"), "%s", err.msg);
}

Test(extract, no_code_at_all)
{
    expect_fail("I think the best approach is to use shared memory tiling.", "no code found");
    expect_fail("You should define rl_kernel with a grid-stride loop.", "without defining");
    expect_fail("", "empty answer");
}

Test(extract, extra_closing_brace_is_rejected)
{
    expect_fail("```cuda\nextern \"C\" int rl_kernel(const rl_kernel_args *a) { return 0; }\n}\n```", "without a matching");
}

Test(extract, not_nul_terminated_input)
{
    char buf[512];
    const char *answer = "```cuda\n" KERNEL_A "\n```";
    size_t n = strlen(answer);
    memcpy(buf, answer, n);
    memset(buf + n, 'x', sizeof buf - n); /* no NUL inside the given length */
    rl_kextract x;
    rl_err err = {{0}};
    cr_assert_eq(rl_kextract_code(buf, n, "rl_kernel", &x, &err), 0, "%s", err.msg);
    cr_assert_str_eq(x.code, KERNEL_A);
    rl_kextract_free(&x);
}

Test(extract, many_blocks_beyond_limit)
{
    /* 100 shell blocks then the kernel: the kernel must still be found or the reason given. */
    size_t cap = 100 * 32 + 1024, used = 0;
    char *answer = malloc(cap);
    for (int i = 0; i < 100; i++) used += (size_t)snprintf(answer + used, cap - used, "```sh\nls %d\n```\n", i);
    snprintf(answer + used, cap - used, "```cuda\n%s\n```\n", KERNEL_A);
    rl_kextract x;
    rl_err err = {{0}};
    int rc = rl_kextract_code(answer, strlen(answer), "rl_kernel", &x, &err);
    if (rc == 0) {
        cr_assert_str_eq(x.code, KERNEL_A);
        rl_kextract_free(&x);
    } else {
        cr_assert(strstr(err.msg, "no code block defines"), "%s", err.msg);
    }
    free(answer);
}

Test(extract, random_answers_never_break_it)
{
    /* Fences, braces, quotes, comments and tags in random order: whatever comes back must be a
     * NUL-terminated definition of the entry point, or a reason. Run under ASan for overreads. */
    static const char *pieces[] = {"```", "```cuda\n", "~~~\n", "\n", " ", "{", "}", "(", ")", "\"", "'", "//", "/*", "*/",
                                   "<think>", "</think>", "rl_kernel", "extern \"C\" int rl_kernel(const rl_kernel_args *a)",
                                   "x;", "\\", "````", "`"};
    rl_rng rng;
    rl_rng_init(&rng, 20261122);
    int found = 0;
    for (int iter = 0; iter < 3000; iter++) {
        char answer[600];
        size_t used = 0;
        int n = 1 + (int)rl_rng_below(&rng, 40);
        for (int i = 0; i < n; i++) {
            const char *p = pieces[rl_rng_below(&rng, sizeof pieces / sizeof pieces[0])];
            size_t l = strlen(p);
            if (used + l >= sizeof answer) break;
            memcpy(answer + used, p, l);
            used += l;
        }
        rl_kextract x;
        rl_err err = {{0}};
        if (rl_kextract_code(answer, used, "rl_kernel", &x, &err) == 0) {
            found++;
            cr_assert_not_null(x.code);
            cr_assert_eq(strlen(x.code), x.len);
            cr_assert(strstr(x.code, "rl_kernel"), "extracted code lacks the entry point: %s", x.code);
            rl_kextract_free(&x);
        } else {
            cr_assert(err.msg[0], "failure without a reason");
            cr_assert_null(x.code);
        }
    }
    cr_assert(found > 0, "no random answer ever yielded code: the generator is not exercising success");
}

Test(extract, kernels_in_an_earlier_block_are_joined)
{
    const char *kernels = "__global__ void scale_kernel(float *y, int n)\n{\n    int i = threadIdx.x;\n    if (i < n) y[i] *= 2.0f;\n}";
    const char *host = "extern \"C\" int rl_kernel(const rl_kernel_args *args)\n{\n"
                       "    scale_kernel<<<1, 32>>>((float *)args->outputs[0], 32);\n    return 0;\n}";
    char answer[2048], want[1024];
    snprintf(answer, sizeof answer, "First the kernel:\n```cuda\n%s\n```\nThen the launcher:\n```cuda\n%s\n```\n", kernels, host);
    snprintf(want, sizeof want, "%s\n\n%s", kernels, host);
    rl_kextract x = ok_extract(answer);
    cr_assert_str_eq(x.code, want);
    cr_assert_eq(x.n_parts, 2);
    rl_kextract_free(&x);

    /* A block that defines its kernels stands alone, and so does a launcher whose kernels
     * belong to an older whole version (the earlier block defining rl_kernel stops the join). */
    x = ok_extract("```cuda\n" KERNEL_A "\n```");
    cr_assert_eq(x.n_parts, 1);
    rl_kextract_free(&x);
    snprintf(answer, sizeof answer, "```cuda\n%s\n```\n```cuda\n" KERNEL_A "\n```\n```cuda\n%s\n```\n", kernels, host);
    x = ok_extract(answer);
    cr_assert_str_eq(x.code, host, "joined across an earlier whole version:\n%s", x.code);
    rl_kextract_free(&x);

    /* Non-C blocks and half-written kernel blocks are not joined. */
    snprintf(answer, sizeof answer, "```python\n__global__ = 1\n```\n```cuda\n__global__ void broken(float *y) {\n```\n"
             "```cuda\n%s\n```\n", host);
    x = ok_extract(answer);
    cr_assert_str_eq(x.code, host);
    rl_kextract_free(&x);
}

Test(extract, nul_bytes_and_multiline_signatures)
{
    /* Found by fuzzing: a NUL inside the answer would make the C string shorter than len. */
    const char with_nul[] = "```cuda\nextern \"C\" int rl_kernel(const rl_kernel_args *a)\n{\n    return 0;\0\n}\n```";
    rl_kextract x;
    rl_err err = {{0}};
    cr_assert_eq(rl_kextract_code(with_nul, sizeof with_nul - 1, "rl_kernel", &x, &err), -1);
    cr_assert(strstr(err.msg, "NUL byte"), "%s", err.msg);
    /* Found by fuzzing: in prose, a signature split over lines starts at its first line. */
    const char *code = "extern \"C\" int rl_kernel(\n    const rl_kernel_args *args)\n{\n    return args ? 0 : 1;\n}";
    char answer[512];
    snprintf(answer, sizeof answer, "The code is\n%s\nThat is all.", code);
    expect_code(answer, code, RL_KEXTRACT_BARE);
}
