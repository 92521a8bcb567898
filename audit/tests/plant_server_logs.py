#!/usr/bin/env python3
"""Plants tampering in a copy of one real llama-server record (docs/replay.md "Verified").
  plant_server_logs.py KIND FIXTURE BOUND OUT EXPECT
KIND:
  logprob  a greedy /completion record: the chosen token's logprob at the middle step moved down by
           2 * BOUND + 0.01 (and its entry in that step's top list with it): beyond the engine bound
  token    a greedy /completion record: at the first step whose logged top list ends more than 4 * BOUND
           below the chosen token, a token not in the list replaces the chosen one: no greedy sampler
           picks it (the tie threshold is 2 * BOUND)
  sampler  a sampled /completion record: min_p raised (request and generation_settings) so that a step
           whose logged gap to the top-1 is more than 4 * BOUND beyond the cut is removed while every
           earlier step stays within a tie; if no record has such a gap, the stop field set to a word the
           text completes at token k (token k + 1 comes after the stop)
Everything is computed from the logged (llama.cpp) numbers only. OUT: the tampered record (one line);
EXPECT: {"index", "verdict", "reason"} of the planted token (reason: a regular expression)."""
import json
import math
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
    # A token the server did not list has a logged logprob below the list's last entry; where that entry is
    # more than 4 * BOUND below the chosen token, no greedy sampler (ties: 2 * BOUND) picks such a token.
    for r in (r for r in records if native(r) and temp(r) <= 0):
        probs = r["response"]["completion_probabilities"]
        for k, step in enumerate(probs):
            listed = {t["id"] for t in step["top_logprobs"]}
            last = min(t["logprob"] for t in step["top_logprobs"])
            if step["logprob"] - last <= 4 * bound:
                continue
            new_id = next(i for i in range(100, 10000) if i not in listed and i != step["id"])
            step.update({"id": new_id, "token": "?", "bytes": [63], "logprob": last - 1.0})
            write(r, k, "impossible", "^(top_k|top_p|min_p|greedy)$")  # the server's default filters run first
            sys.exit(0)
    sys.exit("FAIL: no greedy step whose logged top list ends more than 4 * bound below the chosen token")
elif kind == "sampler":
    # min_p raised in a sampled record (request and generation_settings): llama.cpp's min_p removes a token
    # whose logit is more than x = log(1 / min_p) below the top. x is set so that every earlier logged gap
    # is within x + BOUND / 2 (kept, or a tie: within 2 * BOUND, whatever the numerics' share of the gap)
    # and step k's gap exceeds x + 4 * BOUND (beyond 2 * BOUND whatever that share).
    for r in (r for r in records if native(r) and temp(r) > 0):
        probs = r["response"]["completion_probabilities"]
        gaps = []
        for s in probs:
            chosen = next((t for t in s["top_logprobs"] if t["id"] == s["id"]), None)
            gaps.append(top1(s)["logprob"] - (chosen["logprob"] if chosen else s["logprob"]))
        for k in range(1, len(gaps)):
            x = max(0.0, max(gaps[:k]) - bound / 2)
            if gaps[k] > x + 4 * bound and x < 20:
                min_p = math.exp(-x) if x > 0 else 1.0
                r["request"]["min_p"] = min_p
                r["response"]["generation_settings"]["min_p"] = min_p
                write(r, k, "impossible", "^min_p$")
                sys.exit(0)
    # No sampled record has such a gap: the stop field instead. A stop string that the text completes at
    # token k makes token k + 1 one no sampler could have produced (the generation had stopped).
    for r in (r for r in records if native(r)):
        probs = r["response"]["completion_probabilities"]
        text, ends = "", []
        for s in probs:
            text += s["token"]
            ends.append(len(text))
        for k in range(len(probs) // 2, len(probs) - 1):
            word = probs[k]["token"]
            at = text.find(word)
            if len(word.strip()) >= 3 and at >= 0 and next(j for j, e in enumerate(ends) if e >= at + len(word)) == k:
                r["request"]["stop"] = [word]
                r["response"]["generation_settings"]["stop"] = [word]
                write(r, k + 1, "impossible", "^after_stop$")
                sys.exit(0)
    sys.exit("FAIL: no record to plant a sampler change in")
else:
    sys.exit("FAIL: unknown kind " + kind)
