#!/usr/bin/env bash
# Captures real llama-server logs for `oracle replay` (docs/replay.md "Real
# server logs"): for SmolLM2-135M-Instruct Q4_1 and llama2xs Q8_0 it starts the
# peer's llama-server on 127.0.0.1 (a free port), sends a fixed, bounded set of
# requests (/completion greedy / sampled / penalties / post_sampling_probs /
# stop strings / token-id prompts, /v1/completions with logprobs,
# /v1/chat/completions with logprobs + top_logprobs, and streaming requests of
# all three endpoints, whose SSE body is kept as a proxy writes it), stops the
# server, and writes one {"request", "response"} JSON line per request:
#   OUT/smollm2.jsonl, OUT/llama2xs.jsonl            the replay fixtures
#   OUT/calibration_smollm2.jsonl, ..._llama2xs.jsonl greedy calibration prompts (n_probs 20)
#   OUT/llama2xs_chat.jsonl                           chat on a model with no template
#   OUT/PROVENANCE.txt                                llama.cpp commit, server command
# Environment: PEER_DIR (default build/peer; needs bin/llama-server from
# scripts/build_peer.sh), SHARED (default ../shared), OUT (default
# audit/tests/data/server_logs), SERVER_THREADS (default 2).
# Every request has a timeout; the server is stopped (by its pid) on any exit.
# Exit 77 when llama-server or a model is missing (CTest: skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
PEER_DIR=${PEER_DIR:-build/peer}
SHARED=${SHARED:-../shared}
OUT=${OUT:-audit/tests/data/server_logs}
SERVER=$PEER_DIR/bin/llama-server
[ -x "$SERVER" ] || { echo "capture: no $SERVER (PEER_DIR=$PEER_DIR scripts/build_peer.sh)" >&2; exit 77; }
SMOL=$SHARED/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
XS=$SHARED/models/gguf/llama2xs-q8_0.gguf
for m in "$SMOL" "$XS"; do [ -f "$m" ] || { echo "capture: missing $m" >&2; exit 77; }; done
mkdir -p "$OUT"
TMP=$(mktemp -d)
PID=""
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# serve MODEL: starts llama-server and waits (at most 120 s) for /health.
serve() {
  PORT=$(free_port)
  CMD=("$SERVER" -m "$1" --host 127.0.0.1 --port "$PORT" -c 1024 -np 1 -t "${SERVER_THREADS:-2}" --no-webui)
  "${CMD[@]}" >"$TMP/server.log" 2>&1 &
  PID=$!
  for _ in $(seq 1 240); do
    if curl -s -m 2 "http://127.0.0.1:$PORT/health" 2>/dev/null | grep -q '"ok"'; then return 0; fi
    kill -0 "$PID" 2>/dev/null || { cat "$TMP/server.log" >&2; echo "capture: server died" >&2; exit 1; }
    sleep 0.5
  done
  echo "capture: server did not become healthy" >&2
  exit 1
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""; }

# requests MODEL_KEY PORT OUTFILE KIND: sends the request set of KIND (python3, urllib).
requests() {
  python3 - "$1" "$2" "$3" "$4" <<'PY'
import json, sys, urllib.request
key, port, out, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
base = f"http://127.0.0.1:{port}"
chat = key == "smollm2"
story = "Once upon a time, there was a little" if not chat else "The capital of France is"
story2 = "Lily and Tom went to the park." if not chat else "Here is a short poem about the sea:"

def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        raw = r.read().decode("utf-8")
    if body.get("stream"):
        return raw  # the SSE body as a proxy sees it: "data: {...}\n\n" chunks
    return json.loads(raw)

reqs = []
if kind == "calibration":  # greedy, 20 alternatives per step, prompts not used by the fixtures
    prompts = (["One day, a big dog", "The sun was hot and", "Sam had a red ball.", "Mom said to Ben,"]
               if not chat else ["Water boils at", "A list of fruits: apple,", "def add(a, b):", "The best way to learn is"])
    for p in prompts:
        reqs.append(("/completion", {"prompt": p, "n_predict": 32, "temperature": 0, "n_probs": 20}))
    if chat:  # chat prompts too: the template's turns are part of what the fixtures' records see
        for q in ["Give me three tips for sleeping well.", "What is 12 times 7?"]:
            reqs.append(("/v1/chat/completions", {"messages": [{"role": "user", "content": q}], "max_tokens": 32,
                                                  "temperature": 0, "logprobs": True, "top_logprobs": 20}))
    else:
        for p in ["The bird sang a song", "Tim and his sister"]:
            reqs.append(("/completion", {"prompt": p, "n_predict": 32, "temperature": 0, "n_probs": 20}))
elif kind == "chat_only":
    reqs.append(("/v1/chat/completions", {"messages": [{"role": "user", "content": "Tell me a story."}],
                                          "max_tokens": 8, "temperature": 0, "logprobs": True, "top_logprobs": 3}))
else:
    P = "/completion"
    reqs += [
        (P, {"prompt": story, "n_predict": 24, "temperature": 0, "n_probs": 5}),
        (P, {"prompt": story, "n_predict": 24, "seed": 42, "n_probs": 5}),
        (P, {"prompt": story2, "n_predict": 24, "seed": 7, "temperature": 1.0, "top_k": 20, "top_p": 0.9,
             "min_p": 0.05, "n_probs": 5}),
        (P, {"prompt": story, "n_predict": 24, "seed": 3, "temperature": 0.7, "repeat_penalty": 1.3,
             "repeat_last_n": 32, "frequency_penalty": 0.2, "presence_penalty": 0.2, "n_probs": 5}),
        (P, {"prompt": story2, "n_predict": 24, "temperature": 0, "repeat_penalty": 1.5, "n_probs": 5}),
        (P, {"prompt": story2, "n_predict": 20, "seed": 5, "post_sampling_probs": True, "n_probs": 5}),
        (P, {"prompt": story, "n_predict": 20, "temperature": 0, "post_sampling_probs": True, "n_probs": 3}),
        (P, {"prompt": story, "n_predict": 48, "temperature": 0, "stop": ["."], "n_probs": 2}),
        (P, {"prompt": story2, "n_predict": 16, "seed": 9, "stream": True, "n_probs": 3}),
        ("/v1/completions", {"prompt": story, "max_tokens": 16, "temperature": 0, "logprobs": 5}),
        ("/v1/completions", {"prompt": story2, "max_tokens": 16, "temperature": 0.9, "seed": 11, "logprobs": 3}),
        ("/v1/completions", {"prompt": story, "max_tokens": 12, "seed": 13, "logprobs": 3, "stream": True}),
    ]
    ids = post("/tokenize", {"content": story2, "add_special": True})["tokens"]
    reqs.append((P, {"prompt": ids, "n_predict": 16, "temperature": 0, "n_probs": 3}))
    if chat:
        C = "/v1/chat/completions"
        reqs += [
            (C, {"messages": [{"role": "user", "content": "What is the capital of France?"}], "max_tokens": 24,
                 "temperature": 0, "logprobs": True, "top_logprobs": 5}),
            (C, {"messages": [{"role": "system", "content": "You are a pirate."},
                              {"role": "user", "content": "Say hello."}], "max_tokens": 24, "seed": 21,
                 "temperature": 0.8, "logprobs": True, "top_logprobs": 3}),
            (C, {"messages": [{"role": "user", "content": "Name a color."}], "max_tokens": 16, "seed": 23,
                 "logprobs": True, "top_logprobs": 3, "stream": True}),
        ]
with open(out, "w") as f:
    for path, body in reqs:
        f.write(json.dumps({"request": body, "response": post(path, body)}, ensure_ascii=False) + "\n")
print(f"capture: {len(reqs)} records -> {out}")
PY
}

for key in smollm2 llama2xs; do
  model=$SMOL
  [ "$key" = llama2xs ] && model=$XS
  serve "$model"
  requests "$key" "$PORT" "$TMP/$key.jsonl" fixtures
  requests "$key" "$PORT" "$TMP/calibration_$key.jsonl" calibration
  [ "$key" = llama2xs ] && requests "$key" "$PORT" "$TMP/llama2xs_chat.jsonl" chat_only
  stop
done
version=$(timeout 30 "$SERVER" --version 2>&1 | head -1 || true)
{
  echo "llama-server: $version (llama.cpp vendored in $(basename "$(ls -d "$PEER_DIR"/llama_cpp_python-*/ | head -1)"))"
  echo "command: llama-server -m MODEL --host 127.0.0.1 --port PORT -c 1024 -np 1 -t ${SERVER_THREADS:-2} --no-webui"
  echo "models: $(basename "$SMOL") $(sha256sum "$SMOL" | cut -c1-16), $(basename "$XS") $(sha256sum "$XS" | cut -c1-16)"
  echo "written by scripts/capture_server_logs.sh on $(date -u +%Y-%m-%d)"
} >"$TMP/PROVENANCE.txt"
for f in "$TMP"/*.jsonl "$TMP/PROVENANCE.txt"; do mv "$f" "$OUT/$(basename "$f").tmp" && mv "$OUT/$(basename "$f").tmp" "$OUT/$(basename "$f")"; done
echo "capture: wrote $OUT"
