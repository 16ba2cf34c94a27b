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

/* Set by rl_kstatic_check_py only: the C++ of a Python candidate runs inside the worker's
 * interpreter, where the Python C API reaches what the Python rules below forbid. */
#define FORBID_PY_API (1 << 30)

typedef struct rule {
    const char *check;
    int when_forbid; /* 0: always; else an RL_KFORBID_* bit (or FORBID_PY_API) that must be set */
    int when_library;
    int prefix;      /* 1: identifier prefix; 0: whole identifier */
    const char *names[12];
} rule;

static const rule rules[] = {
    {"library_call", RL_KFORBID_LIBRARY, RL_KLIB_CUBLAS, 1, {"cublas", NULL}},
    {"library_call", RL_KFORBID_LIBRARY, RL_KLIB_CUDNN, 1, {"cudnn", NULL}},
    {"stream_create", RL_KFORBID_STREAMS, 0, 1,
     {"cudaStreamCreate", "cudaEventCreate", "cudaStreamPerThread", "cudaStreamNonBlocking", "cuStreamCreate",
      "cuEventCreate", "cudaLaunchHostFunc", "cudaStreamAddCallback", "getStreamFromPool", NULL}},
    {"graph", RL_KFORBID_GRAPHS, 0, 1, {"cudaGraph", "cuGraph", "cudaStreamBeginCapture", "cudaStreamEndCapture", "cuStreamBeginCapture", NULL}},
    {"host_thread", RL_KFORBID_THREADS, 0, 0,
     {"pthread_create", "fork", "vfork", "posix_spawn", "popen", "system", "thrd_create", NULL}},
    {"dlopen", 0, 0, 0, {"dlopen", "dlsym", "dlmopen", "dlvsym", NULL}},
    {"l2_persist", 0, 0, 1,
     {"cudaDeviceSetLimit", "cudaLimitPersistingL2CacheSize", "cudaCtxResetPersistingL2Cache", "cuCtxSetLimit",
      "cudaStreamSetAttribute", "cudaLaunchAttributeAccessPolicyWindow", "cudaStreamAttributeAccessPolicyWindow",
      "accessPolicyWindow", NULL}},
    {"device_reset", 0, 0, 0, {"cudaDeviceReset", "cudaSetDevice", "exit", "_exit", "abort", "quick_exit", "cuCtxDestroy", NULL}},
    {"introspection", FORBID_PY_API, 0, 1,
     {"PyImport", "PyRun_", "PyEval_", "PyObject_SetAttr", "PyObject_GetAttr", "PySys_", "PyModule_", "PyGC_",
      "PyFrame", "PyThreadState", NULL}},
};

/* pybind11's ways into the interpreter, as scoped names: py::exec, py::module_::import, ... */
static const char *const pybind_entries[] = {"exec", "eval", "eval_file", "globals", "import", NULL};

static int one_of(const char *id, size_t n, const char *const *names)
{
    for (int k = 0; names[k]; k++)
        if (strlen(names[k]) == n && !strncmp(id, names[k], n)) return 1;
    return 0;
}

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

/* The C/CUDA scan; adds to out. */
static void scan_c(const char *source, size_t len, int forbid, int library, rl_kstatic *out)
{
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
        if ((forbid & FORBID_PY_API) && i >= 2 && !strncmp(t + i - 2, "::", 2) && one_of(id, n, pybind_entries))
            add(out, "introspection", 1, line, "line %d: '::%s' (the worker's interpreter, from C++)", id, n);
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

void rl_kstatic_check(const char *source, size_t len, int forbid, int library, rl_kstatic *out)
{
    memset(out, 0, sizeof *out);
    scan_c(source, len, forbid, library, out);
}

/* ---- Python candidates (KernelBench ModelNew) ---- */

/* A string literal's content is treated as C++/CUDA (a load_inline source) when it has one of
 * these marks, or both a brace and a semicolon: prose in docstrings ("exits early", "the
 * system") must not trip the C checks. */
static int looks_like_cxx(const char *s, size_t n)
{
    static const char *const marks[] = {"__global__", "__device__", "#include", "<<<", "torch::", "at::", NULL};
    for (int i = 0; marks[i]; i++)
        if (memmem(s, n, marks[i], strlen(marks[i]))) return 1;
    return memchr(s, '{', n) && memchr(s, ';', n);
}

/* Splits Python source into code (comments and string literals blanked) and cxx (everything
 * blanked but the contents of literals that look like C++); both keep every newline, so line
 * numbers match the file. Prefixes (r, b, f, u) need no care: a backslash keeps the next
 * character inside the literal in raw strings too. */
static void py_split(const char *s, size_t len, char *code, char *cxx)
{
    for (size_t i = 0; i < len; i++) {
        code[i] = s[i];
        cxx[i] = s[i] == '\n' ? '\n' : ' ';
    }
    code[len] = cxx[len] = 0;
    size_t i = 0;
    while (i < len) {
        char c = s[i];
        if (c == '#') {
            while (i < len && s[i] != '\n') code[i++] = ' ';
            continue;
        }
        if (c != '"' && c != '\'') {
            i++;
            continue;
        }
        int triple = i + 2 < len && s[i + 1] == c && s[i + 2] == c;
        size_t q = triple ? 3 : 1, start = i + q, j = start;
        while (j < len) {
            if (s[j] == '\\' && j + 1 < len) {
                j += 2;
                continue;
            }
            if (!triple && s[j] == '\n') break;
            if (s[j] == c && (!triple || (j + 2 < len && s[j + 1] == c && s[j + 2] == c))) break;
            j++;
        }
        size_t end = j < len ? j : len;
        size_t stop = j < len && s[j] == c ? j + q : end;
        for (size_t k = i; k < stop; k++)
            if (s[k] != '\n') code[k] = ' ';
        if (end > start && looks_like_cxx(s + start, end - start)) memcpy(cxx + start, s + start, end - start);
        i = stop;
    }
}

typedef struct py_rule {
    const char *check;
    int when_forbid;   /* 0: always; else an RL_KFORBID_* bit that must be set */
    const char *after; /* the name must follow "<after>." (NULL: anywhere) */
    int assigned;      /* only where assigned to (name = ..., not ==) */
    int bare;          /* only where not an attribute (not after '.': eval(), not model.eval()) */
    const char *name;  /* whole identifier */
    const char *why;
} py_rule;

static const py_rule py_rules[] = {
    {"stream_create", RL_KFORBID_STREAMS, NULL, 0, 0, "Stream", "creates a CUDA stream"},
    {"stream_create", RL_KFORBID_STREAMS, NULL, 0, 0, "ExternalStream", "uses another CUDA stream"},
    {"stream_create", RL_KFORBID_STREAMS, NULL, 0, 0, "Event", "creates a CUDA event"},
    {"graph", RL_KFORBID_GRAPHS, NULL, 0, 0, "CUDAGraph", "CUDA graphs"},
    {"graph", RL_KFORBID_GRAPHS, NULL, 0, 0, "make_graphed_callables", "CUDA graphs"},
    {"graph", RL_KFORBID_GRAPHS, "cuda", 0, 0, "graph", "CUDA graph capture"},
    {"global_state", 0, NULL, 1, 0, "allow_tf32", "changes torch's numeric settings (the reference keeps the protocol's)"},
    {"global_state", 0, NULL, 1, 0, "allow_fp16_reduced_precision_reduction", "changes torch's numeric settings"},
    {"global_state", 0, NULL, 1, 0, "allow_bf16_reduced_precision_reduction", "changes torch's numeric settings"},
    {"global_state", 0, NULL, 0, 0, "set_float32_matmul_precision", "changes torch's numeric settings"},
    {"global_state", 0, NULL, 0, 0, "use_deterministic_algorithms", "changes torch's algorithm choice"},
    {"global_state", 0, "cudnn", 1, 0, "benchmark", "changes cuDNN's algorithm choice (applied to the reference too)"},
    {"global_state", 0, "cudnn", 1, 0, "deterministic", "changes cuDNN's algorithm choice (applied to the reference too)"},
    {"global_state", 0, "cudnn", 1, 0, "enabled", "changes the reference's convolutions"},
    {"global_state", 0, "cudnn", 0, 0, "flags", "changes cuDNN settings"},
    {"host_thread", RL_KFORBID_THREADS, NULL, 0, 0, "threading", "host threads"},
    {"host_thread", RL_KFORBID_THREADS, NULL, 0, 0, "_thread", "host threads"},
    {"host_thread", RL_KFORBID_THREADS, NULL, 0, 0, "multiprocessing", "other processes"},
    {"host_thread", RL_KFORBID_THREADS, NULL, 0, 0, "concurrent", "host threads"},
    {"host_thread", RL_KFORBID_THREADS, NULL, 0, 0, "subprocess", "other processes"},
    {"host_thread", RL_KFORBID_THREADS, "os", 0, 0, "fork", "other processes"},
    {"host_thread", RL_KFORBID_THREADS, "os", 0, 0, "system", "other processes"},
    {"host_thread", RL_KFORBID_THREADS, "os", 0, 0, "popen", "other processes"},
    {"host_thread", RL_KFORBID_THREADS, "os", 0, 0, "posix_spawn", "other processes"},
    {"dlopen", 0, NULL, 0, 0, "ctypes", "loads native code outside load_inline"},
    {"dlopen", 0, NULL, 0, 0, "cffi", "loads native code outside load_inline"},
    /* Reaching into the interpreter: the worker's clock, its result and nonce, and every torch
     * function live in the same process, and a patch can undo itself before the worker's
     * integrity check looks (a perf_counter that lies once, then restores the real one). */
    {"introspection", 0, NULL, 0, 0, "sys", "the interpreter's modules, the worker's own among them"},
    {"introspection", 0, NULL, 0, 0, "gc", "the interpreter's live objects"},
    {"introspection", 0, NULL, 0, 0, "inspect", "stack frames and the worker's state"},
    {"introspection", 0, NULL, 0, 0, "builtins", "replaces built-in functions"},
    {"introspection", 0, NULL, 0, 0, "__builtins__", "replaces built-in functions"},
    {"introspection", 0, NULL, 0, 0, "importlib", "imports by computed name"},
    {"introspection", 0, NULL, 0, 0, "__import__", "imports by computed name"},
    {"introspection", 0, NULL, 0, 0, "_getframe", "stack frames"},
    {"introspection", 0, NULL, 0, 0, "f_back", "stack frames"},
    {"introspection", 0, NULL, 0, 0, "f_globals", "stack frames"},
    {"introspection", 0, NULL, 0, 0, "f_locals", "stack frames"},
    {"introspection", 0, NULL, 0, 0, "f_builtins", "stack frames"},
    {"introspection", 0, NULL, 0, 0, "tb_frame", "stack frames"},
    {"introspection", 0, NULL, 0, 0, "__traceback__", "stack frames"},
    {"introspection", 0, NULL, 0, 0, "gi_frame", "stack frames"},
    {"introspection", 0, NULL, 0, 0, "cr_frame", "stack frames"},
    {"introspection", 0, NULL, 0, 0, "__globals__", "a function's module namespace"},
    {"introspection", 0, NULL, 0, 0, "__code__", "replaces a function's code"},
    {"introspection", 0, NULL, 0, 0, "__closure__", "a function's captured state"},
    {"introspection", 0, NULL, 0, 0, "__subclasses__", "walks the class tree to any object"},
    {"introspection", 0, NULL, 0, 0, "__bases__", "walks the class tree to any object"},
    {"introspection", 0, NULL, 0, 0, "__base__", "walks the class tree to any object"},
    {"introspection", 0, NULL, 0, 0, "__mro__", "walks the class tree to any object"},
    {"introspection", 0, NULL, 0, 0, "__dict__", "rewrites a module's or class's namespace"},
    {"introspection", 0, NULL, 0, 1, "getattr", "attribute access by computed name"},
    {"introspection", 0, NULL, 0, 1, "setattr", "patches attributes by name"},
    {"introspection", 0, NULL, 0, 1, "delattr", "patches attributes by name"},
    {"introspection", 0, NULL, 0, 1, "globals", "the module namespace"},
    {"introspection", 0, NULL, 0, 1, "vars", "an object's namespace"},
    {"introspection", 0, NULL, 0, 1, "locals", "the frame's namespace"},
    {"introspection", 0, NULL, 0, 1, "eval", "runs code built at run time"},
    {"introspection", 0, NULL, 0, 1, "exec", "runs code built at run time"},
    {"introspection", 0, NULL, 0, 1, "compile", "runs code built at run time"},
    {"introspection", 0, NULL, 0, 1, "breakpoint", "stops the worker"},
    {"introspection", 0, NULL, 0, 0, "time", "the host clock the worker times with"},
    {"introspection", 0, NULL, 0, 0, "perf_counter", "the host clock the worker times with"},
    {"introspection", 0, NULL, 0, 0, "perf_counter_ns", "the host clock the worker times with"},
    {"introspection", 0, NULL, 0, 0, "monotonic", "the host clock the worker times with"},
    {"introspection", 0, NULL, 0, 0, "signal", "signal handlers inside the worker"},
    {"introspection", 0, NULL, 0, 0, "atexit", "code after the worker's result"},
    {"introspection", 0, NULL, 0, 0, "faulthandler", "the worker's crash handling"},
    {"introspection", 0, NULL, 0, 1, "open", "files (/proc/self/mem is the worker's memory)"},
    {"introspection", 0, NULL, 0, 0, "io", "files (/proc/self/mem is the worker's memory)"},
    {"introspection", 0, NULL, 0, 0, "pathlib", "files (/proc/self/mem is the worker's memory)"},
    {"introspection", 0, NULL, 0, 0, "mmap", "memory maps"},
    {"introspection", 0, "os", 0, 0, "open", "file descriptors (the worker's result goes to one)"},
    {"introspection", 0, "os", 0, 0, "read", "file descriptors (the worker's result goes to one)"},
    {"introspection", 0, "os", 0, 0, "write", "file descriptors (the worker's result goes to one)"},
    {"introspection", 0, "os", 0, 0, "fdopen", "file descriptors (the worker's result goes to one)"},
    {"introspection", 0, "os", 0, 0, "dup", "file descriptors (the worker's result goes to one)"},
    {"introspection", 0, "os", 0, 0, "dup2", "file descriptors (the worker's result goes to one)"},
    {"introspection", 0, "os", 0, 0, "_exit", "ends the worker before its result"},
    {"introspection", 0, "os", 0, 0, "kill", "signals"},
    {"introspection", 0, NULL, 0, 0, "exit", "ends the worker before its result"},
};

/* Does the identifier t[i, j) follow "<after>."? */
static int follows(const char *t, size_t i, const char *after)
{
    size_t n = strlen(after);
    return i >= n + 1 && t[i - 1] == '.' && !strncmp(t + i - 1 - n, after, n) && (i == n + 1 || !is_ident(t[i - 2 - n]));
}

static int is_assigned(const char *t, size_t len, size_t j)
{
    while (j < len && (t[j] == ' ' || t[j] == '\t')) j++;
    return j + 1 < len && t[j] == '=' && t[j + 1] != '=';
}

static void scan_py(const char *t, size_t len, int forbid, rl_kstatic *out)
{
    int line = 1;
    for (size_t i = 0; i < len;) {
        if (t[i] == '\n') line++;
        if (!is_ident(t[i]) || (i > 0 && is_ident(t[i - 1]))) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && is_ident(t[j])) j++;
        for (size_t r = 0; r < sizeof py_rules / sizeof py_rules[0]; r++) {
            const py_rule *ru = &py_rules[r];
            if (ru->when_forbid && !(forbid & ru->when_forbid)) continue;
            if (strlen(ru->name) != j - i || strncmp(t + i, ru->name, j - i)) continue;
            if (ru->after && !follows(t, i, ru->after)) continue;
            if (ru->assigned && !is_assigned(t, len, j)) continue;
            if (ru->bare && i > 0 && t[i - 1] == '.') continue;
            size_t from = i; /* report the dotted name: torch.backends.cuda.matmul.allow_tf32 */
            while (from > 0 && (is_ident(t[from - 1]) || t[from - 1] == '.') && i - from < 80) from--;
            char fmt[160];
            snprintf(fmt, sizeof fmt, "line %%d: '%%s' (%s)", ru->why);
            /* Numeric settings are no longer fatal: the worker runs the reference under the
             * protocol's settings whatever the candidate sets (docs/kernel-env.md). */
            add(out, ru->check, strcmp(ru->check, "global_state") != 0, line, fmt, t + from, j - from);
            break;
        }
        i = j;
    }
}

void rl_kstatic_check_py(const char *source, size_t len, int forbid, rl_kstatic *out)
{
    memset(out, 0, sizeof *out);
    char *code = malloc(len + 1), *cxx = malloc(len + 1);
    if (code && cxx) {
        py_split(source, len, code, cxx);
        scan_c(cxx, len, (forbid & ~RL_KFORBID_LIBRARY) | FORBID_PY_API, 0, out);
        scan_py(code, len, forbid, out);
    }
    free(code);
    free(cxx);
}
