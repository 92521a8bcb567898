#!/usr/bin/env python3
"""Rewrites old flat-layout paths (reference/foo.h, ...) to the issue-10 layout
in the files named on the command line (or every tracked text file with --all).
The table is scripts/dev/layout_map.txt. Idempotent."""
import pathlib, re, subprocess, sys

here = pathlib.Path(__file__).resolve().parent
pairs = []
for line in (here / "layout_map.txt").read_text().splitlines():
    line = line.strip()
    if line and not line.startswith("#"):
        old, new = line.split()
        pairs.append((old, new))
# Longest first; a path only matches when not preceded by a path character
# (so "reference/model/model.h" is never rewritten again).
pattern = re.compile(r"(?<![A-Za-z0-9_./-])(" + "|".join(re.escape(o) for o, _ in
                     sorted(pairs, key=lambda p: -len(p[0]))) + r")(?![A-Za-z0-9_])")
table = dict(pairs)

def rewrite(path):
    p = pathlib.Path(path)
    try:
        text = p.read_text()
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        return
    new = pattern.sub(lambda m: table[m.group(1)], text)
    if new != text:
        p.write_text(new)
        print("rewrote", path)

files = sys.argv[1:]
if files == ["--all"]:
    files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
for f in files:
    rewrite(f)
