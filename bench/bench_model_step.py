"""bench_model_step.py — the training step of bench/bench_model_step.c in PyTorch + transformers:
forward to token log-probs, backward of the mean negative log-likelihood, AdamW (fused).

usage: python3 bench/bench_model_step.py CONFIG_JSON BATCH SEQLEN [REPEATS]
Random init from CONFIG_JSON in bf16 (working weights bf16, as rlc's forward; torch keeps no
fp32 masters here, so it moves fewer bytes in AdamW), SDPA attention (flash), batch of BATCH x
SEQLEN random tokens. Two warm-ups, REPEATS timed steps (default 5) with CUDA events, median:
  "torch step b=<B> s=<S> ms=<median> tokens_per_s=<rate>" """
import statistics
import sys

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def main():
    if len(sys.argv) < 4:
        print("usage: bench_model_step.py CONFIG_JSON BATCH SEQLEN [REPEATS]", file=sys.stderr)
        return 2
    batch, seqlen = int(sys.argv[2]), int(sys.argv[3])
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    config = AutoConfig.from_pretrained(sys.argv[1])
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.bfloat16, attn_implementation="sdpa").cuda()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, betas=(0.9, 0.95), weight_decay=0.0, fused=True)
    tokens = torch.randint(0, config.vocab_size, (batch, seqlen), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
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
    print(f"torch step b={batch} s={seqlen} ms={ms:.2f} tokens_per_s={batch * seqlen / (ms * 1e-3):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
