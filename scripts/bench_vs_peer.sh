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
#   CERTIFY  ("REFERENCE CANDIDATE [CORPUS]", opt-in) adds the certify row: `oracle certify
#            --protocol llamacpp` against llama-perplexity's two passes (base pass on REFERENCE,
#            --kl-divergence pass on CANDIDATE), same corpus (default the llama2xs samples), ctx and
#            threads, via scripts/certify_vs_peer.sh (wall and peak RSS of both sides, ratio)
#   CERTIFY_CTX (default 128) CERTIFY_THREADS (default 2) CERTIFY_ROUNDS (default 1)
#   LLAMA3_8B (path, opt-in) adds the llama3-8b synthetic Q4_K_M row against llama-bench with
#            LLAMA3_8B_PROMPT (default 16) / LLAMA3_8B_DECODE (default 8) tokens, LLAMA3_8B_ROUNDS
#            (default 1) rounds and THREADS; about 2 min per round and side at 2 threads. The file
#            is not made here (23 min and 16 GB of RAM, docs/performance.md):
#              oracle synth --preset llama3-8b --dtype f16 -o l3-f16.gguf
#              oracle quantize l3-f16.gguf l3-q4_k_m.gguf --type Q4_K_M --threads 2
#              LLAMA3_8B=l3-q4_k_m.gguf CONTEXT=256 scripts/bench_vs_peer.sh
# Same op sequence: `oracle bench` decodes right after its PROMPT-token prefill,
# so each decoded token attends to PROMPT.. PROMPT+DECODE-1 earlier ones. The
# peer's decode is therefore timed at the same depth (llama-bench -d PROMPT:
# the prompt is evaluated untimed, then tg DECODE is timed); llama-bench's
# plain tgN starts from an empty cache, fewer K/V reads per token. That figure
# is kept too, as decode_peer_depth0 (the "tg d0" column), for comparison with
# published llama-bench numbers; the decode ratio is always against the peer
# at the oracle's depth.
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
CERTIFY=${CERTIFY:-}
LLAMA3_8B=${LLAMA3_8B:-}
[ $# -ge 1 ] || [ -n "$CERTIFY$LLAMA3_8B" ] ||
  { echo "usage: $0 MODEL.gguf [...]   (or CERTIFY=\"REF CAND [CORPUS]\" / LLAMA3_8B=FILE alone)" >&2; exit 2; }
[ -x "$ORACLE" ] || { echo "bench_vs_peer: no oracle binary at $ORACLE" >&2; exit 2; }
[ $# -eq 0 ] && [ -z "$LLAMA3_8B" ] || [ -x "$PEER_BIN/llama-bench" ] ||
  { echo "bench_vs_peer: no llama-bench in $PEER_BIN (scripts/build_peer.sh)" >&2; exit 2; }
command -v jq >/dev/null || { echo "bench_vs_peer: needs jq" >&2; exit 2; }

# llama-bench JSON: one object per test; n_prompt > 0 is prefill, n_gen > 0
# decode at n_depth cached tokens (see above).
peer_run() {  # model threads -> "prefill decode_at_PROMPT decode_at_0"
  local pp tg
  pp=$("$PEER_BIN/llama-bench" -m "$1" -t "$2" -p "$PROMPT" -n 0 -r 1 -o json 2>/dev/null |
    jq -r '.[] | select(.n_prompt > 0) | .avg_ts')
  tg=$("$PEER_BIN/llama-bench" -m "$1" -t "$2" -p 0 -n "$DECODE" -d "0,$PROMPT" -r 1 -o json 2>/dev/null |
    jq -r --argjson d "$PROMPT" '[(.[] | select(.n_gen > 0 and .n_depth == $d) | .avg_ts),
                                  (.[] | select(.n_gen > 0 and .n_depth == 0) | .avg_ts)] | "\(.[0]) \(.[1])"')
  [ -n "$pp" ] && [ -n "$tg" ] || { echo "bench_vs_peer: llama-bench gave no figures for $1" >&2; exit 2; }
  echo "$pp $tg"
}

oracle_run() {  # model threads -> JSON of oracle bench
  "$ORACLE" bench --model "$1" --threads "$2" --prompt-tokens "$PROMPT" --decode-tokens "$DECODE" \
    ${CONTEXT:+--context "$CONTEXT"} --probe-repeats 1 --json
}

max() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }

bench_rows() {  # model: one table row per thread count, ROUNDS interleaved rounds
  local model=$1 t pp tg tg0 pp_peer tg_peer tg0_peer pp_or tg_or last rpp rtg
  [ -f "$model" ] || { echo "bench_vs_peer: missing $model" >&2; exit 2; }
  for t in $THREADS; do
    pp_peer=0 tg_peer=0 tg0_peer=0 pp_or=0 tg_or=0 last=""
    for _ in $(seq "$ROUNDS"); do
      read -r pp tg tg0 < <(peer_run "$model" "$t")
      pp_peer=$(max "$pp_peer" "$pp"); tg_peer=$(max "$tg_peer" "$tg"); tg0_peer=$(max "$tg0_peer" "$tg0")
      last=$(oracle_run "$model" "$t")
      pp_or=$(max "$pp_or" "$(jq .prefill_tok_s <<<"$last")")
      tg_or=$(max "$tg_or" "$(jq .decode_tok_s <<<"$last")")
      echo "  round: peer pp $pp tg $tg (d0 $tg0) | oracle pp $(jq .prefill_tok_s <<<"$last") tg $(jq .decode_tok_s <<<"$last") | load $(cut -d' ' -f1 /proc/loadavg)" >&2
    done
    rpp=$(awk -v a="$pp_or" -v b="$pp_peer" 'BEGIN { printf "%.2f", a / b }')
    rtg=$(awk -v a="$tg_or" -v b="$tg_peer" 'BEGIN { printf "%.2f", a / b }')
    printf "%-44s %3s | %10.1f %10.1f %6s | %10.1f %10.1f %6s | %8.1f | %s\n" "$(basename "$model")" "$t" \
      "$pp_peer" "$pp_or" "$rpp" "$tg_peer" "$tg_or" "$rtg" "$tg0_peer" "$(cut -d' ' -f1 /proc/loadavg)"
    jq -c --arg f "$(basename "$model")" --argjson t "$t" --argjson ppp "$pp_peer" --argjson tgp "$tg_peer" --argjson tg0 "$tg0_peer" \
      --argjson ppo "$pp_or" --argjson tgo "$tg_or" --argjson np "$PROMPT" --argjson nd "$DECODE" \
      '{file: $f, threads: $t, prompt: $np, decode: $nd, prefill_peer: $ppp, prefill_oracle: $ppo,
        decode_peer: $tgp, decode_peer_depth: $np, decode_peer_depth0: $tg0, decode_oracle: $tgo, prefill_ratio: ($ppo / $ppp), decode_ratio: ($tgo / $tgp),
        rss: {peak: .peak_rss_bytes, file: .file_bytes, kv_formula: .kv_bytes_formula,
              kv_allocated: .kv_bytes_allocated, bound: .rss_bound_bytes, within: .rss_within_bound}}' <<<"$last" >&2
  done
}

printf "%-44s %3s | %10s %10s %6s | %10s %10s %6s | %8s | load\n" file thr "pp peer" "pp oracle" ratio \
  "tg peer" "tg oracle" ratio "tg d0"
for model in "$@"; do bench_rows "$model"; done
if [ -n "$LLAMA3_8B" ]; then  # llama3-8b synthetic Q4_K_M: fewer tokens and rounds (decode ~0.7 tok/s)
  PROMPT=${LLAMA3_8B_PROMPT:-16} DECODE=${LLAMA3_8B_DECODE:-8} ROUNDS=${LLAMA3_8B_ROUNDS:-1} bench_rows "$LLAMA3_8B"
fi
if [ -n "$CERTIFY" ]; then  # the audit workload: certify vs llama-perplexity's two passes
  read -r -a certify_args <<<"$CERTIFY"
  echo "certify (oracle certify --protocol llamacpp vs llama-perplexity base + --kl-divergence passes):"
  THREADS=${CERTIFY_THREADS:-2} CTX=${CERTIFY_CTX:-128} ROUNDS=${CERTIFY_ROUNDS:-1} ORACLE="$ORACLE" \
    PEER_BIN="$PEER_BIN" bash scripts/certify_vs_peer.sh "${certify_args[@]}"
fi
