#!/usr/bin/env bash
# Certify and KLD base files against llama-perplexity's statistics block (issue 29; fixtures and
# the exact peer commands: data/kldpeer/README.md; the comparison and its bounds: kld_peer_check.py).
# Usage: cli_kld_peer.sh ORACLE SHARED CASE
#   files           both sides llama.cpp's logits: --reference-kld-base R --candidate-kld-base C,
#                   every printed field (PPL(base) to its last digit, the rest within the bound the
#                   candidate file's uint16 levels allow)
#   ours_candidate  llama.cpp's reference file, our candidate (ggml profile, as llama.cpp computes):
#                   every ± field within 2 of llama.cpp's standard errors, PPL(base) to its digits
#   ours_reference  our F32 reference, llama.cpp's candidate file: every ± field within 2 σ
#   peer            re-captures every fixture with the peer (PEER_BIN, ORACLE_PEER_BIN or
#                   PEER_DIR/bin; exit 77 without it) and diffs them with the committed ones
source "$(dirname "$0")/../../tools/tests/lib.sh"
CASE=$3
HERE=$(cd "$(dirname "$0")" && pwd)
D="$HERE/data/kldpeer"
G="$MODELS/gguf"
CHECK="$HERE/kld_peer_check.py"
printouts=("$D"/*.vs.*.txt)
[ -e "${printouts[0]}" ] || fail "no printouts in $D"

# Models the peer's llama-quantize made are not committed: `oracle quantize` writes the same bytes
# (docs/quantize.md), checked here against llama-quantize's SHA-256 (data/kldpeer/quantized.txt).
model() {
  local name=$1
  [ -f "$G/$name.gguf" ] && { echo "$G/$name.gguf"; return; }
  [ -f "$WORK/$name.gguf" ] && { echo "$WORK/$name.gguf"; return; }
  local line src type sha
  line=$(awk -v n="$name" '$1 == n' "$D/quantized.txt")
  [ -n "$line" ] || fail "no model $name in $G or $D/quantized.txt"
  read -r _ src type sha <<<"$line"
  "$ORACLE" quantize "$G/$src.gguf" "$WORK/$name.gguf" --type "$type" --threads 2 >/dev/null || fail "quantize $name"
  [ "$(sha256sum "$WORK/$name.gguf" | cut -d' ' -f1)" = "$sha" ] || fail "$name: not llama-quantize's bytes"
  echo "$WORK/$name.gguf"
}
base() {  # base NAME.TAG: the committed base file, unpacked
  [ -f "$WORK/$1.kld" ] || gzip -dc "$D/$1.kld.gz" >"$WORK/$1.kld"
  echo "$WORK/$1.kld"
}
certify() {  # certify OUT ARGS...: exit 0 or 1 (a verdict), the certificate in $WORK/OUT
  local out=$1
  shift
  run_capture "$ORACLE" certify "$@" --threads 2 --no-progress --no-png --greedy-prompts 0 --out "$WORK/$out"
  [ "$RC" -le 1 ] && [ -s "$WORK/$out/certificate.md" ] || fail "certify $*: exit $RC $(cat "$WORK/err")"
}

n=0
for p in "${printouts[@]}"; do
  f=$(basename "$p" .txt)           # CAND.vs.REF.CORPUS.cCTX
  cand=${f%%.vs.*} rest=${f#*.vs.}
  ref=${rest%%.*} tag=${rest#*.}
  case $CASE in
    files)
      certify "$f" --reference-kld-base "$(base "$ref.$tag")" --candidate-kld-base "$(base "$cand.$tag")"
      python3 "$CHECK" files "$p" "$WORK/$f/certificate.md" "$D/$cand.$tag.kld.gz" "$D/$ref.$tag.kld.gz" >"$WORK/check" ||
        fail "$(cat "$WORK/check")"
      ;;
    ours_candidate)
      certify "$f" --reference-kld-base "$(base "$ref.$tag")" --candidate "$(model "$cand")" --candidate-numerics ggml
      python3 "$CHECK" sigma 2 "$p" "$WORK/$f/certificate.md" exact-base >"$WORK/check" || fail "$(cat "$WORK/check")"
      ;;
    ours_reference)
      certify "$f" --reference "$(model "$ref")" --candidate-kld-base "$(base "$cand.$tag")"
      python3 "$CHECK" sigma 2 "$p" "$WORK/$f/certificate.md" >"$WORK/check" || fail "$(cat "$WORK/check")"
      ;;
    peer) break ;;
    *) fail "unknown case $CASE" ;;
  esac
  echo "ok: $f ($(grep -c 'units of' "$WORK/check") fields)"
  n=$((n + 1))
done

if [ "$CASE" = peer ]; then
  PB=""
  for d in "${PEER_BIN:-}" "${ORACLE_PEER_BIN:-}" "${PEER_DIR:+$PEER_DIR/bin}"; do
    [ -n "$d" ] && [ -x "$d/llama-perplexity" ] && { PB=$d; break; }
  done
  [ -n "$PB" ] || { echo "SKIP: no llama-perplexity (set PEER_BIN; scripts/build_peer.sh)"; exit 77; }
  # The peer's own quantized models: llama-quantize's bytes, as quantized.txt records them.
  mkdir -p "$WORK/regen"
  while read -r name src type sha; do
    case $name in ''|'#'*) continue ;; esac
    "$PB/llama-quantize" "$G/$src.gguf" "$WORK/regen/$name.gguf" "$type" 2 >"$WORK/q.log" 2>&1 ||
      fail "llama-quantize $name: $(tail -3 "$WORK/q.log")"
    [ "$(sha256sum "$WORK/regen/$name.gguf" | cut -d' ' -f1)" = "$sha" ] || fail "llama-quantize $name: other bytes than quantized.txt's"
  done <"$D/quantized.txt"
  PAIRS=$(for p in "${printouts[@]}"; do f=$(basename "$p" .txt); r=${f#*.vs.}; echo "${f%%.vs.*} ${r%%.*}"; done | sort -u)
  KLDPEER_PAIRS=$PAIRS PEER_BIN=$PB ORACLE_SHARED_DIR=$SHARED bash "$HERE/../../scripts/peer_kld_fixtures.sh" "$WORK/regen" >/dev/null ||
    fail "peer_kld_fixtures.sh"
  for p in "${printouts[@]}"; do
    diff "$p" "$WORK/regen/$(basename "$p")" || fail "$(basename "$p"): llama-perplexity now prints otherwise"
    n=$((n + 1))
  done
  for z in "$D"/*.kld.gz; do
    cmp <(gzip -dc "$z") <(gzip -dc "$WORK/regen/$(basename "$z")") || fail "$(basename "$z"): llama.cpp writes another file"
  done
fi
echo "ok: $CASE, $n printouts"
