#!/usr/bin/env bash
# Independent cross-checks of the golden transcripts (they were written by the
# code under test, so they are pinned to outputs of other programs here):
#  1. stories260K greedy "Once upon a time" ids == llama2.c's (fixture ids file);
#  2. llama2xs.gguf greedy text is a prefix of llama.cpp's output (fixture text);
#  3. a llama2.c .bin and its GGUF conversion (same weights) give the same ids
#     and logits hashes for every record whose prompt fits both contexts.
# Usage: golden/crosscheck.sh [shared dir]   (needs jq)
set -euo pipefail
cd "$(dirname "$0")"
M=${1:-${ORACLE_SHARED_DIR:-../../shared}}/models
fail() { echo "golden crosscheck: $*" >&2; exit 1; }
rec() { jq -c --arg id "$2" 'select(.id == $id)' "$1"; }

want=$(tr -s ' \n' ' ' <"$M/stories260K/expected_greedy_once_upon_a_time_200steps.ids.txt")
got=$(rec stories260K.jsonl stories260K/greedy/once | jq -r '(.prompt_ids[1:] + .output_ids) | join(" ")')
[[ "$want" == "$got "* ]] || fail "stories260K greedy ids differ from llama2.c: $got"
echo "ok: stories260K greedy ids == llama2.c ($(wc -w <<<"$got") tokens)"

text=$(rec llama2xs.gguf.jsonl llama2xs.gguf/greedy/once | jq -r '.text')
grep -qF -- "Once upon a time$text" "$M/llama2xs/expected_llamacpp_greedy_once_upon_a_time_200.txt" ||
  fail "llama2xs.gguf greedy text is not llama.cpp's: $text"
echo "ok: llama2xs.gguf greedy text is a prefix of llama.cpp's"

for pair in stories260K:stories260K.gguf aidreams260K:aidreams260K.gguf llama2xs:llama2xs.gguf; do
  a=${pair%%:*} b=${pair#*:}
  for case in greedy/empty greedy/once greedy/unicode llamacpp-topk-topp/once hf-topk-topp/once llamacpp-minp-penalties/unicode; do
    fa=$(rec "$a.jsonl" "$a/$case" | jq -c '[.prompt_ids, .output_ids, .logits_sha256]')
    fb=$(rec "$b.jsonl" "$b/$case" | jq -c '[.prompt_ids, .output_ids, .logits_sha256]')
    [ "$fa" = "$fb" ] || fail "$a and $b differ on $case"
  done
  echo "ok: $a == $b (6 records)"
done
