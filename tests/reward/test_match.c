/* test_match.c — exact, regex and format rewards, and the reward spec parser. */
#include <string.h>

#include "reward/match.h"
#include "reward/reward.h"
#include "test_util.h"

Test(match, exact)
{
    cr_assert(rl_match_exact("  hello   world\n", "hello world", 1));
    cr_assert(rl_match_exact("a\tb", "a b", 1));
    cr_assert(!rl_match_exact("ab", "a b", 1));
    cr_assert(!rl_match_exact("hello world ", "hello world", 0));
    cr_assert(rl_match_exact("hello", "hello", 0));
    cr_assert(!rl_match_exact("hello", "hell", 1));
}

Test(match, regex)
{
    rl_regex *re;
    rl_err err;
    cr_assert_eq(rl_regex_compile(&re, "^(?s)<a>.*</a>$", &err), 0, "%s", err.msg);
    cr_assert_eq(rl_regex_match(re, "<a>x\ny</a>", &err), 1);
    cr_assert_eq(rl_regex_match(re, "<a>x</a>!", &err), 0);
    rl_regex_free(re);
    cr_assert_eq(rl_regex_compile(&re, "ab(c", &err), -1);
    cr_assert(strstr(err.msg, "ab(c") && strstr(err.msg, "offset 4"), "%s", err.msg);
}

Test(match, think_format)
{
    cr_assert(rl_match_think_format("<think>reasoning</think> 42"));
    cr_assert(rl_match_think_format("\n<think>\n</think>\nanswer\n"));
    cr_assert(!rl_match_think_format("<think>reasoning</think>   "));
    cr_assert(!rl_match_think_format("answer <think>x</think> y"));
    cr_assert(!rl_match_think_format("<think>a<think>b</think> c"));
    cr_assert(!rl_match_think_format("<think>a</think> b </think>"));
    cr_assert(!rl_match_think_format("<think>never closed"));
}

static float score_one(const char *spec, const char *completion, const char *answer)
{
    rl_reward *r;
    rl_err err;
    cr_assert_eq(rl_reward_create(&r, spec, NULL, &err), 0, "%s", err.msg);
    rl_reward_item it = {"prompt", completion, answer, NULL};
    float v = NAN;
    cr_assert_eq(rl_reward_score(r, &it, 1, &v, &err), 0, "%s", err.msg);
    rl_reward_free(r);
    return v;
}

Test(reward, specs)
{
    cr_assert_eq(score_one("math", "so \\boxed{0.5}", "1/2"), 1.0f);
    cr_assert_eq(score_one("math", "so \\boxed{0.6}", "1/2"), 0.0f);
    cr_assert_eq(score_one("exact", " yes ", "yes"), 1.0f);
    cr_assert_eq(score_one("exact:strict", " yes ", "yes"), 0.0f);
    cr_assert_eq(score_one("regex:^\\d+$", "123", NULL), 1.0f);
    cr_assert_eq(score_one("regex:^\\d+$", "12a", NULL), 0.0f);
    cr_assert_eq(score_one("format", "<think>x</think>y", NULL), 1.0f);
    cr_assert_eq(score_one("format:boxed", "a \\boxed{1}", NULL), 1.0f);
    cr_assert_eq(score_one("format:boxed", "a \\boxed{1", NULL), 0.0f);
}

Test(reward, bad_specs_and_missing_answer)
{
    rl_reward *r;
    rl_err err;
    cr_assert_eq(rl_reward_create(&r, "maths", NULL, &err), -1);
    cr_assert(strstr(err.msg, "unknown reward 'maths'"), "%s", err.msg);
    cr_assert_eq(rl_reward_create(&r, "regex:(", NULL, &err), -1);
    cr_assert(strstr(err.msg, "regex '('"), "%s", err.msg);
    cr_assert_eq(rl_reward_create(&r, "cmd:", NULL, &err), -1);
    cr_assert(strstr(err.msg, "empty command"), "%s", err.msg);
    cr_assert_eq(rl_reward_create(&r, "math", NULL, &err), 0);
    rl_reward_item items[2] = {{"p", "1", "1", NULL}, {"p", "2", NULL, NULL}};
    float v[2];
    cr_assert_eq(rl_reward_score(r, items, 2, v, &err), -1);
    cr_assert(strstr(err.msg, "completion 1") && strstr(err.msg, "no \"answer\""), "%s", err.msg);
    rl_reward_free(r);
}
