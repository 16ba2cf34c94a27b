#!/usr/bin/env python3
"""bench_tokenizer.py — encode throughput: rlc's C tokenizer against Hugging Face `tokenizers`.

Builds one text from the tokenizer test corpus (tests/fixtures/tokenizer/qwen3_encode.jsonl,
lines joined by newlines) repeated to --mb megabytes, then in one run measures
  rlc           bench_tokenizer (C, one thread): the whole text as one string, and line by line
  tokenizers    Tokenizer.encode on the whole text (RAYON_NUM_THREADS=1)
  tokenizers    encode_batch on the corpus lines, one thread and all threads
and checks that rlc and tokenizers give the same number of ids both ways.

usage: python3 bench/bench_tokenizer.py [--bin build/bench/bench_tokenizer] [--tokenizer FILE] [--mb 20] [--repeats 2] [--ascii]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def best_of(fn, repeats):
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run_tokenizers(path, text, repeats, threads):
    """In a child process, so that RAYON_NUM_THREADS takes effect before tokenizers starts."""
    code = (
        "import json,sys,time\n"
        "from tokenizers import Tokenizer\n"
        "sys.path.insert(0, %r)\n"
        "from bench_tokenizer import best_of\n"
        "t = Tokenizer.from_file(%r)\n"
        "text = open(%r, encoding='utf-8', newline='').read()\n"
        "lines = text.split('\\n')\n"
        "single, enc = best_of(lambda: t.encode(text, add_special_tokens=False), %d)\n"
        "batch, encs = best_of(lambda: t.encode_batch(lines, add_special_tokens=False), %d)\n"
        "print(json.dumps({'single': single, 'batch': batch, 'tokens': len(enc.ids),\n"
        "                  'batch_tokens': sum(len(e.ids) for e in encs)}))\n"
    ) % (HERE, path, text, repeats, repeats)
    env = dict(os.environ)
    if threads:
        env["RAYON_NUM_THREADS"] = str(threads)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    root = os.path.join(HERE, "..")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(root, "build", "bench", "bench_tokenizer"))
    ap.add_argument("--tokenizer", default=os.path.join(root, "..", "shared", "data", "qwen3-tokenizer", "tokenizer.json"))
    ap.add_argument("--mb", type=float, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--ascii", action="store_true", help="keep only the corpus strings that are plain ASCII")
    args = ap.parse_args()

    corpus = [json.loads(l)["text"] for l in open(os.path.join(root, "tests", "fixtures", "tokenizer", "qwen3_encode.jsonl"),
                                                 encoding="utf-8") if '"text"' in l[:10]]
    if args.ascii:
        corpus = [s for s in corpus if s.isascii()]
    base = "\n".join(corpus)
    text = base * max(1, int(args.mb * 1e6 / len(base.encode("utf-8"))))
    n_bytes = len(text.encode("utf-8"))
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8", newline="") as f:
        f.write(text)
        text_path = f.name
    try:
        out = subprocess.run([args.bin, args.tokenizer, text_path, str(args.repeats)], check=True,
                             capture_output=True, text=True).stdout
        rlc = dict(kv.split("=") for kv in out.split()[1:])
        one = run_tokenizers(args.tokenizer, text_path, args.repeats, 1)
        many = run_tokenizers(args.tokenizer, text_path, args.repeats, 0)
    finally:
        os.unlink(text_path)
    mb = n_bytes / 1e6
    rows = [("rlc (C), 1 thread, whole text", float(rlc["best_s"])),
            ("rlc (C), 1 thread, line by line", float(rlc["lines_best_s"])),
            ("tokenizers encode, 1 thread, whole text", one["single"]),
            ("tokenizers encode_batch (lines), 1 thread", one["batch"]),
            (f"tokenizers encode_batch (lines), {os.cpu_count()} threads", many["batch"])]
    print(f"text: {mb:.1f} MB, {len(text.splitlines())} lines; tokenizer {args.tokenizer}")
    print(f"{'':46s} {'seconds':>8s} {'MB/s':>8s}")
    for name, s in rows:
        print(f"{name:46s} {s:8.3f} {mb / s:8.2f}")
    same = int(rlc["tokens"]) == one["tokens"] and int(rlc["line_tokens"]) == one["batch_tokens"]
    print(f"ids, whole text: rlc {rlc['tokens']}, tokenizers {one['tokens']}; line by line: rlc {rlc['line_tokens']}, "
          f"tokenizers {one['batch_tokens']} ({'same counts' if same else 'DIFFERENT'})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
