#!/usr/bin/env python3
"""Writes spm_expected_ids.txt: token ids the `sentencepiece` package gives for a
set of strings, for cross-checking oracle's SentencePiece encoder (test_tokenizer).

    pip install sentencepiece
    python3 reference/tests/data/gen_spm_expected_ids.py ../shared/models \
        > reference/tests/data/spm_expected_ids.txt

Line format: <model> <text as UTF-8 hex> <ids...> (ids without BOS; the
dummy-prefix space is added by sentencepiece as by the oracle).
tok512.model normalizes with remove_extra_whitespaces=True, which llama2.c's
encoder does not do, so strings with leading, trailing or repeated spaces are
only checked against llama2-tokenizer/tokenizer.model (remove_extra_whitespaces=False).
"""
import sys

import sentencepiece as spm

COMMON = [
    "Once upon a time",
    "Once upon a time, there was a little girl named Lily.",
    "She said, \"I want to play!\" and ran to the park.",
    "Tim's dog didn't want to go.",
    "1234567890 3.14159 x=42",
    "hello\nworld",
    "tab\there",
    "a",
    "Führer",
    "naïve café résumé",
    "нещо на Български",
    "我想在apple工作1314151天～",
    "this is 🦙.cpp",
    "🚀 (normal) 😶‍🌫️ (multiple emojis concatenated) ✅",
    "ied 4 ½ months",
    "Cửa Việt",
    "កាន់តែពិសេសអាចខលចេញ",
    "€100 or £5 or ¥7",
    "e\u0301 (combining acute)",
    "<s> </s> <unk> <0x41> are plain text here",
]
SPACES = [
    " leading space",
    "trailing space ",
    "two  spaces",
    "   ",
    " ",
    "\n\n\n",
    "    Hello\n    Hello",
]


def emit(name, path, texts):
    sp = spm.SentencePieceProcessor(model_file=path)
    for text in texts:
        ids = sp.encode(text)
        print(name, text.encode("utf-8").hex(), *ids)


def main():
    models = sys.argv[1]
    emit("tok512", f"{models}/stories260K/tok512.model", COMMON)
    emit("llama2", f"{models}/llama2-tokenizer/tokenizer.model", COMMON + SPACES)


if __name__ == "__main__":
    main()
