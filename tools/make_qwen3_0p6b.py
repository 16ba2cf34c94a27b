"""make_qwen3_0p6b.py — a randomly initialised Qwen3-0.6B and transformers' references for it,
for the whole-model parity check bench/compare_qwen3.c (run on the GPU machine; nothing it
writes is committed: the checkpoint alone is 2.4 GB).

usage: python3 tools/make_qwen3_0p6b.py OUT_DIR [--seed N]

Writes
  OUT_DIR/model/            config.json + model.safetensors (fp32), by save_pretrained; the real
                            Qwen3-0.6B configuration (bench/configs/qwen3-0.6b.json's values)
  OUT_DIR/ref.json          the packed batch: tokens, cu_seqlens, loss weights (a random mask
                            times a random sign and size, as a trainer's advantages would be)
  OUT_DIR/ref.safetensors   logp_fp32, logp_bf16 (per-token log-probs, aligned with the token
                            they score, 0 at each sequence's first token), grad.<name> (fp32
                            gradients of sum_t weights[t] * logp_fp32[t])

The fp32 references run with TF32 off (true fp32 matrix products); the bf16 ones are the model
cast to bf16 with the logits upcast to fp32 before log_softmax, as a PyTorch trainer computes
them. Each sequence runs on its own (no padding), SDPA attention. """
import argparse
import json
import os

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, Qwen3Config

SEQ_LENS = [500, 311, 137, 256]

CONFIG = dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
              num_attention_heads=16, num_key_value_heads=8, head_dim=128, tie_word_embeddings=True,
              rope_theta=1000000.0, rms_norm_eps=1e-6, max_position_embeddings=40960,
              attention_bias=False, hidden_act="silu", bos_token_id=151643, eos_token_id=151645)


def seq_logp(model, ids):
    """Token-aligned log-probs of one sequence (1-D ids on the GPU), fp32."""
    logits = model(ids[None]).logits[0].float()
    logsm = torch.log_softmax(logits, dim=-1)
    logp = torch.zeros(len(ids), device=ids.device)
    logp[1:] = logsm[:-1].gather(1, ids[1:, None])[:, 0]
    return logp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(args.seed)
    dev = "cuda" if torch.cuda.is_available() else "cpu"

    config = Qwen3Config(**CONFIG)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").float()
    model_dir = os.path.join(args.out_dir, "model")
    model.save_pretrained(model_dir, safe_serialization=True)
    model = model.to(dev)
    model.eval()  # no dropout either way; eval only silences training-mode switches

    gen = torch.Generator().manual_seed(args.seed + 1)
    seqs = [torch.randint(0, config.vocab_size, (n,), generator=gen) for n in SEQ_LENS]
    cu = [0]
    for s in seqs:
        cu.append(cu[-1] + len(s))
    n_tokens = cu[-1]
    weights = torch.randn(n_tokens, generator=gen) / n_tokens
    weights[torch.rand(n_tokens, generator=gen) < 0.3] = 0.0
    seqs_dev = [s.to(dev) for s in seqs]

    out = {}
    model.zero_grad()
    logp = torch.cat([seq_logp(model, s) for s in seqs_dev])
    (weights.to(dev) * logp).sum().backward()
    out["logp_fp32"] = logp.detach()
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad.detach()
    model.zero_grad(set_to_none=True)

    model = model.to(torch.bfloat16)
    with torch.no_grad():
        out["logp_bf16"] = torch.cat([seq_logp(model, s) for s in seqs_dev])

    with open(os.path.join(args.out_dir, "ref.json"), "w") as f:
        json.dump({"tokens": torch.cat(seqs).tolist(), "cu_seqlens": cu, "weights": weights.tolist()}, f)
    save_file({k: v.float().contiguous().cpu() for k, v in out.items()}, os.path.join(args.out_dir, "ref.safetensors"))
    d = (out["logp_bf16"] - out["logp_fp32"]).abs()
    print(f"make_qwen3_0p6b: {model_dir}, {n_tokens} tokens in {len(seqs)} sequences, {len(out)} reference "
          f"tensors; transformers bf16 vs fp32 logp max {d.max().item():.4g} mean {d.mean().item():.4g}")


if __name__ == "__main__":
    main()
