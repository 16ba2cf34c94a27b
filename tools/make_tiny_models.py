#!/usr/bin/env python3
"""make_tiny_models.py — tiny random Hugging Face checkpoints for the rlc tests.

Writes, with transformers' own save_pretrained, into tests/fixtures/models/ (or the directory
given as the first argument):

  qwen3-tiny-tied     Qwen3, tied embeddings, fp32      (vocab 512, hidden 64, 2 layers, 4/2 heads, head_dim 16)
  qwen3-tiny-untied   Qwen3, untied, bf16               (vocab 384, hidden 96, 3 layers, 6/2 heads, head_dim 32)
  qwen3-tiny-sharded  Qwen3 like -tied, bf16, split into several shards + model.safetensors.index.json
  qwen2-tiny          Qwen2 (q/k/v biases, no q/k norm), fp32
  llama3-tiny         Llama 3 (llama3 RoPE scaling), fp32

Norm weights and biases are randomised too (not left at 1 / 0) so that a loader that skips
them fails the logits comparisons. Deterministic: same seeds, same files (for the same
torch / transformers versions). Each directory stays under 1 MB.
"""
import os
import shutil
import sys

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config, Qwen3Config

COMMON = dict(initializer_range=0.05, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=[2, 3],
              pad_token_id=None, use_cache=True)


def build(config, seed, dtype):
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
    model.eval()
    return model.to(dtype)


def save(model, out, name, **kw):
    path = os.path.join(out, name)
    shutil.rmtree(path, ignore_errors=True)
    model.save_pretrained(path, **kw)
    size = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    print(f"{path}: {sorted(os.listdir(path))} {size} bytes")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join("tests", "fixtures", "models")
    os.makedirs(out, exist_ok=True)

    tied = Qwen3Config(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                       max_position_embeddings=1024, rope_theta=1000000.0,
                       tie_word_embeddings=True, **COMMON)
    save(build(tied, 1, torch.float32), out, "qwen3-tiny-tied")

    untied = Qwen3Config(vocab_size=384, hidden_size=96, intermediate_size=160, num_hidden_layers=3,
                         num_attention_heads=6, num_key_value_heads=2, head_dim=32,
                         max_position_embeddings=2048, rope_theta=10000.0,
                         tie_word_embeddings=False, **COMMON)
    save(build(untied, 2, torch.bfloat16), out, "qwen3-tiny-untied")

    save(build(tied, 3, torch.bfloat16), out, "qwen3-tiny-sharded", max_shard_size="100KB")

    qwen2 = Qwen2Config(vocab_size=256, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                        rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False,
                        **COMMON)
    save(build(qwen2, 4, torch.float32), out, "qwen2-tiny")

    llama = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=1, max_position_embeddings=512,
                        rope_theta=10000.0, tie_word_embeddings=False,
                        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                          high_freq_factor=4.0, original_max_position_embeddings=64),
                        **COMMON)
    save(build(llama, 5, torch.float32), out, "llama3-tiny")


if __name__ == "__main__":
    main()
