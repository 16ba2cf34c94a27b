"""check_greedy_hf.py — greedy agreement of `rlc generate` with transformers' greedy generate
(issue 10: "on the random Qwen3-0.6B, greedy agreement with transformers-bf16 reported, first
divergence per prompt"). Run where torch + transformers and a GPU are (the lent machine).

usage: python3 tools/check_greedy_hf.py MODEL_DIR REQUESTS.jsonl RLC_OUTPUT.jsonl
       [--dtype bf16|fp32] [--max-tokens N]
REQUESTS.jsonl: {"prompt_ids": [...]} lines (other fields ignored); RLC_OUTPUT.jsonl: what
`rlc generate --model MODEL_DIR --temperature 0 --max-tokens N --ignore-eos < REQUESTS.jsonl`
printed. transformers runs each prompt alone (no padding), SDPA attention, greedy, eos off, in
--dtype (default bf16; fp32 with TF32 off). Prints one line per prompt, "greedy prompt=<k>
len=<n> first_divergence=<t or none> agree=<tokens equal before it>", then
"greedy summary prompts=<n> identical=<k> mean_first_divergence=<m> dtype=<d>". Greedy
decoding diverges at the first near-tie that the two sides' rounding breaks differently, so a
divergence is expected eventually in bf16; where it happens is the measure. """
import argparse
import json

import torch
from transformers import AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("requests")
    ap.add_argument("rlc_output")
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--max-tokens", type=int, default=64)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(a.model_dir, torch_dtype=dtype, attn_implementation="sdpa").cuda().eval()
    prompts = [json.loads(line)["prompt_ids"] for line in open(a.requests) if line.strip()]
    ours = {}
    for line in open(a.rlc_output):
        if line.strip():
            d = json.loads(line)
            if d.get("sample", 0) == 0 and "ids" in d:
                ours[d["request"]] = d["ids"]
    firsts, identical = [], 0
    with torch.inference_mode():
        for k, p in enumerate(prompts):
            if k not in ours:
                print(f"greedy prompt={k} missing from {a.rlc_output}")
                continue
            ids = torch.tensor([p], device="cuda")
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=a.max_tokens,
                                 min_new_tokens=a.max_tokens, do_sample=False, eos_token_id=None, pad_token_id=0)
            theirs = out[0, len(p):].tolist()
            n = min(len(theirs), len(ours[k]))
            first = next((t for t in range(n) if theirs[t] != ours[k][t]), None)
            if first is None and len(theirs) == len(ours[k]):
                identical += 1
            firsts.append(first if first is not None else n)
            print(f"greedy prompt={k} len={len(p)} first_divergence={first if first is not None else 'none'} "
                  f"agree={first if first is not None else n}")
    mean = sum(firsts) / len(firsts) if firsts else float("nan")
    print(f"greedy summary prompts={len(firsts)} identical={identical} mean_first_divergence={mean:.1f} "
          f"dtype={a.dtype} max_tokens={a.max_tokens}")


if __name__ == "__main__":
    main()
