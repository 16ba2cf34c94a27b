#!/usr/bin/env python3
"""make_ppo_math_fixtures.py — reference values for tests/train/test_ppo_math.c, in plain Python
(no numpy), written from the definitions rather than from rlc's loops:

  GAE        A_t = sum_{l >= 0} (gamma lam)^l delta_{t+l}, delta_t = r_t + gamma V_{t+1} - V_t
             (the explicit sum, not the backward recursion rlc runs), R_t = A_t + V_t
  rewards    -kl_coef (logp - ref) at each token, + score at the last (InstructGPT)
  whitening  (x - mean) / sqrt(unbiased var + 1e-8) (TRL's masked_whiten)
  value loss 0.5 mean-by-weights of max((V - R)^2, (V_clip - R)^2), its gradient by central
             differences of that loss, and the clipped fraction
  explained variance, k1 / k3 KL, the running mean / std over three batches, the adaptive KL
  coefficient after three updates (Ziegler et al. 2019).

Writes tests/fixtures/train/ppo_math.json (or the path given). Deterministic (random.Random(7)).
"""
import json
import math
import random
import sys


def gae(rewards, values, gamma, lam):
    n = len(rewards)
    delta = [rewards[t] + gamma * (values[t + 1] if t + 1 < n else 0.0) - values[t] for t in range(n)]
    adv = [sum((gamma * lam) ** l * delta[t + l] for l in range(n - t)) for t in range(n)]
    return adv, [a + v for a, v in zip(adv, values)]


def whiten(x):
    mean = sum(x) / len(x)
    var = sum((v - mean) ** 2 for v in x) / (len(x) - 1)
    return [(v - mean) / math.sqrt(var + 1e-8) for v in x]


def value_loss(v, old, ret, w, clip):
    total = 0.0
    for t in range(len(v)):
        vc = old[t] + min(max(v[t] - old[t], -clip), clip)
        total += 0.5 * w[t] * max((v[t] - ret[t]) ** 2, (vc - ret[t]) ** 2)
    return total


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/train/ppo_math.json"
    rnd = random.Random(7)
    n = 11
    logp = [-abs(rnd.gauss(1.0, 0.7)) for _ in range(n)]
    ref = [lp + rnd.gauss(0, 0.3) for lp in logp]
    values = [rnd.gauss(0.2, 0.5) for _ in range(n)]
    score, kl_coef, gamma, lam = 1.5, 0.05, 0.97, 0.9
    rewards = [-kl_coef * (a - b) for a, b in zip(logp, ref)]
    rewards[-1] += score
    adv, ret = gae(rewards, values, gamma, lam)
    adv1, ret1 = gae(rewards, values, 1.0, 1.0)  # gamma = lam = 1: A_t = sum of future rewards - V_t

    new_values = [v + rnd.gauss(0, 0.4) for v in values]
    w = [0.0 if rnd.random() < 0.2 else 1.0 / n for _ in range(n)]
    clip = 0.2
    loss = value_loss(new_values, values, ret, w, clip)
    grad = []
    for t in range(n):
        # a clip boundary would make the finite difference meaningless; the data avoids it
        h = 1e-6
        up = new_values[:]
        up[t] += h
        down = new_values[:]
        down[t] -= h
        grad.append((value_loss(up, values, ret, w, clip) - value_loss(down, values, ret, w, clip)) / (2 * h))
    clipped = sum(wt for t, wt in enumerate(w) if wt > 0 and
                  (values[t] + min(max(new_values[t] - values[t], -clip), clip) - ret[t]) ** 2 > (new_values[t] - ret[t]) ** 2)
    clip_frac = clipped / sum(w)

    k1 = sum(a - b for a, b in zip(logp, ref)) / n
    k3 = sum(math.exp(b - a) - (b - a) - 1 for a, b in zip(logp, ref)) / n
    resid = [r - v for r, v in zip(ret, values)]

    def var(x):
        m = sum(x) / len(x)
        return sum((a - m) ** 2 for a in x) / len(x)

    ev = 1 - var(resid) / var(ret)

    batches = [[rnd.gauss(3, 2) for _ in range(k)] for k in (5, 1, 8)]
    everything = [x for b in batches for x in b]
    run_mean = sum(everything) / len(everything)
    run_std = math.sqrt(sum((x - run_mean) ** 2 for x in everything) / len(everything))

    coef, target, horizon = 0.2, 6.0, 10000.0
    for kl, steps in ((9.0, 512), (6.6, 512), (1.0, 256)):
        e = min(max(kl / target - 1, -0.2), 0.2)
        coef *= 1 + e * steps / horizon

    out = {
        "logp": logp, "ref_logp": ref, "values": values, "score": score, "kl_coef": kl_coef,
        "gamma": gamma, "lam": lam, "rewards": rewards, "advantages": adv, "returns": ret,
        "advantages_gamma1": adv1, "whitened": whiten(adv),
        "new_values": new_values, "weights": w, "cliprange_value": clip, "value_loss": loss,
        "value_grad": grad, "value_clip_frac": clip_frac, "k1": k1, "k3": k3, "explained_variance": ev,
        "batches": batches, "running_mean": run_mean, "running_std": run_std,
        "kl_ctl": {"init": 0.2, "target": target, "horizon": horizon,
                   "updates": [[9.0, 512], [6.6, 512], [1.0, 256]], "value": coef},
    }
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"{path}: value loss {loss:.6f}, clip fraction {clip_frac:.3f}, kl coef {coef:.6f}")


if __name__ == "__main__":
    main()
