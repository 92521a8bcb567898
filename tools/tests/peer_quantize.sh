#!/usr/bin/env bash
# oracle quantize vs llama-quantize, live (label "peer"; skipped, exit 77, when
# the peer is not built): for every run of scripts/quantize_digests.py on
# llama2xs, SmolLM2 (F32 export of the Q4_1 file, then every run on
# llama-quantize's export) and `synth --preset gqa --seed 1`, both tools write
# a file from the same input with the same arguments; the files are compared
# per tensor (type, dims, data) and whole. Prints one line per run.
# Usage: peer_quantize.sh ORACLE SHARED   (env ORACLE_PEER_BIN, PEER_MODELS)
source "$(dirname "$0")/lib.sh"
PEER=${ORACLE_PEER_BIN:-/work/peer/bin}
DIGESTS="$(dirname "$0")/../../scripts/quantize_digests.py"
if [ ! -x "$PEER/llama-quantize" ]; then
  echo "skip: no llama-quantize in $PEER (scripts/build_peer.sh; ORACLE_PEER_BIN)"
  exit 77
fi
WANT=${PEER_MODELS:-"smollm2-export llama2xs synth-gqa smollm2"}
"$ORACLE" synth --preset gqa --seed 1 -o "$WORK/synth-gqa.gguf" >/dev/null
failed=0 total=0
while read -r model src run args; do
  case " $WANT " in *" $model "*) ;; *) continue ;; esac
  if [ "${src:0:1}" = @ ]; then in="$WORK/${src:1}"; else in="$MODELS/$src"; fi
  need_fixture "$in"
  read -r -a a <<<"$args"
  type=${a[-1]}
  flags=("${a[@]:0:${#a[@]}-1}")
  out_peer="$WORK/peer.gguf" out_ours="$WORK/ours.gguf"
  [ "$model" = smollm2-export ] && out_peer="$WORK/smollm2-f32.gguf"
  t0=$(date +%s.%N)
  "$PEER/llama-quantize" "${flags[@]}" "$in" "$out_peer" "$type" >"$WORK/peer.log" 2>&1 ||
    fail "llama-quantize $args failed: $(tail -3 "$WORK/peer.log")"
  t1=$(date +%s.%N)
  "$ORACLE" quantize "$in" "$out_ours" --type "$type" "${flags[@]}" --threads 2 >/dev/null
  t2=$(date +%s.%N)
  set +e
  verdict=$(python3 "$DIGESTS" compare "$out_ours" "$out_peer")
  rc=$?
  set -e
  total=$((total + 1))
  [ $rc -eq 0 ] || failed=$((failed + 1))
  printf '%-14s %-12s %s (llama-quantize %.1f s, oracle %.1f s)\n' "$model" "$run" "$(tail -1 <<<"$verdict")" \
    "$(awk "BEGIN{print $t1 - $t0}")" "$(awk "BEGIN{print $t2 - $t1}")"
  [ $rc -eq 0 ] || head -5 <<<"$verdict"
done < <(python3 "$DIGESTS" runs)
echo "$((total - failed))/$total runs identical to llama-quantize"
[ "$failed" = 0 ] || fail "$failed runs differ"
