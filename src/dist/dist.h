/* dist.h — one rank of a data-parallel run: who it is (from the launcher's environment or
 * given), joining the others (rendezvous.h: address, configuration check, NCCL id), its
 * communicator (comm.h: CPU sockets, or NCCL on CUDA) and its watchdog (watchdog.h).
 *
 * One process per rank; on CUDA, rank's device = its local rank. How ranks are started:
 *   - `rlc <command> --gpus N` starts N local ranks itself (launch.h);
 *   - torchrun and launchers that set RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 *     MASTER_ADDR, MASTER_PORT (Slurm and Kubernetes job specs export the same names);
 *   - `mpirun -np N` (Open MPI: OMPI_COMM_WORLD_*; MPICH/Intel MPI: PMI_RANK, PMI_SIZE,
 *     MPI_LOCALRANKID, MPI_LOCALNRANKS); rlc does not link MPI: the ranks meet through
 *     MASTER_ADDR:MASTER_PORT (default 127.0.0.1 when every rank is on this machine, port 29500).
 * RLC_DIST_TIMEOUT (seconds, default 300) bounds the rendezvous. */
#ifndef RL_DIST_DIST_H
#define RL_DIST_DIST_H

#include "backend/ctx.h"
#include "core/error.h"
#include "dist/comm.h"
#include "dist/watchdog.h"

typedef struct rl_dist_config {
    int rank, world;
    int local_rank, local_world; /* on this machine */
    char master_addr[256];
    int master_port;
    double timeout_s;            /* the rendezvous */
    char launcher[64];           /* who started the ranks, for messages */
} rl_dist_config;

#define RL_DIST_DEFAULT_PORT 29500
#define RL_DIST_DEFAULT_TIMEOUT 300.0

/* 1 when this process is a rank of a launched run (cfg filled), 0 when it is not (nothing in
 * the environment), -1 when the environment is malformed (err names the variable). */
int rl_dist_from_env(rl_dist_config *cfg, rl_err *err);

typedef struct rl_dist {
    rl_dist_config cfg;
    rl_comm *volatile comm; /* volatile: the watchdog thread reads it to abort */
    rl_watchdog *watchdog;  /* NULL for a single rank */
} rl_dist;

/* Joins the run: rendezvous with config_text (one "name=value" per line; the backend is added)
 * and the communicator for ctx (created on the device of the rank). A single rank (world 1)
 * meets nobody but gets a communicator all the same, so the data-parallel code runs unchanged. */
int rl_dist_init(rl_dist *d, const rl_dist_config *cfg, rl_ctx *ctx, const char *config_text, rl_err *err);
/* ok: the clean end (barrier, goodbyes). !ok: this rank failed; the others see it leave and
 * stop. Frees everything either way. */
int rl_dist_finish(rl_dist *d, int ok, rl_err *err);

#endif
