"""kb_gpulock.py — the GPU lock of kernelbench_worker.py (the protocol of worker.cu's gpu_lock).

--gpu-lock FILE (one per GPU, shared by every worker on it): correctness work holds it shared,
timing exclusive, so several candidates are checked on one GPU at once while a timed run never
has company. flock lets new shared holders in while an exclusive request waits, so FILE.gate
(created by rlc) is a turnstile: a worker enters the shared lock through it, and one that wants
to time holds it exclusively from before it asks for the exclusive lock until it is back to
shared, after dropping its shared hold (waiting at the gate while holding it would deadlock).
Without the flag the worker has the GPU to itself."""
import fcntl
import os
import time


class GpuLock:
    def __init__(self, path):
        self.fd = self.gate = None
        self.held = False
        self.wait = 0.0  # seconds spent waiting for the lock and the gate (the result's phases)
        if path:
            fd = os.open(path, os.O_RDONLY)
            # A high descriptor: a dying process's files close in order, so the lock goes only
            # after the GPU context's files are closed.
            self.fd = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 900)
            os.close(fd)
            if os.path.exists(path + ".gate"):
                self.gate = os.open(path + ".gate", os.O_RDONLY | os.O_CLOEXEC)

    def _flock(self, fd, op):
        if fd is not None:
            t = time.perf_counter()
            fcntl.flock(fd, op)
            self.wait += time.perf_counter() - t

    def shared(self):
        if self.held:  # back from timing
            self._flock(self.fd, fcntl.LOCK_SH)
            self._flock(self.gate, fcntl.LOCK_UN)
            self.held = False
        else:
            self._flock(self.gate, fcntl.LOCK_SH)
            self._flock(self.fd, fcntl.LOCK_SH)
            self._flock(self.gate, fcntl.LOCK_UN)

    def exclusive(self, sync):
        if self.fd is not None:
            sync()
            self._flock(self.fd, fcntl.LOCK_UN)
            self._flock(self.gate, fcntl.LOCK_EX)
            self._flock(self.fd, fcntl.LOCK_EX)
            self.held = self.gate is not None
