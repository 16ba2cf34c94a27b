/* env.c — see env.h: the kind named by the spec, behind one interface. */
#include "rollout/env.h"

#include <stdlib.h>
#include <string.h>

struct rl_env {
    char *spec;
    void *self;
    const rl_env_ops *ops;
};

int rl_env_create(rl_env **out, const char *spec, const rl_env_options *o, rl_err *err)
{
    *out = NULL;
    if (!spec || !*spec) return rl_err_set(err, "--env: empty environment (\"kernel\" or a command)");
    rl_env *e = calloc(1, sizeof *e);
    if (!e || !(e->spec = strdup(spec))) {
        free(e);
        return rl_err_oom(err, "environment", 0);
    }
    rl_kreward_opts ko = {.keep_upto = -1};
    int rc = !strcmp(spec, "kernel") ? rl_env_kernel_create(&e->self, &e->ops, o ? &o->kernel : &ko, err)
                                     : rl_env_proc_create(&e->self, &e->ops, spec, o ? o->timeout_s : 60, err);
    if (rc) {
        free(e->spec);
        free(e);
        return -1;
    }
    *out = e;
    return 0;
}

void rl_env_free(rl_env *e)
{
    if (!e) return;
    if (e->ops) e->ops->free(e->self);
    free(e->spec);
    free(e);
}

const char *rl_env_spec(const rl_env *e) { return e->spec; }

int rl_env_begin(rl_env *e, int64_t step, int n, rl_err *err) { return e->ops->begin(e->self, step, n, err); }

int rl_env_step(rl_env *e, rl_env_turn *turns, int n, rl_err *err) { return e->ops->step(e->self, turns, n, err); }
