#!/usr/bin/env python3
"""make_format_fixtures.py — reference files for the config / safetensors tests.

Writes into tests/fixtures/formats/ (or the directory given as the first argument):

  reference.safetensors  written by safetensors.torch.save_file (metadata {"format": "pt"}):
                         mixed dtypes, a scalar, an empty tensor, a non-ASCII name and a name
                         that needs JSON escapes. Element k of every tensor is
                         ((k * 7) % 23 - 11) * 0.125 (exact in fp16 and bf16), so the C test
                         can build the same tensors and compare its writer byte for byte.
  rope_inv_freq.json     RoPE inverse frequencies computed by transformers itself (the rope
                         init functions its models call) for several configs, default and
                         llama3-scaled, as fp32 bit patterns.
"""
import json
import os
import struct
import sys

import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, Qwen3Config
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding


def values(shape, dtype):
    n = 1
    for s in shape:
        n *= s
    v = torch.tensor([((k * 7) % 23 - 11) * 0.125 for k in range(n)], dtype=torch.float32)
    return v.reshape(shape).to(dtype)


def reference_file(out):
    tensors = {
        "b": values([3, 5], torch.bfloat16),
        "a": values([2, 2], torch.float32),
        "z.weight": values([7], torch.float16),
        "\u00e9": values([1], torch.float32),
        "scalar": values([], torch.float32),
        "empty": values([0, 4], torch.bfloat16),
        "q\"uote\\d\n": values([2, 1, 3], torch.bfloat16),
    }
    save_file(tensors, os.path.join(out, "reference.safetensors"), metadata={"format": "pt"})


def inv_freq(config):
    """The buffer the model's own rotary embedding module computes at construction."""
    rotary = {"qwen3": Qwen3RotaryEmbedding, "llama": LlamaRotaryEmbedding}[config.model_type](config)
    inv = rotary.inv_freq
    assert inv.dtype == torch.float32
    return [struct.unpack("<I", struct.pack("<f", float(x)))[0] for x in inv.tolist()]


def rope_file(out):
    cases = []

    def add(name, config):
        cases.append({"name": name, "config": json.loads(config.to_json_string()), "inv_freq_bits": inv_freq(config)})

    add("qwen3-0.6b-like", Qwen3Config(hidden_size=1024, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                                       rope_theta=1000000.0))
    add("qwen3-tiny", Qwen3Config(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                  rope_theta=10000.0))
    for name, theta, factor, lo, hi, orig, dim in [
        ("llama3.1-8b-like", 500000.0, 8.0, 1.0, 4.0, 8192, 128),
        ("llama3.2-1b-like", 500000.0, 32.0, 1.0, 4.0, 8192, 64),
        ("llama3-tiny", 10000.0, 8.0, 1.0, 4.0, 64, 16),
        ("llama3-odd", 20000.0, 3.5, 0.75, 2.5, 300, 48),
    ]:
        add(name, LlamaConfig(hidden_size=dim * 4, num_attention_heads=4, num_key_value_heads=2, head_dim=dim,
                              max_position_embeddings=orig * 16, rope_theta=theta,
                              rope_scaling=dict(rope_type="llama3", factor=factor, low_freq_factor=lo,
                                                high_freq_factor=hi, original_max_position_embeddings=orig)))
    with open(os.path.join(out, "rope_inv_freq.json"), "w") as f:
        json.dump(cases, f, indent=1)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join("tests", "fixtures", "formats")
    os.makedirs(out, exist_ok=True)
    reference_file(out)
    rope_file(out)
    print(sorted(os.listdir(out)))


if __name__ == "__main__":
    main()
