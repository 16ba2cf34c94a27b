/* test_kstatic.c — static checks of candidate sources: each check fires on its pattern, not on
 * mentions in comments or strings, only when the task forbids it; static buffers are reported
 * but not fatal; every honest kernel of the repository has no fatal finding and every cheat
 * that the static layer is meant to catch is caught with the expected check. Python candidates
 * (KernelBench ModelNew): the Python rules, the C rules inside load_inline sources, no findings
 * from comments, docstrings or lookalikes, and the KernelBench fixtures' verdicts. */
#include <string.h>

#include "core/file.h"
#include "reward/kernel_env/kstatic.h"
#include "test_util.h"

#define ALL (RL_KFORBID_STREAMS | RL_KFORBID_GRAPHS | RL_KFORBID_LIBRARY | RL_KFORBID_THREADS)

static const rl_kfinding *find(const rl_kstatic *st, const char *check)
{
    for (int i = 0; i < st->n; i++)
        if (!strcmp(st->items[i].check, check)) return &st->items[i];
    return NULL;
}

static void scan(const char *src, int forbid, int library, rl_kstatic *st)
{
    rl_kstatic_check(src, strlen(src), forbid, library, st);
}

Test(kstatic, strip_keeps_lines_and_includes)
{
    const char *src = "#include \"cublas_v2.h\"\nint a; // cublasSgemm\n/* cudaStreamCreate\n */ char *s = \"dlopen\";\n";
    char out[256];
    rl_kstatic_strip(src, strlen(src), out);
    cr_assert_eq(strlen(out), strlen(src));
    cr_assert(strstr(out, "cublas_v2.h"), "include text kept: %s", out);
    cr_assert(!strstr(out, "cublasSgemm") && !strstr(out, "cudaStreamCreate") && !strstr(out, "dlopen"), "%s", out);
    int lines_in = 0, lines_out = 0;
    for (const char *p = src; *p; p++) lines_in += *p == '\n';
    for (const char *p = out; *p; p++) lines_out += *p == '\n';
    cr_assert_eq(lines_in, lines_out);
}

Test(kstatic, each_check_fires)
{
    struct { const char *src; const char *check; int line; } cases[] = {
        {"int f() {\n  cublasSgemm(h, 0);\n}", "library_call", 2},
        {"#include <cublas_v2.h>\n", "library_call", 1},
        {"cudaStream_t s;\nvoid g() { cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }", "stream_create", 2},
        {"void g() { cudaEventCreate(&e); }", "stream_create", 1},
        {"\n\nvoid g() { cudaStreamBeginCapture(s, m); }", "graph", 3},
        {"cudaGraphExec_t exec;", "graph", 1},
        {"void g() { std::thread([] {}).detach(); }", "host_thread", 1},
        {"void g() { pthread_create(&t, 0, f, 0); }", "host_thread", 1},
        {"void g() { auto f = std::async(h); }", "host_thread", 1},
        {"void *h = dlopen(\"libcublas.so\", 2);", "dlopen", 1},
        {"void g() { cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20); }", "l2_persist", 1},
        {"void g() { attr.val.accessPolicyWindow.hitRatio = 1; }", "l2_persist", 1},
        {"void g() { cudaDeviceReset(); }", "device_reset", 1},
        {"void g() { exit(0); }", "device_reset", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rl_kstatic st;
        scan(cases[i].src, ALL, RL_KLIB_CUBLAS, &st);
        const rl_kfinding *f = find(&st, cases[i].check);
        cr_assert(f, "case %zu: no '%s' finding in: %s", i, cases[i].check, cases[i].src);
        cr_assert(f->fatal, "case %zu: '%s' must be fatal", i, cases[i].check);
        cr_assert_eq(f->line, cases[i].line, "case %zu: line %d, want %d", i, f->line, cases[i].line);
        cr_assert_geq(st.n_fatal, 1);
    }
}

Test(kstatic, only_when_forbidden)
{
    rl_kstatic st;
    scan("void g() { cudaStreamCreate(&s); cudaGraphLaunch(e, s); cublasSgemm(h); std::thread t(f); }", 0, 0, &st);
    cr_assert_eq(st.n_fatal, 0, "nothing forbidden, yet %d fatal (first: %s)", st.n_fatal, st.n ? st.items[0].check : "");
    scan("void g() { cublasSgemm(h); }", ALL, 0, &st);
    cr_assert_null(find(&st, "library_call"), "cuBLAS is not this task's library");
    scan("void g() { cudnnConvolutionForward(h); }", ALL, RL_KLIB_CUDNN, &st);
    cr_assert_not_null(find(&st, "library_call"));
}

Test(kstatic, comments_strings_and_lookalikes_are_no_findings)
{
    rl_kstatic st;
    scan("// do not call cublasSgemm or cudaStreamCreate here\n"
         "/* std::thread is forbidden */\n"
         "const char *msg = \"dlopen exit abort\";\n"
         "__global__ void exit_early_kernel(float *y) { float my_exit = 1; y[0] = my_exit; }\n"
         "__device__ float helper(float x) { return x; }\n"
         "static __global__ void k2(int n) {}\n"
         "static const int n_threads = 256;\n",
         ALL, RL_KLIB_CUBLAS, &st);
    cr_assert_eq(st.n, 0, "%d findings, first: %s %s", st.n, st.n ? st.items[0].check : "", st.n ? st.items[0].detail : "");
}

Test(kstatic, persistent_buffers_reported_not_fatal)
{
    rl_kstatic st;
    scan("__device__ float cache[1024];\n"
         "__device__ int counter;\n"
         "int rl_kernel() {\n  static float *scratch = 0;\n  static int calls;\n  return 0;\n}\n",
         ALL, 0, &st);
    cr_assert_eq(st.n_fatal, 0);
    int lines[3] = {0}, n = 0;
    for (int i = 0; i < st.n; i++) {
        cr_assert_str_eq(st.items[i].check, "static_device_buffer");
        if (n < 3) lines[n++] = st.items[i].line;
    }
    cr_assert_eq(n, 3, "want findings on lines 1, 2, 4; got %d findings", n);
    cr_assert(lines[0] == 1 && lines[1] == 2 && lines[2] == 4, "lines %d %d %d", lines[0], lines[1], lines[2]);
    cr_assert(strstr(st.items[0].detail, "cache"), "%s", st.items[0].detail);
}

Test(kstatic, overflow_is_counted)
{
    char src[8192] = "";
    for (int i = 0; i < 40; i++) strcat(src, "exit(1);\n");
    rl_kstatic st;
    scan(src, ALL, 0, &st);
    cr_assert_eq(st.n, RL_KSTATIC_MAX);
    cr_assert_eq(st.dropped, 40 - RL_KSTATIC_MAX);
    cr_assert_eq(st.n_fatal, 40);
}

static void scan_file(const char *path, rl_kstatic *st, int library)
{
    char *text;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0, "%s", err.msg);
    rl_kstatic_check(text, len, ALL, library, st);
    free(text);
}

Test(kstatic, repository_kernels)
{
    const char *honest[] = {"ew_chain_fused", "ew_chain_vec4", "softmax_online_block", "softmax_online_warp",
                            "layernorm_fused", "rowsum_warp", "rowsum_block", "transpose_tiled", "matvec_warp",
                            "swiglu_fused", "swiglu_vec4"};
    for (size_t i = 0; i < sizeof honest / sizeof honest[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "tests/fixtures/kernel_env/honest/%s.cu", honest[i]);
        rl_kstatic st;
        scan_file(path, &st, 0);
        cr_assert_eq(st.n_fatal, 0, "%s: fatal finding %s", path, st.n ? st.items[0].detail : "");
    }
    struct { const char *name, *check; int library; } cheats[] = {
        {"side_stream", "stream_create", 0}, {"late_host_thread", "host_thread", 0},
        {"call_library", "library_call", RL_KLIB_CUBLAS}, {"warm_l2", "l2_persist", 0},
        {"graph_replay", "graph", 0}, {"dlopen_library", "dlopen", RL_KLIB_CUBLAS},
    };
    for (size_t i = 0; i < sizeof cheats / sizeof cheats[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "tests/fixtures/kernel_env/cheats/%s.cu", cheats[i].name);
        rl_kstatic st;
        scan_file(path, &st, cheats[i].library);
        const rl_kfinding *f = find(&st, cheats[i].check);
        cr_assert(f && f->fatal, "%s: no fatal '%s' finding", path, cheats[i].check);
    }
    rl_kstatic st;
    scan_file("tests/fixtures/kernel_env/cheats/cache_across_calls.cu", &st, 0);
    cr_assert_not_null(find(&st, "static_device_buffer"), "the static cache pointer is reported");
    cr_assert_eq(st.n_fatal, 0, "a static buffer alone is not fatal: the dynamic checks decide");
}

#define KB (RL_KFORBID_STREAMS | RL_KFORBID_GRAPHS | RL_KFORBID_THREADS)

static void scan_py(const char *src, rl_kstatic *st)
{
    rl_kstatic_check_py(src, strlen(src), KB, st);
}

Test(kstatic, python_checks_fire)
{
    struct { const char *src; const char *check; int line; } cases[] = {
        {"import torch\ns = torch.cuda.Stream()\n", "stream_create", 2},
        {"from torch.cuda import Stream\n", "stream_create", 1},
        {"e = torch.cuda.Event(enable_timing=True)\n", "stream_create", 1},
        {"g = torch.cuda.CUDAGraph()\n", "graph", 1},
        {"with torch.cuda.graph(g):\n    pass\n", "graph", 1},
        {"f = torch.cuda.make_graphed_callables(f, (x,))\n", "graph", 1},
        {"class M:\n    def __init__(self):\n        torch.backends.cuda.matmul.allow_tf32 = True\n", "global_state", 3},
        {"torch.backends.cudnn.allow_tf32=True\n", "global_state", 1},
        {"torch.set_float32_matmul_precision('high')\n", "global_state", 1},
        {"torch.backends.cudnn.benchmark = True\n", "global_state", 1},
        {"torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True\n", "global_state", 1},
        {"import threading\n", "host_thread", 1},
        {"import subprocess\n", "host_thread", 1},
        {"os.fork()\n", "host_thread", 1},
        {"from concurrent.futures import ThreadPoolExecutor\n", "host_thread", 1},
        {"import ctypes\nlib = ctypes.CDLL('libcublas.so')\n", "dlopen", 1},
        /* the C rules in a load_inline source, with the Python file's line numbers */
        {"src = r\"\"\"\n#include <torch/extension.h>\nvoid f() {\n  cudaStream_t s;\n  cudaStreamCreate(&s);\n}\n\"\"\"\n",
         "stream_create", 5},
        {"src = '''\n__global__ void k() {}\nvoid f() { cudaGraphLaunch(g, 0); }\n'''\n", "graph", 3},
        {"src = \"\"\"\n#include <thread>\nvoid f() { std::thread t(g); t.detach(); }\n\"\"\"\n", "host_thread", 3},
        {"cpp = \"at::cuda::CUDAStream s = at::cuda::getStreamFromPool();\"\n", "stream_create", 1},
        {"cpp = \"void f() { at::cuda::CUDAGraph g; }\"\n", "graph", 1},
        /* reaching into the worker's interpreter: a clock that lies once and restores itself */
        {"import time\n_real = time.perf_counter\n", "introspection", 1},
        {"from time import perf_counter\n", "introspection", 1},
        {"import torch.utils.cpp_extension as ce\nclk = ce.time\n", "introspection", 2},
        {"import gc\nfor o in gc.get_objects():\n    pass\n", "introspection", 1},
        {"m = __import__('ti' + 'me')\n", "introspection", 1},
        {"x = getattr(torch.utils.cpp_extension, 'ti' + 'me')\n", "introspection", 1},
        {"setattr(torch.cuda, 'synchronize', lambda: None)\n", "introspection", 1},
        {"try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame.f_back\n", "introspection", 4},
        {"cls = ().__class__.__base__.__subclasses__()\n", "introspection", 1},
        {"fn.__globals__['res'] = None\n", "introspection", 1},
        {"exec('import tim' + 'e')\n", "introspection", 1},
        {"data = open('/proc/self/mem', 'rb')\n", "introspection", 1},
        {"os.write(3, b'{}')\nos._exit(0)\n", "introspection", 1},
        {"import signal\n", "introspection", 1},
        {"torch.__dict__['mul'] = f\n", "introspection", 1},
        {"cpp = \"void f() { py::module_::import(\\\"time\\\").attr(\\\"perf_counter\\\"); }\"\n", "introspection", 1},
        {"cpp = \"void f() { PyRun_SimpleString(s); }\"\n", "introspection", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rl_kstatic st;
        scan_py(cases[i].src, &st);
        const rl_kfinding *f = find(&st, cases[i].check);
        cr_assert(f, "case %zu: no '%s' finding in:\n%s", i, cases[i].check, cases[i].src);
        /* numeric settings are reported, not fatal: the worker measures them fairly */
        cr_assert_eq(f->fatal, strcmp(cases[i].check, "global_state") != 0, "case %zu: '%s' fatal %d", i, cases[i].check,
                     f->fatal);
        cr_assert_eq(f->line, cases[i].line, "case %zu: line %d, want %d (%s)", i, f->line, cases[i].line, f->detail);
    }
    rl_kstatic st;
    scan_py("torch.backends.cuda.matmul.allow_tf32 = True\n", &st);
    cr_assert(st.n == 1 && strstr(st.items[0].detail, "'torch.backends.cuda.matmul.allow_tf32'"), "the dotted name: %s",
              st.n ? st.items[0].detail : "(none)");
}

Test(kstatic, python_non_findings)
{
    const char *clean[] = {
        "# torch.cuda.Stream() in a comment; import threading\nx = 1\n",
        "\"\"\"Docstring: we exit early, the system creates no Stream, no fork, abort never.\"\"\"\n",
        "msg = 'uses torch.cuda.Stream'\n",
        "if torch.backends.cuda.matmul.allow_tf32 == False:\n    pass\n", /* read, not set */
        "flag = torch.backends.cuda.matmul.allow_tf32\n",
        "s = torch.cuda.current_stream()\n",                              /* the current stream is fine */
        "self.benchmark = True\nmy_graph = 1\nos_fork = 2\nstream = x\n", /* lookalikes */
        "src = r\"\"\"\n// cudaStreamCreate(&s) in a C comment\n__global__ void k(float *y) { y[0] = 1.f; }\n\"\"\"\n",
        "s = \"it's \\\" torch.cuda.Stream \\\" quoted\"; t = 'a # b'\n",
        /* attributes that share a name with a forbidden builtin, and what load_inline needs */
        "m = model.eval()\nf = torch.compile(f)\nself.timer = 1\nruntime = 2\nexit_code = 3\n",
        "os.environ['TORCH_CUDA_ARCH_LIST'] = '9.0a'\nimport math\ny = math.sqrt(2.0)\n",
        "src = \"\"\"\n#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x) { return x; }\n\"\"\"\n",
    };
    for (size_t i = 0; i < sizeof clean / sizeof clean[0]; i++) {
        rl_kstatic st;
        scan_py(clean[i], &st);
        cr_assert_eq(st.n, 0, "case %zu: unexpected finding %s in:\n%s", i, st.n ? st.items[0].detail : "", clean[i]);
    }
    rl_kstatic st;
    rl_kstatic_check_py("import threading\n", 17, RL_KFORBID_STREAMS, &st);
    cr_assert_eq(st.n, 0, "threads not forbidden: no finding");
}

Test(kstatic, kernelbench_fixtures)
{
    const char *fatal_free[] = {"gelu_inline_ok", "gelu_wrong_formula", "gelu_cached", "diag_ok", "diag_wrong_axis",
                                "diag_positive_only", "diag_modify_input", "diag_patch_torch", "gemm_ok",
                                "gemm_cudnn_benchmark", "gelu_memo_content", "rk_gelu_inline", "rk_torch_only"};
    for (size_t i = 0; i < sizeof fatal_free / sizeof fatal_free[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "tests/fixtures/kernelbench/candidates/%s.py", fatal_free[i]);
        char *text;
        size_t len;
        rl_err err;
        cr_assert_eq(rl_file_read_all(path, &text, &len, &err), 0, "%s", err.msg);
        rl_kstatic st;
        rl_kstatic_check_py(text, len, KB, &st);
        free(text);
        cr_assert_eq(st.n_fatal, 0, "%s: fatal finding %s", path, st.n ? st.items[0].detail : "");
    }
    char *text;
    size_t len;
    rl_err err;
    cr_assert_eq(rl_file_read_all("tests/fixtures/kernelbench/candidates/gemm_tf32.py", &text, &len, &err), 0, "%s", err.msg);
    rl_kstatic st;
    rl_kstatic_check_py(text, len, KB, &st);
    free(text);
    const rl_kfinding *f = find(&st, "global_state");
    cr_assert(f && !f->fatal && f->line == 9 && st.n_fatal == 0, "gemm_tf32: %s", st.n ? st.items[0].detail : "no finding");
}
