#!/usr/bin/env python3
"""Plants tampering in a copy of one real llama-server record (docs/replay.md "Verified").
  plant_server_logs.py KIND FIXTURE BOUND OUT EXPECT
KIND:
  logprob  a greedy /completion record: the chosen token's logprob at the middle step moved down by
           2 * BOUND + 0.01 (and its entry in that step's top list with it): beyond the engine bound
  token    a greedy /completion record: at the first step whose logged top list holds a token more than
           4 * BOUND below the chosen one, that token replaces the chosen one (id, text, logprob):
           no greedy sampler picks it (the tie threshold is 2 * BOUND)
  sampler  a sampled /completion record: temperature set to 0 in its request and generation_settings;
           expected at the first step whose logged token is not the logged top-1, which must be more
           than 4 * BOUND below it, with every earlier step the logged top-1 (no ambiguity)
Everything is computed from the logged (llama.cpp) numbers only. OUT: the tampered record (one line);
EXPECT: {"index", "verdict", "reason"} of the planted token."""
import json
import sys

kind, fixture, bound, out, expect = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
records = [json.loads(l) for l in open(fixture, encoding="utf-8") if l.strip()]


def native(r):  # a non-streamed /completion record with raw logprobs
    resp = r["response"]
    return (isinstance(resp, dict) and "completion_probabilities" in resp
            and not resp["generation_settings"].get("post_sampling_probs", False))


def temp(r):
    return r["response"]["generation_settings"]["temperature"]


def write(r, index, verdict, reason):
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(expect, "w") as f:
        json.dump({"index": index, "verdict": verdict, "reason": reason}, f)
    print(f"planted {kind} at token {index} ({verdict} [{reason}])")


def top1(step):
    return max(step["top_logprobs"], key=lambda t: t["logprob"])


if kind == "logprob":
    r = next(r for r in records if native(r) and temp(r) <= 0)
    probs = r["response"]["completion_probabilities"]
    k = len(probs) // 2
    delta = 2 * bound + 0.01
    probs[k]["logprob"] -= delta
    for t in probs[k]["top_logprobs"]:
        if t["id"] == probs[k]["id"]:
            t["logprob"] -= delta
    write(r, k, "logprob_mismatch", "logprob")
elif kind == "token":
    for r in (r for r in records if native(r) and temp(r) <= 0):
        probs = r["response"]["completion_probabilities"]
        for k, step in enumerate(probs):
            chosen = next((t for t in step["top_logprobs"] if t["id"] == step["id"]), None)
            if chosen is None:
                continue
            far = [t for t in step["top_logprobs"]
                   if t["logprob"] < chosen["logprob"] - 4 * bound and t["token"].strip() and t["logprob"] > -1e30]
            if far:
                t = far[0]
                step.update({"id": t["id"], "token": t["token"], "bytes": t["bytes"], "logprob": t["logprob"]})
                write(r, k, "impossible", "greedy")
                sys.exit(0)
    sys.exit("FAIL: no greedy record with a token more than 4 * bound below the chosen one")
elif kind == "sampler":
    for r in (r for r in records if native(r) and temp(r) > 0):
        probs = r["response"]["completion_probabilities"]
        k = next((k for k, s in enumerate(probs) if s["id"] != top1(s)["id"]), None)
        if k is None:
            continue
        chosen = next((t for t in probs[k]["top_logprobs"] if t["id"] == probs[k]["id"]), None)
        lp = chosen["logprob"] if chosen else probs[k]["logprob"]
        if top1(probs[k])["logprob"] - lp <= 4 * bound:
            continue
        r["request"]["temperature"] = 0
        r["response"]["generation_settings"]["temperature"] = 0
        write(r, k, "impossible", "greedy")
        sys.exit(0)
    sys.exit("FAIL: no sampled record whose first non-top-1 token is more than 4 * bound below the top-1")
else:
    sys.exit("FAIL: unknown kind " + kind)
