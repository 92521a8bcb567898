#!/usr/bin/env python3
"""Plants differences in dumps for the compare tests (numpy + safetensors).
  plant.py ulp IN OUT STEP          one logit of row STEP moved by one ULP
  plant.py tie IN WANT GOT STEP     WANT: row STEP's runner-up raised to 1e-5 below the top;
                                    GOT: WANT with the two swapped (an argmax change at a near-tie)
  plant.py swap IN OUT STEP         the top two logits of row STEP swapped (a real flip)
  plant.py trace IN OUT OP POS      one element of trace tensor OP at position POS changed by 0.5
  plant.py npy IN LOGITS.npy IDS.npy PROMPT.npy   the dump as .npy files"""
import sys
try:
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file
except ImportError as e:
    sys.exit("FAIL: %s — install with scripts/setup.sh (pip install safetensors numpy)" % e)


def load(p):
    with safe_open(p, "np") as f:
        return load_file(p), f.metadata()


kind = sys.argv[1]
d, meta = load(sys.argv[2])
if kind == "ulp":
    s = int(sys.argv[4])
    d["logits"][s, 123] = np.nextafter(d["logits"][s, 123], np.float32(np.inf))
    save_file(d, sys.argv[3], meta)
elif kind in ("tie", "swap"):
    s = int(sys.argv[-1])
    row = d["logits"][s]
    order = np.argsort(-row, kind="stable")
    a, b = order[0], order[1]
    if kind == "tie":
        row[b] = row[a] - np.float32(1e-5)
        save_file(d, sys.argv[3], meta)
        row[a], row[b] = row[b], row[a]
        save_file(d, sys.argv[4], meta)
    else:
        row[a], row[b] = row[b], row[a]
        save_file(d, sys.argv[3], meta)
elif kind == "trace":
    op, pos = sys.argv[4], int(sys.argv[5])
    d[op][pos, 2] += np.float32(0.5)
    save_file(d, sys.argv[3], meta)
elif kind == "npy":
    np.save(sys.argv[3], d["logits"])
    np.save(sys.argv[4], d["token_ids"])
    np.save(sys.argv[5], d["prompt_ids"])
