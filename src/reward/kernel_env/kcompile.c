/* kcompile.c — see kcompile.h. */
#include "reward/kernel_env/kcompile.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file.h"
#include "reward/kernel_env/kproc.h"
#include "reward/kernel_env/kspec.h"

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

int rl_kcompile(const char *source, size_t len, int library, const rl_kcompile_opts *opt,
                rl_kcompile_result *res, rl_err *err)
{
    memset(res, 0, sizeof *res);
    char gencode[64], include[4200];
    snprintf(gencode, sizeof gencode, "-gencode=arch=compute_%s,code=sm_%s", opt->arch, opt->arch);
    snprintf(include, sizeof include, "-I%s", opt->include_dir);
    char *argv[32] = {(char *)opt->nvcc, "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC", "-cudart",
                      "shared", gencode, include, "-Xlinker", "--no-undefined"};
    int argc = 12;
    int src_at = argc++, dash_o = argc++, out_at = argc++;
    if (library & RL_KLIB_CUBLAS) argv[argc++] = "-lcublas", argv[argc++] = "-lcublasLt";
    if (library & RL_KLIB_CUDNN) argv[argc++] = "-lcudnn";
    argv[argc] = NULL;

    /* The hash covers the source and every flag (the include path too); not the compiler's
     * version: clear the cache after a CUDA upgrade. */
    uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
    h1 = fnv1a(h1, source, len);
    h2 = fnv1a(h2, source, len);
    for (int i = 0; i < argc; i++)
        if (i != src_at && i != dash_o && i != out_at) {
            h1 = fnv1a(h1, argv[i], strlen(argv[i]) + 1);
            h2 = fnv1a(h2, argv[i], strlen(argv[i]) + 1);
        }
    if (rl_mkdir_p(opt->cache_dir, err)) return -1;
    char base[4000], src_path[4096], tmp_path[4200];
    snprintf(base, sizeof base, "%s/%016" PRIx64 "%016" PRIx64, opt->cache_dir, h1, h2);
    snprintf(res->so_path, sizeof res->so_path, "%s.so", base);
    if (rl_file_exists(res->so_path)) {
        res->ok = res->cached = 1;
        res->log = calloc(1, 1);
        return res->log ? 0 : rl_err_oom(err, "compile log", 1);
    }
    /* Temporary names are unique per process and thread: several threads may compile the
     * same source at once (the first evaluations of a batch share one reference). */
    unsigned long tid = (unsigned long)pthread_self();
    char src_tmp[4200];
    snprintf(src_path, sizeof src_path, "%s.cu", base);
    snprintf(src_tmp, sizeof src_tmp, "%s.tmp.%d.%lx.cu", base, (int)getpid(), tid);
    snprintf(tmp_path, sizeof tmp_path, "%s.tmp.%d.%lx.so", base, (int)getpid(), tid);
    FILE *fp = fopen(src_tmp, "wb");
    if (!fp) return rl_err_set(err, "%s: cannot create: %s", src_tmp, strerror(errno));
    int bad = fwrite(source, 1, len, fp) != len;
    bad |= fclose(fp) != 0;
    if (bad || rename(src_tmp, src_path)) {
        unlink(src_tmp);
        return rl_err_set(err, "%s: cannot write the source into the cache", src_path);
    }
    argv[src_at] = src_path;
    argv[dash_o] = "-o";
    argv[out_at] = tmp_path;

    rl_kproc_opts po = {0};
    po.timeout_s = opt->timeout_s;
    po.max_stdout = 256 * 1024;
    po.max_stderr = 4096;
    po.fsize_limit = (size_t)1 << 30;
    po.as_limit = (size_t)16 << 30; /* cicc and ptxas need a few GiB at most */
    po.merge_stderr = 1;
    po.nice = RL_KPROC_BUILD_NICE;
    /* Compiling untrusted source: nvcc (cicc, ptxas, the host compiler) writes only in the
     * cache, its temporary files included. */
    rl_ksandbox *sb = NULL;
    char tmp_env[4200];
    if (opt->sandbox) {
        rl_ksandbox_spec spec = {.write_dirs = {opt->cache_dir}, .read_paths = {opt->include_dir},
                                 .cpu_s = opt->timeout_s, .fsize_bytes = po.fsize_limit};
        if (rl_ksandbox_prepare(&spec, &sb, err)) return rl_err_prefix(err, "compiling %s: ", src_path);
        snprintf(tmp_env, sizeof tmp_env, "TMPDIR=%s", opt->cache_dir);
        po.env_set[0] = tmp_env;
        po.sandbox = sb;
    }
    rl_kproc_result pr;
    int run_rc = rl_kproc_run(argv, &po, &pr, err);
    rl_ksandbox_free(sb);
    if (run_rc) return rl_err_prefix(err, "compiling %s: ", src_path);
    res->seconds = pr.seconds;
    res->log = pr.out;
    pr.out = NULL;
    if (pr.exited && pr.exit_code == 127 && !rl_file_exists(tmp_path)) {
        rl_kproc_result_free(&pr);
        unlink(tmp_path);
        return rl_err_set(err, "%s: cannot run the CUDA compiler (not found?)", opt->nvcc);
    }
    if (pr.exited && pr.exit_code == 0 && rl_file_exists(tmp_path)) {
        if (rename(tmp_path, res->so_path)) {
            rl_kproc_result_free(&pr);
            unlink(tmp_path);
            return rl_err_set(err, "%s: cannot rename the compiled module into the cache", res->so_path);
        }
        res->ok = 1;
    } else {
        unlink(tmp_path);
        if (pr.timed_out) {
            char *msg = NULL;
            if (asprintf(&msg, "%scompile timed out after %.0f s\n", res->log, opt->timeout_s) > 0) {
                free(res->log);
                res->log = msg;
            }
        }
    }
    rl_kproc_result_free(&pr);
    return 0;
}

void rl_kcompile_result_free(rl_kcompile_result *res)
{
    free(res->log);
    res->log = NULL;
}
