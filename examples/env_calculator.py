#!/usr/bin/env python3
"""env_calculator.py: a multi-turn environment for `rlc grpo --env "python3 examples/env_calculator.py"`.

Protocol (docs/episodes.md): rlc writes one JSON object per model turn on stdin,
  {"episode": 3, "step": 1, "turn": 0, "last": false, "text": "<the model's turn>", "fields": {<dataset line>}}
and reads one line back: {"observation": "..."} to continue the episode (rlc shows it to the model
as a tool message), or {"done": true, "reward": r} to end it. On a turn with "last": true the
answer must be done.

The task: dataset lines {"prompt": "What is 17*23? ...", "answer": "391"}. The model may call a
calculator, <tool_call>{"name": "calc", "arguments": {"expr": "17*23"}}</tool_call>, and gets the
value back; a turn without a tool call is its final answer: reward 1 when the last number in it
equals "answer", else 0. Expressions: numbers, + - * / ( ) only.
"""
import ast
import json
import operator
import re
import sys

OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
       ast.USub: operator.neg, ast.UAdd: operator.pos}


def calc(node):
    if isinstance(node, ast.Expression):
        return calc(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in OPS:
        return OPS[type(node.op)](calc(node.left), calc(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in OPS:
        return OPS[type(node.op)](calc(node.operand))
    raise ValueError("only numbers and + - * / ( ) are allowed")


def score(text, answer):
    numbers = re.findall(r"-?\d+(?:\.\d+)?", text)
    try:
        return 1.0 if numbers and float(numbers[-1]) == float(answer) else 0.0
    except ValueError:
        return 0.0


for line in sys.stdin:
    req = json.loads(line)
    text, answer = req["text"], str(req["fields"].get("answer", ""))
    call = re.search(r"<tool_call>(.*?)</tool_call>", text, re.S)
    if call and not req["last"]:
        try:
            c = json.loads(call.group(1))
            expr = str(c.get("arguments", {}).get("expr", ""))
            if len(expr) > 200:
                raise ValueError("expression too long")
            value = calc(ast.parse(expr, mode="eval"))
            out = {"observation": f"{expr} = {value:g}"}
        except Exception as e:  # the model's mistake: tell it
            out = {"observation": f"error: {e}"}
    else:
        out = {"done": True, "reward": score(text, answer)}
    print(json.dumps(out), flush=True)
