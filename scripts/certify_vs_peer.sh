#!/usr/bin/env bash
# The audit workload against llama.cpp, in one run: `oracle certify --protocol
# llamacpp` of CANDIDATE against REFERENCE on CORPUS, and llama-perplexity's
# two passes doing the same job (a --kl-divergence-base pass on REFERENCE, then
# a --kl-divergence pass on CANDIDATE), same corpus, context and thread count.
# Prints wall time, CPU time (user + system) and peak RSS of each side and the
# ratio peer / oracle (> 1: the oracle is faster), plus one JSON line for
# docs/performance.md. On a shared machine compare the CPU times (or run
# ROUNDS > 1: each round runs both sides back to back, interleaved).
#   scripts/certify_vs_peer.sh REFERENCE.gguf CANDIDATE.gguf [CORPUS]
# Environment:
#   ORACLE   (default build/bin/oracle)    PEER_BIN (default /work/peer/bin)
#   THREADS  (default 2)   CTX (default 128)   ROUNDS (default 1: the best of each side is kept)
# Needs GNU time (/usr/bin/time, scripts/setup.sh installs it). Exit 2 on setup errors.
set -euo pipefail
cd "$(dirname "$0")/.."
ORACLE=${ORACLE:-build/bin/oracle}
PEER_BIN=${PEER_BIN:-/work/peer/bin}
THREADS=${THREADS:-2}
CTX=${CTX:-128}
ROUNDS=${ROUNDS:-1}
[ $# -ge 2 ] || { echo "usage: $0 REFERENCE.gguf CANDIDATE.gguf [CORPUS]" >&2; exit 2; }
REF=$1 CAND=$2 CORPUS=${3:-${ORACLE_SHARED_DIR:-../shared}/corpus/llama2xs-samples.txt}
for f in "$REF" "$CAND" "$CORPUS"; do [ -f "$f" ] || { echo "certify_vs_peer: missing $f" >&2; exit 2; }; done
[ -x "$ORACLE" ] || { echo "certify_vs_peer: no oracle binary at $ORACLE" >&2; exit 2; }
[ -x "$PEER_BIN/llama-perplexity" ] ||
  { echo "certify_vs_peer: no llama-perplexity in $PEER_BIN (scripts/build_peer.sh)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "certify_vs_peer: needs GNU time (/usr/bin/time)" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

timed() {  # label cmd... -> "<wall s> <peak KB> <cpu s>" of the command (its output to $WORK/<label>.log)
  local label=$1; shift
  /usr/bin/time -f "%e %M %U %S" -o "$WORK/$label.time" "$@" >"$WORK/$label.log" 2>&1 ||
    { echo "certify_vs_peer: $label failed:" >&2; tail -5 "$WORK/$label.log" >&2; exit 1; }
  awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$WORK/$label.time"
}

best_or=1e30 best_base=1e30 best_kld=1e30 rss_or=0 rss_base=0 rss_kld=0 cpu_or=0 cpu_base=0 cpu_kld=0
for _ in $(seq "$ROUNDS"); do
  read -r b_s b_kb b_cpu < <(timed peer_base "$PEER_BIN/llama-perplexity" -m "$REF" -f "$CORPUS" -c "$CTX" -b "$CTX" \
    -t "$THREADS" --kl-divergence-base "$WORK/base.kld")
  read -r k_s k_kb k_cpu < <(timed peer_kld "$PEER_BIN/llama-perplexity" -m "$CAND" -f "$CORPUS" -c "$CTX" -b "$CTX" \
    -t "$THREADS" --kl-divergence-base "$WORK/base.kld" --kl-divergence)
  read -r o_s o_kb o_cpu < <(timed oracle "$ORACLE" certify --reference "$REF" --candidate "$CAND" --corpus "$CORPUS" \
    --ctx "$CTX" --protocol llamacpp --threads "$THREADS" --quiet --no-png --out "$WORK/cert")
  if awk -v a="$o_s" -v b="$best_or" 'BEGIN { exit !(a < b) }'; then best_or=$o_s rss_or=$o_kb cpu_or=$o_cpu; fi
  if awk -v a="$(awk -v x="$b_s" -v y="$k_s" 'BEGIN { print x + y }')" -v b="$(awk -v x="$best_base" -v y="$best_kld" 'BEGIN { print x + y }')" \
      'BEGIN { exit !(a < b) }'; then best_base=$b_s best_kld=$k_s rss_base=$b_kb rss_kld=$k_kb cpu_base=$b_cpu cpu_kld=$k_cpu; fi
  echo "  round: peer base ${b_s} s + kld ${k_s} s (cpu ${b_cpu} + ${k_cpu} s) | oracle ${o_s} s (cpu ${o_cpu} s) | load $(cut -d' ' -f1 /proc/loadavg)" >&2
done
peer_s=$(awk -v x="$best_base" -v y="$best_kld" 'BEGIN { print x + y }')
ratio=$(awk -v p="$peer_s" -v o="$best_or" 'BEGIN { printf "%.2f", p / o }')
peer_cpu=$(awk -v x="$cpu_base" -v y="$cpu_kld" 'BEGIN { print x + y }')
cpu_ratio=$(awk -v p="$peer_cpu" -v o="$cpu_or" 'BEGIN { printf "%.2f", (o > 0 ? p / o : 0) }')
printf "%-28s %-28s ctx %4s thr %s | peer %7.1f s (base %.1f + kld %.1f; cpu %.1f s; RSS %d / %d MB) | oracle %7.1f s (cpu %.1f s; RSS %d MB) | peer/oracle wall %s cpu %s | load %s\n" \
  "$(basename "$REF")" "$(basename "$CAND")" "$CTX" "$THREADS" "$peer_s" "$best_base" "$best_kld" "$peer_cpu" \
  $((rss_base / 1024)) $((rss_kld / 1024)) "$best_or" "$cpu_or" $((rss_or / 1024)) "$ratio" "$cpu_ratio" \
  "$(cut -d' ' -f1 /proc/loadavg)"
jq -cn --arg r "$(basename "$REF")" --arg c "$(basename "$CAND")" --argjson ctx "$CTX" --argjson t "$THREADS" \
  --argjson ps "$peer_s" --argjson os "$best_or" --argjson rb "$rss_base" --argjson rk "$rss_kld" --argjson ro "$rss_or" \
  --argjson pc "$peer_cpu" --argjson oc "$cpu_or" \
  '{reference: $r, candidate: $c, ctx: $ctx, threads: $t, peer_wall_s: $ps, oracle_wall_s: $os,
    speed_ratio_peer_over_oracle: ($ps / $os), peer_cpu_s: $pc, oracle_cpu_s: $oc,
    peer_peak_rss_kb: [$rb, $rk], oracle_peak_rss_kb: $ro}' >&2
