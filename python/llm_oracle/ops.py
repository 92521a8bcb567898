"""The reference's single ops on float32 numpy / DLPack arrays (docs/python.md, "ops").

Inputs must be float32 (raw bytes for stored weight types), C-contiguous and on
the CPU; anything else raises llm_oracle.InputError (a ValueError) naming the
argument, never a silent conversion. `out=` writes in place (no allocation).
"""
from . import _core

rmsnorm = _core.ops.rmsnorm
softmax = _core.ops.softmax
swiglu = _core.ops.swiglu
rope = _core.ops.rope
rope_table = _core.ops.rope_table
attention = _core.ops.attention
matmul = _core.ops.matmul
dequantize = _core.ops.dequantize
quantize = _core.ops.quantize
row_bytes = _core.ops.row_bytes
dtypes = _core.ops.dtypes

__all__ = ["rmsnorm", "softmax", "swiglu", "rope", "rope_table", "attention", "matmul", "dequantize", "quantize",
           "row_bytes", "dtypes"]
