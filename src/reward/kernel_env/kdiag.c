/* kdiag.c — see kdiag.h. Every probe runs in its own thread (a context each on the GPU: run it
 * on an idle machine), in its own private directory, with the environment a worker gets (HOME
 * and TMPDIR private, except in "off"). */
#include "reward/kernel_env/kdiag.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"
#include "reward/kernel_env/kproc.h"
#include "reward/kernel_env/kworker.h"

typedef struct variant {
    const char *name, *what;
    int off, keep_home, no_data, no_landlock, no_seccomp, no_ioctl, no_scope, write_all, read_home;
} variant;

static const variant variants[] = {
    {.name = "off", .what = "no sandbox, the caller's HOME", .off = 1, .keep_home = 1},
    {.name = "off+home", .what = "no sandbox, HOME and TMPDIR private", .off = 1},
    {.name = "full", .what = "every layer (what a worker gets)"},
    {.name = "rlimits", .what = "CPU time and file size limits only", .no_landlock = 1, .no_seccomp = 1, .no_data = 1},
    {.name = "data-limit", .what = "resource limits with the data limit, nothing else", .no_landlock = 1, .no_seccomp = 1},
    {.name = "seccomp", .what = "seccomp only", .no_landlock = 1, .no_data = 1},
    {.name = "landlock", .what = "Landlock only", .no_seccomp = 1, .no_data = 1},
    {.name = "full-data", .what = "full less the data limit", .no_data = 1},
    {.name = "full-seccomp", .what = "full less seccomp", .no_seccomp = 1},
    {.name = "full-landlock", .what = "full less Landlock", .no_landlock = 1},
    {.name = "full-ioctl", .what = "full less Landlock's device-ioctl right", .no_ioctl = 1},
    {.name = "full-scope", .what = "full less Landlock's signal/abstract-socket scope", .no_scope = 1},
    {.name = "full+write-all", .what = "full with every path writable", .write_all = 1},
    {.name = "full+read-home", .what = "full with $HOME readable", .read_home = 1},
};
#define N_VARIANTS (int)(sizeof variants / sizeof variants[0])

typedef struct probe {
    const rl_kenv_opts *o;
    const char *preload;
    const variant *v;
    int python;
    int devices; /* -1: no count printed */
    char status[80];
    char err_tail[400];
    char trace[1600]; /* the tracer's lines, ' | '-joined */
    double seconds;
} probe;

/* Keeps the tracer's lines ("rlc-trace: ...") of text in p->trace, the rest's tail in p->err_tail. */
static void split_stderr(probe *p, const char *text)
{
    char rest[4096] = "";
    size_t rl = 0, tl = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (n >= 10 && !strncmp(line, "rlc-trace:", 10)) {
            if (tl + n + 4 < sizeof p->trace) tl += (size_t)snprintf(p->trace + tl, sizeof p->trace - tl, "%s%.*s", tl ? " | " : "", (int)n, line);
        } else if (n) {
            if (rl + n + 2 >= sizeof rest) rl = 0; /* keep the latest lines */
            rl += (size_t)snprintf(rest + rl, sizeof rest - rl, "%s%.*s", rl ? " / " : "", (int)n, line);
        }
        line = end ? end + 1 : NULL;
    }
    size_t keep = rl < sizeof p->err_tail - 1 ? rl : sizeof p->err_tail - 1;
    memcpy(p->err_tail, rest + rl - keep, keep);
    p->err_tail[keep] = 0;
}

static void *run_probe(void *arg)
{
    probe *p = arg;
    const variant *v = p->v;
    p->devices = -1;
    const char *tmp = getenv("TMPDIR");
    char dir[4096], home_env[4200], tmp_env[4200], preload_env[3 * 4096];
    snprintf(dir, sizeof dir, "%s/rlc-diag-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(p->status, sizeof p->status, "mkdtemp: %.60s", strerror(errno));
        return NULL;
    }
    rl_kworker_box box;
    rl_kworker_box_init(&box, p->o, dir, NULL, NULL, p->python, 120);
    rl_ksandbox_spec spec = box.spec;
    if (v->no_data) spec.data_bytes = 0;
    if (v->no_landlock) spec.no_landlock = 1;
    if (v->no_seccomp) spec.no_seccomp = 1;
    if (v->no_ioctl) spec.no_ioctl_rule = 1;
    if (v->no_scope) spec.no_scope = 1;
    if (v->write_all) spec.write_all = 1;
    if (v->read_home) spec.home = "/";
    rl_kproc_opts po = {0};
    po.timeout_s = 120;
    po.max_stdout = 4096;
    po.max_stderr = 16384;
    int n_env = 0;
    if (!v->keep_home) {
        snprintf(home_env, sizeof home_env, "HOME=%s", dir);
        snprintf(tmp_env, sizeof tmp_env, "TMPDIR=%s", dir);
        po.env_set[n_env++] = home_env;
        po.env_set[n_env++] = tmp_env;
    }
    /* as a worker gets it: the driver's thread-name shim (kworker.h) in the sandboxed probes,
     * and the tracer in all of them */
    int shim = !v->off && rl_kworker_preload(p->o, p->preload, preload_env, sizeof preload_env);
    if (!shim && p->preload) snprintf(preload_env, sizeof preload_env, "LD_PRELOAD=%s", p->preload);
    if (shim || p->preload) po.env_set[n_env++] = preload_env;
    rl_ksandbox *sb = NULL;
    rl_err err;
    if (!v->off && rl_ksandbox_prepare(&spec, &sb, &err)) {
        snprintf(p->status, sizeof p->status, "%.79s", err.msg);
        rl_remove_tree(dir, &err);
        return NULL;
    }
    po.sandbox = sb;
    char *argv[4];
    rl_kworker_probe_argv(p->o, p->python, argv);
    rl_kproc_result pr;
    int rc = rl_kproc_run(argv, &po, &pr, &err);
    rl_ksandbox_free(sb);
    if (rc) {
        snprintf(p->status, sizeof p->status, "%.79s", err.msg);
    } else {
        p->seconds = pr.seconds;
        if (pr.timed_out) snprintf(p->status, sizeof p->status, "timed out");
        else if (pr.signaled) snprintf(p->status, sizeof p->status, "killed by signal %d (%s)", pr.signal, strsignal(pr.signal));
        else snprintf(p->status, sizeof p->status, "exit %d", pr.exit_code);
        int n;
        if (pr.exited && sscanf(pr.out, "%d", &n) == 1) p->devices = n;
        split_stderr(p, pr.err);
        rl_kproc_result_free(&pr);
    }
    rl_remove_tree(dir, &err);
    return NULL;
}

int rl_kdiag_run(const rl_kenv_opts *o, const char *preload, int python, FILE *out, rl_err *err)
{
    int kinds = python ? 2 : 1, n = kinds * N_VARIANTS;
    probe *ps = calloc((size_t)n, sizeof *ps);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    if (!ps || !th) {
        free(ps);
        free(th);
        return rl_err_oom(err, "sandbox diagnosis", 0);
    }
    char desc[200];
    rl_ksandbox_describe(desc, sizeof desc);
    char shim[3 * 4096];
    int have_shim = rl_kworker_preload(o, NULL, shim, sizeof shim);
    fprintf(out, "sandbox diagnosis: %s; native worker %s%s%s%s; driver thread-name shim %s\n", desc, o->worker,
            python ? ", Python " : "", python ? o->python : "", preload ? "" : " (no tracer preloaded)",
            have_shim ? shim + strlen("LD_PRELOAD=") : "missing (librlc-kenv-preload.so beside the worker)");
    for (int i = 0; i < n; i++) {
        ps[i] = (probe){.o = o, .preload = preload, .v = &variants[i % N_VARIANTS], .python = i / N_VARIANTS};
        if (pthread_create(&th[i], NULL, run_probe, &ps[i])) th[i] = 0, run_probe(&ps[i]);
    }
    for (int i = 0; i < n; i++)
        if (th[i]) pthread_join(th[i], NULL);
    int bad = 0;
    for (int k = 0; k < kinds; k++) {
        const probe *off = &ps[k * N_VARIANTS], *full = &ps[k * N_VARIANTS + 2];
        for (int i = 0; i < N_VARIANTS; i++) {
            const probe *p = &ps[k * N_VARIANTS + i];
            fprintf(out, "%-6s %-15s devices %2d  %-28s %5.1f s  %s", k ? "python" : "native", p->v->name, p->devices,
                    p->status, p->seconds, p->v->what);
            if (p->devices < off->devices || p->devices <= 0) {
                if (p->err_tail[0]) fprintf(out, "\n         stderr: %s", p->err_tail);
                if (p->trace[0]) fprintf(out, "\n         refused: %s", p->trace);
            }
            fputc('\n', out);
        }
        int ok = off->devices <= 0 || full->devices >= off->devices;
        bad |= !ok;
        fprintf(out, "%s: %s\n", k ? "python" : "native",
                off->devices <= 0 ? "no GPU seen without the sandbox either (nothing to diagnose)"
                : ok              ? "the full sandbox sees every GPU"
                                  : "the full sandbox hides the GPU: the variants above that see it name the layer");
    }
    free(ps);
    free(th);
    return bad;
}
