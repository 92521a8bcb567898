#!/usr/bin/env bash
# Runs every fenced ```sh block (and ```python block, under python3) of a Markdown file (README.md, docs/cli.md) as
# a user would type it: in a scratch copy of the repository layout (the
# sources linked in, build/bin/oracle and `oracle` on PATH being the binary
# under test, build/python its build's Python package, ../shared beside it), each block under bash -e -o pipefail,
# exit 0 expected. A block preceded by `<!-- docs-examples: skip REASON -->`
# is skipped (the reason is printed); `<!-- docs-examples: exit N -->` expects N.
# A fenced block preceded by `<!-- docs-examples: output -->` is the sample
# output of the runnable block before it: that block's stdout must equal it line
# for line (trailing blanks ignored; a line `...` matches any run of lines).
# Usage: docs_examples.sh ORACLE SHARED SOURCE_DIR FILE.md
set -euo pipefail
ORACLE=$(realpath "$1"); SHARED=$(realpath "$2"); SRC=$(realpath "$3"); DOC=$4
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/repo/build/bin" "$WORK/bin"
ln -s "$ORACLE" "$WORK/repo/build/bin/oracle"
ln -s "$ORACLE" "$WORK/bin/oracle"
ln -s "$SHARED" "$WORK/shared"
# The build tree's Python package (build/python/llm_oracle), when the build has one.
[ -d "$(dirname "$ORACLE")/../python/llm_oracle" ] && ln -s "$(realpath "$(dirname "$ORACLE")/../python")" "$WORK/repo/build/python"
for f in "$SRC"/*; do
  name=$(basename "$f")
  [ "$name" = build ] || [[ "$name" == build-* ]] || ln -s "$f" "$WORK/repo/$name"
done
export PATH="$WORK/bin:$PATH" ORACLE_SHARED_DIR="$WORK/shared"
python3 - "$SRC/$DOC" "$WORK/blocks" <<'PY'
import os, re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
out = sys.argv[2]; os.makedirs(out)
n, i, note = 0, 0, ""
while i < len(lines):
    m = re.match(r"\s*<!-- docs-examples: (skip|exit|output) ?(.*?) -->", lines[i])
    if m:
        note = m.group(1) + " " + m.group(2)
    elif lines[i].strip().startswith("```") and note.startswith("output"):
        j = i + 1
        while lines[j].strip() != "```":
            j += 1
        if n == 0:
            sys.exit(f"{sys.argv[1]}:{i + 1}: an output block with no runnable block before it")
        with open(f"{out}/{n:03d}.expect", "w") as f:
            f.write("\n".join(lines[i + 1:j]) + "\n")
        note, i = "", j
    elif lines[i].strip() in ("```sh", "```python"):
        ext = "py" if lines[i].strip() == "```python" else "sh"
        j = i + 1
        while lines[j].strip() != "```":
            j += 1
        n += 1
        with open(f"{out}/{n:03d}.{ext}", "w") as f:
            f.write("\n".join(lines[i + 1:j]) + "\n")
        with open(f"{out}/{n:03d}.meta", "w") as f:
            f.write(f"{i + 1}\n{note}\n")
        note, i = "", j
    elif lines[i].strip():
        note = ""  # an annotation applies to the block right after it
    i += 1
PY
ran=0 skipped=0
for b in $(find "$WORK/blocks" -name '*.sh' -o -name '*.py' | sort); do  # document order
  run=(bash -e -o pipefail); [[ $b == *.py ]] && run=(python3)
  line=$(sed -n 1p "${b%.*}.meta"); note=$(sed -n 2p "${b%.*}.meta")
  case $note in
    skip*) echo "SKIP $DOC:$line: ${note#skip }"; skipped=$((skipped + 1)); continue ;;
  esac
  want=0; [[ $note == exit* ]] && want=${note#exit }
  set +e
  (cd "$WORK/repo" && timeout 300 "${run[@]}" "$b") >"$WORK/out" 2>"$WORK/err"
  rc=$?
  set -e
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL $DOC:$line: exit $rc (want $want)"; sed 's/^/  | /' "$b"; cat "$WORK/out" "$WORK/err" | tail -20 | sed 's/^/  > /'
    exit 1
  fi
  if [ -f "${b%.*}.expect" ] && ! python3 - "${b%.*}.expect" "$WORK/out" <<'PY'
import re, sys
want = [l.rstrip() for l in open(sys.argv[1], encoding="utf-8").read().rstrip("\n").split("\n")]
got = [l.rstrip() for l in open(sys.argv[2], encoding="utf-8", errors="replace").read().rstrip("\n").split("\n")]
pattern = "".join(r"(?:[^\n]*\n)*?" if w == "..." else re.escape(w) + r"\n" for w in want)
if re.fullmatch(pattern, "\n".join(got) + "\n"):
    sys.exit(0)
print("  sample output (documented):"); print("\n".join("  - " + w for w in want))
print("  printed:"); print("\n".join("  + " + g for g in got))
sys.exit(1)
PY
  then
    echo "FAIL $DOC:$line: the documented sample output is not what the command prints"; exit 1
  fi
  echo "ok   $DOC:$line"; ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "FAIL: no runnable sh or python block in $DOC"; exit 1; }
echo "docs examples: $ran blocks ran, $skipped skipped in $DOC"
