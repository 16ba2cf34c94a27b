#!/usr/bin/env python3
"""make_demo_tokenizer.py — trains the demo's small byte-level BPE tokenizer.

Same structure as Qwen3's tokenizer.json (NFC normalizer; Split with Qwen's regex, Isolated;
ByteLevel without regex; ByteLevel decoder and post-processor), trained with the `tokenizers`
library on generated arithmetic word problems and equations. Qwen's regex splits every digit
on its own (\\p{N}), so numbers are one token per digit. The special tokens <|endoftext|>,
<|im_start|>, <|im_end|> come last, after the BPE vocabulary, as in Qwen.

Writes examples/demo/tokenizer.json and tokenizer_config.json (eos <|im_end|>, pad
<|endoftext|>, a ChatML chat_template) so that transformers' AutoTokenizer loads the folder.

usage: python3 tools/make_demo_tokenizer.py [--out DIR] [--vocab-size N] [--seed N]
"""
import argparse
import json
import os
import random

QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
                 "+ '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
                 "{{ '<|im_start|>assistant\\n' }}{% endif %}")

NAMES = ["Tom", "Anna", "Lena", "Omar", "Sara", "Ravi", "Mia", "Ken", "Zoe", "Ali", "Eva", "Sam"]
ITEMS = ["apples", "pencils", "marbles", "books", "coins", "cookies", "stickers", "cards", "eggs", "shells"]


def problem(rng):
    """One word problem or equation with its worked answer."""
    a, b = rng.randint(1, 99), rng.randint(1, 99)
    n, m, it = rng.choice(NAMES), rng.choice(NAMES), rng.choice(ITEMS)
    k = rng.randrange(7)
    if k == 0:
        return f"{n} has {a} {it}. {m} gives {n} {b} more. How many {it} does {n} have now?\nAnswer: {a} + {b} = {a + b}"
    if k == 1:
        big, small = max(a, b), min(a, b)
        return f"{n} had {big} {it} and lost {small}. How many are left?\nAnswer: {big} - {small} = {big - small}"
    if k == 2:
        c = rng.randint(2, 12)
        return f"There are {c} boxes with {a} {it} in each box. How many {it} are there in total?\nAnswer: {c} * {a} = {c * a}"
    if k == 3:
        c = rng.randint(2, 9)
        return f"{n} shares {a * c} {it} equally among {c} friends. How many does each friend get?\nAnswer: {a * c} / {c} = {a}"
    if k == 4:
        return f"Solve for x: x + {a} = {a + b}\nAnswer: x = {a + b} - {a} = {b}"
    if k == 5:
        c = rng.randint(2, 9)
        return f"What is {a} * {c} + {b}?\nAnswer: {a} * {c} = {a * c}, {a * c} + {b} = {a * c + b}"
    return f"{a} + {b} = {a + b}\n{a} * {b} = {a * b}\n{max(a, b)} - {min(a, b)} = {max(a, b) - min(a, b)}"


def corpus(rng, n):
    """Problems, half of them in the chat layout the demo trains on (roles on their own line)."""
    out = []
    for _ in range(n):
        q, _, a = problem(rng).partition("\nAnswer: ")
        chat = a and rng.random() < 0.5
        out.append(f"system\nSolve the problem.\nuser\n{q}\nassistant\nAnswer: {a}" if chat else q)
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "examples", "demo"))
    ap.add_argument("--vocab-size", type=int, default=512, help="total, special tokens included")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=args.vocab_size - len(SPECIALS), min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    rng = random.Random(args.seed)
    tok.train_from_iterator(corpus(rng, 20000), trainer=trainer)
    tok.add_special_tokens(SPECIALS)

    os.makedirs(args.out, exist_ok=True)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    added = {str(tok.token_to_id(s)): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                                       "single_word": False, "special": True} for s in SPECIALS}
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "added_tokens_decoder": added, "bos_token": None,
              "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None,
              "add_prefix_space": False, "clean_up_tokenization_spaces": False, "model_max_length": 4096,
              "chat_template": CHAT_TEMPLATE}
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")

    sample = problem(random.Random(7))
    ids = tok.encode(sample).ids
    digits = [t for t in tok.encode("12345 + 67890").tokens if t.strip("Ġ").isdigit()]
    assert all(len(t.strip("Ġ")) == 1 for t in digits), digits
    print(f"wrote {args.out}: {tok.get_vocab_size()} tokens; '{sample[:40]}...' -> {len(ids)} ids")


if __name__ == "__main__":
    main()
