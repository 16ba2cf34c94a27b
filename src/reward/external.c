/* external.c — the external reward program (see external.h).
 *
 * One AF_UNIX socket pair serves as the program's stdin and stdout: sends use MSG_NOSIGNAL,
 * so a program that died turns into an error here instead of a SIGPIPE that kills rlc. Each
 * completion is a request line then a wait (poll with the remaining time) for one answer line. */
#include "reward/external.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"
#include "io/json.h"

extern char **environ;

enum { MAX_LINE = 1 << 20 };

struct rl_reward_proc {
    pid_t pid;
    int fd;
    int dead;      /* stopped after a failure: every later call fails */
    double timeout_s;
    char *command;
    const char *kind, *unit; /* "reward program", "completion": what messages call it and an item */
    char *buf;     /* bytes read and not yet consumed */
    size_t len, cap;
    int restarts_in_a_row;  /* zero mode: restarts without an answer since */
    char last_failure[1024];
};

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to ms for the child to exit; returns 1 with *status filled if it did. */
static int reap(rl_reward_proc *p, int ms, int *status)
{
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(p->pid, status, WNOHANG);
        if (r == p->pid || (r < 0 && errno == ECHILD)) return 1;
        if (waited >= ms) return 0;
        sleep_ms(10);
    }
}

static void stop(rl_reward_proc *p)
{
    if (p->pid > 0) {
        int status;
        kill(-p->pid, SIGKILL);
        waitpid(p->pid, &status, 0);
        p->pid = 0;
    }
    p->dead = 1;
}

/* "exited with status 3" / "was killed by signal 11 (Segmentation fault)" / "closed its
 * stdout but is still running". Reaps the child when it has exited. */
static void describe_end(rl_reward_proc *p, char *out, size_t size)
{
    int status = 0;
    if (!reap(p, 1000, &status)) {
        snprintf(out, size, "closed its stdout but is still running");
        return;
    }
    p->pid = 0;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    if (WIFEXITED(status) && code > 128 && code < 128 + 65) /* a shell reporting its child's signal */
        snprintf(out, size, "exited with status %d (its command was killed by signal %d, %s)", code,
                 code - 128, strsignal(code - 128));
    else if (WIFEXITED(status))
        snprintf(out, size, "exited with status %d%s", code, code == 127 ? " (command not found?)" : "");
    else if (WIFSIGNALED(status))
        snprintf(out, size, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(out, size, "ended");
}

/* Starts (or restarts) p->command with a fresh socket pair as its stdin and stdout. */
static int spawn(rl_reward_proc *p, rl_err *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return rl_err_set(err, "%s '%s': cannot create pipes: %s", p->kind, p->command, strerror(errno));
    size_t n_env = 0;
    while (environ[n_env]) n_env++;
    char **envp = malloc((n_env + 2) * sizeof *envp);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    posix_spawnattr_init(&attr);
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGPIPE);
    sigaddset(&def, SIGINT);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
    int rc = ENOMEM;
    if (envp) {
        size_t k = 0;
        for (size_t i = 0; i < n_env; i++)
            if (strncmp(environ[i], "PYTHONUNBUFFERED=", 17)) envp[k++] = environ[i];
        envp[k++] = "PYTHONUNBUFFERED=1";
        envp[k] = NULL;
        char *argv[] = {"sh", "-c", p->command, NULL};
        rc = posix_spawn(&p->pid, "/bin/sh", &fa, &attr, argv, envp);
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    free(envp);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        p->pid = 0;
        return rl_err_set(err, "%s '%s': cannot start: %s", p->kind, p->command, strerror(rc));
    }
    p->fd = sv[0];
    fcntl(p->fd, F_SETFL, fcntl(p->fd, F_GETFL) | O_NONBLOCK);
    p->len = 0;
    p->dead = 0;
    return 0;
}

int rl_reward_proc_start(rl_reward_proc **out, const char *command, double timeout_s, rl_err *err)
{
    return rl_line_proc_start(out, command, timeout_s, "reward program", "completion", err);
}

int rl_line_proc_start(rl_reward_proc **out, const char *command, double timeout_s, const char *kind,
                       const char *unit, rl_err *err)
{
    *out = NULL;
    if (!command || !*command) return rl_err_set(err, "%s: empty command", kind);
    if (!(timeout_s > 0)) return rl_err_set(err, "%s: time limit must be > 0, got %g", kind, timeout_s);
    rl_reward_proc *p = calloc(1, sizeof *p);
    if (!p) return rl_err_oom(err, "reward process", sizeof *p);
    p->timeout_s = timeout_s;
    p->kind = kind;
    p->unit = unit;
    p->command = strdup(command);
    p->fd = -1;
    if (!p->command) {
        free(p);
        return rl_err_oom(err, "reward process", strlen(command));
    }
    if (spawn(p, err)) {
        free(p->command);
        free(p);
        return -1;
    }
    *out = p;
    return 0;
}

/* A stopped program's socket is closed and it is started again (zero mode, after a crash). */
static int restart(rl_reward_proc *p, rl_err *err)
{
    if (p->fd >= 0) close(p->fd);
    p->fd = -1;
    return spawn(p, err);
}

static int fail(rl_reward_proc *p, rl_err *err, int index, const char *fmt, const char *detail)
{
    char what[512];
    snprintf(what, sizeof what, fmt, detail);
    stop(p);
    return rl_err_set(err, "%s '%s': %s %d: %s", p->kind, p->command, p->unit, index, what);
}

static int send_all(rl_reward_proc *p, const char *data, size_t len, double deadline, int index,
                    rl_err *err)
{
    while (len > 0) {
        ssize_t w = send(p->fd, data, len, MSG_NOSIGNAL);
        if (w > 0) {
            data += w;
            len -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            char end[128];
            describe_end(p, end, sizeof end);
            return fail(p, err, index, "the program %s before reading its input", end);
        }
        double left = deadline - rl_time_now();
        if (left <= 0) {
            char limit[64];
            snprintf(limit, sizeof limit, "%g s", p->timeout_s);
            return fail(p, err, index, "did not read its input within %s (program killed)", limit);
        }
        struct pollfd pfd = {p->fd, POLLOUT, 0};
        poll(&pfd, 1, (int)(left * 1000) + 1);
    }
    return 0;
}

/* Reads the next non-blank line into *line (NUL-terminated, in p->buf); *consumed is how much
 * of the buffer to drop after use. */
static int read_line(rl_reward_proc *p, char **line, size_t *consumed, double deadline, int index,
                     rl_err *err)
{
    size_t scanned = 0;
    for (;;) {
        char *nl = p->len > scanned ? memchr(p->buf + scanned, '\n', p->len - scanned) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - p->buf);
            *nl = '\0';
            size_t start = 0;
            while (start < n && (p->buf[start] == ' ' || p->buf[start] == '\t' || p->buf[start] == '\r')) start++;
            if (start == n) { /* blank line: skip it */
                memmove(p->buf, nl + 1, p->len - n - 1);
                p->len -= n + 1;
                scanned = 0;
                continue;
            }
            *line = p->buf;
            *consumed = n + 1;
            return 0;
        }
        scanned = p->len;
        if (p->len >= MAX_LINE) return fail(p, err, index, "answer line longer than %s bytes", "1048576");
        if (p->cap - p->len < 4096) {
            size_t cap = p->cap ? p->cap * 2 : 8192;
            char *grown = realloc(p->buf, cap);
            if (!grown) return fail(p, err, index, "out of memory reading its answer%s", "");
            p->buf = grown;
            p->cap = cap;
        }
        ssize_t r = recv(p->fd, p->buf + p->len, p->cap - p->len - 1, 0);
        if (r > 0) {
            p->len += (size_t)r;
            continue;
        }
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            char end[128];
            describe_end(p, end, sizeof end);
            return fail(p, err, index, p->len ? "the program %s in the middle of its answer line"
                                              : "the program %s before answering",
                        end);
        }
        double left = deadline - rl_time_now();
        if (left <= 0) {
            char limit[64];
            snprintf(limit, sizeof limit, "%g s", p->timeout_s);
            return fail(p, err, index, "no answer within %s (program killed)", limit);
        }
        struct pollfd pfd = {p->fd, POLLIN, 0};
        poll(&pfd, 1, (int)(left * 1000) + 1);
    }
}

static char *request_line(const rl_reward_item *it, size_t *len)
{
    cJSON *obj = it->fields && cJSON_IsObject(it->fields) ? cJSON_Duplicate(it->fields, 1)
                                                          : cJSON_CreateObject();
    if (!obj) return NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "prompt");
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "completion");
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "answer");
    cJSON_AddStringToObject(obj, "prompt", it->prompt ? it->prompt : "");
    cJSON_AddStringToObject(obj, "completion", it->completion ? it->completion : "");
    if (it->answer) cJSON_AddStringToObject(obj, "answer", it->answer);
    else cJSON_AddNullToObject(obj, "answer");
    char *text = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    if (!text) return NULL;
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return NULL;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    *len = n + 1;
    return line;
}

int rl_reward_parse_answer(const char *line, float *reward, char *why, size_t size)
{
    char shown[160];
    snprintf(shown, sizeof shown, "%.120s%s", line, strlen(line) > 120 ? "..." : "");
    cJSON *obj = rl_json_parse(line, strlen(line), "answer", NULL);
    if (!obj || !cJSON_IsObject(obj)) {
        cJSON_Delete(obj);
        snprintf(why, size, "printed a line that is not one JSON object: '%s'", shown);
        return -1;
    }
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(obj, "reward");
    const char *wrong = !r                        ? "answer has no \"reward\" field"
                        : !cJSON_IsNumber(r)      ? "\"reward\" is not a number"
                        : !isfinite(r->valuedouble) ? "\"reward\" is not finite"
                        : fabs(r->valuedouble) > FLT_MAX ? "\"reward\" does not fit a float"
                                                       : NULL;
    double value = r ? r->valuedouble : 0;
    cJSON_Delete(obj);
    if (wrong) {
        snprintf(why, size, "%s: '%s'", wrong, shown);
        return -1;
    }
    *reward = (float)value;
    return 0;
}

/* One completion: 0 and *reward, or -1 with the message in err. *answered: the program
 * answered a line (a broken one, when -1: the program is still running and in step). */
static int score_one(rl_reward_proc *p, const rl_reward_item *it, int i, float *reward, int *answered, rl_err *err)
{
    *answered = 0;
    size_t len = 0;
    char *req = request_line(it, &len);
    if (!req) return fail(p, err, i, "cannot encode the request (%s)", "out of memory");
    double deadline = rl_time_now() + p->timeout_s;
    int rc = send_all(p, req, len, deadline, i, err);
    free(req);
    if (rc != 0) return -1;
    char *line = NULL;
    size_t consumed = 0;
    if (read_line(p, &line, &consumed, deadline, i, err) != 0) return -1;
    char why[256];
    rc = rl_reward_parse_answer(line, reward, why, sizeof why);
    memmove(p->buf, p->buf + consumed, p->len - consumed);
    p->len -= consumed;
    *answered = 1;
    if (rc) return rl_err_set(err, "reward program '%s': completion %d: %s", p->command, i, why);
    return 0;
}

enum { MAX_RESTARTS_IN_A_ROW = 3 };

int rl_reward_proc_score(rl_reward_proc *p, const rl_reward_item *items, int n, float *rewards,
                         rl_reward_on_failure on_failure, void *user, rl_err *err)
{
    if (p->dead && !on_failure)
        return rl_err_set(err, "reward program '%s' was stopped after an earlier failure", p->command);
    for (int i = 0; i < n; i++) {
        if (p->dead) {
            if (p->restarts_in_a_row >= MAX_RESTARTS_IN_A_ROW)
                return rl_err_set(err, "reward program '%s' failed again after %d restarts in a row without answering; "
                                       "last: %s", p->command, p->restarts_in_a_row, p->last_failure);
            if (restart(p, err)) return -1;
            p->restarts_in_a_row++;
        }
        int answered;
        if (score_one(p, &items[i], i, &rewards[i], &answered, err) == 0) {
            p->restarts_in_a_row = 0;
            continue;
        }
        if (!on_failure) {
            stop(p);
            return -1;
        }
        if (answered) p->restarts_in_a_row = 0;
        snprintf(p->last_failure, sizeof p->last_failure, "%s", err->msg);
        rewards[i] = 0;
        if (on_failure(user, i, err->msg, err)) return -1;
    }
    return 0;
}

int rl_line_proc_exchange(rl_reward_proc *p, const char *request, size_t len, int index, char **answer, rl_err *err)
{
    *answer = NULL;
    if (p->dead) return rl_err_set(err, "%s '%s' was stopped after an earlier failure", p->kind, p->command);
    double deadline = rl_time_now() + p->timeout_s;
    char *line = NULL;
    size_t consumed = 0;
    if (send_all(p, request, len, deadline, index, err) || read_line(p, &line, &consumed, deadline, index, err))
        return -1;
    *answer = strdup(line);
    memmove(p->buf, p->buf + consumed, p->len - consumed);
    p->len -= consumed;
    return *answer ? 0 : fail(p, err, index, "out of memory reading its answer%s", "");
}

int rl_line_proc_dead(const rl_reward_proc *p) { return p->dead; }

void rl_reward_proc_close(rl_reward_proc *p)
{
    if (!p) return;
    if (p->fd >= 0) shutdown(p->fd, SHUT_WR);
    int status;
    if (p->pid > 0 && reap(p, 2000, &status)) p->pid = 0;
    stop(p);
    if (p->fd >= 0) close(p->fd);
    free(p->buf);
    free(p->command);
    free(p);
}
