"""bench_generate_hf.py — the requests of bench/bench_generate.c through transformers' generate.

usage: python3 bench/bench_generate_hf.py CONFIG_JSON DIR [WORKLOAD ...] [--batch N]
       [--max-seconds S]
DIR holds the workloads bench_generate --write DIR wrote (DIR/<w>.jsonl: {"prompt_ids",
"max_tokens", "temperature"} per line); default: every *.jsonl there. The model is randomly
initialised from CONFIG_JSON in bf16 on the GPU with SDPA attention, as on the C side (the
weights differ, which does not matter with eos ignored: every sample runs to its max_tokens).
Requests are sorted by prompt length and run in batches of --batch (default 256, the whole
workload when it is smaller), left-padded; a batch generates the longest max_tokens of its
requests (transformers has no per-request length) with eos off, sampling at the requests'
temperature (top-k off). Throughput counts the tokens the requests asked for (as the C side),
so the padding to the batch's longest is transformers' cost. Workload "d" also prints the decode
latency per token: (time for 256 tokens - time for 1) / 255. A workload whose first batch is
estimated to exceed --max-seconds (default 600) in total is skipped with a note; one that runs
out of GPU memory is run again in batches half as large (down to 1), and the batch that ran is
printed. Prints per
workload: "hf generate workload=<w> n=<N> output_tokens=<O> seconds=<s> tokens_per_s=<rate>
[ms_per_token=<m>] batch=<b>" and a table. """
import glob
import json
import os
import sys
import time

import torch
from transformers import AutoConfig, AutoModelForCausalLM


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def run_batch(model, reqs, max_new):
    width = max(len(r["prompt_ids"]) for r in reqs)
    ids = torch.zeros(len(reqs), width, dtype=torch.long)
    mask = torch.zeros(len(reqs), width, dtype=torch.long)
    for i, r in enumerate(reqs):
        p = r["prompt_ids"]
        ids[i, width - len(p):] = torch.tensor(p)
        mask[i, width - len(p):] = 1
    temperature = reqs[0]["temperature"]
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = model.generate(input_ids=ids.cuda(), attention_mask=mask.cuda(), max_new_tokens=max_new,
                         min_new_tokens=max_new, do_sample=temperature > 0, temperature=temperature or None,
                         top_k=0, top_p=1.0, eos_token_id=None, pad_token_id=0)
    torch.cuda.synchronize()
    assert out.shape[1] == width + max_new
    return time.perf_counter() - t0


def run_workload(model, name, reqs, batch, max_seconds):
    """The workload in batches of `batch`, halved after an out-of-memory until one fits."""
    batch = min(batch, len(reqs))
    while True:
        try:
            return run_batches(model, name, reqs, batch, max_seconds)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            if batch == 1:
                print(f"\nhf generate workload={name} skipped: out of GPU memory at batch 1", file=sys.stderr)
                return None
            batch = (batch + 1) // 2
            print(f"\n[{name}] out of GPU memory: batches of {batch}", file=sys.stderr)


def run_batches(model, name, reqs, batch, max_seconds):
    reqs = sorted(reqs, key=lambda r: len(r["prompt_ids"]))
    chunks = [reqs[i:i + batch] for i in range(0, len(reqs), batch)]
    asked = sum(r["max_tokens"] for r in reqs)
    run_batch(model, chunks[0][:1], 4)  # warm-up
    seconds = 0.0
    for k, chunk in enumerate(chunks):
        seconds += run_batch(model, chunk, max(r["max_tokens"] for r in chunk))
        print(f"\r[{name}] {k + 1}/{len(chunks)} batches, {seconds:.1f} s", end="", file=sys.stderr, flush=True)
        if k == 0 and seconds * len(chunks) > max_seconds:
            print(f"\nhf generate workload={name} skipped: about {seconds * len(chunks):.0f} s > {max_seconds} s",
                  file=sys.stderr)
            return None
    print(file=sys.stderr)
    line = f"hf generate workload={name} n={len(reqs)} output_tokens={asked} seconds={seconds:.3f} " \
           f"tokens_per_s={asked / seconds:.1f}"
    ms = None
    if name == "d":
        one = run_batch(model, reqs, 1)
        ms = 1000 * (seconds - one) / (asked - 1)
        line += f" ms_per_token={ms:.3f}"
    print(line + f" batch={batch}", flush=True)
    return (name, len(reqs), asked, seconds, asked / seconds, ms, batch)


def main():
    args = sys.argv[1:]
    batch, max_seconds = 256, 600.0
    if "--batch" in args:
        k = args.index("--batch")
        batch = int(args[k + 1])
        del args[k:k + 2]
    if "--max-seconds" in args:
        k = args.index("--max-seconds")
        max_seconds = float(args[k + 1])
        del args[k:k + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    config_path, folder, names = args[0], args[1], args[2:]
    if not names:
        names = sorted(os.path.basename(p)[:-6] for p in glob.glob(os.path.join(folder, "*.jsonl")))
    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(config_path)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").to(torch.bfloat16).cuda().eval()
    rows = []
    with torch.inference_mode():
        for name in names:
            row = run_workload(model, name, load(os.path.join(folder, name + ".jsonl")), batch, max_seconds)
            if row:
                rows.append(row)
    print(f"== transformers {__import__('transformers').__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}")
    print(f"{'workload':10} {'seqs':>5} {'output':>9} {'seconds':>9} {'out tok/s':>11} {'ms/token':>9} {'batch':>6}")
    for name, n, asked, seconds, rate, ms, b in rows:
        latency = f"{ms:.3f}" if ms is not None else "-"
        print(f"{name:10} {n:5d} {asked:9d} {seconds:9.2f} {rate:11.1f} {latency:>9} {b:6d}")


if __name__ == "__main__":
    main()
