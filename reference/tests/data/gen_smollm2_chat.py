#!/usr/bin/env python3
"""Renders SmolLM2-135M-Instruct's own tokenizer.chat_template (read from the
GGUF) with Jinja2 the way Hugging Face transformers does
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks), for the
conversations test_chat_template checks our ChatML formatter on.

    pip install gguf jinja2
    python3 reference/tests/data/gen_smollm2_chat.py ../shared/models \
        > reference/tests/data/smollm2_chat_expected.json
"""
import json
import sys

import gguf
from jinja2.sandbox import ImmutableSandboxedEnvironment

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You are a concise assistant."},
     {"role": "user", "content": "Name three colours."}],
    [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": "Tell me a joke about cats."}],
    [{"role": "user", "content": "Ünïcödé <|im_end|> inside\nand a second line"}],
]


def main():
    path = sys.argv[1] + "/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    source = gguf.GGUFReader(path).fields["tokenizer.chat_template"].contents()
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    tmpl = env.from_string(source)
    cases = []
    for messages in CONVERSATIONS:
        text = tmpl.render(messages=messages, add_generation_prompt=True, bos_token="<|im_start|>",
                           eos_token="<|im_end|>")
        cases.append({"messages": messages, "expected": text})
    json.dump({"template": source, "cases": cases}, sys.stdout, ensure_ascii=False, indent=1)
    print()


if __name__ == "__main__":
    main()
