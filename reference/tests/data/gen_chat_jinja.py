#!/usr/bin/env python3
"""Chat templates rendered by Jinja2 from the template strings themselves, as Hugging Face
transformers applies them (src/transformers/tokenization_utils_base.py
`PreTrainedTokenizerBase._compile_jinja_template`: ImmutableSandboxedEnvironment(trim_blocks=True,
lstrip_blocks=True) with `raise_exception`; later versions add the loopcontrols extension, enabled
here too; rendered with messages, add_generation_prompt, bos_token, eos_token), over generated
conversations. bos/eos default to "<s>"/"</s>" as in llama.cpp's test-chat-template.cpp. test_chat_template compares our formatter with every
rendering of every template we recognise, byte for byte.

    python3 reference/tests/data/gen_chat_jinja.py > reference/tests/data/chat_jinja_expected.json

Templates: every case of llama.cpp's tests/test-chat-template.cpp
(llamacpp_chat_template_cases.json) and SmolLM2's own (smollm2_chat_expected.json). A
conversation the template refuses (raise_exception: e.g. roles that do not alternate) is left
out for that template. The template's leading bos_token is removed once (our formatter writes no
BOS: the tokenizer adds it); everything else is compared as rendered.
"""
import json
import os
import random

from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

SEED = 20261203
HERE = os.path.dirname(os.path.abspath(__file__))
CONTENTS = ["Hello", "What is 2+2?", "  leading spaces", "trailing spaces  ", "\nleading newline",
            "trailing newline\n", "\n\nboth\n\n", "", " ", "multi\nline\ncontent", "tab\tinside",
            "Ünïcödé ✓ 日本語", "   I am an assistant   ", "a", "x\n"]


class Refused(Exception):
    pass


def raise_exception(message):
    raise Refused(message)


def conversations():
    rng = random.Random(SEED)
    out = []
    for n_turns in range(1, 6):
        for system in (False, True):
            for _ in range(6):
                msgs = []
                if system:
                    msgs.append({"role": "system", "content": rng.choice(CONTENTS)})
                for t in range(n_turns):
                    msgs.append({"role": "user" if t % 2 == 0 else "assistant", "content": rng.choice(CONTENTS)})
                out.append(msgs)
    # fixed edge cases: empty everything, system only, assistant last
    out.append([{"role": "user", "content": ""}])
    out.append([{"role": "system", "content": ""}, {"role": "user", "content": ""}])
    out.append([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": ""}])
    return out


# The llama.cpp cases whose templates we render (the others are refused: test_chat_template
# "templates of formats we do not render ..."); the test checks this list is exactly the
# recognised ones (15 with SmolLM2's).
RENDERED = ["teknium/OpenHermes-2.5-Mistral-7B", "mistralai/Mistral-7B-Instruct-v0.2 (NOTE: Old pre-v1 without a system prompt)",
            "TheBloke/FusionNet_34Bx2_MoE-AWQ", "bofenghuang/vigogne-2-70b-chat", "google/gemma-7b-it", "Llama-3",
            "Phi-3-mini", "Phi-3-small", "Phi-3-medium", "Phi-3-vision",
            "mistralai/Mistral-7B-Instruct-v0.2 (mistralai 'v1' template with a system prompt)",
            "Mistral-Large-Instruct-2407 (mistralai 'v3' template; modified to have system prompt at start)",
            "Mistral-Nemo-Instruct-2407 (mistralai 'v3-tekken' template; modified to have system prompt at start)",
            "mistralai/Mistral-Large-Instruct-2411 (mistralai 'v7' template)"]


def templates():
    cases = json.load(open(os.path.join(HERE, "llamacpp_chat_template_cases.json")))["cases"]
    out = [(c["name"], c["template_str"], c.get("bos_token", "<s>"), c.get("eos_token", "</s>")) for c in cases
           if c["name"] in RENDERED]  # test-chat-template.cpp defaults
    smol = json.load(open(os.path.join(HERE, "smollm2_chat_expected.json")))["template"]
    out.append(("HuggingFaceTB/SmolLM2-135M-Instruct", smol, "<|im_start|>", "<|im_end|>"))
    return out


def main():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.globals["raise_exception"] = raise_exception
    convs = conversations()
    result = []
    for name, source, bos, eos in templates():
        try:
            tmpl = env.from_string(source)
        except TemplateError:
            continue
        renders = []
        for i, msgs in enumerate(convs):
            for agp in (False, True):
                try:
                    text = tmpl.render(messages=msgs, add_generation_prompt=agp, bos_token=bos, eos_token=eos)
                except (Refused, TemplateError, TypeError):
                    continue
                if bos and "bos_token" in source and text.startswith(bos):
                    text = text[len(bos):]
                renders.append({"conversation": i, "add_generation_prompt": agp, "expected": text})
        result.append({"name": name, "template": source, "renders": renders})
    json.dump({"source": "jinja2 ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks), seed %d" % SEED,
               "conversations": convs, "templates": result}, __import__("sys").stdout, ensure_ascii=False,
              indent=None, separators=(",", ":"))
    print()


if __name__ == "__main__":
    main()
