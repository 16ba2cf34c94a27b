#!/usr/bin/env python3
"""make_train_fixtures.py: reference values for tests/train (optimizer and schedules).

Writes tests/fixtures/train/adamw.json: torch.optim.AdamW with two parameter groups (weight
decay on the matrix, none on the norm), gradient scaling (as accumulation does), global-norm
clipping by torch.nn.utils.clip_grad_norm_, and transformers' cosine schedule with warmup;
the parameters after every step, the pre-clip gradient norms and the learning rates.
Also the learning rates of the three schedules for a few step counts. Run from the repo root.
"""
import json

import torch
from transformers import (get_constant_schedule_with_warmup, get_cosine_schedule_with_warmup,
                          get_linear_schedule_with_warmup)

torch.manual_seed(0)
w = torch.randn(6, dtype=torch.float32)
n = 1.0 + 0.1 * torch.randn(3, dtype=torch.float32)
steps, grad_scale, max_norm = 4, 0.5, 0.8
grads = [torch.randn(9, dtype=torch.float32) * (1.0 + s) for s in range(steps)]

pw, pn = torch.nn.Parameter(w.clone()), torch.nn.Parameter(n.clone())
opt = torch.optim.AdamW([{"params": [pw], "weight_decay": 0.1}, {"params": [pn], "weight_decay": 0.0}],
                        lr=0.05, betas=(0.9, 0.95), eps=1e-8)
sched = get_cosine_schedule_with_warmup(opt, num_warmup_steps=1, num_training_steps=steps)
after, norms, lrs = [], [], []
for s in range(steps):
    g = grads[s] * grad_scale
    pw.grad, pn.grad = g[:6].clone(), g[6:].clone()
    norms.append(float(torch.nn.utils.clip_grad_norm_([pw, pn], max_norm)))
    lrs.append(opt.param_groups[0]["lr"])
    opt.step()
    sched.step()
    after.append(torch.cat([pw.detach(), pn.detach()]).tolist())

sch = {}
for name, make in [("constant", lambda o: get_constant_schedule_with_warmup(o, 3)),
                   ("linear", lambda o: get_linear_schedule_with_warmup(o, 3, 10)),
                   ("cosine", lambda o: get_cosine_schedule_with_warmup(o, 3, 10))]:
    o = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=2e-4)
    sc = make(o)
    vals = []
    for _ in range(12):
        vals.append(o.param_groups[0]["lr"])
        o.step()
        sc.step()
    sch[name] = vals

out = {"init": torch.cat([w, n]).tolist(), "grads": [g.tolist() for g in grads],
       "grad_scale": grad_scale, "max_norm": max_norm, "lr": 0.05, "betas": [0.9, 0.95],
       "eps": 1e-8, "weight_decay": 0.1, "warmup": 1, "total": steps,
       "after": after, "norms": norms, "lrs": lrs,
       "schedules": {"peak": 2e-4, "warmup": 3, "total": 10, "lr": sch}}
with open("tests/fixtures/train/adamw.json", "w") as f:
    json.dump(out, f, indent=1)
print("wrote tests/fixtures/train/adamw.json")
