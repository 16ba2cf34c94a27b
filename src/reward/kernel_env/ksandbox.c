/* ksandbox.c — see ksandbox.h. Landlock is used through its system calls (glibc has no
 * wrappers; the structures are declared here so that older kernel headers build too), seccomp
 * through libseccomp, whose program is exported to memory in the parent and loaded in the child
 * with one prctl. */
#include "reward/kernel_env/ksandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_THREAD
#define CLONE_THREAD 0x00010000
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* Landlock's ABI (linux/landlock.h), declared here for older headers. */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_ABI1 ((1ULL << 13) - 1) /* execute .. make_sym */
#define LL_FS_REFER (1ULL << 13)      /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)   /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)  /* ABI 5 */
#define LL_FILE_RIGHTS (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
#define LL_NET_BIND_TCP (1ULL << 0)   /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
    uint64_t handled_access_fs, handled_access_net, scoped;
};
struct ll_path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

enum { RULE_READ, RULE_WRITE };

struct rl_ksandbox {
    rl_ksandbox_spec spec;
    int abi;
    int n_rules, cap_rules;
    char **paths;
    int *kinds;
    struct sock_fprog prog;
};

int rl_ksandbox_landlock_abi(void)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    return abi > 0 ? (int)abi : 0;
}

void rl_ksandbox_describe(char *out, size_t size)
{
    int abi = rl_ksandbox_landlock_abi();
    if (abi) snprintf(out, size, "landlock abi %d, seccomp, rlimits", abi);
    else snprintf(out, size, "seccomp, rlimits (no landlock in this kernel: files and signals not confined)");
}

static int add_rule(rl_ksandbox *sb, const char *path, int kind)
{
    if (!path || !*path) return 0;
    if (sb->n_rules == sb->cap_rules) {
        int cap = sb->cap_rules ? 2 * sb->cap_rules : 64;
        char **p = realloc(sb->paths, (size_t)cap * sizeof *p);
        if (!p) return -1;
        sb->paths = p;
        int *k = realloc(sb->kinds, (size_t)cap * sizeof *k);
        if (!k) return -1;
        sb->kinds = k;
        sb->cap_rules = cap;
    }
    char real[4096];
    char *copy = strdup(realpath(path, real) ? real : path); /* the child opens it: absolute */
    if (!copy) return -1;
    sb->paths[sb->n_rules] = copy;
    sb->kinds[sb->n_rules++] = kind;
    return 0;
}

/* Read rules for everything but home: at each directory from / down to home's parent, every
 * entry except the next one on the way to home. */
static int read_all_but(rl_ksandbox *sb, const char *home)
{
    char real[4096];
    if (!home || home[0] != '/' || !realpath(home, real) || !strcmp(real, "/")) return add_rule(sb, "/", RULE_READ);
    char dir[4096] = "/";
    const char *rest = real + 1;
    while (*rest) {
        size_t n = strcspn(rest, "/");
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            if (strlen(e->d_name) == n && !strncmp(e->d_name, rest, n)) continue;
            char p[4096 + 256];
            snprintf(p, sizeof p, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", e->d_name);
            if (add_rule(sb, p, RULE_READ)) {
                closedir(d);
                return -1;
            }
        }
        if (d) closedir(d);
        size_t len = strlen(dir);
        snprintf(dir + len, sizeof dir - len, "%s%.*s", strcmp(dir, "/") ? "/" : "", (int)n, rest);
        rest += n;
        while (*rest == '/') rest++;
    }
    return 0;
}

/* The seccomp program (see the header), exported to memory. */
static int build_filter(rl_ksandbox *sb, rl_err *err)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) return rl_err_set(err, "sandbox: seccomp_init failed");
    int rc = 0;
    const uint64_t m32 = 0xffffffffu;
    /* No network: socket() only for AF_UNIX (1) and AF_NETLINK (16). Equality on the low 32
     * bits (the kernel reads an int), and >= 17 on all 64 (over-denies, never under). */
    for (int dom = 0; dom < 17 && !rc; dom++)
        if (dom != AF_UNIX && dom != AF_NETLINK)
            rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, m32, dom));
    if (!rc) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_GE, 17));
    uint64_t parent = (uint64_t)getpid(), group = (uint64_t)(uint32_t)-getpgrp();
    const uint64_t everyone = m32; /* -1 as an int */
    uint64_t targets[3] = {parent, group, everyone};
    for (int i = 0; i < 3 && !rc; i++) rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, m32, targets[i]));
    if (!rc) rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, m32, parent));
    if (!rc) rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(tkill), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, m32, parent));
    static const int killed[] = {
        SCMP_SYS(ptrace), SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev), SCMP_SYS(pidfd_open),
        SCMP_SYS(pidfd_send_signal), SCMP_SYS(pidfd_getfd), SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(pivot_root),
        SCMP_SYS(chroot), SCMP_SYS(setns), SCMP_SYS(unshare), SCMP_SYS(reboot), SCMP_SYS(kexec_load),
        SCMP_SYS(kexec_file_load), SCMP_SYS(init_module), SCMP_SYS(finit_module), SCMP_SYS(delete_module),
        SCMP_SYS(swapon), SCMP_SYS(swapoff), SCMP_SYS(bpf), SCMP_SYS(keyctl), SCMP_SYS(add_key),
        SCMP_SYS(request_key), SCMP_SYS(acct), SCMP_SYS(settimeofday), SCMP_SYS(clock_settime),
        SCMP_SYS(clock_adjtime), SCMP_SYS(adjtimex), SCMP_SYS(sethostname), SCMP_SYS(setdomainname),
        SCMP_SYS(iopl), SCMP_SYS(ioperm), SCMP_SYS(open_by_handle_at), SCMP_SYS(name_to_handle_at)};
    for (size_t i = 0; i < sizeof killed / sizeof killed[0] && !rc; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, killed[i], 0);
    /* clone3 passes its flags in memory, out of the filter's sight: ENOSYS makes libc use clone. */
    if (!rc) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    if (sb->spec.no_fork && !rc) {
        rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(fork), 0);
        if (!rc) rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(vfork), 0);
        if (!rc) rc = seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    }
    if (rc) {
        seccomp_release(ctx);
        return rl_err_set(err, "sandbox: seccomp rule: %s", strerror(-rc));
    }
    int fd = memfd_create("rlc-seccomp", MFD_CLOEXEC);
    if (fd < 0 || seccomp_export_bpf(ctx, fd) != 0) {
        if (fd >= 0) close(fd);
        seccomp_release(ctx);
        return rl_err_set(err, "sandbox: cannot export the seccomp program");
    }
    seccomp_release(ctx);
    off_t len = lseek(fd, 0, SEEK_END);
    void *buf = len > 0 ? malloc((size_t)len) : NULL;
    if (!buf || pread(fd, buf, (size_t)len, 0) != len) {
        free(buf);
        close(fd);
        return rl_err_set(err, "sandbox: cannot read the seccomp program back");
    }
    close(fd);
    sb->prog.len = (unsigned short)((size_t)len / sizeof(struct sock_filter));
    sb->prog.filter = buf;
    return 0;
}

int rl_ksandbox_prepare(const rl_ksandbox_spec *spec, rl_ksandbox **out, rl_err *err)
{
    *out = NULL;
    rl_ksandbox *sb = calloc(1, sizeof *sb);
    if (!sb) return rl_err_oom(err, "sandbox", sizeof *sb);
    sb->spec = *spec;
    sb->abi = spec->no_landlock ? 0 : rl_ksandbox_landlock_abi();
    int bad = 0;
    if (sb->abi) {
        for (int i = 0; i < RL_KSANDBOX_MAX_PATHS && spec->write_dirs[i]; i++) bad |= add_rule(sb, spec->write_dirs[i], RULE_WRITE);
        for (int i = 0; i < RL_KSANDBOX_MAX_PATHS && spec->read_paths[i]; i++) bad |= add_rule(sb, spec->read_paths[i], RULE_READ);
        if (spec->write_all) bad |= add_rule(sb, "/", RULE_WRITE);
        bad |= read_all_but(sb, spec->home ? spec->home : getenv("HOME"));
        static const char *const dev_rw[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/shm"};
        for (size_t i = 0; i < sizeof dev_rw / sizeof dev_rw[0]; i++) bad |= add_rule(sb, dev_rw[i], RULE_WRITE);
        DIR *d = opendir("/dev");
        for (struct dirent *e; d && (e = readdir(d)) != NULL;)
            if (!strncmp(e->d_name, "nvidia", 6)) {
                char p[300];
                snprintf(p, sizeof p, "/dev/%s", e->d_name);
                bad |= add_rule(sb, p, RULE_WRITE);
            }
        if (d) closedir(d);
    }
    if (bad) {
        rl_ksandbox_free(sb);
        return rl_err_oom(err, "sandbox rules", 0);
    }
    if (build_filter(sb, err)) {
        rl_ksandbox_free(sb);
        return -1;
    }
    *out = sb;
    return 0;
}

void rl_ksandbox_free(rl_ksandbox *sb)
{
    if (!sb) return;
    for (int i = 0; i < sb->n_rules; i++) free(sb->paths[i]);
    free(sb->paths);
    free(sb->kinds);
    free(sb->prog.filter);
    free(sb);
}

static void limit(int resource, rlim_t value)
{
    struct rlimit rl = {value, value};
    setrlimit(resource, &rl);
}

static uint64_t fs_rights(int abi)
{
    uint64_t r = LL_FS_ABI1;
    if (abi >= 2) r |= LL_FS_REFER;
    if (abi >= 3) r |= LL_FS_TRUNCATE;
    if (abi >= 5) r |= LL_FS_IOCTL_DEV;
    return r;
}

static int enter_landlock(const rl_ksandbox *sb)
{
    uint64_t all = fs_rights(sb->abi);
    if (sb->spec.no_ioctl_rule) all &= ~LL_FS_IOCTL_DEV;
    struct ll_ruleset_attr attr = {all, 0, 0};
    size_t size = sizeof attr.handled_access_fs;
    if (sb->abi >= 4) {
        attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
        size = 2 * sizeof(uint64_t);
    }
    if (sb->abi >= 6 && !sb->spec.no_scope) {
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
        size = sizeof attr;
    }
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (rs < 0) return -1;
    /* Reading includes ioctl on device files (the CUDA driver talks to /dev/nvidia* by ioctl). */
    uint64_t read = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR | (all & LL_FS_IOCTL_DEV);
    for (int i = 0; i < sb->n_rules; i++) {
        int fd = open(sb->paths[i], O_PATH | O_CLOEXEC);
        if (fd < 0) continue; /* gone or unreachable: nothing to allow */
        struct stat st;
        uint64_t want = sb->kinds[i] == RULE_WRITE ? all : read;
        if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) want &= LL_FILE_RIGHTS;
        struct ll_path_beneath pb = {want & all, fd};
        syscall(SYS_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &pb, 0);
        close(fd);
    }
    int rc = (int)syscall(SYS_landlock_restrict_self, rs, 0);
    close(rs);
    return rc;
}

int rl_ksandbox_enter(const rl_ksandbox *sb, const char **why)
{
    const rl_ksandbox_spec *s = &sb->spec;
    limit(RLIMIT_CORE, 0);
    if (s->cpu_s > 0) limit(RLIMIT_CPU, (rlim_t)(s->cpu_s + 1));
    if (s->data_bytes) limit(RLIMIT_DATA, (rlim_t)s->data_bytes);
    if (s->fsize_bytes) limit(RLIMIT_FSIZE, (rlim_t)s->fsize_bytes);
    if (s->nproc > 0) limit(RLIMIT_NPROC, (rlim_t)s->nproc);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return *why = "sandbox: PR_SET_NO_NEW_PRIVS failed", -1;
    if (sb->abi && enter_landlock(sb) != 0) return *why = "sandbox: landlock failed", -1;
    if (!s->no_seccomp && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &sb->prog, 0, 0) != 0) return *why = "sandbox: seccomp failed", -1;
    return 0;
}
