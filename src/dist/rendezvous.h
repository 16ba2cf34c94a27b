/* rendezvous.h — how the ranks of a run find each other: rank 0 listens on MASTER_PORT, every
 * other rank connects to MASTER_ADDR:MASTER_PORT twice (a control connection for liveness, a
 * data connection for the CPU communicator) and introduces itself with its rank, the world
 * size and its run configuration. Rank 0 checks that the world sizes agree, every rank
 * 1 .. world-1 came exactly once and every configuration hashes the same, then sends every rank
 * the blob it was given (the NCCL unique id) — or the reason it refused.
 *
 * The configuration is text (one "name=value" per line, in the same order on every rank); a
 * mismatch is reported with the first line that differs, so the message names the option.
 * The wire format is native-endian: all machines of a run share one architecture. */
#ifndef RL_DIST_RENDEZVOUS_H
#define RL_DIST_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct rl_rdzv {
    int rank, world;
    int *ctrl; /* rank 0: [world], ctrl[r] to rank r (ctrl[0] = -1); others: ctrl[0] to rank 0 */
    int *data; /* the same shape */
    double timeout_s;
} rl_rdzv;

/* Joins the run: the whole exchange within timeout_s. blob (blob_bytes) is sent by rank 0 and
 * filled on the others. world must be >= 2. */
int rl_rdzv_join(rl_rdzv *z, int rank, int world, const char *addr, int port, double timeout_s,
                 const char *config_text, void *blob, size_t blob_bytes, rl_err *err);
/* Closes the sockets still owned (the caller may take them over and set them to -1 first). */
void rl_rdzv_close(rl_rdzv *z);

/* FNV-1a 64 of text: the configuration hash exchanged at the start. */
uint64_t rl_rdzv_hash(const char *text);

#endif
