#!/usr/bin/env python3
"""check_demo.py: load the demo's checkpoints with transformers and re-score the held-out set.

Usage: python3 tools/check_demo.py [runs/demo]

For each of OUT/sft and OUT/grpo: AutoModelForCausalLM / AutoTokenizer.from_pretrained, greedy
generation (up to 6 new tokens) for every line of OUT/heldout.jsonl in the Qwen chat format,
and the share whose last number equals the answer. The numbers should match what `rlc demo`
printed (the same greedy decoding, in fp32; a near-tie between two tokens may flip one).
"""
import json
import re
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

out = sys.argv[1] if len(sys.argv) > 1 else "runs/demo"
rows = [json.loads(line) for line in open(f"{out}/heldout.jsonl")]
for stage in ("sft", "grpo"):
    tok = AutoTokenizer.from_pretrained(f"{out}/{stage}")
    model = AutoModelForCausalLM.from_pretrained(f"{out}/{stage}", dtype=torch.float32).eval()
    end = tok.convert_tokens_to_ids("<|im_end|>")
    correct = 0
    for row in rows:
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in row["prompt"])
        ids = tok(text + "<|im_start|>assistant\n", return_tensors="pt").input_ids
        with torch.no_grad():
            gen = model.generate(ids, max_new_tokens=6, do_sample=False, eos_token_id=end, pad_token_id=end)
        completion = tok.decode(gen[0, ids.shape[1]:], skip_special_tokens=True)
        numbers = re.findall(r"-?\d+", completion)
        correct += bool(numbers) and numbers[-1] == str(row["answer"])
    print(f"{stage}: {type(model).__name__}, {sum(p.numel() for p in model.parameters())} parameters, "
          f"held-out greedy accuracy {correct}/{len(rows)} = {100 * correct / len(rows):.1f}%")
