"""bench_attention.py — torch's flash attention (scaled_dot_product_attention with the flash
backend), forward and backward, timed like bench/bench_attention.c for a side-by-side table.

usage: python3 bench/bench_attention.py BATCH SEQLEN [N_HEADS HEAD_DIM REPEATS]
Causal, bf16, q/k/v [batch, heads, seqlen, head_dim]. Two warm-up runs, then REPEATS timed runs
with CUDA events; the median is printed. Backward is torch.autograd.grad of the output with a
random gradient (the forward graph is kept, so only the backward is timed). FLOPs as
FlashAttention counts them (forward 4 b h s^2 d / 2 causal, backward 2.5x). Output lines:
  "torch fwd b=<B> s=<S> ms=<median> tflops=<rate>"  (and "torch bwd ...")."""
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def timed(fn, repeats):
    for _ in range(2):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    if len(sys.argv) < 3:
        print("usage: bench_attention.py BATCH SEQLEN [N_HEADS HEAD_DIM REPEATS]", file=sys.stderr)
        return 2
    batch, seqlen = int(sys.argv[1]), int(sys.argv[2])
    n_heads = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    head_dim = int(sys.argv[4]) if len(sys.argv) > 4 else 128
    repeats = int(sys.argv[5]) if len(sys.argv) > 5 else 10
    gen = torch.Generator(device="cuda").manual_seed(0)
    shape = (batch, n_heads, seqlen, head_dim)
    q, k, v, dout = (torch.rand(shape, device="cuda", generator=gen, dtype=torch.bfloat16) * 2 - 1 for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(True)
    fwd_flops = 4.0 * batch * n_heads * seqlen * seqlen * head_dim / 2
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        with torch.no_grad():
            ms = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), repeats)
        print(f"torch fwd b={batch} s={seqlen} ms={ms:.4f} tflops={fwd_flops / (ms * 1e-3) / 1e12:.2f}")
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        ms = timed(lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True), repeats)
        print(f"torch bwd b={batch} s={seqlen} ms={ms:.4f} tflops={2.5 * fwd_flops / (ms * 1e-3) / 1e12:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
