#!/usr/bin/env python3
"""Writes gpt2_expected_ids.txt: GPT-2 token ids computed by OpenAI's original
algorithm (gpt-2/src/encoder.py: the `regex` package's \\p{L}/\\p{N}/\\s and
min-rank BPE) over the vocabulary and merges of llama.cpp's
ggml-vocab-gpt-2.gguf, for seeded random strings drawn from many scripts.
test_tokenizer compares the oracle's hand-written pre-tokenizer and BPE with it.

    pip install gguf regex
    python3 reference/tests/data/gen_gpt2_expected_ids.py ../shared/models \\
        > reference/tests/data/gpt2_expected_ids.txt

Line format: <text as UTF-8 hex> <ids...>.
"""
import random
import sys

import gguf
import regex

PAT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

# Characters from the blocks reference/tokenizer/unicode_class.cpp covers exactly.
POOL = (list("abcXYZ'srevmld0123456789 .,!?-_()[]\"'") +
        ["'s", "'re", "'ll", "'D", "  ", "   ", "\n", "\t", "\r\n", " \n ",
         "\u00e9", "\u00fc", "\u00df", "\u00bd", "\u00b2", "\u00a0", "\u00d7",  # Latin-1
         "\u0101", "\u0148", "\u01c5", "\u0259", "\u02b0",                       # Latin ext, IPA, Lt, Lm
         "\u03b1", "\u03a9", "\u03c2", "\u0391\u03b8",                           # Greek
         "\u0434", "\u0416", "\u0483",                                          # Cyrillic (+ combining)
         "\u05d0", "\u05b7", "\u0627", "\u064e", "\u0663", "\u06f5",             # Hebrew, Arabic
         "\u0915", "\u093f", "\u0903", "\u0969", "\u0964",                       # Devanagari
         "\u0e01", "\u0e31", "\u0e52", "\u1780", "\u17b6", "\u17e3",             # Thai, Khmer
         "\u1ec7", "\u1f00", "\u2009", "\u2003", "\u2014", "\u2026", "\u20ac",   # Viet, Greek ext, punct
         "\u2161", "\u2460", "\u2075", "\u2122", "\u2192", "\u3000", "\u3001",   # number forms, symbols
         "\u3042", "\u30ab", "\u3005", "\u4e00", "\u6211", "\uac00", "\ud55c",   # kana, CJK, Hangul
         "\uff21", "\uff13", "\uff5e", "\ufe0f", "\u200d",                       # fullwidth, VS16, ZWJ
         "\U0001f600", "\U0001f999", "\U0001f680", "\U0001f1fa\U0001f1f8"])      # emoji


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def bpe(token, ranks):  # encoder.py's Encoder.bpe
    word = tuple(token)
    pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
    while pairs:
        bigram = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if bigram not in ranks:
            break
        first, second = bigram
        new_word, i = [], 0
        while i < len(word):
            try:
                j = word.index(first, i)
            except ValueError:
                new_word.extend(word[i:])
                break
            new_word.extend(word[i:j])
            i = j
            if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                new_word.append(first + second)
                i += 2
            else:
                new_word.append(word[i])
                i += 1
        word = tuple(new_word)
        pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
    return word


def main():
    r = gguf.GGUFReader(f"{sys.argv[1]}/vocab-only/ggml-vocab-gpt-2.gguf")
    field = r.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
    field = r.fields["tokenizer.ggml.merges"]
    merges = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
    ranks = {tuple(m.split(" ", 1)): i for i, m in enumerate(merges)}
    encoder = {t: i for i, t in enumerate(tokens)}
    byte_encoder = bytes_to_unicode()
    rng = random.Random(20261130)
    for _ in range(300):
        text = "".join(rng.choice(POOL) for _ in range(rng.randint(1, 16)))
        ids = []
        for word in regex.findall(PAT, text):
            mapped = "".join(byte_encoder[b] for b in word.encode("utf-8"))
            ids.extend(encoder[piece] for piece in bpe(mapped, ranks))
        print(text.encode("utf-8").hex(), *ids)


if __name__ == "__main__":
    main()
