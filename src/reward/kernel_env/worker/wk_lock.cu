/* wk_lock.cu — the worker's GPU lock (wk.h: wk_gpu_lock_open, wk_gpu_lock, wk_gpu_lock_held). */
#include <errno.h>
#include <fcntl.h>
#include <string>
#include <sys/file.h>
#include <unistd.h>

#include "wk.h"

/* The GPU lock (--gpu-lock FILE, one file per GPU, shared by every worker on it): correctness
 * work holds it shared, timing exclusive, so several candidates check their results on one
 * GPU at once while a timed run never has company. Without the flag the worker assumes it has
 * the GPU to itself (the parent runs one worker per GPU). */
static int g_lock_fd = -1, g_gate_fd = -1, g_gate_held = 0;

static void flock_retry(int fd, int op)
{
    while (fd >= 0 && flock(fd, op) != 0 && errno == EINTR) {
    }
}

/* flock lets new shared holders in while an exclusive request waits, so with workers starting
 * all the time a timed run could wait for a moment with none in their correctness phase.
 * FILE.gate is the turnstile: a worker enters the shared lock through it (briefly, shared), and
 * one that wants to time holds it exclusively from before it asks for the exclusive lock until
 * it is back to shared: newcomers wait at the gate, the workers inside finish and the timed
 * run starts. The shared lock is dropped before queueing at the gate (a worker that waits for
 * the gate while holding it shared would deadlock with the one timing). */
void wk_gpu_lock(int op)
{
    if (g_lock_fd < 0) return;
    if (op == LOCK_EX) {
        flock_retry(g_lock_fd, LOCK_UN);
        flock_retry(g_gate_fd, LOCK_EX);
        flock_retry(g_lock_fd, LOCK_EX);
        g_gate_held = 1;
    } else if (g_gate_held) { /* back from timing */
        flock_retry(g_lock_fd, LOCK_SH);
        flock_retry(g_gate_fd, LOCK_UN);
        g_gate_held = 0;
    } else {
        flock_retry(g_gate_fd, LOCK_SH);
        flock_retry(g_lock_fd, LOCK_SH);
        flock_retry(g_gate_fd, LOCK_UN);
    }
}

int wk_gpu_lock_open(const char *path)
{
    g_lock_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (g_lock_fd < 0) return -1;
    /* A high descriptor: the kernel closes a dying process's files in order, so the lock is
     * dropped only after the GPU context's files are closed (teardown done). */
    int high = fcntl(g_lock_fd, F_DUPFD_CLOEXEC, 900);
    if (high >= 0) close(g_lock_fd), g_lock_fd = high;
    std::string gate = std::string(path) + ".gate"; /* rlc creates it; without it: no turnstile */
    g_gate_fd = open(gate.c_str(), O_RDONLY | O_CLOEXEC);
    return 0;
}

int wk_gpu_lock_held(void) { return g_lock_fd >= 0; }
