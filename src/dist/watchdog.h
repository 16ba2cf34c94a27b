/* watchdog.h — a rank that dies must not leave the others hanging. Each rank runs one thread
 * that watches the control connections of the rendezvous (a star around rank 0). A rank that
 * exits closes its sockets (the kernel does it even on SIGKILL; keep-alive probes notice a
 * machine that vanished), so:
 *   - rank 0 sees a connection close without the rank's "bye" first: it tells every other
 *     rank which rank was lost, and stops itself;
 *   - any other rank hears "rank K was lost" from rank 0, or sees rank 0's connection close:
 *     it stops.
 * Stopping: print one line to stderr naming the lost rank, call on_lost (the communicator's
 * abort, so blocked collectives return an error and the run unwinds through its normal error
 * path), and if the process is still alive grace_s seconds later, _exit(1): a rank stuck in
 * device work that will never finish must not hang either.
 *
 * A clean end is a barrier (every rank has finished its collectives), then
 * rl_watchdog_finish: the others say bye and close, rank 0 waits for every bye. */
#ifndef RL_DIST_WATCHDOG_H
#define RL_DIST_WATCHDOG_H

#include "core/error.h"

typedef struct rl_watchdog rl_watchdog;

/* Takes over the control sockets (same shape as rl_rdzv.ctrl: world entries on rank 0, one on
 * the others; the array is copied, the sockets belong to the watchdog) and starts the thread. */
int rl_watchdog_start(rl_watchdog **out, int rank, int world, const int *ctrl, double grace_s,
                      void (*on_lost)(void *user), void *user, rl_err *err);
/* The clean end described above (within a few seconds). */
int rl_watchdog_finish(rl_watchdog *w, rl_err *err);
/* Stops without a bye (this rank failed): the others see the connection close and stop. */
void rl_watchdog_stop(rl_watchdog *w);
/* The rank that was lost, or -1. */
int rl_watchdog_lost(const rl_watchdog *w);

#endif
