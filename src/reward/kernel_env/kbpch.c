/* kbpch.c — see kbpch.h. */
#include "reward/kernel_env/kbpch.h"

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "core/log.h"
#include "reward/kernel_env/kproc.h"

static pthread_mutex_t pch_lock = PTHREAD_MUTEX_INITIALIZER;
static int pch_state = -1; /* -1 not tried, 0 off, 1 ready, 2 being built */
static char pch_dir[PATH_MAX];

/* <cache>/kb-pch-<hash of the interpreter and the worker's directory> unless o->kb_pch. */
static void default_dir(const rl_kenv_opts *o, const char *kdir, char *out, size_t size)
{
    if (o->kb_pch) {
        snprintf(out, size, "%s", o->kb_pch);
        return;
    }
    uint64_t h = 0xcbf29ce484222325ull;
    const char *parts[2] = {o->python, kdir};
    for (int k = 0; k < 2; k++) {
        for (const char *c = parts[k]; *c; c++) h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
        h = (h ^ 0xff) * 0x100000001b3ull;
    }
    snprintf(out, size, "%s/kb-pch-%016" PRIx64, o->cache_dir, h);
}

static int build(const rl_kenv_opts *o, const char *script, const char *dir)
{
    char ready[PATH_MAX + 16];
    snprintf(ready, sizeof ready, "%s/ready", dir);
    if (rl_file_exists(ready)) return 1;
    rl_err err;
    if (rl_mkdir_p(dir, &err)) {
        rl_log_warn("kernel evaluator: no precompiled torch header (%s); KernelBench builds parse it each time", err.msg);
        return 0;
    }
    char *argv[] = {(char *)o->python, (char *)script, (char *)dir, NULL};
    rl_kproc_opts po = {0};
    po.timeout_s = 900;
    po.max_stdout = 1 << 16;
    po.max_stderr = 1 << 14;
    rl_kproc_result pr;
    if (rl_kproc_run(argv, &po, &pr, &err)) {
        rl_log_warn("kernel evaluator: no precompiled torch header (%s)", err.msg);
        return 0;
    }
    int ok = pr.exited && pr.exit_code == 0 && rl_file_exists(ready);
    char *text = pr.out_len ? pr.out : pr.err;
    text[strcspn(text, "\n")] = 0;
    if (!ok)
        rl_log_warn("kernel evaluator: no precompiled torch header: %s failed (%s); KernelBench builds parse it each time",
                    script, text);
    else
        rl_log_info("kernel evaluator: precompiled torch header ready in %s (%.0f s)", dir, pr.seconds);
    rl_kproc_result_free(&pr);
    return ok;
}

typedef struct build_job {
    const char *python;
    char script[PATH_MAX + 16], dir[PATH_MAX];
} build_job;

/* The background build: nobody waits for it; builds started meanwhile go without the PCH. */
static void *build_main(void *arg)
{
    build_job *j = arg;
    rl_kenv_opts o = {0};
    o.python = j->python;
    int ok = build(&o, j->script, j->dir);
    pthread_mutex_lock(&pch_lock);
    if (!strcmp(pch_dir, j->dir)) pch_state = ok;
    pthread_mutex_unlock(&pch_lock);
    free(j);
    return NULL;
}

int rl_kbpch_env(const rl_kenv_opts *o, char *cxx_env, size_t cxx_size, char *pch_env, size_t pch_size, char *real_env,
                 size_t real_size)
{
    real_env[0] = 0;
    if (o->kb_no_pch) return 0;
    char kdir[PATH_MAX], script[PATH_MAX + 16], wrapper[PATH_MAX + 16];
    snprintf(kdir, sizeof kdir, "%s", o->kb_worker);
    char *slash = strrchr(kdir, '/');
    if (slash) *slash = 0;
    else snprintf(kdir, sizeof kdir, ".");
    snprintf(script, sizeof script, "%s/kb_pch.py", kdir);
    snprintf(wrapper, sizeof wrapper, "%s/kb_cxx.sh", kdir);
    char dir[PATH_MAX], ready[PATH_MAX + 16];
    default_dir(o, kdir, dir, sizeof dir);
    snprintf(ready, sizeof ready, "%s/ready", dir);
    pthread_mutex_lock(&pch_lock);
    if (pch_state < 0 || strcmp(dir, pch_dir)) { /* once per directory (a process normally has one) */
        snprintf(pch_dir, sizeof pch_dir, "%s", dir);
        pch_state = 0;
        build_job *j = rl_file_exists(script) && rl_file_exists(wrapper) ? malloc(sizeof *j) : NULL;
        if (j && rl_file_exists(ready)) {
            pch_state = 1;
            free(j);
        } else if (j) {
            j->python = o->python;
            snprintf(j->script, sizeof j->script, "%s", script);
            snprintf(j->dir, sizeof j->dir, "%s", dir);
            pthread_t t;
            pthread_attr_t attr;
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            if (pthread_create(&t, &attr, build_main, j) == 0) pch_state = 2;
            else free(j);
            pthread_attr_destroy(&attr);
        }
    }
    int state = pch_state;
    pthread_mutex_unlock(&pch_lock);
    if (state != 1) return 0;
    char real[PATH_MAX];
    snprintf(cxx_env, cxx_size, "CXX=%s", realpath(wrapper, real) ? real : wrapper);
    snprintf(pch_env, pch_size, "RLC_KB_PCH=%s", realpath(pch_dir, real) ? real : pch_dir);
    /* kb_pch.py ran with this process's environment: the PCH fits the compiler CXX names (c++
     * when unset), and a PCH g++ finds unfit is ignored without a word, so the wrapper must run
     * that compiler, not whichever c++ is first in PATH. */
    const char *cxx = getenv("CXX");
    if (cxx && *cxx) snprintf(real_env, real_size, "RLC_KB_CXX=%s", cxx);
    return 1;
}

int rl_kbpch_wait(double timeout_s)
{
    for (double waited = 0;; waited += 0.01) {
        pthread_mutex_lock(&pch_lock);
        int state = pch_state;
        pthread_mutex_unlock(&pch_lock);
        if (state != 2 || waited >= timeout_s) return state == 1;
        usleep(10000);
    }
}
