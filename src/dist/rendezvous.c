/* rendezvous.c — see rendezvous.h. Rank 0 accepts connections in whatever order they come; a
 * connection that does not start with the protocol's magic (a port scanner, another program)
 * is closed and ignored rather than failing the run. */
#include "dist/rendezvous.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timer.h"
#include "dist/net.h"

#define MAGIC "RLC1"
#define MAX_TEXT ((uint32_t)1 << 20)
#define HELLO_WAIT 10.0 /* seconds a fresh connection has to introduce itself */
#define REPLY_GRACE 5.0 /* seconds beyond the timeout a rank waits for rank 0's answer */

enum { CONN_CTRL = 0, CONN_DATA = 1 };

typedef struct hello {
    char magic[4];
    uint32_t kind, rank, world;
    uint64_t hash;
    uint32_t text_len;
} hello;

typedef struct reply {
    uint32_t status; /* 0: blob follows; 1: a refusal message follows */
    uint32_t len;
} reply;

uint64_t rl_rdzv_hash(const char *text)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) h = (h ^ *p) * 1099511628211ull;
    return h;
}

static double left(double deadline)
{
    double l = deadline - rl_time_now();
    return l > 0 ? l : 0;
}

void rl_rdzv_close(rl_rdzv *z)
{
    int n = z->rank == 0 ? z->world : 1;
    for (int r = 0; r < n; r++) {
        if (z->ctrl) rl_net_close(z->ctrl[r]);
        if (z->data) rl_net_close(z->data[r]);
    }
    free(z->ctrl);
    free(z->data);
    z->ctrl = z->data = NULL;
}

/* The first line where a and b differ, quoted, into out. */
static void first_difference(const char *a, const char *b, char *out, size_t size, int rank)
{
    while (*a && *b) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        if (la != lb || memcmp(a, b, la) != 0) {
            snprintf(out, size, "rank 0 has '%.*s', rank %d has '%.*s'", (int)(la < 200 ? la : 200), a, rank,
                     (int)(lb < 200 ? lb : 200), b);
            return;
        }
        a += la + (a[la] == '\n');
        b += lb + (b[lb] == '\n');
    }
    snprintf(out, size, "one has settings the other lacks (rank 0: '%.100s', rank %d: '%.100s')", a, rank, b);
}

/* Rank 0's refusal (it answers on the control connection as soon as it sees a problem, and
 * stops listening) when it is there to read; 0 when none came. */
static int refusal(rl_rdzv *z, rl_err *err)
{
    struct pollfd p = {z->ctrl[0], POLLIN, 0};
    reply rp;
    rl_err e;
    if (poll(&p, 1, 0) <= 0 || rl_net_recv(z->ctrl[0], &rp, sizeof rp, 1.0, NULL, &e) != 0 || rp.status == 0) return 0;
    char msg[900];
    size_t n = rp.len < sizeof msg - 1 ? rp.len : sizeof msg - 1;
    if (rl_net_recv(z->ctrl[0], msg, n, 1.0, NULL, &e) != 0) n = 0;
    msg[n] = '\0';
    return rl_err_set(err, "rank %d: rank 0 refused the run: %s", z->rank, msg);
}

/* Connects to rank 0, in slices so that a refusal that arrives meanwhile on the control
 * connection (already open when the data connection is made) ends the wait. */
static int connect_root(rl_rdzv *z, const char *addr, int port, double deadline, int *fd, rl_err *err)
{
    rl_err e;
    for (;;) {
        double slice = z->ctrl[0] >= 0 && left(deadline) > 0.5 ? 0.5 : left(deadline);
        if (rl_net_connect(addr, port, slice, fd, &e) == 0) return 0;
        if (z->ctrl[0] >= 0 && refusal(z, err)) return -1;
        if (left(deadline) <= 0) break;
    }
    return rl_err_set(err, "rank %d: cannot reach rank 0 at MASTER_ADDR:MASTER_PORT = %s:%d within %g s (last "
                           "attempt: %s). Is rank 0 running, and is that address reachable and the port open from "
                           "this machine?",
                      z->rank, addr, port, z->timeout_s, e.msg);
}

static int join_other(rl_rdzv *z, const char *addr, int port, double deadline, const char *text, void *blob,
                      size_t blob_bytes, rl_err *err)
{
    rl_err e;
    for (int kind = CONN_CTRL; kind <= CONN_DATA; kind++) {
        int *fd = kind == CONN_CTRL ? &z->ctrl[0] : &z->data[0];
        if (connect_root(z, addr, port, deadline, fd, err)) return -1;
        hello h = {{0}, (uint32_t)kind, (uint32_t)z->rank, (uint32_t)z->world, rl_rdzv_hash(text),
                   kind == CONN_CTRL ? (uint32_t)strlen(text) : 0};
        memcpy(h.magic, MAGIC, 4);
        if (rl_net_send(*fd, &h, sizeof h, left(deadline), NULL, &e) ||
            rl_net_send(*fd, text, h.text_len, left(deadline), NULL, &e))
            return rl_err_set(err, "rank %d: rendezvous with rank 0 at %s:%d: %s", z->rank, addr, port, e.msg);
    }
    /* rank 0 may still be waiting for others until its own deadline, which began about when
     * ours did: its answer gets a few seconds more */
    deadline += REPLY_GRACE;
    reply rp;
    if (rl_net_recv(z->ctrl[0], &rp, sizeof rp, left(deadline), NULL, &e) != 0)
        return rl_err_set(err, "rank %d: no answer from rank 0 at %s:%d: %s (rank 0 may have failed: see its message)",
                          z->rank, addr, port, e.msg);
    if (rp.status != 0) {
        char msg[900];
        size_t n = rp.len < sizeof msg - 1 ? rp.len : sizeof msg - 1;
        if (rl_net_recv(z->ctrl[0], msg, n, left(deadline), NULL, &e) != 0) n = 0;
        msg[n] = '\0';
        return rl_err_set(err, "rank %d: rank 0 refused the run: %s", z->rank, msg);
    }
    if (rp.len != blob_bytes)
        return rl_err_set(err, "rank %d: rank 0 sent %u bytes of start-up data, expected %zu (different rlc builds?)",
                          z->rank, rp.len, blob_bytes);
    if (rl_net_recv(z->ctrl[0], blob, blob_bytes, left(deadline), NULL, &e) != 0)
        return rl_err_set(err, "rank %d: rendezvous with rank 0 at %s:%d: %s", z->rank, addr, port, e.msg);
    return 0;
}

/* Reads and checks one introduction on rank 0. Returns 0 when fd was stored, 1 when it was a
 * stray connection (closed), -1 when the run must be refused (message in err). */
static int take_connection(rl_rdzv *z, int fd, double deadline, const char *text, rl_err *err)
{
    hello h;
    rl_err e;
    double wait = left(deadline) < HELLO_WAIT ? left(deadline) : HELLO_WAIT;
    if (rl_net_recv(fd, &h, sizeof h, wait, NULL, &e) != 0 || memcmp(h.magic, MAGIC, 4) != 0) {
        rl_net_close(fd);
        return 1;
    }
    int rank = (int)h.rank;
    if ((int)h.world != z->world) {
        rl_net_close(fd);
        return rl_err_set(err, "rank %u says the run has %u ranks (WORLD_SIZE), rank 0 has %d", h.rank, h.world,
                          z->world);
    }
    if (rank < 1 || rank >= z->world) {
        rl_net_close(fd);
        return rl_err_set(err, "a process claims rank %u of a run with %d ranks", h.rank, z->world);
    }
    int *slot = h.kind == CONN_CTRL ? &z->ctrl[rank] : &z->data[rank];
    if (*slot >= 0) {
        rl_net_close(fd);
        return rl_err_set(err, "two processes claim rank %d (RANK must be unique)", rank);
    }
    *slot = fd;
    if (h.kind != CONN_CTRL) return 0;
    if (h.text_len > MAX_TEXT) return rl_err_set(err, "rank %d sent a %u-byte configuration", rank, h.text_len);
    char *theirs = malloc((size_t)h.text_len + 1);
    if (!theirs) return rl_err_oom(err, "rendezvous", h.text_len);
    int rc = rl_net_recv(fd, theirs, h.text_len, wait, NULL, &e);
    theirs[rc == 0 ? h.text_len : 0] = '\0';
    if (rc != 0) rc = rl_err_set(err, "rank %d: %s", rank, e.msg);
    else if (h.hash != rl_rdzv_hash(text) || strcmp(theirs, text) != 0) {
        char diff[600];
        first_difference(text, theirs, diff, sizeof diff, rank);
        rc = rl_err_set(err, "rank %d's run configuration differs from rank 0's (hash %016llx vs %016llx): %s. "
                             "Every rank must run the same command with the same options",
                        rank, (unsigned long long)h.hash, (unsigned long long)rl_rdzv_hash(text), diff);
    }
    free(theirs);
    return rc;
}

static int join_root(rl_rdzv *z, int port, double timeout_s, double deadline, const char *text, const void *blob,
                     size_t blob_bytes, rl_err *err)
{
    int lfd;
    rl_err e;
    if (rl_net_listen(port, &lfd, &e) != 0)
        return rl_err_set(err, "rank 0: %s (MASTER_PORT: pick a free port)", e.msg);
    /* A refused run still waits for the ranks not yet connected (until the deadline), so that
     * every rank hears the reason rather than finding the port closed. */
    int need = 2 * (z->world - 1), got = 0, rc = 0;
    while (got < need) {
        int fd;
        if (rl_net_accept(lfd, left(deadline), &fd, &e) != 0) {
            if (rc != 0) break;
            char missing[256] = "";
            size_t n = 0;
            for (int r = 1; r < z->world && n + 16 < sizeof missing; r++)
                if (z->ctrl[r] < 0 || z->data[r] < 0) n += (size_t)snprintf(missing + n, sizeof missing - n, "%s%d", n ? ", " : "", r);
            rc = rl_err_set(err, "rank 0 waited %g s on port %d for rank(s) %s of %d: %s. Are they started, with "
                                 "MASTER_ADDR pointing at this machine and the same MASTER_PORT?",
                            timeout_s, port, missing, z->world, e.msg);
            break;
        }
        rl_err later;
        int t = take_connection(z, fd, deadline, text, rc == 0 ? err : &later);
        if (t < 0) rc = -1;
        if (t <= 0) got++;
    }
    rl_net_close(lfd);
    /* Everyone connected so far hears the outcome: the blob, or why the run was refused. */
    for (int r = 1; r < z->world; r++) {
        if (z->ctrl[r] < 0) continue;
        size_t len = rc == 0 ? blob_bytes : strlen(err->msg);
        reply rp = {rc == 0 ? 0u : 1u, (uint32_t)len};
        if ((rl_net_send(z->ctrl[r], &rp, sizeof rp, left(deadline) + 1, NULL, &e) ||
             rl_net_send(z->ctrl[r], rc == 0 ? blob : (const void *)err->msg, len, left(deadline) + 1, NULL, &e)) &&
            rc == 0)
            rc = rl_err_set(err, "rank 0: sending the start-up data to rank %d: %s", r, e.msg);
    }
    return rc;
}

int rl_rdzv_join(rl_rdzv *z, int rank, int world, const char *addr, int port, double timeout_s,
                 const char *config_text, void *blob, size_t blob_bytes, rl_err *err)
{
    memset(z, 0, sizeof *z);
    z->rank = rank;
    z->world = world;
    if (world < 2 || rank < 0 || rank >= world)
        return rl_err_set(err, "rendezvous: rank %d of %d ranks is not a run of several ranks", rank, world);
    int n = rank == 0 ? world : 1;
    z->ctrl = malloc((size_t)n * sizeof(int));
    z->data = malloc((size_t)n * sizeof(int));
    if (!z->ctrl || !z->data) {
        rl_rdzv_close(z);
        return rl_err_oom(err, "rendezvous", 2 * (size_t)n * sizeof(int));
    }
    for (int r = 0; r < n; r++) z->ctrl[r] = z->data[r] = -1;
    z->timeout_s = timeout_s;
    double deadline = rl_time_now() + timeout_s;
    int rc = rank == 0 ? join_root(z, port, timeout_s, deadline, config_text, blob, blob_bytes, err)
                       : join_other(z, addr, port, deadline, config_text, blob, blob_bytes, err);
    if (rc != 0) rl_rdzv_close(z);
    return rc;
}
