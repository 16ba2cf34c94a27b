/* wk_profile.cu — per-kernel GPU times for the worker's --profile (the `profile` tool of a
 * kernel episode): CUPTI activity records of the kernels one call launches, each with its
 * start and end on the GPU. libcupti is dlopened at run time (RLC_CUPTI, then the loader's
 * path, then the toolkit's places), so the worker needs it only when profiling, and a machine
 * without it gets an error line in the result instead of times. */
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

#include "wk.h"

typedef CUptiResult (*register_fn)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*kind_fn)(CUpti_ActivityKind);
typedef CUptiResult (*flush_fn)(uint32_t);
typedef CUptiResult (*next_fn)(uint8_t *, size_t, CUpti_Activity **);

static struct {
    int loaded; /* 0 not tried, 1 ok, -1 failed */
    register_fn reg;
    kind_fn enable, disable;
    flush_fn flush;
    next_fn next;
    std::vector<wk_prof_kernel> *into;
} P;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *size = 1 << 20;
    *buffer = (uint8_t *)aligned_alloc(8, *size);
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t *buffer, size_t, size_t valid)
{
    CUpti_Activity *rec = NULL;
    while (P.into && P.next(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        int status = -1;
        char *plain = k->name ? abi::__cxa_demangle(k->name, NULL, NULL, &status) : NULL;
        std::string name = status == 0 && plain ? plain : k->name ? k->name : "?";
        free(plain);
        double ms = (double)(k->end - k->start) / 1e6;
        int found = 0;
        for (auto &e : *P.into)
            if (e.name == name) e.calls++, e.ms += ms, found = 1;
        if (!found) P.into->push_back(wk_prof_kernel{name, 1, ms});
    }
    free(buffer);
}

static int load(char *why, size_t size)
{
    if (P.loaded) return P.loaded > 0 ? 0 : (snprintf(why, size, "CUPTI is not available"), -1);
    P.loaded = -1;
    const char *env = getenv("RLC_CUPTI"), *cuda = getenv("CUDA_HOME");
    std::string toolkit = std::string(cuda && *cuda ? cuda : "/usr/local/cuda");
    std::string names[] = {env ? env : "", "libcupti.so.13", "libcupti.so", toolkit + "/extras/CUPTI/lib64/libcupti.so",
                           toolkit + "/lib64/libcupti.so", toolkit + "/lib/libcupti.so"};
    void *h = NULL;
    for (auto &n : names)
        if (!n.empty() && (h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) != NULL) break;
    if (!h) return snprintf(why, size, "libcupti not found (set RLC_CUPTI to its path)"), -1;
    P.reg = (register_fn)dlsym(h, "cuptiActivityRegisterCallbacks");
    P.enable = (kind_fn)dlsym(h, "cuptiActivityEnable");
    P.disable = (kind_fn)dlsym(h, "cuptiActivityDisable");
    P.flush = (flush_fn)dlsym(h, "cuptiActivityFlushAll");
    P.next = (next_fn)dlsym(h, "cuptiActivityGetNextRecord");
    if (!P.reg || !P.enable || !P.disable || !P.flush || !P.next) return snprintf(why, size, "libcupti lacks the activity API"), -1;
    CUptiResult r = P.reg(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) return snprintf(why, size, "cuptiActivityRegisterCallbacks failed (%d)", (int)r), -1;
    P.loaded = 1;
    return 0;
}

int wk_profile_call(rl_kernel_fn fn, const rl_kernel_args *a, std::vector<wk_prof_kernel> &out, char *why, size_t size)
{
    out.clear();
    if (load(why, size)) return -1;
    cudaDeviceSynchronize();
    CUptiResult r = P.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) return snprintf(why, size, "cuptiActivityEnable failed (%d)", (int)r), -1;
    int rc = fn(a);
    cudaError_t e = cudaDeviceSynchronize();
    P.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    P.into = &out;
    P.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    P.into = NULL;
    if (rc != 0 || e != cudaSuccess) return snprintf(why, size, "the profiled call failed (rc %d, %s)", rc, cudaGetErrorName(e)), -1;
    return 0;
}
