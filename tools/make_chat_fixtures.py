#!/usr/bin/env python3
"""make_chat_fixtures.py — reference chat renderings for tests/io/test_chat.c.

Renders one set of conversations (single and multi-turn, system prompts, tools with tool calls
and tool responses, thinking on and off, reasoning in earlier turns, with and without the
generation prompt) with transformers' apply_chat_template(..., tokenize=False) under each chat
template rlc renders natively, and writes

  tests/fixtures/chat/<family>.json  {"family", "source", "chat_template", "bos_token",
                                      "cases": [{"name", "messages", "tools"?,
                                                 "add_generation_prompt", "enable_thinking"?,
                                                 "text" | "error"}]}

"error" (the exception's text) marks a case transformers refuses; rlc must refuse it too.
"template_kwargs" are passed to every rendering (apply_chat_template's extra keyword arguments).

Templates:
  qwen3     the real Qwen3 tokenizer_config.json (--qwen3-dir, e.g. a copy of
            ../shared/data/qwen3-tokenizer)
  qwen2.5   Qwen2.5-Instruct's chat_template         } written below from the published
  qwen2.5-math  Qwen2.5-Math-Instruct's (its default system prompt differs)
  llama3    Llama-3-8B-Instruct's chat_template      } tokenizer_config.json files (no copy
  llama3.1  Llama-3.1-8B-Instruct's chat_template    } of them is on disk here)
  llama3.2  Llama-3.2-1B-Instruct's chat_template    } (rendered with date_string "03 Feb 2025")
  chatml    the plain ChatML template of examples/demo (tools/make_demo_tokenizer.py)

No network: every tokenizer object is built from the local Qwen3 tokenizer.json with the
template and special tokens set (rendering to text does not depend on the vocabulary).

usage: python3 tools/make_chat_fixtures.py --qwen3-dir DIR [--out tests/fixtures/chat] [--only FAMILY]
"""
import argparse
import copy
import json
import os

# --- templates not on disk: transcribed from the published tokenizer_config.json files ----------

QWEN25_TEMPLATE = (  # Qwen/Qwen2.5-7B-Instruct (also Qwen2.5-Coder-*-Instruct)
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    "    {%- else %}\n"
    "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n"
    "    {%- endif %}\n"
    "    {{- \"\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}\n"
    "    {%- for tool in tools %}\n"
    "        {{- \"\\n\" }}\n"
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    "    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, "
    "\\\"arguments\\\": <args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n"
    "{%- else %}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\" and not message.tool_calls) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- elif message.role == \"assistant\" %}\n"
    "        {{- '<|im_start|>' + message.role }}\n"
    "        {%- if message.content %}\n"
    "            {{- '\\n' + message.content }}\n"
    "        {%- endif %}\n"
    "        {%- for tool_call in message.tool_calls %}\n"
    "            {%- if tool_call.function is defined %}\n"
    "                {%- set tool_call = tool_call.function %}\n"
    "            {%- endif %}\n"
    "            {{- '\\n<tool_call>\\n{\"name\": \"' }}\n"
    "            {{- tool_call.name }}\n"
    "            {{- '\", \"arguments\": ' }}\n"
    "            {{- tool_call.arguments | tojson }}\n"
    "            {{- '}\\n</tool_call>' }}\n"
    "        {%- endfor %}\n"
    "        {{- '<|im_end|>\\n' }}\n"
    "    {%- elif message.role == \"tool\" %}\n"
    "        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != \"tool\") %}\n"
    "            {{- '<|im_start|>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}\n"
    "        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n"
    "            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n"
)

# Qwen/Qwen2.5-Math-*-Instruct: Qwen2.5's template with another default system prompt (a Jinja
# literal: "\\\\boxed" in it renders as "\\boxed").
QWEN25_MATH_TEMPLATE = QWEN25_TEMPLATE.replace(
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
    "Please reason step by step, and put your final answer within \\\\boxed{}.")

LLAMA3_TEMPLATE = (  # meta-llama/Meta-Llama-3-8B-Instruct
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

LLAMA31_TEMPLATE = (  # meta-llama/Llama-3.1-8B-Instruct (also Llama-3.3-70B-Instruct)
    "{{- bos_token }}\n"
    "{%- if custom_tools is defined %}\n"
    "    {%- set tools = custom_tools %}\n"
    "{%- endif %}\n"
    "{%- if not tools_in_user_message is defined %}\n"
    "    {%- set tools_in_user_message = true %}\n"
    "{%- endif %}\n"
    "{%- if not date_string is defined %}\n"
    "    {%- set date_string = \"26 Jul 2024\" %}\n"
    "{%- endif %}\n"
    "{%- if not tools is defined %}\n"
    "    {%- set tools = none %}\n"
    "{%- endif %}\n"
    "\n"
    "{#- This block extracts the system message, so we can slot it into the right place. #}\n"
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {%- set system_message = messages[0]['content']|trim %}\n"
    "    {%- set messages = messages[1:] %}\n"
    "{%- else %}\n"
    "    {%- set system_message = \"\" %}\n"
    "{%- endif %}\n"
    "\n"
    "{#- System message + builtin tools #}\n"
    "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}\n"
    "{%- if builtin_tools is defined or tools is not none %}\n"
    "    {{- \"Environment: ipython\\n\" }}\n"
    "{%- endif %}\n"
    "{%- if builtin_tools is defined %}\n"
    "    {{- \"Tools: \" + builtin_tools | reject('equalto', 'code_interpreter') | join(\", \") + \"\\n\\n\"}}\n"
    "{%- endif %}\n"
    "{{- \"Cutting Knowledge Date: December 2023\\n\" }}\n"
    "{{- \"Today Date: \" + date_string + \"\\n\\n\" }}\n"
    "{%- if tools is not none and not tools_in_user_message %}\n"
    "    {{- \"You have access to the following functions. To call a function, please respond with JSON for a function call.\" }}\n"
    "    {{- 'Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.' }}\n"
    "    {{- \"Do not use variables.\\n\\n\" }}\n"
    "    {%- for t in tools %}\n"
    "        {{- t | tojson(indent=4) }}\n"
    "        {{- \"\\n\\n\" }}\n"
    "    {%- endfor %}\n"
    "{%- endif %}\n"
    "{{- system_message }}\n"
    "{{- \"<|eot_id|>\" }}\n"
    "\n"
    "{#- Custom tools are passed in a user message with some extra guidance #}\n"
    "{%- if tools_in_user_message and not tools is none %}\n"
    "    {#- Extract the first user message so we can plug it in here #}\n"
    "    {%- if messages | length != 0 %}\n"
    "        {%- set first_user_message = messages[0]['content']|trim %}\n"
    "        {%- set messages = messages[1:] %}\n"
    "    {%- else %}\n"
    "        {{- raise_exception(\"Cannot put tools in the first user message when there's no first user message!\") }}\n"
    "{%- endif %}\n"
    "    {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}\n"
    "    {{- \"Given the following functions, please respond with a JSON for a function call \" }}\n"
    "    {{- \"with its proper arguments that best answers the given prompt.\\n\\n\" }}\n"
    "    {{- 'Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.' }}\n"
    "    {{- \"Do not use variables.\\n\\n\" }}\n"
    "    {%- for t in tools %}\n"
    "        {{- t | tojson(indent=4) }}\n"
    "        {{- \"\\n\\n\" }}\n"
    "    {%- endfor %}\n"
    "    {{- first_user_message + \"<|eot_id|>\"}}\n"
    "{%- endif %}\n"
    "\n"
    "{%- for message in messages %}\n"
    "    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}\n"
    "        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}\n"
    "    {%- elif 'tool_calls' in message %}\n"
    "        {%- if not message.tool_calls|length == 1 %}\n"
    "            {{- raise_exception(\"This model only supports single tool-calls at once!\") }}\n"
    "        {%- endif %}\n"
    "        {%- set tool_call = message.tool_calls[0].function %}\n"
    "        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}\n"
    "            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}\n"
    "            {{- \"<|python_tag|>\" + tool_call.name + \".call(\" }}\n"
    "            {%- for arg_name, arg_val in tool_call.arguments | items %}\n"
    "                {{- arg_name + '=\"' + arg_val + '\"' }}\n"
    "                {%- if not loop.last %}\n"
    "                    {{- \", \" }}\n"
    "                {%- endif %}\n"
    "                {%- endfor %}\n"
    "            {{- \")\" }}\n"
    "        {%- else  %}\n"
    "            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}\n"
    "            {{- '{\"name\": \"' + tool_call.name + '\", ' }}\n"
    "            {{- '\"parameters\": ' }}\n"
    "            {{- tool_call.arguments | tojson }}\n"
    "            {{- \"}\" }}\n"
    "        {%- endif %}\n"
    "        {%- if builtin_tools is defined %}\n"
    "            {#- This means we're in ipython mode #}\n"
    "            {{- \"<|eom_id|>\" }}\n"
    "        {%- else %}\n"
    "            {{- \"<|eot_id|>\" }}\n"
    "        {%- endif %}\n"
    "    {%- elif message.role == \"tool\" or message.role == \"ipython\" %}\n"
    "        {{- \"<|start_header_id|>ipython<|end_header_id|>\\n\\n\" }}\n"
    "        {%- if message.content is mapping or message.content is iterable %}\n"
    "            {{- message.content | tojson }}\n"
    "        {%- else %}\n"
    "            {{- message.content }}\n"
    "        {%- endif %}\n"
    "        {{- \"<|eot_id|>\" }}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
    "{%- endif %}\n"
)

# meta-llama/Llama-3.2-1B-Instruct (and 3B): 3.1's text-only template without builtin tools, dated
# by strftime_now (today) unless date_string is passed. Transcribed, compared with public copies.
LLAMA32_TEMPLATE = (
    LLAMA31_TEMPLATE
    .replace("{%- if not date_string is defined %}\n    {%- set date_string = \"26 Jul 2024\" %}\n{%- endif %}\n",
             "{%- if not date_string is defined %}\n    {%- if strftime_now is defined %}\n"
             "        {%- set date_string = strftime_now(\"%d %b %Y\") %}\n    {%- else %}\n"
             "        {%- set date_string = \"26 Jul 2024\" %}\n    {%- endif %}\n{%- endif %}\n")
    .replace("{#- System message + builtin tools #}\n", "{#- System message #}\n")
    .replace("{%- if builtin_tools is defined or tools is not none %}\n", "{%- if tools is not none %}\n")
    .replace("{%- if builtin_tools is defined %}\n    {{- \"Tools: \" + builtin_tools | reject('equalto', "
             "'code_interpreter') | join(\", \") + \"\\n\\n\"}}\n{%- endif %}\n", "")
    .replace("        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}\n"
             "            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}\n"
             "            {{- \"<|python_tag|>\" + tool_call.name + \".call(\" }}\n"
             "            {%- for arg_name, arg_val in tool_call.arguments | items %}\n"
             "                {{- arg_name + '=\"' + arg_val + '\"' }}\n"
             "                {%- if not loop.last %}\n"
             "                    {{- \", \" }}\n"
             "                {%- endif %}\n"
             "                {%- endfor %}\n"
             "            {{- \")\" }}\n"
             "        {%- else  %}\n"
             "            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}\n"
             "            {{- '{\"name\": \"' + tool_call.name + '\", ' }}\n"
             "            {{- '\"parameters\": ' }}\n"
             "            {{- tool_call.arguments | tojson }}\n"
             "            {{- \"}\" }}\n"
             "        {%- endif %}\n"
             "        {%- if builtin_tools is defined %}\n"
             "            {#- This means we're in ipython mode #}\n"
             "            {{- \"<|eom_id|>\" }}\n"
             "        {%- else %}\n"
             "            {{- \"<|eot_id|>\" }}\n"
             "        {%- endif %}\n",
             "        {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}\n"
             "        {{- '{\"name\": \"' + tool_call.name + '\", ' }}\n"
             "        {{- '\"parameters\": ' }}\n"
             "        {{- tool_call.arguments | tojson }}\n"
             "        {{- \"}\" }}\n"
             "        {{- \"<|eot_id|>\" }}\n")
)

CHATML_TEMPLATE = (  # examples/demo/tokenizer_config.json (tools/make_demo_tokenizer.py)
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# --- conversations -------------------------------------------------------------------------------

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city.\tUnicode: été, 東京, \u0001 ctl, \"q\" \\ /",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"},
        "days": {"type": "integer", "minimum": 1, "maximum": 14, "default": 3},
        "scale": {"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 1e-07, "big": 12345678901234, "enum": ["c", "f"], "nullable": None, "strict": True},
        "tags": {"type": "array", "items": {}, "examples": [[], {}]}},
        "required": ["city"]}}}
CALC = {"type": "function", "function": {"name": "calc", "description": "Evaluate an expression.",
                                         "parameters": {"type": "object", "properties": {"expr": {"type": "string"}}}}}
TOOLS = [WEATHER, CALC]


def call(name, args):
    return {"type": "function", "function": {"name": name, "arguments": args}}


def conversations():
    u = lambda c: {"role": "user", "content": c}
    a = lambda c, **kw: dict({"role": "assistant", "content": c}, **kw)
    s = lambda c: {"role": "system", "content": c}
    t = lambda c: {"role": "tool", "content": c}
    cases = [
        ("single_user", [u("What is 2 + 2?")], {}, True),
        ("system_user", [s("You are a helpful assistant."), u("Solve: 17 * 23 = ?\nShow your steps.")], {}, True),
        ("sft_pair", [u("What is 1+2?"), a("3")], {}, False),
        ("sft_pair_gen", [u("What is 1+2?"), a("3")], {}, True),
        ("multi_turn", [s("Be brief."), u("Hi"), a("Hello! How can I help?"), u("Say 日本語 and 😀."),
                        a("日本語 😀")], {}, False),
        ("multi_turn_prompt", [s("Be brief."), u("Hi"), a("Hello!"), u("Again")], {}, True),
        ("reasoning_content", [u("a"), a("b", reasoning_content="think a"), u("c"),
                               a("d", reasoning_content="\nthink c\n\n")], {}, False),
        ("inline_think", [u("a"), a("<think>\nold thought\n</think>\n\nold answer"), u("c"),
                          a("<think>new thought</think>\n\nnew answer")], {}, False),
        ("inline_think_prompt", [u("a"), a("<think>\nold thought\n</think>\n\nold answer"), u("c")], {}, True),
        ("empty_reasoning", [u("q"), a("x</think>y", reasoning_content="")], {}, False),
        ("thinking_off_prompt", [u("Hi there")], {"enable_thinking": False}, True),
        ("thinking_on_prompt", [u("Hi there")], {"enable_thinking": True}, True),
        ("thinking_off_sft", [u("q"), a("answer")], {"enable_thinking": False}, False),
        ("whitespace", [s("  sys  \n"), u("\n\t spaced\u3000text \u00a0"), a("  reply \n")], {}, False),
        ("empty_system", [s(""), u("x")], {}, True),
        ("system_later", [u("x"), s("late system"), u("y")], {}, True),
        ("tools_prompt", [u("Weather in Paris?")], {"tools": TOOLS}, True),
        ("tools_system_prompt", [s("You help with weather."), u("Weather in Paris?")], {"tools": TOOLS}, True),
        ("tool_round_trip", [s("You help."), u("Weather in Paris and 2*21?"),
                             a("", tool_calls=[call("get_weather", {"city": "Paris", "days": 2})]),
                             t("{\"temp\": 21, \"sky\": \"clear\"}"), u("And 2*21?"),
                             a("Let me compute.", tool_calls=[call("calc", "{\"expr\": \"2*21\"}")]),
                             t("42"), a("Paris: 21 C, clear. 2*21 = 42.")], {"tools": TOOLS}, False),
        ("two_calls_two_responses", [u("Weather in Paris and Rome?"),
                                     a("", tool_calls=[call("get_weather", {"city": "Paris"}),
                                                       call("get_weather", {"city": "Rome", "note": "été"})]),
                                     t("sunny"), t("rainy")], {"tools": TOOLS}, True),
        ("tool_call_reasoning", [u("Weather?"),
                                 a("I will check.", reasoning_content="need the tool",
                                   tool_calls=[call("get_weather", {"city": "Oslo"})]),
                                 t("cold"), a("It is cold.", reasoning_content="read the result")],
         {"tools": TOOLS}, False),
        ("tool_response_user", [u("first"), a("ok"), u("<tool_response>\nraw\n</tool_response>"),
                                a("done")], {}, False),
        ("tool_call_no_tools", [u("Weather?"), a("", tool_calls=[call("get_weather", {"city": "Oslo"})]),
                                t("cold")], {}, True),
        ("assistant_first", [a("I start."), u("ok")], {}, True),
        ("flat_tool_call", [u("1?"), a("", tool_calls=[{"name": "calc", "arguments": {"expr": "1"}}])], {}, False),
        ("tools_system_only", [s("Only a system prompt.")], {"tools": [CALC]}, True),
        ("tools_thinking_off", [u("Weather in Oslo?")], {"tools": [CALC], "enable_thinking": False}, True),
    ]
    out = []
    for name, msgs, opts, gen in cases:
        case = {"name": name, "messages": msgs, "add_generation_prompt": gen}
        case.update(opts)
        out.append(case)
    return out


def render(tok, case, template_kwargs):
    kwargs = dict(template_kwargs)
    if "enable_thinking" in case:
        kwargs["enable_thinking"] = case["enable_thinking"]
    msgs = copy.deepcopy(case["messages"])
    try:
        text = tok.apply_chat_template(msgs, tools=copy.deepcopy(case.get("tools")), tokenize=False,
                                       add_generation_prompt=case["add_generation_prompt"], **kwargs)
        return {"text": text}
    except Exception as e:  # the template raised (e.g. Llama 3.1 with two tool calls)
        return {"error": f"{type(e).__name__}: {e}"}


class LocalJinja:
    """Development only (--local-jinja, where transformers is missing): transformers' rendering
    rebuilt from jinja2 (same environment options, tojson and raise_exception). Committed
    fixtures come from transformers itself; their "transformers" field says which version."""

    def __init__(self, template, bos, eos):
        import jinja2
        import jinja2.ext
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
            return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

        def raise_exception(message):
            raise jinja2.exceptions.TemplateError(message)

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                            extensions=[jinja2.ext.loopcontrols])
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: __import__("datetime").datetime.now().strftime(fmt)
        self.template = env.from_string(template)
        self.tokens = {"eos_token": eos}
        if bos:
            self.tokens["bos_token"] = bos

    def apply_chat_template(self, messages, tools=None, tokenize=False, add_generation_prompt=False, **kw):
        return self.template.render(messages=messages, tools=tools, documents=None,
                                    add_generation_prompt=add_generation_prompt, **self.tokens, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qwen3-dir", required=True, help="folder with Qwen3's tokenizer.json + tokenizer_config.json")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "chat"))
    ap.add_argument("--local-jinja", action="store_true", help="development only: jinja2 without transformers")
    ap.add_argument("--only", help="write this family's file alone")
    args = ap.parse_args()
    if args.local_jinja:
        version = "none (jinja2 emulation, development only)"
    else:
        import transformers
        from transformers import PreTrainedTokenizerFast
        version = transformers.__version__

    with open(os.path.join(args.qwen3_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        qwen3_template = json.load(f)["chat_template"]
    vocab_file = os.path.join(args.qwen3_dir, "tokenizer.json")
    families = [
        ("qwen3", "Qwen3 tokenizer_config.json (../shared/data/qwen3-tokenizer)", qwen3_template, None, "<|im_end|>", {}),
        ("qwen2.5", "Qwen2.5-Instruct chat_template, transcribed (not on disk)", QWEN25_TEMPLATE, None, "<|im_end|>",
         {}),
        ("qwen2.5-math", "Qwen2.5-Math-Instruct chat_template, transcribed (not on disk)", QWEN25_MATH_TEMPLATE,
         None, "<|im_end|>", {}),
        ("llama3", "Meta-Llama-3-8B-Instruct chat_template, transcribed (not on disk)", LLAMA3_TEMPLATE,
         "<|begin_of_text|>", "<|eot_id|>", {}),
        ("llama3.1", "Llama-3.1-8B-Instruct chat_template, transcribed (not on disk)", LLAMA31_TEMPLATE,
         "<|begin_of_text|>", "<|eot_id|>", {}),
        ("llama3.2", "Llama-3.2-1B-Instruct chat_template, transcribed (not on disk)", LLAMA32_TEMPLATE,
         "<|begin_of_text|>", "<|eot_id|>", {"date_string": "03 Feb 2025"}),
        ("chatml", "examples/demo ChatML chat_template", CHATML_TEMPLATE, None, "<|im_end|>", {}),
    ]
    os.makedirs(args.out, exist_ok=True)
    cases = conversations()
    for family, source, template, bos, eos, template_kwargs in families:
        if args.only and family != args.only:
            continue
        if args.local_jinja:
            tok = LocalJinja(template, bos, eos)
        else:
            kw = {"tokenizer_file": vocab_file, "eos_token": eos}
            if bos:
                kw["bos_token"] = bos
            tok = PreTrainedTokenizerFast(**kw)
            tok.chat_template = template
        rendered = []
        for case in cases:
            r = dict(case)
            r.update(render(tok, case, template_kwargs))
            rendered.append(r)
        doc = {"family": family, "source": source, "transformers": version,
               "chat_template": template, "bos_token": bos, "eos_token": eos, "template_kwargs": template_kwargs,
               "cases": rendered}
        path = os.path.join(args.out, family.replace(".", "_").replace("-", "_") + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
            f.write("\n")
        n_err = sum("error" in r for r in rendered)
        print(f"{path}: {len(rendered)} cases ({n_err} refused by the template)")


if __name__ == "__main__":
    main()
