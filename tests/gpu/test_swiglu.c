/* test_swiglu.c — CUDA SwiGLU forward and backward, separate buffers and the fused gate_up
 * layout (in_stride = 2 dim), against the CPU op. Tolerance: bf16 outputs 2e-2. */
#include "gpu_util.h"

static void run(int n_rows, int dim, int fused, uint64_t seed)
{
    gu g;
    gu_begin(&g);
    int stride = fused ? 2 * dim : dim;
    size_t n_in = (size_t)n_rows * stride, n = (size_t)n_rows * dim;
    float *gate = gu_rand(&g, n_in, -4, 4, seed), *up = gu_rand(&g, n_in, -2, 2, seed + 1);
    void *d_gate = gu_up_bf16(&g, gate, n_in);
    void *d_up = fused ? (char *)d_gate + (size_t)dim * 2 : gu_up_bf16(&g, up, n_in);
    const float *up_h = fused ? gate + dim : up;
    void *d_out = gu_nan_bf16(&g, n);
    GU_OK(&g, rl_swiglu_fwd(&g.gpu, d_out, d_gate, d_up, n_rows, dim, stride));
    float *out = gu_host(&g, n * sizeof(float));
    GU_CPU_OK(&g, rl_cpu_swiglu_fwd(&g.cpu, out, gate, up_h, n_rows, dim, stride));
    char what[96];
    snprintf(what, sizeof what, "swiglu_fwd R%d D%d fused%d", n_rows, dim, fused);
    gu_check(what, gu_get_bf16(&g, d_out, n), out, n, 2e-2);

    float *dout = gu_rand(&g, n, -1, 1, seed + 2);
    void *d_dgate = gu_nan_bf16(&g, n_in);
    void *d_dup = fused ? (char *)d_dgate + (size_t)dim * 2 : gu_nan_bf16(&g, n_in);
    GU_OK(&g, rl_swiglu_bwd(&g.gpu, d_dgate, d_dup, gu_up_bf16(&g, dout, n), d_gate, d_up, n_rows, dim, stride));
    float *dgate = gu_host(&g, n_in * sizeof(float)), *dup_sep = gu_host(&g, n_in * sizeof(float));
    float *dup = fused ? dgate + dim : dup_sep;
    GU_CPU_OK(&g, rl_cpu_swiglu_bwd(&g.cpu, dgate, dup, dout, gate, up_h, n_rows, dim, stride));
    snprintf(what, sizeof what, "swiglu_bwd dgate(+dup) R%d D%d fused%d", n_rows, dim, fused);
    gu_check(what, gu_get_bf16(&g, d_dgate, n_in), dgate, n_in, 2e-2);
    if (!fused) {
        snprintf(what, sizeof what, "swiglu_bwd dup R%d D%d", n_rows, dim);
        gu_check(what, gu_get_bf16(&g, d_dup, n_in), dup, n_in, 2e-2);
    }
    gu_end(&g);
}

Test(gpu_swiglu, separate_odd) { run(37, 101, 0, 41); }
Test(gpu_swiglu, fused) { run(129, 768, 1, 42); }
Test(gpu_swiglu, separate_wide) { run(1000, 3072, 0, 43); } /* the 8-wide path, as the models call it */
Test(gpu_swiglu, fused_odd_rows) { run(333, 1032, 1, 44); }
