/* file.c — see file.h. */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rl_file_read_all(const char *path, char **data, size_t *len, rl_err *err)
{
    *data = NULL;
    *len = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return rl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(fp);
        return rl_err_oom(err, path, cap);
    }
    for (;;) {
        if (n == cap) {
            char *grown = realloc(buf, cap * 2 + 1);
            if (!grown) {
                free(buf);
                fclose(fp);
                return rl_err_oom(err, path, cap * 2);
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0) break;
    }
    int failed = ferror(fp), saved = errno;
    fclose(fp);
    if (failed) {
        free(buf);
        return rl_err_set(err, "%s: read error: %s", path, strerror(saved));
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

int rl_atomic_open(rl_atomic_file *f, const char *path, rl_err *err)
{
    if (strlen(path) >= sizeof f->final_path) return rl_err_set(err, "%s: path too long", path);
    snprintf(f->final_path, sizeof f->final_path, "%s", path);
    snprintf(f->tmp_path, sizeof f->tmp_path, "%s.tmp.%ld", path, (long)getpid());
    f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0) return rl_err_set(err, "%s: cannot create: %s", f->tmp_path, strerror(errno));
    return 0;
}

int rl_atomic_write(rl_atomic_file *f, const void *data, size_t len, rl_err *err)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(f->fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return rl_err_set(err, "%s: write failed: %s", f->final_path, strerror(errno));
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int rl_atomic_commit(rl_atomic_file *f, rl_err *err)
{
    if (fsync(f->fd) != 0) {
        int e = errno;
        rl_atomic_abort(f);
        return rl_err_set(err, "%s: fsync failed: %s", f->final_path, strerror(e));
    }
    if (close(f->fd) != 0) {
        int e = errno;
        f->fd = -1;
        rl_atomic_abort(f);
        return rl_err_set(err, "%s: close failed: %s", f->final_path, strerror(e));
    }
    f->fd = -1;
    if (rename(f->tmp_path, f->final_path) != 0) {
        int e = errno;
        unlink(f->tmp_path);
        return rl_err_set(err, "%s: rename failed: %s", f->final_path, strerror(e));
    }
    return 0;
}

void rl_atomic_abort(rl_atomic_file *f)
{
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    unlink(f->tmp_path);
}

int rl_file_write_atomic(const char *path, const void *data, size_t len, rl_err *err)
{
    rl_atomic_file f;
    if (rl_atomic_open(&f, path, err)) return -1;
    if (rl_atomic_write(&f, data, len, err)) {
        rl_atomic_abort(&f);
        return -1;
    }
    return rl_atomic_commit(&f, err);
}

int rl_mkdir_p(const char *path, rl_err *err)
{
    char buf[4096];
    if (strlen(path) >= sizeof buf) return rl_err_set(err, "%s: path too long", path);
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return rl_err_set(err, "%s: cannot create directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return rl_err_set(err, "%s: cannot create directory: %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return rl_err_set(err, "%s: exists and is not a directory", buf);
    return 0;
}

int rl_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int rl_path_join(char *out, size_t size, const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    int n = snprintf(out, size, "%s%s%s", dir, (dl && dir[dl - 1] == '/') ? "" : "/", name);
    return (n < 0 || (size_t)n >= size) ? -1 : 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

int rl_remove_tree(const char *path, rl_err *err)
{
    if (!rl_file_exists(path)) return 0;
    if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        return rl_err_set(err, "%s: cannot remove: %s", path, strerror(errno));
    return 0;
}
