#!/usr/bin/env python3
"""Reads `oracle run --dump-logits/--dump-trace` files with the `safetensors`
and `numpy` packages (PyPI; scripts/setup.sh installs them) and checks them
against the run's --json: every logits row's SHA-256 is that step's
logits_sha256, ids and metadata agree, the trace holds every op of every layer
for every position and its logits rows are the dump's.
Usage: check_dumps.py RUN.json LOGITS.safetensors TRACE.safetensors
A missing package is a failure (exit 1), never a skip."""
import hashlib, json, sys

try:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file
except ImportError as e:
    sys.exit("FAIL: %s — install with scripts/setup.sh (pip install safetensors numpy)" % e)

run = json.load(open(sys.argv[1]))
d = load_file(sys.argv[2])
assert d["logits"].dtype == np.float32 and d["logits"].shape == (len(run["steps"]), 512), d["logits"].shape
for i, step in enumerate(run["steps"]):
    h = hashlib.sha256(d["logits"][i].astype("<f4").tobytes()).hexdigest()
    assert h == step["logits_sha256"], "step %d: %s != %s" % (i, h, step["logits_sha256"])
assert d["token_ids"].tolist() == run["output_ids"], "token_ids"
assert d["prompt_ids"].tolist() == run["prompt_ids"], "prompt_ids"
with safe_open(sys.argv[2], "np") as f:
    meta = f.metadata()
assert meta["format"] == "oracle-logits" and meta["model_sha256"] == run["model_sha256"], meta
assert meta["tokenizer_sha256"] == run["tokenizer_sha256"], meta
assert json.loads(meta["prompt_ids"]) == run["prompt_ids"], meta["prompt_ids"]
assert json.loads(meta["sampler"])["temperature"] == run["sampler"]["temperature"], meta["sampler"]
assert meta["oracle_version"], meta

t = load_file(sys.argv[3])
positions = len(run["prompt_ids"]) + len(run["output_ids"]) - 1
ops = ["attn_norm", "q", "k", "v", "attn_out", "attn_proj", "ffn_norm", "ffn_gate", "ffn_up", "ffn_act", "ffn_out",
       "resid"]
layers = sorted({int(k.split(".")[1]) for k in t if k.startswith("blk.")})
assert layers == list(range(len(layers))) and layers, layers
for L in layers:
    for op in ops:
        name = "blk.%d.%s" % (L, op)
        assert name in t and t[name].shape[0] == positions and t[name].dtype == np.float32, name
assert t["output_norm"].shape[0] == positions
assert np.array_equal(t["logits"][len(run["prompt_ids"]) - 1:], d["logits"]), "trace logits != dump"
print("ok: %d steps hash to logits_sha256; trace %d tensors x %d positions" % (len(run["steps"]), len(t), positions))
