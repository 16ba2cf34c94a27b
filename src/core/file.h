/* file.h — whole-file reads, atomic writes, directories.
 *
 * Writes go to "<path>.tmp.<pid>", are fsync'd, then renamed over <path>, so a crash never
 * leaves a half-written file under the final name (checkpoints rely on this). */
#ifndef RL_CORE_FILE_H
#define RL_CORE_FILE_H

#include <stddef.h>

#include "core/error.h"

/* Reads all of path into a malloc'd buffer with a NUL byte after the end (*len excludes it). */
int rl_file_read_all(const char *path, char **data, size_t *len, rl_err *err);

/* Writes len bytes atomically (temporary file + fsync + rename). */
int rl_file_write_atomic(const char *path, const void *data, size_t len, rl_err *err);

/* Atomic write in pieces: open a temporary beside path, write, then commit (fsync + rename)
 * or abort (unlink). For large files written from several buffers. */
typedef struct rl_atomic_file {
    int fd;
    char final_path[4096];
    char tmp_path[4200];
} rl_atomic_file;

int rl_atomic_open(rl_atomic_file *f, const char *path, rl_err *err);
int rl_atomic_write(rl_atomic_file *f, const void *data, size_t len, rl_err *err);
int rl_atomic_commit(rl_atomic_file *f, rl_err *err);
void rl_atomic_abort(rl_atomic_file *f);

/* mkdir -p. */
int rl_mkdir_p(const char *path, rl_err *err);
int rl_file_exists(const char *path);
/* rm -rf path (no error when it does not exist). */
int rl_remove_tree(const char *path, rl_err *err);
/* Joins dir and name with one '/' into out (size bytes); -1 if it does not fit. */
int rl_path_join(char *out, size_t size, const char *dir, const char *name);

#endif
