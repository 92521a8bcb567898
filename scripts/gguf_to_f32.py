#!/usr/bin/env python3
"""Benchmark-fixture helper (not product code): rewrite a GGUF with every
quantized / F16 / BF16 tensor dequantized to F32 using the PyPI `gguf`
package (gguf.quants.dequantize, numpy float32). Metadata is copied as is.
For Q4_1 sources the result is exact: every Q4_1 value d*q+m is one float32
(the same rounding ggml and reference/model/quant.cpp apply).
    python3 scripts/gguf_to_f32.py IN.gguf OUT.gguf
"""
import sys

import numpy as np
from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType, GGUFValueType
from gguf.quants import dequantize


def copy_fields(r, w):
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vt = f.types[0]
        if vt == GGUFValueType.ARRAY:
            sub = f.types[1] if len(f.types) > 1 else GGUFValueType.INT32
            if sub == GGUFValueType.STRING:
                vals = [bytes(f.parts[i]).decode("utf-8", errors="surrogateescape") for i in f.data]
            else:
                vals = [f.parts[i].tolist()[0] for i in f.data]
            w.add_key_value(name, vals, vt, sub_type=sub)
        elif vt == GGUFValueType.STRING:
            w.add_key_value(name, bytes(f.parts[f.data[0]]).decode("utf-8"), vt)
        else:
            w.add_key_value(name, f.parts[f.data[0]].tolist()[0], vt)


def main(src, dst):
    r = GGUFReader(src)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    w = GGUFWriter(dst, arch)
    copy_fields(r, w)
    for t in r.tensors:
        shape = [int(d) for d in reversed(t.shape.tolist())]  # numpy order (rows first)
        if t.tensor_type == GGMLQuantizationType.F32:
            data = np.asarray(t.data, dtype=np.float32).reshape(shape)
        else:
            data = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
        w.add_tensor(t.name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
