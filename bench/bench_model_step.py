"""bench_model_step.py — the training step of bench/bench_model_step.c in PyTorch + transformers:
forward to token log-probs, backward of the mean negative log-likelihood, AdamW (fused).

usage: python3 bench/bench_model_step.py CONFIG_JSON BATCH SEQLEN [REPEATS] [--modes M,M,..]
Modes (default bf16,bf16-checkpoint,amp):
  bf16             parameters, gradients and AdamW moments in bf16 (no fp32 masters: fewer bytes
                   than rlc moves and holds), the usual "pure bf16" eager setup
  bf16-checkpoint  the same with transformers' gradient checkpointing (one recompute per layer)
  amp              fp32 parameters, gradients and moments, bf16 autocast: the same numerics and
                   optimizer state as rlc (fp32 masters)
Random init from CONFIG_JSON, SDPA attention (flash), BATCH x SEQLEN random tokens. Two
warm-ups, REPEATS timed steps (default 5) with CUDA events, median. Peak memory is
torch.cuda.max_memory_allocated over the whole run of the mode (model, optimizer state and every
step), reset between modes:
  "torch step mode=<m> b=<B> s=<S> ms=<median> tokens_per_s=<rate> mfu=<x> peak_gib=<GiB>" """
import gc
import statistics
import sys

import torch
from transformers import AutoConfig, AutoModelForCausalLM

PEAK_BF16_FLOPS = 989e12


def run(config, mode, batch, seqlen, repeats):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(0)
    dtype = torch.float32 if mode == "amp" else torch.bfloat16
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").to(dtype).cuda()
    if mode == "bf16-checkpoint":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, betas=(0.9, 0.95), weight_decay=0.0, fused=True)
    tokens = torch.randint(0, config.vocab_size, (batch, seqlen), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=(mode == "amp")):
            logits = model(input_ids=tokens).logits[:, :-1].float()
        logp = torch.log_softmax(logits, dim=-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)
        (-logp.mean()).backward()
        opt.step()

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    ms = statistics.median(times)
    rate = batch * seqlen / (ms * 1e-3)
    peak = torch.cuda.max_memory_allocated() / 2**30
    print(f"torch step mode={mode} b={batch} s={seqlen} ms={ms:.2f} tokens_per_s={rate:.0f} "
          f"mfu={6 * n_params * rate / PEAK_BF16_FLOPS:.3f} peak_gib={peak:.2f}", flush=True)
    del model, opt, tokens
    gc.collect()


def main():
    args = [a for a in sys.argv[1:]]
    modes = ["bf16", "bf16-checkpoint", "amp"]
    if "--modes" in args:
        i = args.index("--modes")
        modes = args[i + 1].split(",")
        del args[i:i + 2]
    if len(args) < 3:
        print("usage: bench_model_step.py CONFIG_JSON BATCH SEQLEN [REPEATS] [--modes M,M,..]", file=sys.stderr)
        return 2
    batch, seqlen = int(args[1]), int(args[2])
    repeats = int(args[3]) if len(args) > 3 else 5
    config = AutoConfig.from_pretrained(args[0])
    for mode in modes:
        run(config, mode, batch, seqlen, repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
