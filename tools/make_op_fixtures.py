#!/usr/bin/env python3
"""make_op_fixtures.py — torch references for the CPU backend ops (tests/backend/test_*.c).

Writes one small .safetensors file per op family under tests/fixtures/ops/. Inputs are random
fp32 values at awkward sizes (never multiples of 8/16/32); references are computed in float64
from those fp32 inputs (autograd for the backward passes) and stored as F32. AdamW is the one
exception: it is run with torch.optim.AdamW in fp32, the precision the C op mirrors.
Integer tensors (ids, positions, cu_seqlens, targets) are stored as F32, which holds them
exactly; scalars are one-element tensors. Where transformers has the op (RMSNorm, rotary
embedding), the float64 reference is checked against transformers' own function first.

Usage: python3 tools/make_op_fixtures.py [--out tests/fixtures/ops]
Runs where torch, transformers and safetensors are installed; deterministic (fixed seeds).
"""
import argparse
import math
import os

import torch
from safetensors.torch import save_file
from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm, apply_rotary_pos_emb

F64 = torch.float64


def rand(gen, *shape, lo=-1.0, hi=1.0):
    """fp32 uniform values in [lo, hi), returned as float64 (exactly the fp32 values)."""
    x = torch.rand(*shape, generator=gen, dtype=torch.float32) * (hi - lo) + lo
    return x.to(F64)


def save(out_dir, name, tensors):
    path = os.path.join(out_dir, name + ".safetensors")
    data = {k: v.detach().to(torch.float32).contiguous() for k, v in tensors.items()}
    save_file(data, path)
    print(f"{path}: {len(data)} tensors, {os.path.getsize(path)} bytes")


def scalar(x):
    return torch.tensor([float(x)], dtype=F64)


def embedding(out_dir, gen):
    vocab, dim, n_tokens = 50, 19, 31
    table = rand(gen, vocab, dim)
    ids = torch.randint(0, 12, (n_tokens,), generator=gen)  # few distinct ids: many repeats
    dout = rand(gen, n_tokens, dim)
    dtable = torch.zeros(vocab, dim, dtype=F64).index_add_(0, ids, dout)
    save(out_dir, "embedding", {"table": table, "ids": ids.to(F64), "out": table[ids],
                                "dout": dout, "dtable": dtable})


def rmsnorm(out_dir, gen):
    n_rows, dim, eps = 37, 53, 1e-6
    x = rand(gen, n_rows, dim, lo=-2, hi=2).requires_grad_()
    w = rand(gen, dim, lo=0.5, hi=1.5).requires_grad_()
    rstd = torch.rsqrt(x.pow(2).mean(-1) + eps)
    out = x * rstd[:, None] * w
    ref = Qwen3RMSNorm(dim, eps=eps).to(torch.float32)
    with torch.no_grad():
        ref.weight.copy_(w.float())
        hf = ref(x.float())
    assert (hf.double() - out).abs().max() < 1e-5, "float64 RMSNorm disagrees with transformers"
    dout = rand(gen, n_rows, dim)
    dx, dw = torch.autograd.grad(out, (x, w), dout)
    save(out_dir, "rmsnorm", {"x": x, "weight": w, "eps": scalar(eps), "out": out, "rstd": rstd,
                              "dout": dout, "dx": dx, "dweight": dw})


def rope(out_dir, gen):
    n_tokens, n_heads, head_dim, theta = 23, 3, 38, 1e6
    half = head_dim // 2
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    positions = torch.randint(0, 4000, (n_tokens,), generator=gen)
    # Like transformers: the angle is formed in fp32; cos/sin of that fp32 angle in float64.
    angle = (positions.to(torch.float32)[:, None] * inv_freq[None, :]).to(F64)
    emb = torch.cat([angle, angle], dim=-1)
    cos, sin = emb.cos()[None], emb.sin()[None]  # [1, n_tokens, head_dim]
    x = rand(gen, n_tokens, n_heads, head_dim).requires_grad_()
    xt = x.transpose(0, 1)[None]  # [1, n_heads, n_tokens, head_dim] as transformers wants
    out, _ = apply_rotary_pos_emb(xt, xt, cos, sin)
    out = out[0].transpose(0, 1)
    x1, x2 = x[..., :half], x[..., half:]
    c, s = angle.cos()[:, None, :], angle.sin()[:, None, :]
    mine = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)
    assert (mine - out).abs().max() < 1e-12, "split-half formula disagrees with transformers"
    dout = rand(gen, n_tokens, n_heads, head_dim)
    (dx,) = torch.autograd.grad(out, x, dout)
    save(out_dir, "rope", {"x": x, "positions": positions.to(F64), "inv_freq": inv_freq.to(F64),
                           "out": out, "dout": dout, "dx": dx})


def attention_case(gen, lens_q, caps_k, used_k, n_heads, n_kv_heads, head_dim, causal):
    """Packed varlen attention in float64, one sequence at a time; bottom-right causal mask."""
    group = n_heads // n_kv_heads
    total_q, total_k = sum(lens_q), sum(caps_k)
    scale = 1.0 / math.sqrt(head_dim)
    q = rand(gen, total_q, n_heads, head_dim, lo=-2, hi=2).requires_grad_()
    k = rand(gen, total_k, n_kv_heads, head_dim, lo=-2, hi=2).requires_grad_()
    v = rand(gen, total_k, n_kv_heads, head_dim).requires_grad_()
    outs, lses = [], []
    q0 = k0 = 0
    for lq, cap, lk in zip(lens_q, caps_k, used_k):
        qs = q[q0:q0 + lq].transpose(0, 1)  # [n_heads, lq, d]
        ks = k[k0:k0 + lk].transpose(0, 1).repeat_interleave(group, dim=0)
        vs = v[k0:k0 + lk].transpose(0, 1).repeat_interleave(group, dim=0)
        scores = qs @ ks.transpose(1, 2) * scale
        if causal:
            i = torch.arange(lq)[:, None]
            j = torch.arange(lk)[None, :]
            scores = scores.masked_fill(j > lk - lq + i, float("-inf"))
        lse = torch.logsumexp(scores, dim=-1)  # [n_heads, lq]
        outs.append((torch.softmax(scores, dim=-1) @ vs).transpose(0, 1))
        lses.append(lse.transpose(0, 1))
        q0, k0 = q0 + lq, k0 + cap
    out, lse = torch.cat(outs), torch.cat(lses)
    cu = lambda lens: torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=F64)
    t = {"q": q, "k": k, "v": v, "cu_seqlens_q": cu(lens_q), "cu_seqlens_k": cu(caps_k),
         "out": out, "lse": lse,
         "meta": torch.tensor([n_heads, n_kv_heads, head_dim, int(causal), scale,
                               max(lens_q), max(used_k)], dtype=F64)}
    if list(caps_k) != list(used_k):
        t["seqused_k"] = torch.tensor(used_k, dtype=F64)
    else:
        dout = rand(gen, total_q, n_heads, head_dim)
        t["dout"] = dout
        t["dq"], t["dk"], t["dv"] = torch.autograd.grad(out, (q, k, v), dout)
    return t


def attention(out_dir, gen):
    cases = {
        "causal_gqa2": ([5, 1, 11, 7], None, None, 4, 2, 13, True),
        "full_gqa3": ([7, 3, 9], None, None, 6, 2, 10, False),
        "causal_mha": ([4, 9], None, None, 3, 3, 7, True),
        # decode / chunked prefill from a KV cache: slabs longer than what is filled,
        # 1 or 3 new queries aligned to the end of the used keys.
        "decode_seqused": ([1, 3, 1], [8, 12, 6], [5, 12, 3], 3, 1, 9, True),
        # longer than the CPU backend's 64-query tiles
        "long_causal_gqa2": ([150, 70], None, None, 4, 2, 8, True),
        "long_full_gqa2": ([130, 3], None, None, 2, 1, 5, False),
        "long_prefill_seqused": ([70, 1], [200, 90], [180, 77], 2, 2, 6, True),
    }
    tensors = {}
    for name, (lens_q, caps, used, nh, nkv, hd, causal) in cases.items():
        caps = caps or lens_q
        used = used or lens_q
        for key, val in attention_case(gen, lens_q, caps, used, nh, nkv, hd, causal).items():
            tensors[f"{name}.{key}"] = val
    save(out_dir, "attention", tensors)


def swiglu(out_dir, gen):
    n_rows, dim = 29, 41
    gate_up = rand(gen, n_rows, 2 * dim, lo=-4, hi=4).requires_grad_()
    gate, up = gate_up[:, :dim], gate_up[:, dim:]
    out = torch.nn.functional.silu(gate) * up
    dout = rand(gen, n_rows, dim)
    (dgate_up,) = torch.autograd.grad(out, gate_up, dout)
    save(out_dir, "swiglu", {"gate_up": gate_up, "out": out, "dout": dout, "dgate_up": dgate_up})


def matmul(out_dir, gen):
    m, n, k = 37, 45, 67
    x = rand(gen, m, k).requires_grad_()
    w = rand(gen, n, k).requires_grad_()
    b = rand(gen, n).requires_grad_()
    out = torch.nn.functional.linear(x, w, b)
    dout = rand(gen, m, n)
    din, dw, db = torch.autograd.grad(out, (x, w, b), dout)
    save(out_dir, "matmul", {"in": x, "weight": w, "bias": b, "out": out, "dout": dout,
                             "din": din, "dweight": dw, "dbias": db})


def lm_head(out_dir, gen):
    n_tokens, dim, vocab, temperature = 150, 24, 600, 0.7
    hidden = rand(gen, n_tokens, dim, lo=-2, hi=2).requires_grad_()
    weight = rand(gen, vocab, dim).requires_grad_()
    targets = torch.randint(0, vocab, (n_tokens,), generator=gen)
    targets[[3, 17, 136]] = -1  # tokens without a target
    z = hidden @ weight.T * (1.0 / temperature)
    logsm = torch.log_softmax(z, dim=-1)
    has = targets >= 0
    logp = torch.where(has, logsm.gather(1, targets.clamp(min=0)[:, None])[:, 0], 0.0)
    entropy = -(logsm.exp() * logsm).sum(-1)
    dlogp = rand(gen, n_tokens)
    dh, dw = torch.autograd.grad(logp, (hidden, weight), dlogp)
    save(out_dir, "lm_head", {"hidden": hidden, "weight": weight, "targets": targets.to(F64),
                              "inv_temperature": scalar(1.0 / temperature), "logp": logp,
                              "lse": torch.logsumexp(z, -1), "entropy": entropy,
                              "logits": (hidden @ weight.T)[:19], "dlogp": dlogp, "dhidden": dh,
                              "dweight": dw})


def adamw(out_dir, gen):
    n, n_steps = 101, 5
    lr, betas, eps, wd, grad_scale = 1e-2, (0.9, 0.95), 1e-8, 0.1, 0.5
    p0 = rand(gen, n).float()
    grads = rand(gen, n_steps, n, lo=-3, hi=3).float()
    p = torch.nn.Parameter(p0.clone())
    opt = torch.optim.AdamW([p], lr=lr, betas=betas, eps=eps, weight_decay=wd, foreach=False)
    params = []
    for s in range(n_steps):
        p.grad = grads[s] * grad_scale
        opt.step()
        params.append(p.detach().clone())
    st = opt.state[p]
    save(out_dir, "adamw", {"param0": p0, "grads": grads, "params": torch.stack(params),
                            "m": st["exp_avg"], "v": st["exp_avg_sq"],
                            "hyper": torch.tensor([lr, betas[0], betas[1], eps, wd, grad_scale])})


def policy_loss(out_dir, gen):
    """TRL GRPOTrainer's per-token loss, summed with weights; gradient by autograd."""
    n, clip_low, clip_high, beta = 41, 0.2, 0.28, 0.04
    old = rand(gen, n, lo=-3, hi=-0.1)
    logp = (old + rand(gen, n, lo=-0.6, hi=0.6)).requires_grad_()
    ref = old + rand(gen, n, lo=-0.5, hi=0.5)
    adv = rand(gen, n, lo=-2, hi=2)
    weight = rand(gen, n, lo=0.01, hi=0.1)
    weight[[2, 9, 30]] = 0.0
    coef_1 = torch.exp(logp - old)
    coef_2 = torch.clamp(coef_1, 1 - clip_low, 1 + clip_high)
    per_token = -torch.min(coef_1 * adv, coef_2 * adv)
    kl = torch.exp(ref - logp) - (ref - logp) - 1
    per_token = per_token + beta * kl
    loss = (per_token * weight).sum()
    (dlogp,) = torch.autograd.grad(loss, logp)
    mask = weight != 0
    wsum = weight[mask].sum()
    clipped = ((coef_1 < 1 - clip_low) & (adv < 0)) | ((coef_1 > 1 + clip_high) & (adv > 0))
    stats = torch.stack([loss, (weight * kl).sum() / wsum, (weight * clipped).sum() / wsum,
                         (weight * coef_1).sum() / wsum])
    save(out_dir, "policy_loss", {"logp": logp, "old_logp": old, "ref_logp": ref,
                                  "advantage": adv, "weight": weight, "dlogp": dlogp,
                                  "stats": stats,
                                  "hyper": torch.tensor([clip_low, clip_high, beta])})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="tests/fixtures/ops")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for i, fn in enumerate([embedding, rmsnorm, rope, attention, swiglu, matmul, lm_head, adamw,
                            policy_loss]):
        gen = torch.Generator().manual_seed(1000 + i)
        fn(args.out, gen)


if __name__ == "__main__":
    main()
