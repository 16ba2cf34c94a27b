#!/usr/bin/env python3
"""check_hf_roundtrip.py — does a checkpoint written by rlc load in transformers and compute the
same logits as the checkpoint it came from?

  check_hf_roundtrip.py OUT_DIR SOURCE_DIR   one checkpoint written by rlc vs its source
  check_hf_roundtrip.py ROOT                  every ROOT/<name>/ vs tests/fixtures/models/<name>/
                                              (build/hf_roundtrip is filled by
                                               build/tests/io/test_safetensors)

For each pair: AutoModelForCausalLM.from_pretrained on both (no missing / unexpected keys
allowed), every parameter bit-identical, same config values, and the logits for a fixed
batch of random token ids identical. Exits 1 on any difference.
"""
import os
import sys

import torch
from transformers import AutoConfig, AutoModelForCausalLM

CONFIG_FIELDS = ["model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                 "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
                 "rms_norm_eps", "tie_word_embeddings", "bos_token_id", "eos_token_id", "dtype",
                 "rope_parameters", "architectures"]


def load(path):
    model, info = AutoModelForCausalLM.from_pretrained(path, output_loading_info=True, dtype="auto")
    bad = {k: v for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    if bad:
        raise SystemExit(f"{path}: loading info {bad}")
    return model.eval()


def compare(out, src):
    problems = []
    c_out, c_src = AutoConfig.from_pretrained(out), AutoConfig.from_pretrained(src)
    for field in CONFIG_FIELDS:
        a, b = getattr(c_out, field, None), getattr(c_src, field, None)
        if a != b:
            problems.append(f"config {field}: {a!r} != {b!r}")
    m_out, m_src = load(out), load(src)
    p_out, p_src = dict(m_out.named_parameters()), dict(m_src.named_parameters())
    if p_out.keys() != p_src.keys():
        problems.append(f"parameter names differ: {sorted(p_out.keys() ^ p_src.keys())}")
    for name in sorted(p_out.keys() & p_src.keys()):
        a, b = p_out[name], p_src[name]
        if a.dtype != b.dtype or a.shape != b.shape or not torch.equal(a, b):
            problems.append(f"parameter {name}: {a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}")
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, c_src.vocab_size, (2, 17), generator=gen)
    with torch.no_grad():
        l_out, l_src = m_out(ids).logits.float(), m_src(ids).logits.float()
    diff = (l_out - l_src).abs().max().item()
    if diff != 0.0:
        problems.append(f"logits differ, max abs {diff:g}")
    print(f"{out}: {'OK' if not problems else 'FAIL'}  ({len(p_src)} parameters, logits {tuple(l_src.shape)}, "
          f"max |logit diff| {diff:g}, dtype {next(m_out.parameters()).dtype})")
    for p in problems:
        print("   ", p)
    return not problems


def main():
    if len(sys.argv) == 3:
        pairs = [(sys.argv[1], sys.argv[2])]
    elif len(sys.argv) == 2:
        root = sys.argv[1]
        pairs = [(os.path.join(root, n), os.path.join("tests", "fixtures", "models", n))
                 for n in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, n))]
        if not pairs:
            raise SystemExit(f"{root}: no checkpoint directories")
    else:
        raise SystemExit(__doc__)
    ok = all([compare(out, src) for out, src in pairs])
    print("all checkpoints round-trip" if ok else "ROUND TRIP FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
