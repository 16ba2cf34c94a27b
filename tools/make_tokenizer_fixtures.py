#!/usr/bin/env python3
"""make_tokenizer_fixtures.py — reference encodings for tests/io/test_tokenizer.c.

Generates a deterministic (seeded) corpus of varied strings, encodes each with the Hugging Face
`tokenizers` library (encode(s, add_special_tokens=False): what Qwen's chat pipeline does, and
the same ids as add_special_tokens=True since Qwen's post-processor adds nothing), decodes the
ids back (skip_special_tokens=False), and writes

  tests/fixtures/tokenizer/qwen3_encode.jsonl   {"text"|"hex", "ids", "decoded"} per line
  tests/fixtures/tokenizer/qwen3_chat.jsonl     {"messages", "add_generation_prompt", "text"}
  tests/fixtures/tokenizer/qwen3_meta.json      vocab size (largest id + 1) and the added tokens
  tests/fixtures/tokenizer/flags_tokenizer.json a small trained BPE with every added-token flag
                                                (lstrip, rstrip, single_word, normalized),
                                                ignore_merges, GPT-2 ByteLevel regex, "a b" merges
  tests/fixtures/tokenizer/flags_encode.jsonl   its encodings
  tests/fixtures/tokenizer/demo_encode.jsonl    encodings by examples/demo/tokenizer.json
                                                (run tools/make_demo_tokenizer.py first)

"hex" lines hold invalid UTF-8: their ids are those of bytes.decode("utf-8", "replace"), the
string Python hands to tokenizers. Chat lines come from transformers' apply_chat_template with
the tokenizer_config.json beside tokenizer.json.

usage: python3 tools/make_tokenizer_fixtures.py [--tokenizer-dir DIR] [--out DIR] [--seed N]
"""
import argparse
import json
import os
import random
import unicodedata

WORDS = ("the of and to in is that it for was on are as with his they at be this from have or by one had "
         "not but what all were when we there can an your which their said if do will each about how up out "
         "them then she many some so these would other into has more her two like him see time could no make "
         "than first been its who now people my made over did down only way find use may water long little "
         "very after words called just where most know get through back much before go good new write our "
         "used me man too any day same right look think also around another came come work three word must "
         "because does part even place well such here take why things help put years different away again "
         "gradient tokenizer reinforcement learning policy reward kernel throughput latency").split()

CONTRACTIONS = ["I'm", "don't", "we'll", "they've", "she's", "it'd", "you're", "can't", "won't", "isn't",
                "I'M", "DON'T", "WE'LL", "THEY'VE", "SHE'S", "IT'D", "YOU'RE", "We'Ll", "tHeY'Re", "o'clock",
                "rock'n'roll", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "’s", "`s"]

CODE = [
    "def {f}(x, y=None):\n    \"\"\"Return the {w} of x.\"\"\"\n    if y is None:\n        return x ** 2\n    return [i for i in range(x) if i % {n} == 0]\n",
    "#include <stdio.h>\n\nint {f}(int argc, char **argv)\n{{\n\tfor (int i = 0; i < argc; i++) printf(\"%s\\n\", argv[i]);\n\treturn {n};\n}}\n",
    "const {f} = async (req, res) => {{\n  const {{ {w} }} = await fetch(`/api/${{id}}`).then(r => r.json());\n  return res.status({n}).send({w});\n}};\n",
    "fn {f}<'a>(s: &'a str) -> Option<&'a str> {{\n    s.split_whitespace().nth({n}).map(|w| w.trim_matches('\"'))\n}}\n",
    "SELECT u.id, COUNT(*) AS n FROM users u JOIN orders o ON o.user_id = u.id WHERE o.total > {n} GROUP BY u.id;\n",
    "<div class=\"{w}\">\n  <a href=\"https://example.com/{f}?q={n}&amp;x=1\">{w}</a>\n</div>\n",
    "__global__ void {f}(const float* __restrict__ x, float* y, int n) {{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = x[i] * {n}.0f;\n}}\n",
    "{{\"{w}\": [{n}, {n}.5, -1e-9, true, null], \"nested\": {{\"k\": \"v\\u00e9\\n\"}}}}\n",
    "    if self.{f} is not None and len(self.{w}) >= {n}:\n\t\traise ValueError(f\"bad {{self.{w}!r}}\")\r\n",
    "$ ./configure --prefix=/usr/local && make -j{n} 2>&1 | tee build.log\n",
]

SCRIPTS = [
    "今天天气很好，我们去公园散步吧。机器学习模型需要大量的数据进行训练。",
    "東京は日本の首都です。ひらがなとカタカナ、そして漢字を使います。ｶﾀｶﾅ半角もあります。",
    "안녕하세요. 저는 한국어를 공부하고 있습니다. 강화 학습은 재미있어요!",
    "مرحبا بالعالم. اللغة العربية تكتب من اليمين إلى اليسار ١٢٣٤٥٦٧٨٩٠.",
    "नमस्ते दुनिया। हिन्दी देवनागरी लिपि में लिखी जाती है। १२३४५",
    "Привет, мир! Обучение с подкреплением — это интересно. Ёлка и ЁЖИК.",
    "Γειά σου κόσμε! Η μηχανική μάθηση είναι ενδιαφέρουσα. ΑΒΓΔ αβγδ.",
    "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "שלום עולם! עברית נכתבת מימין לשמאל.",
    "Xin chào thế giới! Tiếng Việt có nhiều dấu thanh điệu.",
    "Ça va? Très bien, merci. Größe, Straße, naïve café, façade, Ærø, Øresund, ĳ, ﬁnance.",
    "∑_{i=1}^{n} x_i² ≤ ∞ ∀ε>0 ∃δ: |x−y|<δ ⇒ |f(x)−f(y)|<ε; √2 ≈ 1.414, π ≈ 3.14159, ½ ¾ ⅓ Ⅻ ①②③",
]

EMOJI = ["😀", "🚀", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "🇺🇸", "❤️", "✌🏿", "🧑🏻‍🤝‍🧑🏾", "🤖", "🔥",
         "👋🏼", "⭐", "☕", "🙏🏻", "🧪", "🫠", "👁️‍🗨️", "#️⃣", "1️⃣"]

# Strings NFC changes: decomposed accents, singletons, Hangul jamo, reordered marks.
NFC_CHANGES = ["e\u0301", "E\u0301cole", "n\u0303o", "a\u0308\u0304", "\u212b", "\u2126", "\u0340",
               "\u1100\u1161\u11a8", "\u1112\u1161\u11ab\u1100\u1173\u11af", "o\u0323\u0302", "o\u0302\u0323",
               "\u0041\u030a", "\uf900", "\u2000", "Cafe\u0301 na\u0131\u0308ve", "\u0915\u093c", "\u3046\u3099"]

SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
            "</tool_call>", "<|im_", "<|im_start", "|>", "<|", "<|im_end|", "<|endoftext", "<<|im_end|>>",
            "<|im_start|><|im_start|>", "<|vision_pad|>", "<|fim_prefix|>", "<tool_response>"]

# Where regex engines may disagree: White_Space oddities, letters new in Unicode 15,
# case-insensitive contractions with non-ASCII case pairs, format characters, numbers.
REGEX_EDGES = ["a\u0085b c", "a\u180eb", "a\ufeffb", "x\u1680y", "x\u202fy", "x\u205fy", "x \u0085\n y",
               "\U0001e030\U0001e031 ab", "\U00031350\U00031351", "\U00011f04\U00011f05", "\U0001df25x",
               "\U0001fae8 \U0001f6dc", "x\u061c y", "\u2066a\u2069", "\u017f's '\u017f 'S 'K '\u212a",
               "\u0130'LL \u0131'll '\u0130", "x\u00ad y", "\u2d7f\u0e4e", "\u216b \u217b \u2460 \u00b2 \u00be \U0001d7d8",
               "\U0001f1e6\U0001f1e8"]

SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n", "\n ", " \t ", "\u00a0", "\u3000",
          "\u2028", "\u2009", "\u200b", "\f", "\v", "    \n\n    ", "\r\n\r\n"]


# A combining mark right after an added token: NFC applies between added tokens, so the '>'
# of "<|im_end|>" must not compose with U+0338 into U+226F (found by fuzz/fuzz_tokenizer.c).
SPECIAL_THEN_MARK = ["a<|im_end|>\u0338b", "<|im_end|>\u0338", ">\u0338", "<|im_start|>\u0301x",
                     "e\u0301<|endoftext|>\u0338\u0338", "<think>\u0338</think>\u0301"]


def nfc_between_added(s, added):
    """NFC of s applied piece by piece between added tokens (leftmost, longest first)."""
    out, gap, i = [], 0, 0
    while i < len(s):
        hit = max((a for a in added if s.startswith(a, i)), key=len, default=None)
        if hit is None:
            i += 1
            continue
        out += [unicodedata.normalize("NFC", s[gap:i]), hit]
        i += len(hit)
        gap = i
    out.append(unicodedata.normalize("NFC", s[gap:]))
    return "".join(out)


def rand_word(rng):
    w = rng.choice(WORDS)
    r = rng.random()
    return w.capitalize() if r < 0.15 else w.upper() if r < 0.2 else w


def prose(rng):
    n = rng.randint(3, 40)
    out = []
    for _ in range(n):
        out.append(rand_word(rng))
        if rng.random() < 0.08:
            out[-1] += rng.choice([",", ".", ";", ":", "!", "?", "...", ")", "\""])
    return " ".join(out) + rng.choice([".", "!", "?", "", "\n"])


def code(rng):
    return rng.choice(CODE).format(f=rng.choice(["main", "foo_bar", "computeLoss", "_x1", "Ω"]),
                                   w=rand_word(rng), n=rng.randint(0, 100000))


def number(rng):
    k = rng.random()
    if k < 0.3:
        return str(rng.randint(0, 10 ** rng.randint(1, 40)))
    if k < 0.5:
        return f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 12)}f}"
    if k < 0.7:
        return f"{rng.randint(1, 12)}/{rng.randint(1, 28)}/{rng.randint(1900, 2100)} {rng.randint(0, 23)}:{rng.randint(0, 59):02d}"
    return "".join(rng.choice("0123456789,. -+e") for _ in range(rng.randint(1, 60)))


def random_unicode(rng):
    blocks = [(0x20, 0x7e), (0xa0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff), (0x590, 0x5ff), (0x600, 0x6ff),
              (0x900, 0x97f), (0xe00, 0xe7f), (0x1100, 0x11ff), (0x2000, 0x206f), (0x2190, 0x22ff),
              (0x3040, 0x30ff), (0x4e00, 0x9fff), (0xac00, 0xd7a3), (0xff00, 0xffef), (0x1f300, 0x1f6ff)]
    out = []
    for _ in range(rng.randint(1, 30)):
        lo, hi = rng.choice(blocks)
        c = chr(rng.randint(lo, hi))
        if unicodedata.category(c) not in ("Cn", "Cs", "Co"):
            out.append(c)
    return "".join(out)


def mixed(rng):
    parts = []
    for _ in range(rng.randint(2, 12)):
        k = rng.randrange(9)
        parts.append([lambda: prose(rng), lambda: rng.choice(CONTRACTIONS), lambda: number(rng),
                      lambda: rng.choice(SCRIPTS)[: rng.randint(1, 40)], lambda: rng.choice(EMOJI),
                      lambda: rng.choice(NFC_CHANGES), lambda: rng.choice(SPECIALS),
                      lambda: rng.choice(SPACES), lambda: random_unicode(rng)][k]())
        if rng.random() < 0.5:
            parts.append(rng.choice(SPACES))
    return "".join(parts)


def corpus(rng):
    out = ["", " ", "\n", "a", "I'M", "DON'T", "we'll", "<|im_start|>", "<|endoftext|>", "<|im_",
           "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"]
    out += CONTRACTIONS + SCRIPTS + EMOJI + NFC_CHANGES + SPECIALS + SPACES + REGEX_EDGES
    out += [" ".join(CONTRACTIONS), "".join(EMOJI), "".join(SPACES)]
    out += ["x" * 3000, "ab" * 1500, "漢" * 1000, "1" * 500, " " * 700, "\n" * 300, "😀" * 200,
            "a" + "\u0301" * 50, "supercalifragilisticexpialidocious" * 40, "-" * 400, "_" * 257]
    out += SPECIAL_THEN_MARK
    makers = [prose, code, number, random_unicode, mixed, mixed, mixed]
    while len(out) < 2400:
        out.append(rng.choice(makers)(rng))
    return out


def invalid_utf8(rng):
    cases = [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"abc\xe2\x82", b"\xf4\x90\x80\x80",
             b"\xe0\x80\xaf", b"\xf0\x9f\x98", b"\x80\x80hello", b"caf\xe9", b"\xf8\x88\x80\x80\x80",
             b"<|im_end\xff|>", b"\xc3\x28", b"\xa0\xa1", b"\xe2\x28\xa1", b"\xf0\x28\x8c\xbc",
             b"ok \xef\xbf\xbd ok", b"\xfe\xfe\xff\xff", b"\xf0\x90\x80"]
    while len(cases) < 80:
        base = bytearray(rng.choice(WORDS).encode() + " ".encode() + rng.choice(SCRIPTS).encode()[:30])
        for _ in range(rng.randint(1, 4)):
            base.insert(rng.randrange(len(base) + 1), rng.randrange(0x80, 0x100))
        cases.append(bytes(base))
    return cases


def write_encodings(tok, strings, path):
    with open(path, "w", encoding="utf-8") as f:
        for s in strings:
            ids = tok.encode(s, add_special_tokens=False).ids
            f.write(json.dumps({"text": s, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)},
                               ensure_ascii=False) + "\n")


def flags_tokenizer(rng, path):
    """A small tokenizer exercising what Qwen's file does not: added-token flags, normalized
    added tokens, ignore_merges, ByteLevel's own regex and merges written as "a b" strings."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator([prose(rng) for _ in range(3000)], trainer=trainer)
    tok.add_tokens([AddedToken("<sw>", single_word=True, normalized=False),
                    AddedToken("[L]", lstrip=True, normalized=False),
                    AddedToken("[R]", rstrip=True, normalized=False),
                    AddedToken("h\u00e9llo", normalized=True),
                    AddedToken("w\u00f6rd", normalized=True, single_word=True)])
    tok.add_special_tokens([AddedToken("[LR]", lstrip=True, rstrip=True, special=True),
                            AddedToken("<|im_end|>", special=True)])
    data = json.loads(tok.to_str())
    data["model"]["ignore_merges"] = True
    data["model"]["merges"] = [" ".join(m) for m in data["model"]["merges"]]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    return Tokenizer.from_file(path)


def flags_strings(rng):
    pieces = ["<sw>", "[L]", "[R]", "[LR]", "<|im_end|>", "h\u00e9llo", "he\u0301llo", "w\u00f6rd", "wo\u0308rd",
              "<sw", "[L", " ", "  ", "\t", "\n", "x", "word", "_", "\u00e9", "\u3000", "\u00a0", "1"]
    out = ["", "<sw>", "a<sw>b", " <sw> ", "x [L]", "x \t [L]y", "[R] \n y", " [LR] ", "wördy", "wörd wörd",
           "he\u0301llo", "_<sw>_", "é<sw>", "<sw>é"]
    while len(out) < 300:
        out.append("".join(rng.choice(pieces) if rng.random() < 0.6 else rand_word(rng)
                           for _ in range(rng.randint(1, 12))))
    out += [prose(rng) for _ in range(100)]
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer-dir", default=os.path.join(here, "..", "..", "shared", "data", "qwen3-tokenizer"))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures", "tokenizer"))
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    tok = Tokenizer.from_file(os.path.join(args.tokenizer_dir, "tokenizer.json"))
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    n_text = n_hex = 0
    added_contents = [t.content for t in tok.get_added_tokens_decoder().values() if not t.normalized]
    with open(os.path.join(args.out, "qwen3_encode.jsonl"), "w", encoding="utf-8") as f:
        texts = corpus(rng)
        texts.append("\n".join(texts[:800]))  # one long text: exercises the encoder's word cache
        for s in texts:
            ids = tok.encode(s, add_special_tokens=False).ids
            decoded = tok.decode(ids, skip_special_tokens=False)
            assert decoded == nfc_between_added(s, added_contents), (s, decoded)
            f.write(json.dumps({"text": s, "ids": ids, "decoded": decoded}, ensure_ascii=False) + "\n")
            n_text += 1
        for b in invalid_utf8(rng):
            s = b.decode("utf-8", "replace")
            ids = tok.encode(s, add_special_tokens=False).ids
            f.write(json.dumps({"hex": b.hex(), "ids": ids,
                                "decoded": tok.decode(ids, skip_special_tokens=False)}, ensure_ascii=False) + "\n")
            n_hex += 1

    vocab = tok.get_vocab(with_added_tokens=True)
    added = [{"content": t.content, "id": i, "special": t.special}
             for i, t in sorted(tok.get_added_tokens_decoder().items())]
    with open(os.path.join(args.out, "qwen3_meta.json"), "w", encoding="utf-8") as f:
        json.dump({"vocab_size": max(vocab.values()) + 1, "added": added}, f, indent=1)

    ftok = flags_tokenizer(rng, os.path.join(args.out, "flags_tokenizer.json"))
    write_encodings(ftok, flags_strings(rng), os.path.join(args.out, "flags_encode.jsonl"))

    demo = os.path.join(here, "..", "examples", "demo", "tokenizer.json")
    if os.path.exists(demo):
        import make_demo_tokenizer
        demo_rng = random.Random(args.seed + 1)
        strings = make_demo_tokenizer.corpus(demo_rng, 150) + corpus(demo_rng)[:100:2] + ["<|im_start|>user\n1+1<|im_end|>"]
        write_encodings(Tokenizer.from_file(demo), strings, os.path.join(args.out, "demo_encode.jsonl"))

    hf = AutoTokenizer.from_pretrained(args.tokenizer_dir)
    convs = [
        ([{"role": "user", "content": "What is 2 + 2?"}], True),
        ([{"role": "system", "content": "You are a helpful assistant."},
          {"role": "user", "content": "Solve: 17 * 23 = ?\nShow your steps."}], True),
        ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
          {"role": "assistant", "content": "Hello! How can I help?"},
          {"role": "user", "content": "Say 日本語 and 😀."}], True),
        ([{"role": "user", "content": "Write a kernel."}], False),
        ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
          {"role": "user", "content": "c"}], False),
        ([{"role": "system", "content": ""}, {"role": "user", "content": "  spaced\n\ttext  "}], True),
    ]
    with open(os.path.join(args.out, "qwen3_chat.jsonl"), "w", encoding="utf-8") as f:
        for msgs, gen in convs:
            text = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=gen)
            f.write(json.dumps({"messages": msgs, "add_generation_prompt": gen, "text": text},
                               ensure_ascii=False) + "\n")
    print(f"wrote {n_text} strings + {n_hex} invalid UTF-8 cases and {len(convs)} conversations to {args.out}")


if __name__ == "__main__":
    main()
