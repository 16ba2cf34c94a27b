/* test_math.c — final-answer extraction and exact-by-value comparison of the math reward. */
#include <stdlib.h>
#include <string.h>

#include "reward/math.h"
#include "test_util.h"

static void expect_extract(const char *text, const char *want)
{
    char got[256];
    int found = rl_math_extract(text, got, sizeof got);
    cr_assert(found, "nothing extracted from '%s'", text);
    cr_assert_str_eq(got, want, "from '%s': got '%s', want '%s'", text, got, want);
}

Test(math, extract_boxed_nested_and_last)
{
    expect_extract("so \\boxed{3} no wait \\boxed{\\frac{1}{2}} done", "\\frac{1}{2}");
    expect_extract("x = \\boxed{ {a}_{b} }", "{a}_{b}");
    /* a \boxed cut off before its closing brace does not count: the earlier one wins */
    expect_extract("\\boxed{7} then \\boxed{8", "7");
    expect_extract("\\boxed {42}.", "42");
}

/* The \boxed scan is linear: character visits grow with the text, not with the number of
 * unclosed "\boxed{" times the text (the old per-\boxed scan did 16 kB of them in 21 ms). */
Test(math, boxed_scan_is_linear)
{
    size_t prev_steps = 0;
    for (int n = 1000; n <= 8000; n *= 2) {
        size_t len = 9 + (size_t)n * 7 + 1;
        char *text = malloc(len + 1), got[64];
        strcpy(text, "\\boxed{5}");
        size_t at = strlen(text);
        for (int i = 0; i < n; i++, at += 7) memcpy(text + at, "\\boxed{", 7);
        text[at] = 0;
        size_t steps = 0, tlen = strlen(text);
        cr_assert(rl_math_boxed_counted(text, got, sizeof got, &steps), "the closed first \\boxed is found");
        cr_assert_str_eq(got, "5");
        cr_assert(steps <= 4 * tlen, "%zu visits for %zu characters (%d unclosed \\boxed)", steps, tlen, n);
        if (prev_steps) cr_assert(steps < 3 * prev_steps, "doubling the text multiplied the visits by %g", (double)steps / prev_steps);
        prev_steps = steps;
        free(text);
    }
    /* escapes and nesting as before */
    char got[64];
    cr_assert(rl_math_boxed("\\boxed{a\\}b} \\boxed{\\{", got, sizeof got));
    cr_assert_str_eq(got, "a\\}b");
}

Test(math, extract_answer_line_then_last_number)
{
    expect_extract("Let me think. 3+4=7\nAnswer: 7 apples\nthanks", "7 apples");
    expect_extract("first answer: 3\nFinal Answer: -12", "-12");
    expect_extract("Answer:\nnothing after the marker, so 1, 2 and 35", "35");
    expect_extract("#### 1,234", "1,234");
    expect_extract("we get 3.5 then 1,250,000 total", "1,250,000");
    expect_extract("x is -4", "-4");
    expect_extract("10-4 = 6", "6");
    expect_extract("ratio 3/4", "3/4");
    expect_extract("7-3", "3"); /* subtraction, not a negative number */
    char got[16];
    cr_assert_eq(rl_math_extract("no digits here", got, sizeof got), 0);
    cr_assert_str_eq(got, "");
}

Test(math, equal_by_value)
{
    const char *same[][2] = {
        {"0.5", "1/2"}, {"\\frac{1}{2}", "0.5"}, {"\\dfrac{2}{4}", "\\tfrac12"}, {"-3", "-3.0"},
        {"1,234", "1234"}, {"$42$", "42"}, {"\\text{42}", "42."}, {"+7", "7"},
        {"-\\frac{3}{6}", "\\frac{-1}{2}"}, {"\\frac{-1}{-2}", "0.50"}, {"0.1", "\\frac{1}{10}"},
        {"  12 ", "12"}, {"\\left(1,2\\right)", "(1, 2)"}, {"\\text{yes}", "yes"},
        {"\\(5\\)", "5"}, {"1/3", "\\frac{2}{6}"}, {".25", "1/4"},
        /* exact rationals: these differ only past double precision but are equal */
        {"0.333333333333333333333333", "333333333333333333333333/1000000000000000000000000"},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        cr_assert(rl_math_equal(same[i][0], same[i][1]), "'%s' should equal '%s'", same[i][0], same[i][1]);
    const char *differ[][2] = {
        {"0.5", "0.51"}, {"1/3", "0.3333333333333333"}, {"-3", "3"}, {"12", "123"},
        {"\\frac{1}{2}", "\\frac{2}{1}"}, {"1,23", "123"}, {"x", "y"}, {"", ""},
        {"0.30000000000000004", "0.3"}, /* equal as doubles' neighbours, not as rationals */
        {"1/0", "2/0"},
    };
    for (size_t i = 0; i < sizeof differ / sizeof differ[0]; i++)
        cr_assert(!rl_math_equal(differ[i][0], differ[i][1]), "'%s' should differ from '%s'", differ[i][0], differ[i][1]);
}

Test(math, check_against_references)
{
    cr_assert(rl_math_check("23+58 = 81. \\boxed{81}", "81"));
    cr_assert(rl_math_check("The answer is $\\frac{3}{4}$", "0.75") == 0); /* last number is 4 */
    cr_assert(rl_math_check("Answer: $\\frac{3}{4}$", "0.75"));
    cr_assert(rl_math_check("Answer: 1,000", "The total is 1000.\n#### 1000"));
    cr_assert(rl_math_check("so it is 81", "\\boxed{81}"));
    cr_assert(!rl_math_check("so it is 18", "81"));
    cr_assert(!rl_math_check("no number", "81"));
    cr_assert(!rl_math_check("81", "no number in the reference \\boxed{}"));
}

Test(math, huge_numbers_fall_back_to_text)
{
    const char *big = "123456789012345678901234567890123456789012345";
    cr_assert(rl_math_equal(big, big));
    cr_assert(!rl_math_equal(big, "123456789012345678901234567890123456789012346"));
}
