/* kpool.c — see kpool.h. */
#include "reward/kernel_env/kpool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/number.h"
#include "reward/kernel_env/kproc.h"

struct rl_kenv_pool {
    const rl_kenv_opts *opts;
    pthread_mutex_t lock;
    pthread_cond_t freed;
    char devices[RL_KPOOL_MAX_GPUS][32];
    int busy[RL_KPOOL_MAX_GPUS], n_gpus, per_gpu;
    int building, max_build; /* compiles running, and at most (rl_kenv_pool_run's jobs) */
    int build_waiting;       /* candidates waiting for a compile slot */
    int idle_extra;          /* GPU slots a GPU may add while compile slots idle (kpool.h) */
    pthread_cond_t build_freed;
    const rl_kenv_feed *feed; /* during rl_kenv_pool_run */
    pthread_mutex_t feed_lock;
};

/* Runs argv (a short query) and returns the number it prints, 0 on any failure. */
static int query_count(char *const argv[])
{
    rl_kproc_opts po = {0};
    po.timeout_s = 120;
    po.max_stdout = 64;
    po.max_stderr = 4096;
    rl_kproc_result pr;
    rl_err e;
    if (rl_kproc_run(argv, &po, &pr, &e)) return 0;
    double n = 0;
    rl_number_range r = {0, RL_KPOOL_MAX_GPUS * 64, 1, 0, 0};
    if (pr.exited && pr.exit_code == 0) pr.out[strcspn(pr.out, "\r\n")] = '\0';
    if (!(pr.exited && pr.exit_code == 0) || rl_number_parse(pr.out, &r, "device count", &n, &e)) n = 0;
    rl_kproc_result_free(&pr);
    return (int)n;
}

int rl_kenv_count_gpus(const rl_kenv_opts *o)
{
    char *argv[] = {(char *)o->worker, "--count-devices", NULL};
    int n = query_count(argv);
    if (n > 0 || !o->python) return n;
    /* No native worker (a CPU build driving KernelBench tasks): ask torch. */
    char *py[] = {(char *)o->python, "-c", "import torch; print(torch.cuda.device_count())", NULL};
    return query_count(py);
}

int rl_kenv_pool_create(rl_kenv_pool **out, const rl_kenv_opts *o, int n_gpus, rl_err *err)
{
    *out = NULL;
    if (n_gpus <= 0) n_gpus = rl_kenv_count_gpus(o);
    if (n_gpus <= 0)
        return rl_err_set(err, "no GPU found: neither %s --count-devices nor %s with torch sees one", o->worker,
                          o->python);
    if (n_gpus > RL_KPOOL_MAX_GPUS) n_gpus = RL_KPOOL_MAX_GPUS;
    rl_kenv_pool *p = calloc(1, sizeof *p);
    if (!p) return rl_err_oom(err, "GPU pool", sizeof *p);
    p->opts = o;
    p->n_gpus = n_gpus;
    p->per_gpu = o->gpu_workers > 0 ? o->gpu_workers : 4;
    int idle = o->gpu_workers_idle > 0 ? o->gpu_workers_idle : o->gpu_workers_idle < 0 ? p->per_gpu : 2 * p->per_gpu;
    p->idle_extra = idle > p->per_gpu ? idle - p->per_gpu : 0;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->feed_lock, NULL);
    pthread_cond_init(&p->freed, NULL);
    pthread_cond_init(&p->build_freed, NULL);
    p->max_build = RL_KPOOL_MAX_JOBS;
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    for (int i = 0; i < n_gpus; i++) {
        snprintf(p->devices[i], sizeof p->devices[i], "%d", i);
        const char *at = visible && *visible ? visible : NULL;
        for (int k = 0; k < i && at; k++) {
            at = strchr(at, ',');
            if (at) at++;
        }
        if (at) snprintf(p->devices[i], sizeof p->devices[i], "%.*s", (int)strcspn(at, ","), at);
    }
    *out = p;
    return 0;
}

int rl_kenv_pool_create_on(rl_kenv_pool **out, const rl_kenv_opts *o, int ordinal, int first_free, rl_err *err)
{
    if (rl_kenv_pool_create(out, o, 0, err)) return -1;
    rl_kenv_pool *p = *out;
    if (ordinal < 0 || ordinal >= p->n_gpus) {
        rl_err_set(err, "GPU %d asked for, but the worker sees %d GPU%s", ordinal, p->n_gpus, p->n_gpus == 1 ? "" : "s");
        rl_kenv_pool_free(p);
        *out = NULL;
        return -1;
    }
    char devices[RL_KPOOL_MAX_GPUS][32];
    int n = 0;
    snprintf(devices[n++], sizeof devices[0], "%s", p->devices[ordinal]);
    for (int i = first_free > ordinal ? first_free : ordinal + 1; i < p->n_gpus; i++)
        snprintf(devices[n++], sizeof devices[0], "%s", p->devices[i]);
    memcpy(p->devices, devices, sizeof devices);
    p->n_gpus = n;
    return 0;
}

void rl_kenv_pool_free(rl_kenv_pool *p)
{
    if (!p) return;
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->feed_lock);
    pthread_cond_destroy(&p->freed);
    pthread_cond_destroy(&p->build_freed);
    free(p);
}

int rl_kenv_pool_gpus(const rl_kenv_pool *p) { return p->n_gpus; }

int rl_kpool_slots(int per_gpu, int idle_extra, int n_gpus, int building, int max_build, int build_waiting)
{
    if (build_waiting > 0 || building >= max_build || n_gpus <= 0) return per_gpu;
    int spare = (max_build - building) / n_gpus; /* idle compile slots (cores), a GPU's share */
    return per_gpu + (spare < idle_extra ? spare : idle_extra);
}

static const char *acquire(void *ctx)
{
    rl_kenv_pool *p = ctx;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        int best = -1; /* the least busy GPU with a free slot */
        int slots = rl_kpool_slots(p->per_gpu, p->idle_extra, p->n_gpus, p->building, p->max_build, p->build_waiting);
        for (int i = 0; i < p->n_gpus; i++)
            if (p->busy[i] < slots && (best < 0 || p->busy[i] < p->busy[best])) best = i;
        if (best >= 0) {
            p->busy[best]++;
            pthread_mutex_unlock(&p->lock);
            return p->devices[best];
        }
        pthread_cond_wait(&p->freed, &p->lock);
    }
}

static void release(void *ctx, const char *device)
{
    rl_kenv_pool *p = ctx;
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < p->n_gpus; i++)
        if (p->devices[i] == device && p->busy[i] > 0) p->busy[i]--;
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->lock);
}

static void build_acquire(void *ctx)
{
    rl_kenv_pool *p = ctx;
    pthread_mutex_lock(&p->lock);
    p->build_waiting++;
    while (p->building >= p->max_build) pthread_cond_wait(&p->build_freed, &p->lock);
    p->build_waiting--;
    p->building++;
    pthread_mutex_unlock(&p->lock);
}

static void build_release(void *ctx)
{
    rl_kenv_pool *p = ctx;
    pthread_mutex_lock(&p->lock);
    p->building--;
    pthread_cond_signal(&p->build_freed);
    pthread_cond_broadcast(&p->freed); /* an idle compile slot may be a GPU slot more */
    pthread_mutex_unlock(&p->lock);
}

int rl_kenv_pool_eval(rl_kenv_pool *p, const char *task, const char *source, size_t len, rl_kenv_result *res,
                      rl_err *err)
{
    rl_kenv_opts o = *p->opts;
    o.gpu_acquire = acquire;
    o.gpu_release = release;
    o.build_acquire = build_acquire;
    o.build_release = build_release;
    o.gpu_ctx = p;
    return rl_kenv_eval(&o, task, source, len, res, err);
}

static void *job_main(void *arg)
{
    rl_kenv_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->feed_lock);
        void *work = p->feed->next(p->feed->user);
        pthread_mutex_unlock(&p->feed_lock);
        if (!work) return NULL;
        p->feed->run(p->feed->user, p, work);
    }
}

void rl_kenv_pool_run(rl_kenv_pool *p, int jobs, const rl_kenv_feed *feed)
{
    if (jobs <= 0) { /* compiles are single-threaded (nvcc's phases, g++): one per core at least */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = 2 * p->per_gpu * p->n_gpus;
        if (cores > jobs) jobs = cores > RL_KPOOL_MAX_JOBS ? RL_KPOOL_MAX_JOBS : (int)cores;
    }
    if (jobs > RL_KPOOL_MAX_JOBS) jobs = RL_KPOOL_MAX_JOBS;
    /* jobs compile at once; as many more candidates, plus two per GPU slot, are in flight,
     * compiled and waiting for a GPU or being checked and timed: a thread holds its candidate
     * from compile to result, so a whole set of compiles that end together can wait for the
     * GPUs while the next set compiles, and the cores never idle while the GPUs drain */
    int threads = 2 * jobs + 2 * p->per_gpu * p->n_gpus;
    if (threads > RL_KPOOL_MAX_THREADS) threads = RL_KPOOL_MAX_THREADS;
    p->max_build = jobs;
    p->feed = feed;
    pthread_t th[RL_KPOOL_MAX_THREADS];
    int started = 0;
    while (started < threads && pthread_create(&th[started], NULL, job_main, p) == 0) started++;
    if (started == 0) job_main(p); /* no thread could start: do the work here */
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    p->feed = NULL;
}
