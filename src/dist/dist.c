/* dist.c — see dist.h. */
#include "dist/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/rendezvous.h"

#define WATCHDOG_GRACE 5.0 /* seconds a rank may take to unwind after another was lost */

/* The watchdog's reaction to a lost rank: abort the communicator (when there is one yet). */
static void abort_comm(void *dist) { rl_comm_abort(((rl_dist *)dist)->comm); }

int rl_dist_init(rl_dist *d, const rl_dist_config *cfg, rl_ctx *ctx, const char *config_text, rl_err *err)
{
    memset(d, 0, sizeof *d);
    d->cfg = *cfg;
    int cuda = ctx->kind == RL_BACKEND_CUDA;
    unsigned char id[RL_COMM_NCCL_ID_BYTES] = {0};
    if (cuda && (cfg->rank == 0 ? rl_comm_nccl_id(id, err) : rl_comm_nccl_load(err)))
        return rl_err_prefix(err, "rank %d: ", cfg->rank);
    if (cfg->world == 1) {
        int none = -1;
        rl_comm *comm = NULL;
        int rc = cuda ? rl_comm_nccl_create(&comm, ctx, 0, 1, id, err) : rl_comm_cpu_create(&comm, ctx, 0, 1, &none, err);
        d->comm = comm;
        return rc;
    }
    size_t len = strlen(config_text);
    char *text = malloc(len + 32);
    if (!text) return rl_err_oom(err, "run configuration", len + 32);
    snprintf(text, len + 32, "%sbackend=%s\n", config_text, rl_backend_name(ctx));
    rl_rdzv z;
    int rc = rl_rdzv_join(&z, cfg->rank, cfg->world, cfg->master_addr, cfg->master_port, cfg->timeout_s, text, id,
                          cuda ? sizeof id : 0, err);
    free(text);
    if (rc != 0) return -1;
    /* the watchdog first: a rank lost while NCCL sets up must not hang the others either */
    int n = cfg->rank == 0 ? cfg->world : 1;
    rc = rl_watchdog_start(&d->watchdog, cfg->rank, cfg->world, z.ctrl, WATCHDOG_GRACE, abort_comm, d, err);
    for (int r = 0; r < n; r++) z.ctrl[r] = -1; /* the watchdog's now */
    rl_comm *comm = NULL;
    if (rc == 0 && cuda) {
        rc = rl_comm_nccl_create(&comm, ctx, cfg->rank, cfg->world, id, err);
    } else if (rc == 0) {
        rc = rl_comm_cpu_create(&comm, ctx, cfg->rank, cfg->world, z.data, err);
        for (int r = 0; r < n; r++) z.data[r] = -1; /* the communicator's now */
    }
    rl_rdzv_close(&z);
    d->comm = comm;
    if (rc != 0) rl_dist_finish(d, 0, err);
    return rc;
}

int rl_dist_finish(rl_dist *d, int ok, rl_err *err)
{
    int rc = 0;
    if (ok && d->comm) {
        rc = rl_comm_barrier(d->comm, err);
        if (rc == 0 && d->watchdog) rc = rl_watchdog_finish(d->watchdog, err);
    }
    rl_watchdog_stop(d->watchdog);
    rl_comm_free(d->comm);
    d->watchdog = NULL;
    d->comm = NULL;
    return rc;
}
