#!/usr/bin/env python3
"""make_model_fixtures.py — what transformers computes for the tiny checkpoints, for the model
and engine tests (tests/model, tests/engine).

For each tiny model of tests/fixtures/models/ (written by tools/make_tiny_models.py), loaded in
fp32 with attn_implementation="eager", writes into tests/fixtures/model/ (or the directory
given as the first argument):

  <name>.json         the packed batch (tokens, cu_seqlens), loss weights, inverse temperature,
                      and greedy `generate` outputs (new tokens only) for a few prompts
  <name>.safetensors  fp32 tensors:
                        logits    [n_tokens, vocab]  each sequence run separately
                        logp      [n_tokens]  log p(token t | tokens before it in its sequence),
                                              0 at each sequence's first token
                        entropy   [n_tokens]  entropy of the distribution token t was drawn from
                                              (0 at each sequence's first token)
                        logp_temp [n_tokens]  logp with logits * inv_temperature
                        grad.<HF name>        d loss / d parameter, loss = sum_t weights[t] *
                                              logp_temp[t] (tied embeddings: one tensor)

Deterministic (fixed seeds). Runs on the CPU in fp32 (torch's default device), here or on the
GPU machine, unchanged.
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

MODELS = ["qwen3-tiny-tied", "qwen3-tiny-untied", "qwen2-tiny", "llama3-tiny"]
SEQ_LENS = [9, 16, 5]
INV_TEMPERATURE = 1.25
PROMPT_LENS = [4, 7, 1]
MAX_NEW_TOKENS = 12


def token_logprobs(model, ids, inv_temperature):
    """Token-aligned log-probs and entropies of one sequence (1-D ids)."""
    logits = model(ids[None]).logits[0].float()
    logsm = torch.log_softmax(logits * inv_temperature, dim=-1)
    logp = torch.zeros(len(ids))
    logp[1:] = logsm[:-1].gather(1, ids[1:, None])[:, 0]
    entropy = torch.zeros(len(ids))
    entropy[1:] = -(logsm[:-1].exp() * logsm[:-1]).sum(-1)
    return logits, logp, entropy


def make(src_dir, out_dir, name, seed):
    model = AutoModelForCausalLM.from_pretrained(os.path.join(src_dir, name), dtype=torch.float32,
                                                 attn_implementation="eager")
    model.eval()
    vocab = model.config.vocab_size
    gen = torch.Generator().manual_seed(seed)
    seqs = [torch.randint(0, vocab, (n,), generator=gen) for n in SEQ_LENS]
    cu = [0]
    for s in seqs:
        cu.append(cu[-1] + len(s))
    weights = torch.randn(cu[-1], generator=gen)
    weights[torch.rand(cu[-1], generator=gen) < 0.25] = 0.0  # a mask, as a trainer's would be

    out = {}
    with torch.no_grad():
        parts = [token_logprobs(model, s, 1.0) for s in seqs]
    out["logits"] = torch.cat([p[0] for p in parts])
    out["logp"] = torch.cat([p[1] for p in parts])
    out["entropy"] = torch.cat([p[2] for p in parts])

    model.zero_grad()
    logp_temp = torch.cat([token_logprobs(model, s, INV_TEMPERATURE)[1] for s in seqs])
    loss = (weights * logp_temp).sum()
    loss.backward()
    out["logp_temp"] = logp_temp.detach()
    for pname, p in model.named_parameters():
        out["grad." + pname] = p.grad.detach().clone()

    eos = model.generation_config.eos_token_id
    prompts, outputs = [], []
    with torch.no_grad():
        for n in PROMPT_LENS:
            prompt = torch.randint(0, vocab, (n,), generator=gen)
            generated = model.generate(prompt[None], attention_mask=torch.ones(1, n, dtype=torch.long),
                                       do_sample=False, max_new_tokens=MAX_NEW_TOKENS,
                                       eos_token_id=eos, pad_token_id=eos[0] if isinstance(eos, list) else eos)
            prompts.append(prompt.tolist())
            outputs.append(generated[0, n:].tolist())

    meta = {
        "model": name,
        "tokens": torch.cat(seqs).tolist(),
        "cu_seqlens": cu,
        "weights": weights.tolist(),
        "inv_temperature": INV_TEMPERATURE,
        "loss": loss.item(),
        "generate": {"max_new_tokens": MAX_NEW_TOKENS, "eos_token_id": eos, "prompts": prompts,
                     "outputs": outputs},
    }
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    tensors = {k: v.float().contiguous() for k, v in out.items()}
    path = os.path.join(out_dir, name + ".safetensors")
    save_file(tensors, path)
    print(f"{path}: {len(tensors)} tensors, {os.path.getsize(path)} bytes; generated {outputs}")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join("tests", "fixtures", "model")
    src_dir = os.path.join("tests", "fixtures", "models")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(2)
    for i, name in enumerate(MODELS):
        make(src_dir, out_dir, name, 100 + i)


if __name__ == "__main__":
    main()
