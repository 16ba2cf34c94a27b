/* kstatic.c — see kstatic.h. */
#include "reward/kernel_env/kstatic.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void rl_kstatic_strip(const char *s, size_t len, char *d)
{
    size_t i = 0;
    int line_start = 1, in_include = 0;
    while (i < len) {
        char c = s[i];
        if (line_start) {
            size_t j = i;
            while (j < len && (s[j] == ' ' || s[j] == '\t')) j++;
            in_include = j < len && s[j] == '#';
            line_start = 0;
        }
        if (c == '\n') {
            d[i++] = c;
            line_start = 1;
            continue;
        }
        if (c == '/' && i + 1 < len && s[i + 1] == '/') {
            while (i < len && s[i] != '\n') d[i++] = ' ';
            continue;
        }
        if (c == '/' && i + 1 < len && s[i + 1] == '*') {
            d[i] = d[i + 1] = ' ';
            i += 2;
            while (i < len && !(s[i] == '*' && i + 1 < len && s[i + 1] == '/')) {
                d[i] = s[i] == '\n' ? '\n' : ' ';
                i++;
            }
            if (i < len) d[i++] = ' ';
            if (i < len) d[i++] = ' ';
            continue;
        }
        if ((c == '"' || c == '\'') && !in_include) {
            d[i++] = ' ';
            while (i < len && s[i] != c && s[i] != '\n') {
                if (s[i] == '\\' && i + 1 < len && s[i + 1] != '\n') d[i++] = ' ';
                d[i++] = ' ';
            }
            if (i < len && s[i] == c) d[i++] = ' ';
            continue;
        }
        d[i] = c;
        i++;
    }
    d[len] = 0;
}

typedef struct rule {
    const char *check;
    int when_forbid; /* 0: always; else an RL_KFORBID_* bit that must be set */
    int when_library;
    int prefix;      /* 1: identifier prefix; 0: whole identifier */
    const char *names[12];
} rule;

static const rule rules[] = {
    {"library_call", RL_KFORBID_LIBRARY, RL_KLIB_CUBLAS, 1, {"cublas", NULL}},
    {"library_call", RL_KFORBID_LIBRARY, RL_KLIB_CUDNN, 1, {"cudnn", NULL}},
    {"stream_create", RL_KFORBID_STREAMS, 0, 1,
     {"cudaStreamCreate", "cudaEventCreate", "cudaStreamPerThread", "cudaStreamNonBlocking", "cuStreamCreate",
      "cuEventCreate", "cudaLaunchHostFunc", "cudaStreamAddCallback", NULL}},
    {"graph", RL_KFORBID_GRAPHS, 0, 1, {"cudaGraph", "cuGraph", "cudaStreamBeginCapture", "cudaStreamEndCapture", "cuStreamBeginCapture", NULL}},
    {"host_thread", RL_KFORBID_THREADS, 0, 0,
     {"pthread_create", "fork", "vfork", "posix_spawn", "popen", "system", "thrd_create", NULL}},
    {"dlopen", 0, 0, 0, {"dlopen", "dlsym", "dlmopen", "dlvsym", NULL}},
    {"l2_persist", 0, 0, 1,
     {"cudaDeviceSetLimit", "cudaLimitPersistingL2CacheSize", "cudaCtxResetPersistingL2Cache", "cuCtxSetLimit",
      "cudaStreamSetAttribute", "cudaLaunchAttributeAccessPolicyWindow", "cudaStreamAttributeAccessPolicyWindow",
      "accessPolicyWindow", NULL}},
    {"device_reset", 0, 0, 0, {"cudaDeviceReset", "cudaSetDevice", "exit", "_exit", "abort", "quick_exit", "cuCtxDestroy", NULL}},
};

static void add(rl_kstatic *out, const char *check, int fatal, int line, const char *fmt, const char *text, size_t text_len)
{
    for (int i = 0; i < out->n; i++)
        if (!strcmp(out->items[i].check, check) && out->items[i].line == line) return;
    if (out->n == RL_KSTATIC_MAX) {
        out->dropped++;
        if (fatal) out->n_fatal++;
        return;
    }
    rl_kfinding *f = &out->items[out->n++];
    snprintf(f->check, sizeof f->check, "%s", check);
    f->fatal = fatal;
    f->line = line;
    char snippet[100];
    size_t n = text_len < sizeof snippet - 1 ? text_len : sizeof snippet - 1;
    for (size_t i = 0; i < n; i++) snippet[i] = (text[i] == '\n' || text[i] == '\t') ? ' ' : text[i];
    snippet[n] = 0;
    snprintf(f->detail, sizeof f->detail, fmt, line, snippet);
    if (fatal) out->n_fatal++;
}

static int is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* A __device__ / __managed__ / static declaration that is a variable (not a function): the
 * text up to the first '(' ';' '{' has no '(' . For static, only pointers and arrays count. */
static void check_persistent(const char *t, size_t len, size_t pos, size_t tok_len, int is_static, int line,
                             rl_kstatic *out)
{
    size_t j = pos + tok_len;
    int star = 0, bracket = 0;
    while (j < len && t[j] != '(' && t[j] != ';' && t[j] != '{' && t[j] != '=') {
        star |= t[j] == '*';
        bracket |= t[j] == '[';
        j++;
    }
    if (j >= len || t[j] == '(' || t[j] == '{') return;
    if (is_static && !star && !bracket) return;
    size_t k = j;
    while (k > pos + tok_len && !is_ident(t[k - 1]) && t[k - 1] != ']') k--;
    add(out, "static_device_buffer", 0, line, "line %d: persistent buffer '%s' (kept across calls)", t + pos, k - pos);
}

void rl_kstatic_check(const char *source, size_t len, int forbid, int library, rl_kstatic *out)
{
    memset(out, 0, sizeof *out);
    char *t = malloc(len + 1);
    if (!t) return;
    rl_kstatic_strip(source, len, t);
    int line = 1;
    for (size_t i = 0; i < len;) {
        if (t[i] == '\n') {
            line++;
            i++;
            continue;
        }
        if (!is_ident(t[i]) || (i > 0 && is_ident(t[i - 1]))) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && is_ident(t[j])) j++;
        size_t n = j - i;
        const char *id = t + i;
        int after_std = i >= 5 && !strncmp(t + i - 5, "std::", 5);
        if (after_std && (forbid & RL_KFORBID_THREADS) &&
            ((n == 6 && !strncmp(id, "thread", 6)) || (n == 7 && !strncmp(id, "jthread", 7)) || (n == 5 && !strncmp(id, "async", 5))))
            add(out, "host_thread", 1, line, "line %d: std::%s (host threads are forbidden)", id, n);
        for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
            const rule *ru = &rules[r];
            if (ru->when_forbid && !(forbid & ru->when_forbid)) continue;
            if (ru->when_library && !(library & ru->when_library)) continue;
            for (int k = 0; ru->names[k]; k++) {
                size_t m = strlen(ru->names[k]);
                int hit = ru->prefix ? (n >= m && !strncasecmp(id, ru->names[k], m)) : (n == m && !strncmp(id, ru->names[k], m));
                if (hit) {
                    add(out, ru->check, 1, line, "line %d: '%s'", id, n);
                    break;
                }
            }
        }
        if ((n == 10 && !strncmp(id, "__device__", 10)) || (n == 11 && !strncmp(id, "__managed__", 11)))
            check_persistent(t, len, i, n, 0, line, out);
        else if (n == 6 && !strncmp(id, "static", 6))
            check_persistent(t, len, i, n, 1, line, out);
        i = j;
    }
    free(t);
}
