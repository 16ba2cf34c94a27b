/* launch.h — `--gpus N`: rlc as its own launcher of N local ranks.
 *
 * The process that parsed `--gpus N` becomes a supervisor: it starts N copies of itself
 * (/proc/self/exe with the same arguments) with the torchrun variables set (RANK = LOCAL_RANK
 * = r, WORLD_SIZE = LOCAL_WORLD_SIZE = N, MASTER_ADDR = 127.0.0.1, MASTER_PORT = a free port,
 * RLC_DIST_LAUNCHER), so each copy finds itself a rank (dist.h) and does the work; the
 * supervisor loads nothing. Each rank runs in its own process group (a Ctrl-C at the terminal
 * reaches the supervisor alone, which forwards it once to every rank, so they stop together
 * after the current step and save) and receives SIGTERM if the supervisor dies.
 *
 * When a rank fails (an exit status other than 0 and 130, or a signal) the supervisor says
 * which; the others, whose watchdogs stop them within seconds, get 5 s to do so, then SIGTERM
 * and, 10 s later, SIGKILL. */
#ifndef RL_DIST_LAUNCH_H
#define RL_DIST_LAUNCH_H

#include "core/error.h"

/* Runs `rlc args...` (args: NULL-terminated, from the command's name on) as n local ranks and
 * waits for them. Returns the command's exit status: 0 when every rank succeeded, 130 when they
 * all stopped on Ctrl-C, else the status of the first rank killed by a signal (128 + its
 * number), or of the first that failed; -1 when nothing could be started (err filled). */
int rl_dist_spawn_local(int n, char **args, rl_err *err);

#endif
