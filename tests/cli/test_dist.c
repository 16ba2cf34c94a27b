/* test_dist.c — `rlc sft|grpo|ppo` as several ranks, as a user starts them: `--gpus N --device
 * cpu` (rlc's own launcher) gives the losses of one rank with N times the batch (sft, ppo), one
 * metrics file and one progress line set; a 2-rank ppo checkpoint resumes on one rank;
 * torchrun-style variables start ranks by hand; and the failures end cleanly with a message
 * saying what is wrong: --gpus beyond the GPUs present, ranks started with different options, an
 * unreachable MASTER_ADDR, a rank killed mid-run (with and without the --gpus supervisor), Ctrl-C
 * (all ranks stop after the same step, one checkpoint). */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "core/timer.h"
#include "dist/net.h"
#include "train_fixture.h"

TestSuite(cli_dist, .init = tf_setup, .fini = tf_teardown);

static double loss_at(const char *metrics, int step)
{
    FILE *f = fopen(metrics, "r");
    cr_assert(f, "no %s", metrics);
    char line[1024];
    double loss = NAN;
    for (int s = 1; fgets(line, sizeof line, f); s++)
        if (s == step) sscanf(strstr(line, "\"loss\": ") + 8, "%lf", &loss);
    fclose(f);
    return loss;
}

static int count_text(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++) n++;
    return n;
}

Test(cli_dist, cpu_ranks_train_like_one_rank_with_their_batch)
{
    char out[16384], one[256], two[256];
    const char *args = "--steps 3 --max-tokens 24 --lr 1e-3 --device cpu --threads 1";
    cr_assert_eq(sh(out, sizeof out, "%s sft --model %s --data %s --out %s/one %s --grad-accum 2", rlc, model, sft_data,
                    tmp, args), 0, "%s", out);
    int rc = sh(out, sizeof out, "%s sft --model %s --data %s --out %s/two %s --gpus 2 --zero 2", rlc, model, sft_data, tmp, args);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_eq(count_text(out, "rlc sft: "), 2, "one opening and one closing line, from rank 0: %s", out);
    cr_assert(strstr(out, "2 ranks, ZeRO 2"), "%s", out);
    snprintf(one, sizeof one, "%s/one/metrics.jsonl", tmp);
    snprintf(two, sizeof two, "%s/two/metrics.jsonl", tmp);
    cr_assert_eq(count_lines(two), 3, "one metrics line per step, from rank 0");
    for (int s = 1; s <= 3; s++) {
        double a = loss_at(one, s), b = loss_at(two, s);
        cr_assert(fabs(a - b) <= 1e-5 * a, "step %d: loss %.9g on 2 ranks, %.9g on one with twice the batch", s, b, a);
    }
    /* the checkpoint resumes on another rank count */
    rc = sh(out, sizeof out, "%s sft --resume %s/two/model --out %s/two --steps 4 --gpus 3 --zero 1", rlc, tmp, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "from step 3") && strstr(out, "3 ranks, ZeRO 1"), "%s", out);
    cr_assert_eq(count_lines(two), 4);
}

Test(cli_dist, grpo_on_cpu_ranks)
{
    char out[16384], path[256];
    int rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/g --reward math --steps 2 --prompts-per-step 2 "
                "--group-size 2 --max-new-tokens 3 --device cpu --threads 1 --gpus 2", rlc, model, rl_data, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    snprintf(path, sizeof path, "%s/g/metrics.jsonl", tmp);
    cr_assert_eq(count_lines(path), 2);
    snprintf(path, sizeof path, "%s/g/model/optimizer.safetensors", tmp);
    cr_assert(rl_file_exists(path), "%s", out);
}

static double field_at(const char *metrics, int step, const char *key)
{
    FILE *f = fopen(metrics, "r");
    cr_assert(f, "no %s", metrics);
    char line[4096], want[64];
    snprintf(want, sizeof want, "\"%s\": ", key);
    double x = NAN;
    for (int s = 1; fgets(line, sizeof line, f); s++)
        if (s == step && strstr(line, want)) sscanf(strstr(line, want) + strlen(want), "%lf", &x);
    fclose(f);
    return x;
}

Test(cli_dist, ppo_on_cpu_ranks_like_one_rank_and_resumed_on_one)
{
    char out[16384], one[256], two[256];
    const char *args = "--reward regex:[aeiou] --n-samples-per-prompt 2 --max-new-tokens 4 --kl-coef 0.1 "
                       "--target-kl 0.5 --reward-norm --num-mini-batches 3 --steps 2 --device cpu --threads 1";
    cr_assert_eq(sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/p1 --prompts-per-step 4 %s", rlc, model,
                    rl_data, tmp, args), 0, "%s", out);
    int rc = sh(out, sizeof out, "%s ppo --model %s --data %s --out %s/p2 --prompts-per-step 2 %s --gpus 2 --zero 1",
                rlc, model, rl_data, tmp, args);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_eq(count_text(out, "rlc ppo: "), 2, "one opening and one closing line, from rank 0: %s", out);
    cr_assert(strstr(out, "2 ranks, ZeRO 1"), "%s", out);
    snprintf(one, sizeof one, "%s/p1/metrics.jsonl", tmp);
    snprintf(two, sizeof two, "%s/p2/metrics.jsonl", tmp);
    cr_assert_eq(count_lines(two), 2, "one metrics line per step, from rank 0");
    const char *keys[] = {"loss", "value_loss", "reward_used_mean", "kl_coef", "tokens"};
    for (int s = 1; s <= 2; s++)
        for (int k = 0; k < 5; k++) {
            double a = field_at(one, s, keys[k]), b = field_at(two, s, keys[k]);
            cr_assert(isfinite(a) && fabs(a - b) <= 1e-5 * (fabs(a) + 1e-3),
                      "step %d: %s %.9g on 2 ranks, %.9g on one with twice the prompts", s, keys[k], b, a);
        }
    printf("ppo, 2 CPU ranks vs one: step 2 loss %.9g vs %.9g, value loss %.9g vs %.9g\n", field_at(two, 2, "loss"),
           field_at(one, 2, "loss"), field_at(two, 2, "value_loss"), field_at(one, 2, "value_loss"));
    /* the 2-rank checkpoint (both models) resumes on one rank */
    rc = sh(out, sizeof out, "%s ppo --resume %s/p2/model --out %s/p2 --steps 3 --gpus 1", rlc, tmp, tmp);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "from step 2") && !strstr(out, "ranks, ZeRO"), "%s", out);
    cr_assert_eq(count_lines(two), 3);
}

Test(cli_dist, more_gpus_than_present)
{
    char out[4096];
    if (rl_cuda_devices() > 0) cr_skip_test("this check needs a machine without GPUs");
    int rc = sh(out, sizeof out, "%s sft --model %s --data %s --out %s/x --gpus 2", rlc, model, sft_data, tmp);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "--gpus 2, but no GPU is visible (--device cpu starts 2 CPU ranks instead)"), "%s", out);
    rc = sh(out, sizeof out, "%s grpo --model %s --data %s --out %s/x --reward math --gpus 3 --device cuda", rlc, model,
            rl_data, tmp);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "--gpus 3, but 0 GPUs are visible"), "%s", out);
}

/* Starts `rlc sft` as rank `rank` of `world` by hand (torchrun-style variables); returns its pid.
 * Its output goes to tmp/rank<rank>.log. */
static pid_t start_rank(int rank, int world, int port, const char *timeout, const char *extra)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "RANK=%d WORLD_SIZE=%d LOCAL_RANK=%d LOCAL_WORLD_SIZE=%d MASTER_ADDR=127.0.0.1 MASTER_PORT=%d "
             "RLC_DIST_TIMEOUT=%s exec %s sft --model %s --data %s --out %s/hand --max-tokens 24 --device cpu "
             "--threads 1 %s > %s/rank%d.log 2>&1",
             rank, world, rank, world, port, timeout, rlc, model, sft_data, tmp, extra, tmp, rank);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int wait_status(pid_t pid)
{
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *read_log(int rank)
{
    char path[256], *text;
    size_t len;
    rl_err err;
    snprintf(path, sizeof path, "%s/rank%d.log", tmp, rank);
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0, "%s", err.msg);
    return text;
}

static int free_port(void)
{
    int fd, port;
    rl_err err;
    cr_assert_eq(rl_net_listen(0, &fd, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_net_local_port(fd, &port, &err), 0, "%s", err.msg);
    rl_net_close(fd);
    return port;
}

Test(cli_dist, ppo_ranks_started_by_torchrun_variables)
{
    int port = free_port();
    pid_t pids[2];
    for (int r = 0; r < 2; r++) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd,
                 "RANK=%d WORLD_SIZE=2 LOCAL_RANK=%d LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=%d "
                 "RLC_DIST_TIMEOUT=20 exec %s ppo --model %s --data %s --out %s/tp --reward regex:[aeiou] "
                 "--prompts-per-step 2 --n-samples-per-prompt 2 --max-new-tokens 3 --steps 2 --zero 2 --device cpu "
                 "--threads 1 > %s/rank%d.log 2>&1",
                 r, r, port, rlc, model, rl_data, tmp, tmp, r);
        pids[r] = fork();
        if (pids[r] == 0) {
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
    }
    for (int r = 0; r < 2; r++) {
        int st = wait_status(pids[r]);
        char *log = read_log(r);
        cr_assert_eq(st, 0, "rank %d: %s", r, log);
        free(log);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/tp/metrics.jsonl", tmp);
    cr_assert_eq(count_lines(path), 2, "one metrics line per step, from rank 0");
    snprintf(path, sizeof path, "%s/tp/model/value/optimizer.safetensors", tmp);
    cr_assert(rl_file_exists(path), "the value model's gathered optimizer state");
}

Test(cli_dist, ranks_with_different_options_are_refused)
{
    int port = free_port();
    pid_t a = start_rank(0, 2, port, "20", "--steps 2 --lr 1e-3");
    pid_t b = start_rank(1, 2, port, "20", "--steps 2 --lr 2e-3");
    cr_assert_eq(wait_status(a), 1);
    cr_assert_eq(wait_status(b), 1);
    for (int r = 0; r < 2; r++) {
        char *log = read_log(r);
        cr_assert(strstr(log, "rank 1's run configuration differs from rank 0's") && strstr(log, "'lr=0.001'") &&
                      strstr(log, "'lr=0.002'"),
                  "rank %d: %s", r, log);
        free(log);
    }
}

Test(cli_dist, unreachable_master_addr_times_out)
{
    int port = free_port();
    double t0 = rl_time_now();
    pid_t b = start_rank(1, 2, port, "1.5", "--steps 2");
    cr_assert_eq(wait_status(b), 1);
    double took = rl_time_now() - t0;
    char *log = read_log(1), want[64];
    snprintf(want, sizeof want, "MASTER_ADDR:MASTER_PORT = 127.0.0.1:%d", port);
    cr_assert(strstr(log, want) && strstr(log, "within 1.5 s"), "%s", log);
    cr_assert(took < 6, "took %.1f s with a 1.5 s timeout", took);
    free(log);
}

/* The pids of pid's children (the ranks of a --gpus supervisor), in start order. */
static int children(pid_t pid, pid_t *out, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && n < max && fscanf(f, "%d", &out[n]) == 1) n++;
    if (f) fclose(f);
    return n;
}

static void wait_for_steps(const char *metrics, int n)
{
    for (int i = 0; i < 600 && count_lines(metrics) < n; i++) usleep(50000);
    cr_assert(count_lines(metrics) >= n, "fewer than %d steps within 30 s", n);
}

Test(cli_dist, a_killed_rank_stops_the_run)
{
    char metrics[256];
    snprintf(metrics, sizeof metrics, "%s/hand/metrics.jsonl", tmp);
    /* ranks started by hand: the survivor's watchdog stops it */
    int port = free_port();
    pid_t a = start_rank(0, 2, port, "20", "--steps 100000 --no-save");
    pid_t b = start_rank(1, 2, port, "20", "--steps 100000 --no-save");
    wait_for_steps(metrics, 2);
    double t0 = rl_time_now();
    kill(b, SIGKILL);
    int st = wait_status(a);
    double took = rl_time_now() - t0;
    wait_status(b);
    char *log = read_log(0);
    cr_assert_eq(st, 1, "rank 0 ended with %d: %s", st, log);
    cr_assert(took < 8, "rank 0 took %.1f s to stop", took);
    cr_assert(strstr(log, "rank 1"), "the message names the lost rank: %s", log);
    printf("rank 1 killed: rank 0 stopped after %.2f s\n", took);
    free(log);

    /* under the --gpus supervisor */
    snprintf(metrics, sizeof metrics, "%s/sup/metrics.jsonl", tmp);
    char log_path[256];
    snprintf(log_path, sizeof log_path, "%s/sup.log", tmp);
    pid_t sup = fork();
    if (sup == 0) {
        char out_dir[256];
        snprintf(out_dir, sizeof out_dir, "%s/sup", tmp);
        freopen(log_path, "w", stderr);
        execl(rlc, "rlc", "sft", "--model", model, "--data", sft_data, "--out", out_dir, "--steps", "100000",
              "--max-tokens", "24", "--device", "cpu", "--threads", "1", "--gpus", "2", "--no-save", (char *)NULL);
        _exit(127);
    }
    wait_for_steps(metrics, 2);
    pid_t ranks[4];
    cr_assert_eq(children(sup, ranks, 4), 2);
    t0 = rl_time_now();
    kill(ranks[1], SIGKILL);
    st = wait_status(sup);
    took = rl_time_now() - t0;
    char *text;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(log_path, &text, &len, &err), 0, "%s", err.msg);
    cr_assert_eq(st, 128 + SIGKILL, "%s", text);
    cr_assert(took < 8, "the supervisor took %.1f s to stop", took);
    cr_assert(strstr(text, "rank 1 (pid") && strstr(text, "killed by signal 9"), "%s", text);
    free(text);
}

Test(cli_dist, ctrl_c_stops_every_rank_after_the_same_step)
{
    char metrics[256], ckpt[256];
    snprintf(metrics, sizeof metrics, "%s/int/metrics.jsonl", tmp);
    snprintf(ckpt, sizeof ckpt, "%s/int/model", tmp);
    pid_t sup = fork();
    if (sup == 0) {
        char out_dir[256];
        snprintf(out_dir, sizeof out_dir, "%s/int", tmp);
        freopen("/dev/null", "w", stderr);
        execl(rlc, "rlc", "sft", "--model", model, "--data", sft_data, "--out", out_dir, "--steps", "100000",
              "--max-tokens", "24", "--device", "cpu", "--threads", "1", "--gpus", "2", "--zero", "1", (char *)NULL);
        _exit(127);
    }
    wait_for_steps(metrics, 1);
    kill(sup, SIGINT);
    cr_assert_eq(wait_status(sup), 130);
    rl_train_state s;
    rl_err err;
    cr_assert_eq(rl_checkpoint_load_state(ckpt, &s, NULL, &err), 0, "%s", err.msg);
    cr_assert(s.step >= 1 && s.step == count_lines(metrics), "checkpoint step %lld, %d metric lines",
              (long long)s.step, count_lines(metrics));
}
