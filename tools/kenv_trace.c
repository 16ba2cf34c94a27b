/* kenv_trace.c — a preloaded tracer for `rlc kernel-eval --sandbox-diag --sandbox-trace SO`:
 * logs every call a program makes through libc to the functions a sandbox can refuse (file
 * opens, device ioctls, memory maps, sockets, dlopen) that fails with EACCES, EPERM, ENOMEM,
 * ENOSYS, EROFS or EXDEV (dlopen: any failure) as one "rlc-trace: ..." line on stderr,
 * e.g. "rlc-trace: openat(/dev/nvidia-uvm, 0x80002) = -1 Permission denied". For machines with
 * no strace (the device machines); calls made from inside libc (dlopen's own opens) are
 * reported as dlopen's error. At most 200 lines a process.
 *
 *   cc -O2 -shared -fPIC -o /tmp/kenv_trace.so tools/kenv_trace.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static int lines;

/* Only what a sandbox causes: a missing file (ENOENT) is what every program meets daily. */
static int refused(int e)
{
    return e == EACCES || e == EPERM || e == ENOMEM || e == ENOSYS || e == EROFS || e == EXDEV;
}

static void say(const char *fmt, ...)
{
    if (!refused(errno) || __atomic_fetch_add(&lines, 1, __ATOMIC_RELAXED) >= 200) return;
    int saved = errno;
    char buf[600];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t w = write(2, buf, (size_t)n);
    (void)w;
    errno = saved;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

static mode_t mode_of(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

#define OPEN_LIKE(name)                                                                          \
    int name(const char *path, int flags, ...)                                                   \
    {                                                                                            \
        va_list ap;                                                                              \
        va_start(ap, flags);                                                                     \
        mode_t m = mode_of(flags, ap);                                                           \
        va_end(ap);                                                                              \
        int fd = REAL(name)(path, flags, m);                                                     \
        if (fd < 0) say("rlc-trace: " #name "(%s, 0x%x) = -1 %s", path, flags, strerror(errno)); \
        return fd;                                                                               \
    }
OPEN_LIKE(open)
OPEN_LIKE(open64)

#define OPENAT_LIKE(name)                                                                          \
    int name(int dirfd, const char *path, int flags, ...)                                          \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode_t m = mode_of(flags, ap);                                                             \
        va_end(ap);                                                                                \
        int fd = REAL(name)(dirfd, path, flags, m);                                                \
        if (fd < 0) say("rlc-trace: " #name "(%s, 0x%x) = -1 %s", path, flags, strerror(errno));   \
        return fd;                                                                                 \
    }
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

int __open_2(const char *path, int flags);
int __open_2(const char *path, int flags)
{
    int fd = REAL(__open_2)(path, flags);
    if (fd < 0) say("rlc-trace: open(%s, 0x%x) = -1 %s", path, flags, strerror(errno));
    return fd;
}
int __open64_2(const char *path, int flags);
int __open64_2(const char *path, int flags)
{
    int fd = REAL(__open64_2)(path, flags);
    if (fd < 0) say("rlc-trace: open64(%s, 0x%x) = -1 %s", path, flags, strerror(errno));
    return fd;
}

FILE *fopen(const char *path, const char *mode)
{
    FILE *f = REAL(fopen)(path, mode);
    if (!f) say("rlc-trace: fopen(%s, %s) = NULL %s", path, mode, strerror(errno));
    return f;
}
FILE *fopen64(const char *path, const char *mode)
{
    FILE *f = REAL(fopen64)(path, mode);
    if (!f) say("rlc-trace: fopen64(%s, %s) = NULL %s", path, mode, strerror(errno));
    return f;
}

int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    int rc = REAL(ioctl)(fd, req, arg);
    if (rc < 0) {
        char link[64], path[256] = "?";
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        int saved = errno;
        ssize_t n = readlink(link, path, sizeof path - 1);
        if (n > 0) path[n] = 0;
        errno = saved;
        say("rlc-trace: ioctl(%s, 0x%lx) = -1 %s", path, req, strerror(errno));
    }
    return rc;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p = REAL(mmap)(addr, len, prot, flags, fd, off);
    if (p == MAP_FAILED) say("rlc-trace: mmap(%zu bytes, prot 0x%x, flags 0x%x, fd %d) = -1 %s", len, prot, flags, fd, strerror(errno));
    return p;
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    void *p = REAL(mmap64)(addr, len, prot, flags, fd, off);
    if (p == MAP_FAILED) say("rlc-trace: mmap64(%zu bytes, prot 0x%x, flags 0x%x, fd %d) = -1 %s", len, prot, flags, fd, strerror(errno));
    return p;
}
int mprotect(void *addr, size_t len, int prot)
{
    int rc = REAL(mprotect)(addr, len, prot);
    if (rc < 0) say("rlc-trace: mprotect(%zu bytes, prot 0x%x) = -1 %s", len, prot, strerror(errno));
    return rc;
}

int socket(int domain, int type, int proto)
{
    int fd = REAL(socket)(domain, type, proto);
    if (fd < 0) say("rlc-trace: socket(%d, %d, %d) = -1 %s", domain, type, proto, strerror(errno));
    return fd;
}
int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    int rc = REAL(connect)(fd, sa, len);
    if (rc < 0) {
        const char *p = sa && sa->sa_family == AF_UNIX && len > 2 ? sa->sa_data : "";
        say("rlc-trace: connect(family %d, %s%s) = -1 %s", sa ? sa->sa_family : -1, p[0] ? "" : "@", p[0] ? p : p + 1,
            strerror(errno));
    }
    return rc;
}

void *dlopen(const char *file, int mode)
{
    void *h = REAL(dlopen)(file, mode);
    if (!h) {
        const char *e = dlerror();
        errno = EACCES; /* always said: dlopen's own opens are out of the tracer's sight */
        say("rlc-trace: dlopen(%s) = NULL %s", file ? file : "(self)", e ? e : "");
    }
    return h;
}
