#!/usr/bin/env bash
# Captures llama-perplexity's KL-divergence fixtures (audit/tests/data/kldpeer/, README.md there):
# for every model, corpus and context, llama.cpp's own base file (--kl-divergence-base, gzip -n -9),
# and for every (candidate, reference) pair llama-perplexity's statistics block for the candidate
# scored live against the reference's base file. Never part of the product: the peer is
# scripts/build_peer.sh's llama.cpp (PEER_BIN, default build/peer/bin).
#   scripts/peer_kld_fixtures.sh OUT_DIR        (OUT_DIR: audit/tests/data/kldpeer to re-capture)
# Models are read from ORACLE_SHARED_DIR (default ../shared)/models/gguf, or OUT_DIR itself for the
# ones the peer's llama-quantize made (named in the pair list with a "peer:" prefix).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: peer_kld_fixtures.sh OUT_DIR}
PEER_BIN=${PEER_BIN:-build/peer/bin}
SHARED=${ORACLE_SHARED_DIR:-../shared}
P="$PEER_BIN/llama-perplexity"
[ -x "$P" ] || { echo "no $P (scripts/build_peer.sh, or set PEER_BIN)" >&2; exit 77; }
export LD_LIBRARY_PATH="$(dirname "$(readlink -f "$P")")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$OUT"
# Pairs "candidate reference"; corpora; contexts with the chunk count that keeps each base file
# near 320 KB (vocabulary 512: 1032 bytes per scored token).
PAIRS=${KLDPEER_PAIRS:-"stories260K-f16 stories260K
llama2xs-q8_0 llama2xs
llama2xs-q4_0 llama2xs"}
CORPORA=${KLDPEER_CORPORA:-"stories260K llama2xs"}
CONTEXTS=${KLDPEER_CONTEXTS:-"64:10 128:5"}
model_path() { if [ -f "$OUT/$1.gguf" ]; then echo "$OUT/$1.gguf"; else echo "$SHARED/models/gguf/$1.gguf"; fi; }
models=$(echo "$PAIRS" | tr ' ' '\n' | sort -u)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for corpus in $CORPORA; do
  for cc in $CONTEXTS; do
    c=${cc%:*} n=${cc#*:} tag="$corpus.c${cc%:*}"
    for m in $models; do
      # The exact command, as the README records it:
      "$P" -m "$(model_path "$m")" -f "$SHARED/corpus/$corpus-samples.txt" -c "$c" -b "$c" -t 2 --chunks "$n" \
        --kl-divergence-base "$tmp/$m.$tag.kld" >"$tmp/log" 2>&1 || { tail -5 "$tmp/log" >&2; exit 1; }
      python3 - "$tmp/$m.$tag.kld" <<'PY' || { echo "llama-perplexity wrote an incomplete $m.$tag.kld" >&2; exit 1; }
import os, struct, sys
b = open(sys.argv[1], "rb").read(20)
n_ctx, n_vocab, n_chunk = struct.unpack_from("<Iii", b, 8)
want = 20 + 4 * n_ctx * n_chunk + 2 * n_chunk * (n_ctx - 1 - n_ctx // 2) * (2 * ((n_vocab + 1) // 2) + 4)
sys.exit(b[:8] != b"_logits_" or os.path.getsize(sys.argv[1]) != want)
PY
      gzip -n -9 -c "$tmp/$m.$tag.kld" >"$OUT/$m.$tag.kld.gz"
    done
    echo "$PAIRS" | while read -r cand ref; do
      # llama.cpp's logger thread can lose the last lines of stdout at exit: read --log-file, retried.
      for try in 1 2 3 4 5 6 7 8 9 10; do
        rm -f "$tmp/log"
        "$P" -m "$(model_path "$cand")" -c "$c" -b "$c" -t 2 --kl-divergence-base "$tmp/$ref.$tag.kld" --kl-divergence \
          --log-file "$tmp/log" >/dev/null 2>&1 || { tail -5 "$tmp/log" >&2; exit 1; }
        grep -q '^Same top p' "$tmp/log" && break
      done
      grep -q '^Same top p' "$tmp/log" || { echo "no statistics block from llama-perplexity" >&2; exit 1; }
      {
        echo "# llama-perplexity (peer llama.cpp 0c1e570) -m $cand.gguf -c $c -b $c -t 2 --kl-divergence-base $ref.$tag.kld --kl-divergence"
        sed -n '/====== Perplexity statistics/,$p' "$tmp/log" | sed 's/^[0-9.]* [IWE] //' | grep -v '^llama_perf\|^$\|^common_perf\|memory_breakdown'
      } >"$OUT/$cand.vs.$ref.$tag.txt"
    done
  done
done
echo "wrote $(ls "$OUT" | wc -l) files to $OUT"
