/* test_external.c — the external reward program: the protocol, the extra dataset fields, and
 * every way a program can misbehave (tests/reward/fake_reward.sh MODE), each of which must be
 * an error naming the completion and what happened, never a silent zero; with
 * --reward-errors zero, a broken answer scores 0 and is listed (rl_reward_failures), a crashed
 * program is restarted, and one that can never answer still fails. */
#include <string.h>

#include "core/timer.h"
#include "reward/external.h"
#include "reward/reward.h"
#include "test_util.h"

static const rl_reward_item items[3] = {
    {"p0", "good", "a", NULL}, {"p1", "bad", "b", NULL}, {"p2", "other", NULL, NULL}};

static rl_reward *start_with(const char *mode, double timeout, rl_reward_errors on_error)
{
    char spec[256];
    snprintf(spec, sizeof spec, "cmd:sh tests/reward/fake_reward.sh %s", mode);
    rl_reward *r;
    rl_err err;
    rl_reward_options opt = {.timeout_s = timeout, .on_error = on_error};
    cr_assert_eq(rl_reward_create(&r, spec, &opt, &err), 0, "%s", err.msg);
    return r;
}

static rl_reward *start(const char *mode, double timeout)
{
    char spec[256];
    snprintf(spec, sizeof spec, "cmd:sh tests/reward/fake_reward.sh %s", mode);
    rl_reward *r;
    rl_err err;
    rl_reward_options opt = {.timeout_s = timeout, .on_error = RL_REWARD_ERRORS_STOP};
    cr_assert_eq(rl_reward_create(&r, spec, &opt, &err), 0, "%s", err.msg);
    return r;
}

/* Runs mode on the three items; expects a failure whose message contains each of needles. */
static void expect_failure(const char *mode, double timeout, const char *n1, const char *n2)
{
    rl_reward *r = start(mode, timeout);
    float v[3];
    tu_poison(v, 3);
    rl_err err;
    cr_assert_eq(rl_reward_score(r, items, 3, v, &err), -1, "mode %s did not fail", mode);
    cr_assert(strstr(err.msg, n1) && strstr(err.msg, n2), "mode %s: message '%s' lacks '%s'/'%s'", mode, err.msg, n1, n2);
    cr_assert(strstr(err.msg, "fake_reward.sh"), "message does not name the program: %s", err.msg);
    /* stopped after a failure: later calls fail too */
    cr_assert_eq(rl_reward_score(r, items, 1, v, &err), -1);
    cr_assert(strstr(err.msg, "stopped"), "%s", err.msg);
    rl_reward_free(r);
}

Test(external, protocol_and_kept_alive)
{
    rl_reward *r = start("ok", 10);
    cJSON *line = cJSON_Parse("{\"prompt\":\"ignored\",\"level\":3}");
    rl_reward_item its[4] = {items[0], items[1], items[2], {"p3", "x", "y", line}};
    rl_err err;
    for (int round = 0; round < 3; round++) { /* the same process serves every batch */
        float v[4];
        tu_poison(v, 4);
        cr_assert_eq(rl_reward_score(r, its, 4, v, &err), 0, "%s", err.msg);
        cr_assert(v[0] == 1.0f && v[1] == 0.25f && v[2] == 0.25f && v[3] == 3.0f,
                  "round %d: %g %g %g %g", round, v[0], v[1], v[2], v[3]);
    }
    cJSON_Delete(line);
    rl_reward_free(r);
}

Test(external, blank_lines_skipped_and_stderr_passes)
{
    rl_reward *r = start("blank", 10);
    float v[3];
    rl_err err;
    cr_assert_eq(rl_reward_score(r, items, 3, v, &err), 0, "%s", err.msg);
    cr_assert(v[0] == 2.0f && v[2] == 2.0f);
    rl_reward_free(r);
    r = start("stderr", 10);
    cr_assert_eq(rl_reward_score(r, items, 3, v, &err), 0, "%s", err.msg);
    rl_reward_free(r);
}

Test(external, exits)
{
    expect_failure("exit_second", 10, "completion 1", "exited with status 3");
}

Test(external, crashes)
{
    expect_failure("segv", 10, "completion 0", "signal 11");
}

Test(external, hangs_are_killed)
{
    double t0 = rl_time_now();
    expect_failure("hang", 0.5, "completion 0", "no answer within 0.5 s");
    cr_assert(rl_time_now() - t0 < 5, "took %.1f s", rl_time_now() - t0);
}

Test(external, garbage)
{
    expect_failure("garbage", 10, "not one JSON object", "hello there");
}

Test(external, missing_reward)
{
    expect_failure("missing", 10, "no \"reward\" field", "score");
}

Test(external, non_numeric_reward)
{
    expect_failure("string", 10, "not a number", "high");
}

Test(external, non_finite_reward)
{
    expect_failure("inf", 10, "not finite", "completion 0");
}

Test(external, eof_mid_line)
{
    expect_failure("partial", 10, "middle of its answer", "exited with status 0");
}

Test(external, command_not_found)
{
    rl_reward *r;
    rl_err err;
    cr_assert_eq(rl_reward_create(&r, "cmd:/nonexistent/program", NULL, &err), 0, "%s", err.msg);
    float v;
    cr_assert_eq(rl_reward_score(r, items, 1, &v, &err), -1);
    cr_assert(strstr(err.msg, "status 127") && strstr(err.msg, "completion 0"), "%s", err.msg);
    rl_reward_free(r);
}

Test(external, python_example)
{
    rl_reward *r;
    rl_err err;
    cr_assert_eq(rl_reward_create(&r, "cmd:python3 examples/reward_length.py", NULL, &err), 0, "%s", err.msg);
    cJSON *line = cJSON_Parse("{\"target_chars\":4}");
    rl_reward_item its[2] = {{"p", "abcd", NULL, line}, {"p", "ab", NULL, line}};
    float v[2];
    cr_assert_eq(rl_reward_score(r, its, 2, v, &err), 0, "%s", err.msg);
    cr_assert(v[0] == 1.0f && v[1] == 0.5f, "%g %g", v[0], v[1]);
    cJSON_Delete(line);
    rl_reward_free(r);
}

/* The answer line by itself: what a program may print and what it may not. */
Test(external, answer_lines)
{
    static const struct {
        const char *line, *why;
        float want;
    } cases[] = {
        {"{\"reward\": 0.25}", NULL, 0.25f},
        {"  {\"score\": 3, \"reward\": -2}  ", NULL, -2.0f},
        {"{\"reward\": 3.4e38}", NULL, 3.4e38f},
        {"{\"reward\": 1e300}", "\"reward\" does not fit a float: '{\"reward\": 1e300}'", 0},
        {"{\"reward\": -1e39}", "does not fit a float", 0},
        {"{\"reward\": 1} {\"reward\": 2}", "not one JSON object", 0},
        {"{\"reward\": 1} trailing", "not one JSON object", 0},
        {"[1]", "not one JSON object", 0},
        {"", "not one JSON object", 0},
        {"{\"reward\": null}", "\"reward\" is not a number", 0},
        {"{\"reward\": true}", "\"reward\" is not a number", 0},
        {"{\"Reward\": 1}", "no \"reward\" field", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float v = -99;
        char why[256] = "";
        int rc = rl_reward_parse_answer(cases[i].line, &v, why, sizeof why);
        if (!cases[i].why) {
            cr_expect_eq(rc, 0, "'%s': %s", cases[i].line, why);
            cr_expect_eq(v, cases[i].want, "'%s': %g", cases[i].line, v);
        } else {
            cr_expect_eq(rc, -1, "'%s' accepted", cases[i].line);
            cr_expect(strstr(why, cases[i].why), "'%s': '%s' lacks '%s'", cases[i].line, why, cases[i].why);
            cr_expect_eq(v, -99, "'%s' wrote a reward", cases[i].line);
        }
    }
    char long_line[400];
    snprintf(long_line, sizeof long_line, "{\"reward\": \"%0300d\"}", 7);
    char why[256];
    float v;
    cr_assert_eq(rl_reward_parse_answer(long_line, &v, why, sizeof why), -1);
    cr_expect(strstr(why, "...'") && strlen(why) < 200, "%s", why);
}

/* broken_every 4: answer k (from 1 after each start) is garbage when k % 4 == 1, infinite when
 * 2, a crash when 3, else 0.5 + k / 1000; the crash restarts the program, whose count restarts. */
Test(external, zero_mode_scores_broken_answers_zero_and_goes_on)
{
    rl_reward *r = start_with("broken_every 4", 10, RL_REWARD_ERRORS_ZERO);
    rl_reward_item its[6];
    for (int i = 0; i < 6; i++) its[i] = items[i % 3];
    float v[6];
    tu_poison(v, 6);
    rl_err err;
    cr_assert_eq(rl_reward_score(r, its, 6, v, &err), 0, "%s", err.msg);
    const rl_reward_failure *f;
    int n = rl_reward_failures(r, &f);
    /* answers 1 garbage, 2 inf, 3 crash; restarted: 1 garbage, 2 inf, 3 crash */
    cr_assert_eq(n, 6, "%d failures", n);
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(v[i], 0.0f, "completion %d scored %g", i, v[i]);
        cr_expect_eq(f[i].index, i);
        cr_expect(strstr(f[i].why, "fake_reward.sh"), "%s", f[i].why);
    }
    cr_expect(strstr(f[0].why, "not one JSON object"), "%s", f[0].why);
    cr_expect(strstr(f[1].why, "not finite"), "%s", f[1].why);
    cr_expect(strstr(f[2].why, "exited with status 5"), "%s", f[2].why);
    rl_reward_free(r);

    /* garbage_after 2: two good answers, then garbage lines: the program stays in step */
    r = start_with("garbage_after 2", 10, RL_REWARD_ERRORS_ZERO);
    tu_poison(v, 6);
    cr_assert_eq(rl_reward_score(r, its, 4, v, &err), 0, "%s", err.msg);
    cr_expect(v[0] > 10 && v[1] > 10 && v[2] == 0 && v[3] == 0, "%g %g %g %g", v[0], v[1], v[2], v[3]);
    n = rl_reward_failures(r, &f);
    cr_assert_eq(n, 2);
    cr_expect(f[0].index == 2 && f[1].index == 3);
    cr_assert_eq(rl_reward_score(r, its, 1, v, &err), 0, "%s", err.msg);
    cr_expect(rl_reward_failures(r, &f) == 1 && f[0].index == 0, "failures are the last call's");
    rl_reward_free(r);
}

Test(external, zero_mode_still_fails_a_program_that_never_answers)
{
    rl_reward *r = start_with("segv", 10, RL_REWARD_ERRORS_ZERO);
    float v[6];
    rl_reward_item its[6];
    for (int i = 0; i < 6; i++) its[i] = items[i % 3];
    rl_err err;
    cr_assert_eq(rl_reward_score(r, its, 6, v, &err), -1);
    cr_expect(strstr(err.msg, "failed again after 3 restarts in a row") && strstr(err.msg, "signal 11"), "%s", err.msg);
    rl_reward_free(r);
}
