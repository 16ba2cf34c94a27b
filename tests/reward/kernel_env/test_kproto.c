/* test_kproto.c — protocol.json, the one place of the kernel protocol's parameters: the shipped
 * file loads with the documented values (docs/kernel-env.md), rlc finds it by default, a
 * missing file and every kind of bad field are errors that name the file and the field, and
 * the Python worker run by hand reads the same file (it reports its problems, not defaults). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reward/kernel_env/kenv.h"
#include "reward/kernel_env/kproto.h"
#include "test_util.h"

#define PROTOCOL "src/reward/kernel_env/protocol.json"

static const char *good =
    "{\"comment\": \"x\", \"random_trials\": 3, \"warmup\": 3, \"timed\": 30, \"input_copies\": 3,"
    " \"l2_flush_factor\": 2, \"max_spread\": 0.25, \"spread_repeats\": 1, \"ref_slowdown_limit\": 1.5,"
    " \"ref_slowdown_min_ms\": 0.05, \"watchdog_ms\": 5000, \"mem_cap_mb\": 4096, \"timeout_s\": 120,"
    " \"compile_timeout_s\": 120, \"tolerance\": {\"f32\": {\"atol\": 1e-5, \"rtol\": 1e-5},"
    " \"f16\": {\"atol\": 1e-3, \"rtol\": 1e-3}, \"bf16\": {\"atol\": 1e-2, \"rtol\": 1e-2},"
    " \"i32\": {\"atol\": 0, \"rtol\": 0}}}";

static void check_documented(const rl_kproto *p)
{
    cr_assert_eq(p->random_trials, 3);
    cr_assert_eq(p->warmup, 3);
    cr_assert_eq(p->timed, 30);
    cr_assert_eq(p->input_copies, 3);
    cr_assert_float_eq(p->l2_flush_factor, 2, 0);
    cr_assert_float_eq(p->max_spread, 0.25, 0);
    cr_assert_eq(p->spread_repeats, 1);
    cr_assert_float_eq(p->ref_slowdown_limit, 1.5, 0);
    cr_assert_float_eq(p->ref_slowdown_min_ms, 0.05, 0);
    cr_assert_eq(p->watchdog_ms, 5000);
    cr_assert_eq(p->mem_cap_mb, 4096);
    cr_assert_float_eq(p->timeout_s, 120, 0);
    cr_assert_float_eq(p->compile_timeout_s, 120, 0);
    const double atol[4] = {1e-5, 1e-3, 1e-2, 0}, rtol[4] = {1e-5, 1e-3, 1e-2, 0};
    for (int d = 0; d < 4; d++) {
        cr_assert(p->tol.atol[d] == atol[d] && p->tol.rtol[d] == rtol[d], "dtype %d: %g %g", d, p->tol.atol[d],
                  p->tol.rtol[d]);
    }
}

Test(kproto, shipped_file_has_the_documented_values)
{
    rl_kproto p;
    rl_err err;
    cr_assert_eq(rl_kproto_load(&p, PROTOCOL, &err), 0, "%s", err.msg);
    check_documented(&p);
}

/* A single value set from a command-line flag: the file's ranges apply. */
Test(kproto, set_one_value)
{
    rl_kproto p;
    rl_err err;
    cr_assert_eq(rl_kproto_load(&p, PROTOCOL, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_kproto_set(&p, "random_trials", "7", "--trials", &err), 0, "%s", err.msg);
    cr_assert_eq(p.random_trials, 7);
    cr_assert_eq(rl_kproto_set(&p, "timeout_s", "2.5", "--timeout", &err), 0, "%s", err.msg);
    cr_assert_eq(p.timeout_s, 2.5);
    static const char *const bad[][3] = {
        {"random_trials", "0", "--flag: field 'random_trials' must be an integer in [1, 100], got '0'"},
        {"timed", "2.5", "--flag: field 'timed' must be an integer in [3, 10000], got '2.5'"},
        {"input_copies", "9", "field 'input_copies' must be an integer in [1, 8], got '9'"},
        {"timeout_s", "nan", "field 'timeout_s' must be a number in [1, 86400], got 'nan'"},
        {"warmup", "", "field 'warmup' must be an integer in [0, 1000], got ''"},
        {"warmup", "3x", "got '3x'"},
        {"tolerance", "1", "'tolerance' is not a protocol parameter"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(rl_kproto_set(&p, bad[i][0], bad[i][1], "--flag", &err), -1, "%s=%s accepted", bad[i][0], bad[i][1]);
        cr_expect(strstr(err.msg, bad[i][2]), "'%s' lacks '%s'", err.msg, bad[i][2]);
    }
    cr_assert_eq(p.random_trials, 7);
    cr_assert_eq(p.timeout_s, 2.5);
}

Test(kproto, good_text)
{
    rl_kproto p;
    rl_err err;
    cr_assert_eq(rl_kproto_parse(&p, good, strlen(good), "protocol.json", &err), 0, "%s", err.msg);
    check_documented(&p);
}

Test(kproto, rlc_finds_it_by_default)
{
    rl_kenv_opts o;
    rl_kenv_paths paths;
    rl_kenv_opts_default(&o, &paths);
    cr_assert(strstr(o.protocol_path, "src/reward/kernel_env/protocol.json"), "%s", o.protocol_path);
    cr_assert(strstr(o.kb_worker, "src/reward/kernel_env/kernelbench_worker.py"), "%s", o.kb_worker);
    rl_err err;
    cr_assert_eq(rl_kenv_load_protocol(&o, &err), 0, "%s", err.msg);
    cr_assert(o.proto_loaded);
    check_documented(&o.proto);
}

Test(kproto, missing_file)
{
    rl_kproto p;
    rl_err err;
    cr_assert_eq(rl_kproto_load(&p, "/nonexistent/protocol.json", &err), -1);
    cr_assert(strstr(err.msg, "/nonexistent/protocol.json") && strstr(err.msg, "cannot open"), "%s", err.msg);
    rl_kenv_opts o;
    rl_kenv_paths paths;
    rl_kenv_opts_default(&o, &paths);
    o.protocol_path = "/nonexistent/p.json";
    cr_assert_eq(rl_kenv_load_protocol(&o, &err), -1);
    cr_assert(!o.proto_loaded);
    cr_assert(strstr(err.msg, "/nonexistent/p.json"), "%s", err.msg);
}

/* Replaces the first occurrence of from in the good text with to; parsing must fail with a
 * message naming the file and containing want. */
static void expect_error_text(const char *text, const char *want)
{
    rl_kproto p;
    rl_err err;
    cr_assert_eq(rl_kproto_parse(&p, text, strlen(text), "my/protocol.json", &err), -1, "accepted: %s", text);
    cr_assert(strstr(err.msg, "my/protocol.json"), "message does not name the file: %s", err.msg);
    cr_assert(strstr(err.msg, want), "message lacks '%s': %s", want, err.msg);
}

static void expect_error(const char *from, const char *to, const char *want)
{
    const char *at = strstr(good, from);
    cr_assert(at, "test bug: '%s' not in the good text", from);
    char text[4096];
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - good), good, to, at + strlen(from));
    expect_error_text(text, want);
}

Test(kproto, bad_values_name_the_field)
{
    expect_error("\"timed\": 30,", "", "missing field 'timed'");
    expect_error("\"timed\": 30", "\"timed\": 2", "'timed' must be an integer in [3, 10000], got 2");
    expect_error("\"timed\": 30", "\"timed\": 30.5", "'timed' must be an integer");
    expect_error("\"timed\": 30", "\"timed\": \"30\"", "'timed' must be an integer in [3, 10000], got a string");
    expect_error("\"warmup\": 3", "\"warmup\": -1", "'warmup'");
    expect_error("\"random_trials\": 3", "\"random_trials\": 0", "'random_trials'");
    expect_error("\"input_copies\": 3", "\"input_copies\": 9", "'input_copies' must be an integer in [1, 8]");
    expect_error("\"l2_flush_factor\": 2", "\"l2_flush_factor\": 0.5", "'l2_flush_factor' must be a number in [1, 16]");
    expect_error("\"max_spread\": 0.25", "\"max_spread\": 0", "'max_spread'");
    expect_error("\"max_spread\": 0.25", "\"max_spread\": null", "'max_spread'");
    expect_error("\"spread_repeats\": 1", "\"spread_repeats\": -1", "'spread_repeats'");
    expect_error("\"ref_slowdown_limit\": 1.5", "\"ref_slowdown_limit\": 0.9", "'ref_slowdown_limit'");
    expect_error("\"watchdog_ms\": 5000", "\"watchdog_ms\": 1", "'watchdog_ms'");
    expect_error("\"mem_cap_mb\": 4096", "\"mem_cap_mb\": true", "'mem_cap_mb'");
    expect_error("\"timeout_s\": 120", "\"timeout_s\": 0", "'timeout_s'");
    expect_error("\"compile_timeout_s\": 120,", "", "missing field 'compile_timeout_s'");
    expect_error("\"random_trials\": 3", "\"random_trails\": 3", "field 'random_trails' is not a protocol parameter");
    expect_error("\"comment\": \"x\"", "\"comment\": 5", "'comment' must be a string");
    expect_error("\"i32\": {\"atol\": 0, \"rtol\": 0}", "\"i8\": {\"atol\": 0, \"rtol\": 0}", "tolerance.i8 is not a dtype");
    expect_error(", \"i32\": {\"atol\": 0, \"rtol\": 0}", "", "tolerance.i32: missing");
    expect_error("\"f16\": {\"atol\": 1e-3, \"rtol\": 1e-3}", "\"f16\": {\"atol\": -1e-3, \"rtol\": 1e-3}",
                 "tolerance.f16: field 'atol' must be in [0, 1]");
    expect_error("\"f16\": {\"atol\": 1e-3, \"rtol\": 1e-3}", "\"f16\": {\"atol\": 1e-3}", "tolerance.f16: missing field 'rtol'");
    char text[4096];
    snprintf(text, sizeof text, "%.*s\"tolerance\": 3}", (int)(strstr(good, "\"tolerance\"") - good), good);
    expect_error_text(text, "'tolerance' must be an object");
    expect_error_text("[1, 2]", "top level must be an object");
    expect_error("\"timed\": 30,", "\"timed\": 30,,", "invalid JSON at line 1");
}

/* Runs the Python worker by hand (no torch needed: a protocol problem is reported before torch
 * is imported); returns its stdout line. */
static char *run_python_worker(const char *args)
{
    if (system("python3 -c 1 >/dev/null 2>&1") != 0) return NULL;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "echo n0 | python3 src/reward/kernel_env/kernelbench_worker.py --ref x.py --cand y.py --nonce-stdin %s 2>/dev/null", args);
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    static char line[8192];
    line[0] = 0;
    if (!fgets(line, sizeof line, p)) line[0] = 0;
    pclose(p);
    return line;
}

Test(kproto, python_worker_reads_the_same_file)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/rlc-kproto-%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("{\"random_trials\": 3}", f);
    fclose(f);
    char args[128];
    snprintf(args, sizeof args, "--protocol %s", path);
    char *line = run_python_worker(args);
    remove(path);
    if (!line) cr_skip_test("no python3");
    cr_assert(strstr(line, "\"status\":\"error\"") && strstr(line, "field 'timed' missing"), "%s", line);
    cr_assert(strstr(line, "\"nonce\":\"n0\""), "%s", line);
    line = run_python_worker("--protocol /nonexistent/protocol.json");
    cr_assert(strstr(line, "protocol file /nonexistent/protocol.json"), "%s", line);
    /* With every parameter given as a flag (as rlc runs it) no file is read. */
    line = run_python_worker("--protocol /nonexistent/protocol.json --trials 3 --timed 30 --warmup 3 --copies 3 "
                             "--flush-factor 2 --max-spread 0.25 --spread-repeats 1 --ref-slowdown-limit 1.5 "
                             "--ref-slowdown-min-ms 0.05 --tol f32 1e-5 1e-5 --tol f16 1e-3 1e-3 "
                             "--tol bf16 1e-2 1e-2 --tol i32 0 0");
    cr_assert(!strstr(line, "protocol file"), "%s", line);
    cr_assert(strstr(line, "\"status\":"), "no result: %s", line);
}
