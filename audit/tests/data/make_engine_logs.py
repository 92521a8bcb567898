#!/usr/bin/env python3
"""Writes the engine-log fixtures of audit/tests (docs/replay.md, "Engine logs").

Each record is a real generation of the oracle reference (`oracle run --json`)
written in the exact shape the engine's server logs it (field names from
llama.cpp tools/server/server-task.cpp task_params::to_json and
server_task_result_cmpl_final::to_json_non_oaicompat; vLLM
vllm/entrypoints/openai/protocol.py; the OpenAI API reference). The tokens are
ours because the sampling semantics must be the same ones the engine
documents (llama.cpp: penalties over prompt + output in the last repeat_last_n
tokens, greedy = argmax after the penalties); the expected verdicts in the
tests follow from those semantics, not from a replay's output.

Usage: make_engine_logs.py ORACLE SHARED_DIR OUT_DIR
"""
import json, os, struct, subprocess, sys

ORACLE, SHARED, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
G = os.path.join(SHARED, "models", "gguf")


def run(model, prompt, n, *flags):
    out = subprocess.run([ORACLE, "run", "-m", os.path.join(G, model), "-p", prompt, "-n", str(n), "--json",
                          *map(str, flags)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def gguf_tokens(path):
    """tokenizer.ggml.tokens of a GGUF v3 file (enough of the format for strings/arrays)."""
    b = open(path, "rb").read()
    assert b[:4] == b"GGUF"
    n_kv = struct.unpack_from("<Q", b, 16)[0]
    at = 24
    def s(at):
        n = struct.unpack_from("<Q", b, at)[0]
        return b[at + 8:at + 8 + n].decode("utf-8", "replace"), at + 8 + n
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    def skip(t, at):
        if t == 8:
            return s(at)[1]
        if t == 9:
            et, n = struct.unpack_from("<IQ", b, at)
            at += 12
            for _ in range(n):
                at = skip(et, at)
            return at
        return at + sizes[t]
    for _ in range(n_kv):
        key, at = s(at)
        t = struct.unpack_from("<I", b, at)[0]
        at += 4
        if key == "tokenizer.ggml.tokens":
            et, n = struct.unpack_from("<IQ", b, at)
            at += 12
            toks = []
            for _ in range(n):
                x, at = s(at)
                toks.append(x)
            return toks
        at = skip(t, at)
    raise SystemExit("no tokenizer.ggml.tokens in " + path)


def gen_settings(**over):
    """llama.cpp server generation_settings (task_params::to_json), server defaults overridden."""
    g = {"seed": 4294967295, "temperature": 0.8, "dynatemp_range": 0.0, "dynatemp_exponent": 1.0, "top_k": 40,
         "top_p": 0.95, "min_p": 0.05, "top_n_sigma": -1.0, "xtc_probability": 0.0, "xtc_threshold": 0.1,
         "typical_p": 1.0, "repeat_last_n": 64, "repeat_penalty": 1.0, "presence_penalty": 0.0,
         "frequency_penalty": 0.0, "dry_multiplier": 0.0, "dry_base": 1.75, "dry_allowed_length": 2,
         "dry_penalty_last_n": -1, "dry_sequence_breakers": ["\n", ":", "\"", "*"], "mirostat": 0,
         "mirostat_tau": 5.0, "mirostat_eta": 0.1, "adaptive_target": -1.0, "adaptive_decay": 0.9, "stop": [],
         "max_tokens": -1, "n_predict": -1, "n_keep": 0, "n_discard": 0, "ignore_eos": False, "stream": False,
         "logit_bias": [], "n_probs": 0, "min_keep": 0, "grammar": "", "grammar_lazy": False,
         "grammar_triggers": [], "preserved_tokens": [], "chat_format": "Content-only",
         "reasoning_format": "none", "reasoning_in_content": False, "generation_prompt": "",
         "samplers": ["penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"],
         "speculative.types": "none", "timings_per_token": False, "post_sampling_probs": False,
         "backend_sampling": False, "lora": []}
    g.update(over)
    return g


def llamacpp_record(model, prompt, r, settings, request, pieces):
    probs = []
    for st in r["steps"]:
        raw = st["logprobs"]["raw"]
        probs.append({"id": st["token"], "token": pieces[st["token"]].replace("\u2581", " "),
                      "bytes": list(pieces[st["token"]].replace("\u2581", " ").encode()),
                      "logprob": raw["logprob"],
                      "top_logprobs": [{"id": t["id"], "token": pieces[t["id"]].replace("\u2581", " "),
                                        "bytes": list(pieces[t["id"]].replace("\u2581", " ").encode()),
                                        "logprob": t["logprob"]} for t in raw["top"]]})
    stop_type = "limit" if r["finish_reason"] == "length" else "eos"
    response = {"index": 0, "content": r["text"], "tokens": r["output_ids"], "id_slot": 0, "stop": True,
                "model": model, "tokens_predicted": len(r["output_ids"]), "tokens_evaluated": len(r["prompt_ids"]),
                "generation_settings": settings, "prompt": "<s> " + prompt, "has_new_line": "\n" in r["text"],
                "truncated": False, "stop_type": stop_type, "stopping_word": "", "tokens_cached": 0,
                "timings": {"prompt_n": len(r["prompt_ids"]), "predicted_n": len(r["output_ids"])},
                "completion_probabilities": probs}
    return {"request": request, "response": response}


def openai_completion(model, prompt_field, runs, request, pieces, as_ids, vllm):
    choices = []
    for i, r in enumerate(runs):
        tok = (lambda t: "token_id:%d" % t) if as_ids else (lambda t: pieces[t])
        lp = {"text_offset": [], "token_logprobs": [], "tokens": [], "top_logprobs": []}
        for st in r["steps"]:
            raw = st["logprobs"]["raw"]
            lp["tokens"].append(tok(st["token"]))
            lp["token_logprobs"].append(raw["logprob"])
            lp["top_logprobs"].append({tok(t["id"]): t["logprob"] for t in raw["top"][:request.get("logprobs", 0)]})
            lp["text_offset"].append(0)
        c = {"index": i, "text": r["text"], "logprobs": lp,
             "finish_reason": "length" if r["finish_reason"] == "length" else "stop"}
        if vllm:
            c.update({"stop_reason": None, "token_ids": r["output_ids"], "prompt_logprobs": None,
                      "prompt_token_ids": r["prompt_ids"]})
        choices.append(c)
    resp = {"id": "cmpl-fixture", "object": "text_completion", "created": 1764576000, "model": model,
            "choices": choices, "usage": {"prompt_tokens": len(runs[0]["prompt_ids"]),
                                           "completion_tokens": sum(len(r["output_ids"]) for r in runs)}}
    if vllm:
        resp.update({"service_tier": None, "system_fingerprint": None, "kv_transfer_params": None})
    return {"request": request, "response": resp}


def chat(model, r, request, pieces, vllm):
    content = [{"token": "token_id:%d" % st["token"], "logprob": st["logprobs"]["raw"]["logprob"], "bytes": None,
                "top_logprobs": [{"token": "token_id:%d" % t["id"], "logprob": t["logprob"], "bytes": None}
                                 for t in st["logprobs"]["raw"]["top"][:request.get("top_logprobs", 0)]]}
               for st in r["steps"]]
    resp = {"id": "chatcmpl-fixture", "object": "chat.completion", "created": 1764576000, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": r["text"]},
                         "logprobs": {"content": content}, "finish_reason": "length", "token_ids": r["output_ids"]}],
            "usage": {"prompt_tokens": len(r["prompt_ids"]), "completion_tokens": len(r["output_ids"])}}
    if vllm:
        resp["prompt_token_ids"] = r["prompt_ids"]
    return {"request": request, "response": resp}


def write(name, records):
    with open(os.path.join(OUT, name), "w") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")


def main():
    pieces = gguf_tokens(os.path.join(G, "llama2xs.gguf"))
    prompt = "Once upon a time"
    # llama.cpp server: a genuine greedy run with repeat_penalty 1.5 over the last 64 tokens (prompt included).
    r = run("llama2xs.gguf", prompt, 40, "--temperature", 0, "--repeat-penalty", 1.5, "--penalty-window", 64,
            "--logprobs", 5)
    req = {"prompt": prompt, "n_predict": 40, "temperature": 0, "repeat_penalty": 1.5, "repeat_last_n": 64,
           "n_probs": 5, "cache_prompt": True, "stream": False}
    gs = gen_settings(temperature=0.0, repeat_penalty=1.5, repeat_last_n=64, n_predict=40, max_tokens=40, n_probs=5)
    good = llamacpp_record("llama2xs.gguf", prompt, r, gs, req, pieces)
    lie = json.loads(json.dumps(good))  # the same tokens claimed under no penalty
    lie["request"]["repeat_penalty"] = 1.0
    lie["response"]["generation_settings"]["repeat_penalty"] = 1.0
    dry = json.loads(json.dumps(good))
    dry["response"]["generation_settings"]["dry_multiplier"] = 0.8
    unknown = json.loads(json.dumps(good))
    unknown["response"]["generation_settings"]["smoothing_factor"] = 0.3
    write("llamacpp_server.jsonl", [good, lie, dry, unknown])

    # OpenAI completions: n = 2 sampled choices (temperature 0.8, no filters), top 3 logprobs as piece strings.
    runs = [run("llama2xs.gguf", "The little dog", 16, "--temperature", 0.8, "--preset", "hf", "--top-k", 0,
                "--seed", s, "--logprobs", 3) for s in (11, 12)]
    oreq = {"model": "llama2xs", "prompt": "The little dog", "max_tokens": 16, "temperature": 0.8, "n": 2,
            "logprobs": 3, "seed": 11, "stream": False}
    ok = openai_completion("llama2xs", "The little dog", runs, oreq, pieces, False, False)
    bad = json.loads(json.dumps(ok))  # one alternative's logprob off by 0.05 nats at choice 1, token 4
    k = next(iter(bad["response"]["choices"][1]["logprobs"]["top_logprobs"][4]))
    bad["response"]["choices"][1]["logprobs"]["top_logprobs"][4][k] -= 0.05
    chat_noids = chat("llama2xs", r, {"model": "llama2xs", "messages": [{"role": "user", "content": "Hi"}],
                                     "logprobs": True, "top_logprobs": 2, "temperature": 0}, pieces, False)
    chat_noids["response"]["choices"][0].pop("token_ids")
    write("openai.jsonl", [ok, bad, chat_noids])

    # vLLM: greedy with repetition_penalty 1.3 over prompt + output, top_k/min_p stated, ids everywhere.
    v = run("llama2xs.gguf", "One day, a girl", 24, "--temperature", 0, "--repeat-penalty", 1.3,
            "--penalty-window", -1, "--logprobs", 4)
    vreq = {"model": "meta-llama/llama2xs", "prompt": v["prompt_ids"], "max_tokens": 24, "temperature": 0.0,
            "top_k": 20, "min_p": 0.05, "repetition_penalty": 1.3, "logprobs": 4, "return_tokens_as_token_ids": True,
            "return_token_ids": True, "skip_special_tokens": True, "add_special_tokens": True}
    vok = openai_completion("meta-llama/llama2xs", None, [v], vreq, pieces, True, True)
    vchat = chat("meta-llama/llama2xs", v, {"model": "meta-llama/llama2xs", "messages": [{"role": "user", "content": "x"}],
                                         "logprobs": True, "top_logprobs": 4, "temperature": 0.0,
                                         "repetition_penalty": 1.3, "return_token_ids": True,
                                         "max_completion_tokens": 24}, pieces, True)
    vfreq = json.loads(json.dumps(vok))
    vfreq["request"]["frequency_penalty"] = 0.5
    write("vllm.jsonl", [vok, vchat, vfreq])

    # A log mixing three checkpoints (and one the catalog does not have): --models ../shared/models/gguf.
    mixed = [good]
    q8 = run("llama2xs-q8_0.gguf", prompt, 20, "--temperature", 0, "--logprobs", 2)
    mixed.append(openai_completion("local/llama2xs-q8_0", None, [q8],
                                   {"model": "local/llama2xs-q8_0", "prompt": q8["prompt_ids"], "max_tokens": 20,
                                    "temperature": 0, "logprobs": 2, "return_tokens_as_token_ids": True},
                                   pieces, True, True))
    st = run("stories260K.gguf", prompt, 20, "--temperature", 0, "--logprobs", 2)
    spieces = gguf_tokens(os.path.join(G, "stories260K.gguf"))
    mixed.append(llamacpp_record("/models/stories260K.gguf", prompt, st,
                                 gen_settings(temperature=0.0, n_predict=20, max_tokens=20, n_probs=2),
                                 {"prompt": prompt, "n_predict": 20, "temperature": 0, "n_probs": 2}, spieces))
    other = json.loads(json.dumps(ok))
    other["request"]["model"] = other["response"]["model"] = "gpt-4o-mini"
    mixed.append(other)
    write("mixed_models.jsonl", mixed)


main()
