/* run_rlc.h — runs the built `rlc` program (in $BUILD, default build/) from a CLI test.
 * Tests run from the repository root. */
#ifndef RL_TESTS_RUN_RLC_H
#define RL_TESTS_RUN_RLC_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/file.h"
#include "test_util.h"

/* Runs `rlc <args>` with input on stdin. Returns its stdout (malloc'd) and sets *status to the
 * exit status (-1 if it did not exit) and *err_text to its stderr (malloc'd). */
static inline char *tu_run_rlc(const char *args, const char *input, int *status, char **err_text)
{
    char in_path[64], err_path[64], cmd[4096];
    snprintf(in_path, sizeof in_path, "/tmp/rlc-test-run-%d.in", (int)getpid());
    snprintf(err_path, sizeof err_path, "/tmp/rlc-test-run-%d.err", (int)getpid());
    FILE *f = fopen(in_path, "w");
    cr_assert(f, "cannot write %s", in_path);
    fputs(input, f);
    fclose(f);
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    snprintf(cmd, sizeof cmd, "%s/rlc %s < %s 2> %s", build, args, in_path, err_path);
    FILE *p = popen(cmd, "r");
    cr_assert(p, "cannot run %s", cmd);
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    while ((n += fread(out + n, 1, cap - 1 - n, p)) == cap - 1) out = realloc(out, cap *= 2);
    out[n] = '\0';
    int rc = pclose(p);
    *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    size_t len;
    rl_err err = {{0}};
    cr_assert_eq(rl_file_read_all(err_path, err_text, &len, &err), 0, "%s", err.msg);
    unlink(in_path);
    unlink(err_path);
    return out;
}

#endif
