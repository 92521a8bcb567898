#!/usr/bin/env python3
"""Writes unicode_classes.txt: the class (L letter, N number, W White_Space,
O other) of every code point in the blocks reference/tokenizer/unicode_class.cpp claims
to cover, from Python's unicodedata, run-length encoded. test_tokenizer checks
the C++ classifier against it.

    python3 reference/tests/data/gen_unicode_classes.py > reference/tests/data/unicode_classes.txt

Line format: <first hex> <last hex> <class>.
"""
import unicodedata

BLOCKS = [(0x0000, 0x052F), (0x0590, 0x06FF), (0x0900, 0x097F), (0x0E00, 0x0E7F),
          (0x1780, 0x17FF), (0x1E00, 0x1FFF), (0x2000, 0x2BFF), (0x3000, 0x30FF),
          (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xFE00, 0xFE0F),
          (0xFF00, 0xFFEF), (0x1F000, 0x1FAFF)]


def cls(cp):
    cat = unicodedata.category(chr(cp))
    if cat[0] == "Z" or cp in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x85):  # White_Space
        return "W"
    return {"L": "L", "N": "N"}.get(cat[0], "O")


def main():
    print("# unicodedata", unicodedata.unidata_version)
    for lo, hi in BLOCKS:
        start = lo
        for cp in range(lo, hi + 1):
            if cp == hi or cls(cp + 1) != cls(start):
                print(f"{start:X} {cp:X} {cls(start)}")
                start = cp + 1


if __name__ == "__main__":
    main()
