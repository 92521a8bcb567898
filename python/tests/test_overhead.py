"""Binding overhead (docs/python.md, "Overhead"): the Python call against the same
C++ call timed in a C++ loop, in one run. Label smollm2 (ctest -R python_tests_smollm2)."""
import time

import numpy as np
import pytest

import llm_oracle
from llm_oracle import ops


def per_call(fn, iters):
    fn()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) / iters


@pytest.mark.smollm2
def test_binding_overhead(smollm2_path):
    x = np.random.default_rng(0).standard_normal((1, 4096)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal(4096).astype(np.float32)
    out = np.empty_like(x)
    py_new = per_call(lambda: ops.rmsnorm(x, w, 1e-5), 20000)
    py_out = per_call(lambda: ops.rmsnorm(x, w, 1e-5, out=out), 20000)
    cpp = llm_oracle._core.ops._time_cpp_rmsnorm(x, w, 1e-5, 20000)
    print(f"\nops.rmsnorm (1, 4096): C++ {cpp * 1e6:.2f} us, Python {py_new * 1e6:.2f} us "
          f"(out=: {py_out * 1e6:.2f} us), overhead {(py_new - cpp) * 1e6:.2f} us per call")
    m = llm_oracle.Model(smollm2_path)
    ids = m.tokenize("The quick brown fox jumps over the lazy dog. " * 20)[:128]
    assert len(ids) == 128
    py = per_call(lambda: m.logits(ids), 3)
    cpp = m._time_cpp_logits(ids, 3)
    print(f"Model.logits SmolLM2-135M Q4_1, 128 tokens: C++ {cpp * 1e3:.1f} ms, Python {py * 1e3:.1f} ms, "
          f"overhead {(py - cpp) * 1e3:.2f} ms ({100 * (py - cpp) / cpp:+.2f}%)")
    assert py < cpp * 1.5 + 0.05
