/* test_kproc.c — the child-process runner that isolates candidates: output capture, exit
 * codes, signals, wall-time limit (the whole process group dies), output flood cap, stdin, the
 * environment, and a grandchild that keeps the pipes open. */
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <string.h>
#include <unistd.h>

#include "core/timer.h"
#include "reward/kernel_env/kproc.h"
#include "test_util.h"

static rl_kproc_opts opts(double timeout_s)
{
    rl_kproc_opts o;
    memset(&o, 0, sizeof o);
    o.timeout_s = timeout_s;
    o.max_stdout = 1 << 20;
    o.max_stderr = 4096;
    return o;
}

static void run_sh(const char *script, const rl_kproc_opts *o, rl_kproc_result *r)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    rl_err err;
    cr_assert_eq(rl_kproc_run(argv, o, r, &err), 0, "%s", err.msg);
}

Test(kproc, output_exit_code_and_stderr)
{
    rl_kproc_opts o = opts(10);
    rl_kproc_result r;
    run_sh("echo out; echo err >&2; exit 3", &o, &r);
    cr_assert(r.exited && r.exit_code == 3, "exited %d code %d", r.exited, r.exit_code);
    cr_assert_str_eq(r.out, "out\n");
    cr_assert_str_eq(r.err, "err\n");
    cr_assert(!r.timed_out && !r.truncated && !r.signaled);
    rl_kproc_result_free(&r);
}

Test(kproc, merged_stderr)
{
    rl_kproc_opts o = opts(10);
    o.merge_stderr = 1;
    rl_kproc_result r;
    run_sh("echo a; echo b >&2", &o, &r);
    cr_assert(strstr(r.out, "a\n") && strstr(r.out, "b\n"), "%s", r.out);
    rl_kproc_result_free(&r);
}

Test(kproc, crash_is_a_signal)
{
    rl_kproc_opts o = opts(10);
    rl_kproc_result r;
    run_sh("kill -SEGV $$", &o, &r);
    cr_assert(r.signaled && r.signal == SIGSEGV, "signaled %d signal %d", r.signaled, r.signal);
    cr_assert(!r.exited);
    rl_kproc_result_free(&r);
}

Test(kproc, hang_is_killed_with_its_group)
{
    rl_kproc_opts o = opts(0.5);
    rl_kproc_result r;
    double t0 = rl_time_now();
    /* The child and a grandchild both sleep; the grandchild records its pid. */
    char script[256], pid_path[64];
    snprintf(pid_path, sizeof pid_path, "/tmp/rlc-kproc-gc-%d.pid", (int)getpid());
    snprintf(script, sizeof script, "sh -c 'echo $$ > %s; exec sleep 30' & sleep 30", pid_path);
    run_sh(script, &o, &r);
    double dt = rl_time_now() - t0;
    cr_assert(r.timed_out, "not reported as timed out");
    cr_assert(dt < 5, "took %.1f s for a 0.5 s limit", dt);
    rl_kproc_result_free(&r);
    usleep(200000);
    FILE *f = fopen(pid_path, "r");
    cr_assert_not_null(f, "the grandchild never started");
    int pid = 0;
    cr_assert_eq(fscanf(f, "%d", &pid), 1);
    fclose(f);
    remove(pid_path);
    /* Dead means gone, or a zombie waiting for its new parent to reap it. */
    char stat_path[64], state = 'Z';
    snprintf(stat_path, sizeof stat_path, "/proc/%d/stat", pid);
    f = fopen(stat_path, "r");
    if (f) {
        if (fscanf(f, "%*d %*s %c", &state) != 1) state = '?';
        fclose(f);
    }
    cr_assert_eq(state, 'Z', "grandchild %d survived the group kill (state %c)", pid, state);
}

Test(kproc, flood_is_capped)
{
    rl_kproc_opts o = opts(20);
    o.max_stdout = 100000;
    rl_kproc_result r;
    double t0 = rl_time_now();
    run_sh("yes flood", &o, &r);
    cr_assert(r.truncated, "not reported as truncated");
    cr_assert_leq(r.out_len, o.max_stdout, "kept %zu bytes", r.out_len);
    cr_assert(rl_time_now() - t0 < 10, "flood not stopped promptly");
    rl_kproc_result_free(&r);
}

Test(kproc, stderr_flood_is_dropped_not_fatal)
{
    rl_kproc_opts o = opts(20);
    rl_kproc_result r;
    run_sh("head -c 1000000 /dev/zero | tr '\\0' x >&2; echo done", &o, &r);
    cr_assert(r.exited && r.exit_code == 0);
    cr_assert_str_eq(r.out, "done\n");
    cr_assert_leq(r.err_len, o.max_stderr);
    rl_kproc_result_free(&r);
}

Test(kproc, address_space_limit)
{
    rl_kproc_opts o = opts(10);
    o.as_limit = (size_t)256 << 20;
    rl_kproc_result r;
    run_sh("ulimit -v", &o, &r);
    cr_assert_str_eq(r.out, "262144\n", "RLIMIT_AS not applied: %s", r.out);
    rl_kproc_result_free(&r);
}

/* Compiles run niced (RL_KPROC_BUILD_NICE): the GPU workers get the CPU first. A niceness above
 * the caller's stays (it cannot be lowered unprivileged). */
Test(kproc, niceness)
{
    rl_kproc_opts o = opts(10);
    o.nice = RL_KPROC_BUILD_NICE;
    rl_kproc_result r;
    run_sh("nice", &o, &r);
    int mine = getpriority(PRIO_PROCESS, 0), want = mine > RL_KPROC_BUILD_NICE ? mine : RL_KPROC_BUILD_NICE;
    char text[16];
    snprintf(text, sizeof text, "%d\n", want);
    cr_assert_str_eq(r.out, text);
    rl_kproc_result_free(&r);
    o.nice = 0;
    run_sh("nice", &o, &r);
    snprintf(text, sizeof text, "%d\n", mine);
    cr_assert_str_eq(r.out, text, "no niceness asked: the caller's");
    rl_kproc_result_free(&r);
}

Test(kproc, stdin_and_environment)
{
    rl_kproc_opts o = opts(10);
    o.stdin_data = "line one\nline two\n";
    o.stdin_len = strlen(o.stdin_data);
    o.env_set[0] = "CUDA_VISIBLE_DEVICES=7";
    o.env_set[1] = "HOME=/nowhere";
    rl_kproc_result r;
    run_sh("cat; echo \"$CUDA_VISIBLE_DEVICES $HOME\"", &o, &r);
    cr_assert_str_eq(r.out, "line one\nline two\n7 /nowhere\n");
    rl_kproc_result_free(&r);
}

Test(kproc, grandchild_holding_pipes_does_not_block)
{
    rl_kproc_opts o = opts(20);
    rl_kproc_result r;
    double t0 = rl_time_now();
    run_sh("sleep 30 & echo started", &o, &r);
    cr_assert(rl_time_now() - t0 < 5, "waited for the grandchild");
    cr_assert(r.exited && r.exit_code == 0 && !r.timed_out);
    cr_assert_str_eq(r.out, "started\n");
    rl_kproc_result_free(&r);
}

Test(kproc, missing_program)
{
    rl_kproc_opts o = opts(10);
    rl_kproc_result r;
    char *argv[] = {"/nonexistent/rlc-kernel-worker", NULL};
    rl_err err;
    cr_assert_eq(rl_kproc_run(argv, &o, &r, &err), 0, "%s", err.msg);
    cr_assert(r.exited && r.exit_code == 127, "exit %d", r.exit_code);
    rl_kproc_result_free(&r);
}

Test(kproc, core_and_file_size_limits)
{
    rl_kproc_opts o = opts(10);
    o.fsize_limit = 4096;
    rl_kproc_result r;
    char script[256], path[64];
    snprintf(path, sizeof path, "/tmp/rlc-kproc-fsize-%d.bin", (int)getpid());
    snprintf(script, sizeof script, "ulimit -c; head -c 100000 /dev/zero > %s; echo rc=$?; wc -c < %s", path, path);
    run_sh(script, &o, &r);
    remove(path);
    cr_assert(!strncmp(r.out, "0\n", 2), "core limit not 0: %s", r.out);
    cr_assert(strstr(r.out, "\n4096\n"), "file not capped at 4096 bytes: %s", r.out);
    rl_kproc_result_free(&r);
}
