#!/usr/bin/env python3
"""make_value_fixtures.py — a tiny value model (Qwen3ForTokenClassification, one label) and what
transformers computes with it, for tests/model/test_value.c.

From tests/fixtures/models/qwen3-tiny-untied (tools/make_tiny_models.py) it builds, with
transformers' own classes, Qwen3ForTokenClassification with num_labels = 1 (the trunk is the
causal model's; lm_head.weight is dropped; score.weight ~ 0.5 N(0, 1) and score.bias = 0.3, so
that neither is left at a value a loader could get right by accident) and writes:

  tests/fixtures/models/qwen3-tiny-value/   save_pretrained, fp32
  tests/fixtures/model/qwen3-tiny-value.json         the packed batch (tokens, cu_seqlens) and
                                                     loss weights
  tests/fixtures/model/qwen3-tiny-value.safetensors  fp32:
      score    [n_tokens]  transformers' logits[..., 0] of every position, each sequence alone
      values   [n_tokens]  rlc's alignment (model.h): values[t] = score[t - 1], 0 at each
                           sequence's first token
      grad.<HF name>       d loss / d parameter, loss = sum_t weights[t] * values[t]

fp32, eager attention, eval mode (no dropout); deterministic. Runs where torch and transformers
are (the GPU machine), on its CPU. The first argument replaces the repository root.
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoConfig, Qwen3ForTokenClassification

SEQ_LENS = [9, 16, 5]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    src = os.path.join(root, "tests", "fixtures", "models", "qwen3-tiny-untied")
    model_dir = os.path.join(root, "tests", "fixtures", "models", "qwen3-tiny-value")
    out_dir = os.path.join(root, "tests", "fixtures", "model")
    torch.set_num_threads(2)
    config = AutoConfig.from_pretrained(src)
    config.num_labels = 1
    config.architectures = ["Qwen3ForTokenClassification"]
    model = Qwen3ForTokenClassification.from_pretrained(src, config=config, dtype=torch.float32,
                                                        attn_implementation="eager")
    gen = torch.Generator().manual_seed(211)
    with torch.no_grad():
        model.score.weight.copy_(0.5 * torch.randn(model.score.weight.shape, generator=gen))
        model.score.bias.fill_(0.3)
    model.eval()
    model.save_pretrained(model_dir, safe_serialization=True)

    vocab = config.vocab_size
    seqs = [torch.randint(0, vocab, (n,), generator=gen) for n in SEQ_LENS]
    cu = [0]
    for s in seqs:
        cu.append(cu[-1] + len(s))
    weights = torch.randn(cu[-1], generator=gen)
    weights[torch.rand(cu[-1], generator=gen) < 0.25] = 0.0

    model.zero_grad()
    scores, values = [], []
    for s in seqs:
        score = model(s[None]).logits[0, :, 0]
        scores.append(score)
        values.append(torch.cat([torch.zeros(1), score[:-1]]))
    score = torch.cat(scores)
    value = torch.cat(values)
    loss = (weights * value).sum()
    loss.backward()
    out = {"score": score.detach(), "values": value.detach()}
    for name, p in model.named_parameters():
        out["grad." + name] = p.grad.detach().clone()
    meta = {"model": "qwen3-tiny-value", "tokens": torch.cat(seqs).tolist(), "cu_seqlens": cu,
            "weights": weights.tolist(), "loss": loss.item()}
    with open(os.path.join(out_dir, "qwen3-tiny-value.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    path = os.path.join(out_dir, "qwen3-tiny-value.safetensors")
    save_file({k: v.float().contiguous() for k, v in out.items()}, path)
    print(f"{path}: {len(out)} tensors; loss {loss.item():.6f}; params "
          f"{sorted(n for n, _ in model.named_parameters())[-3:]}")


if __name__ == "__main__":
    main()
