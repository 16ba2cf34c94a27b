#!/usr/bin/env python3
"""reward_length.py: an external reward program for `rlc grpo --reward cmd:"python3 examples/reward_length.py"`.

Protocol (see src/reward/external.h): one JSON object per completion on stdin, with the
dataset line's fields plus "prompt", "completion" and "answer"; one line {"reward": x} per
completion on stdout, in order. Anything printed to stderr shows up in rlc's output.

This one prefers completions close to a target length (in characters): reward 1 at the
target, falling linearly to 0 at twice the target or at empty. A dataset line may set its own
"target_chars"; the default is 200.
"""
import json
import sys

for line in sys.stdin:
    item = json.loads(line)
    target = float(item.get("target_chars", 200))
    n = len(item["completion"])
    reward = max(0.0, 1.0 - abs(n - target) / target)
    print(json.dumps({"reward": reward}), flush=True)
