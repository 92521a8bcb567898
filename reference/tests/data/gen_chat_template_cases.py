#!/usr/bin/env python3
"""Extracts llama.cpp's chat-template test cases (tests/test-chat-template.cpp of
the llama.cpp vendored in the llama-cpp-python 0.3.36 sdist) into JSON:
name, template source, and the expected output of llama.cpp's built-in
formatter for its conversation. test_chat_template renders the same
conversation with our formatter and compares.

    python3 reference/tests/data/gen_chat_template_cases.py \
        /work/peer/llama_cpp_python-0.3.36/vendor/llama.cpp/tests/test-chat-template.cpp \
        > reference/tests/data/llamacpp_chat_template_cases.json
"""
import json
import re
import sys

ESC = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "0": "\0"}


def c_literals(text, pos):
    """Decodes adjacent C string literals (optionally inside U8C(...)) at pos."""
    out = []
    i = pos
    while True:
        m = re.compile(r'\s*(U8C\(|LU8\()?\s*"').match(text, i)
        if not m:
            break
        i = m.end()
        buf = []
        while text[i] != '"':
            if text[i] == "\\":
                buf.append(ESC[text[i + 1]])
                i += 2
            else:
                buf.append(text[i])
                i += 1
        i += 1
        if m.group(1):
            i = text.index(")", i) + 1
        out.append("".join(buf))
    return "".join(out) if out else None


def main():
    src = open(sys.argv[1], encoding="utf-8").read()
    start = src.index("std::vector<TestCase> test_cases {")
    end = src.index("\n    };", start)
    body = src[start:end]
    cases = []
    for block in re.split(r"\n        \{\n", body)[1:]:
        case = {}
        for field in ("name", "template_str", "expected_output", "bos_token", "eos_token"):
            m = re.search(r"/\* \." + field + r"= \*/", block)
            if m:
                case[field] = c_literals(block, m.end())
        if case.get("template_str") is not None:
            cases.append(case)
    conversation = [["system", "You are a helpful assistant"], ["user", "Hello"], ["assistant", "Hi there"],
                    ["user", "Who are you"], ["assistant", "   I am an assistant   "], ["user", "Another question"]]
    json.dump({"source": "llama.cpp tests/test-chat-template.cpp (llama-cpp-python 0.3.36 sdist)",
               "conversation": conversation, "add_generation_prompt": True, "cases": cases},
              sys.stdout, ensure_ascii=False, indent=1)
    print()


if __name__ == "__main__":
    main()
