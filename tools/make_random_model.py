"""make_random_model.py — a randomly initialised Hugging Face checkpoint of any Qwen3 config, as
transformers initialises one, for benchmarks (scripts/dist-bench.sh: Qwen3-0.6B and Qwen3-8B).
Nothing it writes is committed.

usage: python3 tools/make_random_model.py CONFIG_JSON OUT_DIR [--dtype bfloat16|float32] [--seed N]

Builds the model on the GPU when there is one (an 8B model initialises in seconds there), writes
OUT_DIR/config.json and safetensors shards of at most 5 GB with their index (save_pretrained)."""
import argparse
import json

import torch
from transformers import AutoModelForCausalLM, Qwen3Config


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("out_dir")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    with open(args.config) as f:
        values = json.load(f)
    values.pop("architectures", None)
    values.pop("model_type", None)
    values.pop("torch_dtype", None)
    config = Qwen3Config(**values)
    dtype = getattr(torch, args.dtype)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
    model.save_pretrained(args.out_dir, safe_serialization=True, max_shard_size="5GB")
    n = sum(p.numel() for p in model.parameters())
    print(f"{args.out_dir}: {n / 1e9:.3f}B parameters ({args.dtype}) from {args.config}")


if __name__ == "__main__":
    main()
