/* kernel_timeline.c — the GPU's real timeline of a run: a CUPTI injection library that writes
 * every kernel's and copy's start and end (ns, GPU clock) to $RLC_TIMELINE, one line each:
 *     k|m START END GRAPH_ID STREAM NAME
 * Kernels are recorded as they run (CUPTI's concurrent-kernel activity: no serialisation, PDL
 * overlap and CUDA-graph replays as they are), unlike ncu's per-kernel durations. CUPTI adds
 * about 0.2-0.3 ms of host time to each graph launch, so gaps between steps are inflated;
 * kernel times within a step are not. tools/timeline_steps.py summarises decode steps.
 *
 *   built by scripts/gpu-prepare.sh into build/cudah/tools/libkernel_timeline.so (libcupti in .devlibs);
 *   CUDA_INJECTION64_PATH=$PWD/build/cudah/tools/libkernel_timeline.so RLC_TIMELINE=/tmp/t.txt \
 *       build/cudah/bench/bench_generate bench/configs/qwen3-0.6b.json e
 *   python3 tools/timeline_steps.py /tmp/t.txt */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

static FILE *out;

static int ok(CUptiResult r, const char *what)
{
    if (r == CUPTI_SUCCESS) return 1;
    const char *msg = NULL;
    cuptiGetResultString(r, &msg);
    fprintf(stderr, "kernel_timeline: %s: %s\n", what, msg ? msg : "unknown CUPTI error");
    return 0;
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *size = (size_t)8 << 20;
    *buf = aligned_alloc(8, *size);
    if (!*buf) *size = 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext c, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    (void)c, (void)stream, (void)size;
    CUpti_Activity *rec = NULL;
    for (;;) {
        CUptiResult r = cuptiActivityGetNextRecord(buf, valid, &rec);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED || !ok(r, "reading a record")) break;
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            fprintf(out, "k %llu %llu %u %u %s\n", (unsigned long long)k->start, (unsigned long long)k->end,
                    k->graphId, k->streamId, k->name);
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
            fprintf(out, "m %llu %llu %u %u copy%u_%llu\n", (unsigned long long)m->start, (unsigned long long)m->end,
                    m->graphId, m->streamId, m->copyKind, (unsigned long long)m->bytes);
        }
    }
    size_t dropped = 0;
    if (ok(cuptiActivityGetNumDroppedRecords(c, stream, &dropped), "counting dropped records") && dropped)
        fprintf(stderr, "kernel_timeline: %zu records dropped\n", dropped);
    free(buf);
}

static void finish(void)
{
    ok(cuptiActivityFlushAll(1), "flushing the records");
    if (fclose(out)) perror("kernel_timeline: closing $RLC_TIMELINE");
}

/* Called by the CUDA driver when CUDA_INJECTION64_PATH names this library. */
int InitializeInjection(void)
{
    const char *path = getenv("RLC_TIMELINE");
    if (!path || !*path) {
        fprintf(stderr, "kernel_timeline: set RLC_TIMELINE to the file to write\n");
        return 0;
    }
    out = fopen(path, "w");
    if (!out) {
        perror(path);
        return 0;
    }
    if (!ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "registering buffers") ||
        !ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enabling kernel records") ||
        !ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enabling copy records")) {
        fclose(out);
        return 0;
    }
    atexit(finish);
    return 1;
}
