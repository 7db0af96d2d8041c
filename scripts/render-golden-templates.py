#!/usr/bin/env python3
"""Renders the chat-template goldens in test/fixtures/chat/golden/ with a reference Jinja.

The reference is Debian's python3-jinja2 (`apt-get install -y python3-jinja2`) set up the way
Hugging Face transformers renders chat templates: a sandboxed environment with trim_blocks and
lstrip_blocks, the loopcontrols extension, `raise_exception`, `strftime_now` (fixed to one date here
so the files are reproducible) and a `tojson` that keeps key order and non-ASCII text, with
transformers' indent/separators/sort_keys arguments.

Input: test/fixtures/chat/conversations.json (OpenAI-shaped messages) and every template in
../shared/templates/. Messages go to the template as transformers users pass them, which is what
kiln's chat layer must produce from the OpenAI shapes (src/chat/template-messages.ts):
  - tool-call arguments are objects (the JSON string parsed), ids and names kept;
  - a message without content (or null) gets "", a list of text parts becomes one string;
  - `tool_calls` is left out unless it has calls;
  - `reasoning` or `reasoning_content` becomes `reasoning_content`;
  - a `developer` message becomes `system` unless the template knows the developer role;
  - a tool message gets the `name` of the call it answers (a given `name` is kept on any message).
Run from the repository root: python3 scripts/render-golden-templates.py [TEMPLATE_DIR]
"""
import datetime
import hashlib
import json
import os
import sys

import jinja2
import jinja2.ext
import jinja2.sandbox

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "test", "fixtures", "chat")
NOW = datetime.datetime(2025, 3, 14, 9, 26, 53)

# The special tokens each model's tokenizer_config passes to its template.
TOKENS = {
    "qwen3": {"eos_token": "<|im_end|>"},
    "qwen2.5": {"eos_token": "<|im_end|>"},
    "qwen3-coder": {"eos_token": "<|im_end|>"},
    "llama3.1": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama3.2": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "mistral-nemo": {"bos_token": "<s>", "eos_token": "</s>"},
    "mistral-small-3": {"bos_token": "<s>", "eos_token": "</s>"},
    "hermes": {"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"},
    "llama2-chat": {"bos_token": "<s>", "eos_token": "</s>"},
    "tinyllama": {"bos_token": "<s>", "eos_token": "</s>"},
}


class TemplateRaised(Exception):
    pass


def raise_exception(message):
    raise TemplateRaised(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return NOW.strftime(fmt)


def environment():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def text_of(content):
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(part["text"] for part in content if part.get("type") == "text")
    return content


def template_messages(messages, template_source):
    knows_developer = "developer" in template_source
    names = {}
    out = []
    for m in messages:
        role = m["role"]
        if role == "developer" and not knows_developer:
            role = "system"
        t = {"role": role, "content": text_of(m.get("content"))}
        if "name" in m:
            t["name"] = m["name"]
        reasoning = m.get("reasoning_content", m.get("reasoning"))
        if reasoning is not None:
            t["reasoning_content"] = reasoning
        calls = m.get("tool_calls") or []
        if calls:
            t["tool_calls"] = []
            for c in calls:
                names[c["id"]] = c["function"]["name"]
                t["tool_calls"].append({
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])},
                })
        if role == "tool":
            t["tool_call_id"] = m["tool_call_id"]
            name = m.get("name", names.get(m["tool_call_id"]))
            if name is not None:
                t["name"] = name
        out.append(t)
    return out


def render(env, source, stem, case, tools):
    context = dict(TOKENS[stem])
    context["messages"] = template_messages(case["messages"], source)
    context["add_generation_prompt"] = case["add_generation_prompt"]
    if case.get("tools"):
        context["tools"] = tools
    if "enable_thinking" in case:
        context["enable_thinking"] = case["enable_thinking"]
    try:
        return {"prompt": env.from_string(source).render(**context)}
    except TemplateRaised as e:
        return {"error": str(e), "raised": True}
    except Exception as e:  # the template failed on this input (a TypeError, an undefined value)
        return {"error": f"{type(e).__name__}: {e}", "raised": False}


def main():
    template_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "templates")
    with open(os.path.join(FIXTURES, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)
    env = environment()
    out_dir = os.path.join(FIXTURES, "golden")
    os.makedirs(out_dir, exist_ok=True)
    for stem in sorted(TOKENS):
        with open(os.path.join(template_dir, stem + ".jinja"), "rb") as f:
            raw = f.read()
        source = raw.decode("utf-8")
        golden = {
            "template": stem + ".jinja",
            "sha256": hashlib.sha256(raw).hexdigest(),
            "renderer": f"python3-jinja2 {jinja2.__version__}, transformers-style environment",
            "now": NOW.isoformat(),
            **TOKENS[stem],
            "cases": {c["name"]: render(env, source, stem, c, conversations["tools"]) for c in conversations["cases"]},
        }
        with open(os.path.join(out_dir, stem + ".json"), "w", encoding="utf-8", newline="\n") as f:
            json.dump(golden, f, ensure_ascii=False, indent=2)
            f.write("\n")
        errors = sum(1 for r in golden["cases"].values() if "error" in r)
        print(f"{stem}: {len(golden['cases'])} cases, {errors} raised or failed")


if __name__ == "__main__":
    main()
