#!/usr/bin/env bash
# oracle bench against llama.cpp's llama-bench on the same file and thread
# count, interleaved in one run, printing tokens/s and ratios (oracle / peer).
#   scripts/bench_vs_peer.sh MODEL.gguf [MODEL2.gguf ...]
# Environment:
#   ORACLE   (default build/bin/oracle)       the oracle binary
#   PEER_BIN (default /work/peer/bin)         where llama-bench lives (scripts/build_peer.sh)
#   THREADS  (default "1 2")                  thread counts
#   ROUNDS   (default 3)                      interleaved rounds; the best of each side is kept
#   PROMPT   (default 128) DECODE (default 64)  tokens prefilled in one call / decoded one at a time
#   CONTEXT  (default: the file's)            --context for the oracle (the peer's -c is prompt+gen)
# Each round runs the peer then the oracle back to back on the same file and
# thread count, so both see the same machine load; the best of ROUNDS per side
# is the least-disturbed run. The load average is printed with every round
# because the machine may be shared. Output: one table row per (file, threads)
# plus the oracle's RSS terms, and a JSON line per row for docs/performance.md.
# Exit 2 on setup errors.
set -euo pipefail
cd "$(dirname "$0")/.."
ORACLE=${ORACLE:-build/bin/oracle}
PEER_BIN=${PEER_BIN:-/work/peer/bin}
THREADS=${THREADS:-"1 2"}
ROUNDS=${ROUNDS:-3}
PROMPT=${PROMPT:-128}
DECODE=${DECODE:-64}
CONTEXT=${CONTEXT:-}
[ $# -ge 1 ] || { echo "usage: $0 MODEL.gguf [...]" >&2; exit 2; }
[ -x "$ORACLE" ] || { echo "bench_vs_peer: no oracle binary at $ORACLE" >&2; exit 2; }
[ -x "$PEER_BIN/llama-bench" ] || { echo "bench_vs_peer: no llama-bench in $PEER_BIN (scripts/build_peer.sh)" >&2; exit 2; }
command -v jq >/dev/null || { echo "bench_vs_peer: needs jq" >&2; exit 2; }

# llama-bench JSON: one object per test; n_prompt > 0 is prefill, n_gen > 0 decode.
peer_run() {  # model threads -> "prefill decode"
  "$PEER_BIN/llama-bench" -m "$1" -t "$2" -p "$PROMPT" -n "$DECODE" -r 1 -o json 2>/dev/null |
    jq -r '[(.[] | select(.n_prompt > 0) | .avg_ts), (.[] | select(.n_gen > 0) | .avg_ts)] | "\(.[0]) \(.[1])"'
}

oracle_run() {  # model threads -> JSON of oracle bench
  "$ORACLE" bench --model "$1" --threads "$2" --prompt-tokens "$PROMPT" --decode-tokens "$DECODE" \
    ${CONTEXT:+--context "$CONTEXT"} --probe-repeats 1 --json
}

max() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }

printf "%-44s %3s | %10s %10s %6s | %10s %10s %6s | load\n" file thr "pp peer" "pp oracle" ratio "tg peer" "tg oracle" ratio
for model in "$@"; do
  [ -f "$model" ] || { echo "bench_vs_peer: missing $model" >&2; exit 2; }
  for t in $THREADS; do
    pp_peer=0 tg_peer=0 pp_or=0 tg_or=0 last=""
    for _ in $(seq "$ROUNDS"); do
      read -r pp tg < <(peer_run "$model" "$t")
      pp_peer=$(max "$pp_peer" "$pp"); tg_peer=$(max "$tg_peer" "$tg")
      last=$(oracle_run "$model" "$t")
      pp_or=$(max "$pp_or" "$(jq .prefill_tok_s <<<"$last")")
      tg_or=$(max "$tg_or" "$(jq .decode_tok_s <<<"$last")")
      echo "  round: peer pp $pp tg $tg | oracle pp $(jq .prefill_tok_s <<<"$last") tg $(jq .decode_tok_s <<<"$last") | load $(cut -d' ' -f1 /proc/loadavg)" >&2
    done
    rpp=$(awk -v a="$pp_or" -v b="$pp_peer" 'BEGIN { printf "%.2f", a / b }')
    rtg=$(awk -v a="$tg_or" -v b="$tg_peer" 'BEGIN { printf "%.2f", a / b }')
    printf "%-44s %3s | %10.1f %10.1f %6s | %10.1f %10.1f %6s | %s\n" "$(basename "$model")" "$t" \
      "$pp_peer" "$pp_or" "$rpp" "$tg_peer" "$tg_or" "$rtg" "$(cut -d' ' -f1 /proc/loadavg)"
    jq -c --arg f "$(basename "$model")" --argjson t "$t" --argjson ppp "$pp_peer" --argjson tgp "$tg_peer" \
      --argjson ppo "$pp_or" --argjson tgo "$tg_or" \
      '{file: $f, threads: $t, prefill_peer: $ppp, prefill_oracle: $ppo, decode_peer: $tgp, decode_oracle: $tgo,
        prefill_ratio: ($ppo / $ppp), decode_ratio: ($tgo / $tgp),
        rss: {peak: .peak_rss_bytes, file: .file_bytes, kv_formula: .kv_bytes_formula,
              kv_allocated: .kv_bytes_allocated, bound: .rss_bound_bytes, within: .rss_within_bound}}' <<<"$last" >&2
  done
done
