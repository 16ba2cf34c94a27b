/* test_kpool.c — the kernel environment's GPU pool with the fake compiler and worker
 * (tests/fixtures/kernel_env/): every request of a feed is evaluated once on jobs threads, each
 * worker pinned to one of the pool's GPUs (the entries of CUDA_VISIBLE_DEVICES when set), and a
 * pool without a GPU is refused. No GPU needed. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reward/kernel_env/kenv.h"
#include "reward/kernel_env/kpool.h"
#include "test_util.h"

#define FIX "tests/fixtures/kernel_env"
#define TASK "tests/fixtures/kernel_env/tasks/ew_chain"
#define N_REQUESTS 12

static const char *src = "#include \"rl_kernel.h\"\nextern \"C\" int rl_kernel(const rl_kernel_args *a) { return 0; }\n";

typedef struct feed_state {
    int next, done;
    pthread_mutex_t lock;
    char failures[N_REQUESTS][64]; /* the fake worker's "devices=..." per request */
    int ids[N_REQUESTS];
} feed_state;

static void *next(void *user)
{
    feed_state *f = user;
    if (f->next == N_REQUESTS) return NULL;
    f->ids[f->next] = f->next;
    return &f->ids[f->next++];
}

static void run(void *user, rl_kenv_pool *pool, void *work)
{
    feed_state *f = user;
    int k = *(int *)work;
    rl_kenv_result r;
    rl_err err;
    cr_assert_eq(rl_kenv_pool_eval(pool, TASK, src, strlen(src), &r, &err), 0, "%s", err.msg);
    pthread_mutex_lock(&f->lock);
    snprintf(f->failures[k], sizeof f->failures[k], "%s", r.failure ? r.failure : "");
    f->done++;
    pthread_mutex_unlock(&f->lock);
    rl_kenv_result_free(&r);
}

static rl_kenv_paths paths;

static rl_kenv_opts fake_opts(const char *cache)
{
    rl_kenv_opts o;
    rl_kenv_opts_default(&o, &paths);
    rl_err err;
    cr_assert_eq(rl_kenv_load_protocol(&o, &err), 0, "%s", err.msg);
    o.nvcc = FIX "/fake_nvcc.sh";
    o.worker = FIX "/fake_worker.sh";
    o.no_sandbox = 1; /* the fake worker is a shell script that forks: see test_ksandbox.c */
    o.cache_dir = cache;
    o.include_dir = "src/reward/kernel_env/include";
    o.proto.timeout_s = 5;
    o.proto.compile_timeout_s = 5;
    return o;
}

/* Runs the feed through a pool of n_gpus; every request done, each on one of want[]. */
static void check_pool(int n_gpus, const char *const *want, int n_want)
{
    char cache[64];
    snprintf(cache, sizeof cache, "/tmp/rlc-kpool-test-%d", (int)getpid());
    rl_kenv_opts o = fake_opts(cache);
    setenv("FAKE_WORKER_MODE", "env", 1);
    rl_kenv_pool *pool;
    rl_err err;
    cr_assert_eq(rl_kenv_pool_create(&pool, &o, n_gpus, &err), 0, "%s", err.msg);
    cr_assert_eq(rl_kenv_pool_gpus(pool), n_want);
    feed_state f = {0};
    pthread_mutex_init(&f.lock, NULL);
    rl_kenv_feed feed = {&f, next, run};
    rl_kenv_pool_run(pool, 4, &feed);
    cr_assert_eq(f.done, N_REQUESTS);
    for (int k = 0; k < N_REQUESTS; k++) {
        int known = 0;
        for (int i = 0; i < n_want; i++) known |= !strcmp(f.failures[k], want[i]);
        cr_expect(known, "request %d ran with %s", k, f.failures[k]);
    }
    rl_kenv_pool_free(pool);
    pthread_mutex_destroy(&f.lock);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
    cr_assert_eq(system(cmd), 0);
}

Test(kpool, every_request_on_a_pool_gpu)
{
    unsetenv("CUDA_VISIBLE_DEVICES");
    const char *const plain[] = {"devices=0", "devices=1"};
    check_pool(2, plain, 2);
    setenv("CUDA_VISIBLE_DEVICES", "5,7,9", 1);
    const char *const visible[] = {"devices=5", "devices=7", "devices=9"};
    setenv("FAKE_WORKER_GPUS", "3", 1);
    check_pool(0, visible, 3); /* 0: as many as the worker counts */
    unsetenv("CUDA_VISIBLE_DEVICES");
}

Test(kpool, no_gpu_no_pool)
{
    rl_kenv_opts o = fake_opts("/tmp");
    o.worker = "/nonexistent/worker";
    o.python = "/nonexistent/python3";
    rl_kenv_pool *pool;
    rl_err err;
    cr_assert_eq(rl_kenv_pool_create(&pool, &o, 0, &err), -1);
    cr_assert(strstr(err.msg, "no GPU found"), "%s", err.msg);
    cr_assert_null(pool);
}

/* The most workers that ran at once on one GPU over a feed of N_REQUESTS (fake compiles,
 * 8 compile slots: they idle once every candidate is compiled), with gpu_workers 2 and idle
 * as gpu_workers_idle. */
static int max_workers_at_once(int idle)
{
    char cache[64], slots[96], cmd[256];
    snprintf(cache, sizeof cache, "/tmp/rlc-kpool-slots-%d", (int)getpid());
    snprintf(slots, sizeof slots, "%s/slots", cache);
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", cache, slots);
    cr_assert_eq(system(cmd), 0);
    setenv("FAKE_SLOT_DIR", slots, 1);
    setenv("FAKE_WORKER_MODE", "slot", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    rl_kenv_opts o = fake_opts(cache);
    o.gpu_workers = 2;
    o.gpu_workers_idle = idle;
    rl_kenv_pool *pool;
    rl_err err;
    cr_assert_eq(rl_kenv_pool_create(&pool, &o, 1, &err), 0, "%s", err.msg);
    feed_state f = {0};
    pthread_mutex_init(&f.lock, NULL);
    rl_kenv_feed feed = {&f, next, run};
    rl_kenv_pool_run(pool, 8, &feed);
    cr_assert_eq(f.done, N_REQUESTS);
    rl_kenv_pool_free(pool);
    pthread_mutex_destroy(&f.lock);
    char path[128];
    snprintf(path, sizeof path, "%s/max.0", slots);
    FILE *fp = fopen(path, "r");
    cr_assert(fp, "no worker ran");
    int n, max = 0, lines = 0;
    while (fscanf(fp, "%d", &n) == 1) max = n > max ? n : max, lines++;
    fclose(fp);
    cr_assert_eq(lines, N_REQUESTS);
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
    cr_assert_eq(system(cmd), 0);
    return max;
}

/* Up to gpu_workers workers share one GPU (their timing is serialized by the GPU lock, which
 * the worker takes): never more at once, and the pool does use them. */
Test(kpool, workers_per_gpu)
{
    int max = max_workers_at_once(-1);
    cr_assert_eq(max, 2, "at most 2 workers at once on the GPU, and 2 were used: %d", max);
}

/* Once the compile slots idle (every candidate compiled), idle compile slots become GPU slots,
 * up to gpu_workers_idle (default twice gpu_workers): the queue at the end of a batch drains on
 * more cores. Never more than that, and the pool does use them. */
Test(kpool, idle_compile_slots_become_gpu_slots)
{
    int max = max_workers_at_once(0);
    cr_assert_eq(max, 4, "at most 4 (2 x 2) workers at once once compiles idle, and 4 were used: %d", max);
    max = max_workers_at_once(3);
    cr_assert_eq(max, 3, "gpu_workers_idle 3: at most 3 at once, and 3 were used: %d", max);
}

/* The rule: gpu_workers while any candidate waits for a compile slot or every slot compiles;
 * else one more per idle compile slot (a GPU's share of them), up to the idle extra. */
Test(kpool, gpu_slots_rule)
{
    cr_assert_eq(rl_kpool_slots(4, 4, 1, 16, 16, 0), 4, "every compile slot busy");
    cr_assert_eq(rl_kpool_slots(4, 4, 1, 10, 16, 2), 4, "candidates wait for a compile slot");
    cr_assert_eq(rl_kpool_slots(4, 4, 1, 14, 16, 0), 6, "two compile slots idle: two more");
    cr_assert_eq(rl_kpool_slots(4, 4, 1, 0, 16, 0), 8, "all idle: up to the extra");
    cr_assert_eq(rl_kpool_slots(4, 4, 2, 10, 16, 0), 7, "6 idle over 2 GPUs: 3 each");
    cr_assert_eq(rl_kpool_slots(4, 0, 1, 0, 16, 0), 4, "no extra");
    cr_assert_eq(rl_kpool_slots(2, 4, 1, 15, 16, 0), 3, "one idle");
}

/* jobs compiles at once, and compiles go on while the GPU is busy: with 2 compile slots and
 * one worker on one GPU, the first candidate's worker waits (up to 4 s) until 4 candidates
 * have been compiled, which only happens if candidates beyond the 2 compiling ones can be in
 * flight (compiled, waiting for the GPU) while it holds the GPU; never more than 2 compiles at
 * once. Each candidate's text is its own (no cache hit). */
typedef struct slot_feed {
    int next, n;
    char src[8][200];
    char status[8][24];
} slot_feed;

static void *slot_next(void *user)
{
    slot_feed *f = user;
    return f->next < f->n ? &f->src[f->next++] : NULL;
}

static void slot_run(void *user, rl_kenv_pool *pool, void *work)
{
    slot_feed *f = user;
    char *text = work;
    rl_kenv_result r;
    rl_err err;
    cr_assert_eq(rl_kenv_pool_eval(pool, TASK, text, strlen(text), &r, &err), 0, "%s", err.msg);
    snprintf(f->status[(text - f->src[0]) / sizeof f->src[0]], sizeof f->status[0], "%s%s%s",
             rl_kenv_status_names[r.status], r.failure ? " " : "", r.failure ? r.failure : "");
    rl_kenv_result_free(&r);
}

Test(kpool, compiles_go_on_while_the_gpu_is_busy)
{
    char cache[64], running[96], cmd[200], path[128];
    snprintf(cache, sizeof cache, "/tmp/rlc-kpool-build-%d", (int)getpid());
    snprintf(running, sizeof running, "%s/running", cache);
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", cache, running);
    cr_assert_eq(system(cmd), 0);
    setenv("FAKE_NVCC_RUNNING", running, 1);
    setenv("FAKE_WORKER_MODE", "wait_compiles", 1);
    setenv("FAKE_WAIT_COMPILES", "4", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    rl_kenv_opts o = fake_opts(cache);
    o.gpu_workers = 1;
    rl_kenv_pool *pool;
    rl_err err;
    cr_assert_eq(rl_kenv_pool_create(&pool, &o, 1, &err), 0, "%s", err.msg);
    slot_feed f = {.n = 6};
    for (int i = 0; i < f.n; i++)
        snprintf(f.src[i], sizeof f.src[i],
                 "#include \"rl_kernel.h\"\n// COMPILE_SLOT_MARK %d\nextern \"C\" int rl_kernel(const rl_kernel_args *a) { return 0; }\n", i);
    rl_kenv_feed feed = {&f, slot_next, slot_run};
    rl_kenv_pool_run(pool, 2, &feed);
    rl_kenv_pool_free(pool);
    for (int i = 0; i < f.n; i++) cr_assert_str_eq(f.status[i], "ok", "candidate %d: %s", i, f.status[i]);
    snprintf(path, sizeof path, "%s.max", running);
    FILE *fp = fopen(path, "r");
    cr_assert(fp, "no compile ran");
    int n, max = 0, lines = 0;
    while (fscanf(fp, "%d", &n) == 1) max = n > max ? n : max, lines++;
    fclose(fp);
    cr_assert_eq(lines, f.n);
    cr_assert(max >= 1 && max <= 2, "at most 2 compiles at once: %d", max);
    unsetenv("FAKE_NVCC_RUNNING");
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
    cr_assert_eq(system(cmd), 0);
}
