/* dist.c — see dist.h. */
#include "dist/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/rendezvous.h"

#define WATCHDOG_GRACE 5.0 /* seconds a rank may take to unwind after another was lost */

static void abort_comm(void *comm) { rl_comm_abort(comm); }

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
        return cuda ? rl_comm_nccl_create(&d->comm, ctx, 0, 1, id, err) : rl_comm_cpu_create(&d->comm, ctx, 0, 1, &none, err);
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
    if (cuda) {
        rc = rl_comm_nccl_create(&d->comm, ctx, cfg->rank, cfg->world, id, err);
    } else {
        rc = rl_comm_cpu_create(&d->comm, ctx, cfg->rank, cfg->world, z.data, err);
        for (int r = 0; r < (cfg->rank == 0 ? cfg->world : 1); r++) z.data[r] = -1; /* the communicator's now */
    }
    if (rc == 0) {
        rc = rl_watchdog_start(&d->watchdog, cfg->rank, cfg->world, z.ctrl, WATCHDOG_GRACE, abort_comm, d->comm, err);
        for (int r = 0; r < (cfg->rank == 0 ? cfg->world : 1); r++) z.ctrl[r] = -1;
    }
    rl_rdzv_close(&z);
    if (rc != 0) {
        rl_comm_free(d->comm);
        d->comm = NULL;
    }
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
