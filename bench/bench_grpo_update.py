"""bench_grpo_update.py — the GRPO policy update of bench/bench_grpo_update.c in PyTorch +
transformers: per micro-batch forward to token log-probs, the clipped objective (DAPO
clip-higher 0.2 / 0.28, no KL), backward; then one fused AdamW step.

usage: python3 bench/bench_grpo_update.py CONFIG_JSON N_SEQS SEQLEN [MICRO_SEQS] [REPEATS]
       [--modes bf16,amp]
Same batch layout as the C side: a prompt of SEQLEN // 3 tokens, the rest the completion
(the loss mask), one advantage per sequence uniform in [-1.5, 1.5], weights 1 / (completion
length * N_SEQS), old log-probs = the model's own before the update plus uniform noise in
[-0.1, 0.1]. Modes as in bench_model_step.py (bf16: bf16 parameters and optimizer state; amp:
fp32 parameters, bf16 autocast). SDPA attention. Two warm-ups, REPEATS timed updates with CUDA
events, median:
  "torch grpo mode=<m> n=<N> s=<S> micro=<M> ms=<median> tokens_per_s=<rate>" """
import gc
import statistics
import sys

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def token_logp(model, ids, amp):
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
        logits = model(input_ids=ids).logits[:, :-1].float()
    return torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)


def run(config, mode, n_seqs, seqlen, micro, repeats):
    torch.cuda.empty_cache()
    torch.manual_seed(0)
    amp = mode == "amp"
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    model = model.to(torch.float32 if amp else torch.bfloat16).cuda()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, betas=(0.9, 0.999), weight_decay=0.0, fused=True)
    tokens = torch.randint(0, config.vocab_size, (n_seqs, seqlen), device="cuda")
    prompt = seqlen // 3
    adv = (torch.rand(n_seqs, 1, device="cuda") * 3 - 1.5).expand(n_seqs, seqlen - 1)
    weight = torch.zeros(n_seqs, seqlen - 1, device="cuda")
    weight[:, prompt - 1:] = 1.0 / ((seqlen - prompt) * n_seqs)  # logp column j scores token j + 1
    with torch.no_grad():
        old = torch.cat([token_logp(model, tokens[i:i + micro], amp) for i in range(0, n_seqs, micro)])
    old += torch.rand_like(old) * 0.2 - 0.1

    def update():
        opt.zero_grad(set_to_none=True)
        for i in range(0, n_seqs, micro):
            logp = token_logp(model, tokens[i:i + micro], amp)
            ratio = torch.exp(logp - old[i:i + micro])
            a = adv[i:i + micro]
            s = torch.minimum(ratio * a, torch.clamp(ratio, 1 - 0.2, 1 + 0.28) * a)
            (-(s * weight[i:i + micro]).sum()).backward()
        opt.step()

    for _ in range(2):
        update()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        update()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    ms = statistics.median(times)
    print(f"torch grpo mode={mode} n={n_seqs} s={seqlen} micro={micro} ms={ms:.2f} "
          f"tokens_per_s={n_seqs * seqlen / (ms * 1e-3):.0f}", flush=True)
    del model, opt
    gc.collect()


def main():
    args = sys.argv[1:]
    modes = ["bf16", "amp"]
    if "--modes" in args:
        i = args.index("--modes")
        modes = args[i + 1].split(",")
        del args[i:i + 2]
    if len(args) < 3:
        print("usage: bench_grpo_update.py CONFIG_JSON N_SEQS SEQLEN [MICRO_SEQS] [REPEATS] [--modes ..]",
              file=sys.stderr)
        return 2
    n_seqs, seqlen = int(args[1]), int(args[2])
    micro = int(args[3]) if len(args) > 3 else 16
    repeats = int(args[4]) if len(args) > 4 else 5
    config = AutoConfig.from_pretrained(args[0])
    for mode in modes:
        run(config, mode, n_seqs, seqlen, micro, repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
