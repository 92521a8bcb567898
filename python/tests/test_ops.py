"""llm_oracle.ops against the C++ API bit for bit (api_probe), plus what the
bindings promise about arrays: zero-copy out=, refusals, the GIL released."""
import threading
import time

import numpy as np
import pytest

import llm_oracle
from llm_oracle import ops
from llm_oracle.testing import assert_bit_exact

RNG = np.random.default_rng(7)


def rand(*shape, scale=2.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def test_rmsnorm_softmax_swiglu_match_cpp(probe):
    x, w = rand(3, 96), rand(96)
    assert_bit_exact(ops.rmsnorm(x, w, 1e-5), probe("rmsnorm", x, w, 3, 96, 1e-5, "@OUT").reshape(3, 96))
    assert_bit_exact(ops.softmax(x), probe("softmax", x, 3, 96, "@OUT").reshape(3, 96))
    g, u = rand(200), rand(200)
    assert_bit_exact(ops.swiglu(g, u), probe("swiglu", g, u, 200, "@OUT"))
    assert_bit_exact(ops.rmsnorm(x[1], w, 1e-5), ops.rmsnorm(x, w, 1e-5)[1])  # 1-D == one row


@pytest.mark.parametrize("layout", ["interleaved", "neox"])
@pytest.mark.parametrize("scaling,factor,orig", [("none", 1.0, 0), ("linear", 4.0, 0), ("yarn", 4.0, 512)])
def test_rope_matches_cpp(probe, layout, scaling, factor, orig):
    x, pos = rand(3, 2 * 16), [0, 5, 1000]
    got = ops.rope(x, pos, 16, 10000.0, layout=layout, scaling=scaling, factor=factor, original_context=orig)
    want = probe("rope", x, 3, 2, 16, 10000.0, layout, scaling, factor, orig, 1.0, "@OUT", *pos).reshape(3, 32)
    assert_bit_exact(got, want)
    assert_bit_exact(ops.rope(x.reshape(3, 2, 16), pos, 16, layout=layout, scaling=scaling, factor=factor,
                              original_context=orig).reshape(3, 32), got)


def test_rope_position_zero_is_identity_and_table_is_unit():
    x = rand(1, 8)
    assert_bit_exact(ops.rope(x, [0], 8), x)
    c, s = ops.rope_table(3, 8)
    np.testing.assert_allclose(c * c + s * s, 1.0, rtol=1e-6)


def test_attention_matches_cpp(probe):
    q, k, v = rand(4, 16), rand(40, 2, 16), rand(40, 2, 16)  # GQA 4:2, two chunks of 32
    assert_bit_exact(ops.attention(q, k, v), probe("attention", q, k, v, 40, 4, 2, 16, "@OUT").reshape(4, 16))


@pytest.mark.parametrize("dtype", ["F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K",
                                   "Q4_K", "Q5_K", "Q6_K", "I8_ROW"])
def test_quantize_dequantize_matmul_match_cpp(probe, dtype):
    K, N, T = 256, 6, 3
    w, x = rand(N, K), rand(T, K)
    q = ops.quantize(w, dtype)
    assert q.dtype == np.uint8 and q.shape == (N, ops.row_bytes(dtype, K))
    assert np.array_equal(q.ravel(), probe("quantize", w, dtype, N, K, "@OUT", out_dtype=np.uint8))
    d = ops.dequantize(q, dtype, K)
    assert_bit_exact(d.ravel(), probe("dequantize", q, dtype, N, K, "@OUT"))
    wq = w if dtype == "F32" else q
    got = ops.matmul(x, wq, dtype)
    assert_bit_exact(got.ravel(), probe("matmul", x, q, dtype, T, K, N, "@OUT"))
    assert_bit_exact(ops.matmul(x, wq, dtype, threads=3), got)  # threads change no bit
    assert_bit_exact(ops.matmul(x, d, "F32"), got)  # blocks decoded in registers == dequantize + dot


def test_every_read_type_is_listed():
    assert "Q8_K" in ops.dtypes() and "I8_ROW" in ops.dtypes()
    with pytest.raises(llm_oracle.InputError, match="cannot be written"):
        ops.quantize(rand(1, 256), "Q8_K")


def test_out_is_written_in_place_and_results_are_not_copied():
    x, w = rand(2, 64), rand(64)
    out = np.empty_like(x)
    r = ops.rmsnorm(x, w, out=out)
    assert r is out
    assert_bit_exact(out, ops.rmsnorm(x, w))
    y = x.copy()
    assert ops.softmax(y, out=y) is y  # in place
    assert_bit_exact(y, ops.softmax(x))
    fresh = ops.softmax(x)
    assert not fresh.flags.owndata and fresh.base is not None  # a view of the C++ buffer, no copy


@pytest.mark.parametrize("bad,field", [
    (np.ones((2, 64), dtype=np.float64), "dtype"),
    (np.ones((2, 64), dtype=np.float16), "dtype"),
    (np.ones((2, 128), dtype=np.float32)[:, ::2], "contiguity"),
    (np.ones((64, 2), dtype=np.float32).T, "contiguity"),
    (np.ones((2, 2, 64), dtype=np.float32), "ndim"),
])
def test_refusals_name_argument_and_field(bad, field):
    with pytest.raises(ValueError) as e:
        ops.rmsnorm(bad, np.ones(64, dtype=np.float32))
    assert e.value.field == field and e.value.file == "ops.rmsnorm"
    assert isinstance(e.value, llm_oracle.InputError)


def test_wrong_shapes_and_values_are_refused():
    x = rand(2, 64)
    with pytest.raises(llm_oracle.InputError, match="weight") as e:
        ops.rmsnorm(x, rand(63))
    with pytest.raises(llm_oracle.InputError) as e:
        ops.rmsnorm(x, rand(64), out=np.empty((2, 63), np.float32))
    assert e.value.field == "out"
    with pytest.raises(llm_oracle.InputError) as e:
        ops.rope(rand(2, 16), [0], 8)
    assert e.value.field == "positions"
    with pytest.raises(llm_oracle.InputError) as e:
        ops.rope(rand(1, 16), [0], 8, factor=2.0)
    assert e.value.field == "factor"
    with pytest.raises(llm_oracle.InputError) as e:
        ops.matmul(rand(1, 100), np.zeros((2, 10), np.uint8), "Q4_0")
    assert e.value.field == "n"
    with pytest.raises(llm_oracle.InputError) as e:
        ops.matmul(rand(1, 64), np.zeros((2, 10), np.uint8), "Q4_0")
    assert e.value.field == "weight"
    with pytest.raises(llm_oracle.InputError) as e:
        ops.matmul(rand(1, 64), rand(2, 64), "q9_9")
    assert e.value.field == "dtype"
    ro = rand(2, 64)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        ops.softmax(rand(2, 64), out=ro)
    assert ops.softmax(ro).shape == (2, 64)  # read-only inputs are fine


class DLPackOnly:
    """A producer that offers nothing but DLPack (as torch / jax tensors do)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_producers_are_read_in_place():
    x, w = rand(2, 64), rand(64)
    assert_bit_exact(ops.rmsnorm(DLPackOnly(x), DLPackOnly(w)), ops.rmsnorm(x, w))


def test_gil_is_released_while_computing():
    # ~0.27 G multiply-adds: tens of ms on one core even when the machine is idle,
    # far above the interpreter's 5 ms switch interval. (Not a timing test: only
    # whether another thread ran inside the call is asserted.)
    K, N = 4096, 4096
    x, w = rand(16, K), rand(N, K, scale=0.1)
    stamps, stop = [], threading.Event()

    def tick():
        while not stop.is_set():
            stamps.append(time.perf_counter())
    t = threading.Thread(target=tick)
    t.start()
    time.sleep(0.02)
    t0 = time.perf_counter()
    ops.matmul(x, w)
    t1 = time.perf_counter()
    stop.set()
    t.join()
    assert t1 - t0 > 0.01, "the call is too short to observe"
    inside = [s for s in stamps if t0 + 0.25 * (t1 - t0) < s < t0 + 0.75 * (t1 - t0)]
    assert inside, "no other Python thread ran during the call: the GIL was held"


def test_rope_frequency_factors_and_attn_factor_are_honoured():
    half = 8
    ones, twos = [1.0] * half, [2.0] * half
    c1, s1 = ops.rope_table(5, 16, freq_factors=ones)
    c2, s2 = ops.rope_table(10, 16, freq_factors=twos)  # angle = pos * base / ff: 10 / 2 == 5 / 1 exactly
    assert_bit_exact(c2, c1)
    assert_bit_exact(s2, s1)
    c3, s3 = ops.rope_table(5, 16, freq_factors=ones, attn_factor=2.0)  # a power of two scales exactly
    assert_bit_exact(c3, c1 * np.float32(2))
    assert_bit_exact(s3, s1 * np.float32(2))
    with pytest.raises(llm_oracle.InputError) as e:
        ops.rope_table(5, 16, freq_factors=[1.0] * 3)
    assert e.value.field == "freq_factors"
    with pytest.raises(llm_oracle.InputError) as e:
        ops.rope_table(5, 16, scaling="yarn", factor=4.0)
    assert e.value.field == "original_context"
