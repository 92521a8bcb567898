"""Assertions for pytest, in the style of torch.testing.assert_close (docs/python.md).

    from llm_oracle.testing import assert_bit_exact, assert_within
    assert_bit_exact(my_kernel(x), llm_oracle.ops.rmsnorm(x, w))
    assert_within(my_kernel(x), llm_oracle.ops.softmax(x), ulp=4)

A failure raises AssertionError naming the first mismatching index, both values,
both bit patterns and their ULP distance, plus how many elements are off.
"""
import numpy as np

__all__ = ["assert_bit_exact", "assert_within", "ulp_distances"]

_NAN_ULP = np.iinfo(np.uint64).max  # NaN against a number: as llm_oracle.ulp_distance


def _as_f32(x, name):
    a = np.asarray(x)
    if a.dtype != np.float32:
        raise TypeError(f"{name}: expected float32, got {a.dtype} (convert explicitly if that is what you mean)")
    return a


def _ordered(a):
    """float32 -> integers in the order of the floats (+0 and -0 both 0)."""
    i = np.asarray(a).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def ulp_distances(actual, expected):
    """Element-wise ULP distance (uint64) of two float32 arrays, as llm_oracle.ulp_distance:
    NaN vs NaN is 0, NaN vs a number is 2**64 - 1."""
    a, e = _as_f32(actual, "actual"), _as_f32(expected, "expected")
    d = np.asarray(np.abs(_ordered(a) - _ordered(e))).astype(np.uint64)
    na, ne = np.isnan(a), np.isnan(e)
    d[na != ne] = _NAN_ULP
    d[na & ne] = 0
    return d


def _bits(v):
    return f"0x{int(np.float32(v).view(np.uint32)):08x}"


def _index(flat, shape):
    idx = np.unravel_index(flat, shape) if shape else ()
    return tuple(int(i) for i in idx)


def _mismatch_message(kind, a, e, bad, ulp, bound_text):
    n_bad, n = int(bad.sum()), a.size
    first = int(np.flatnonzero(bad.ravel())[0])
    worst = int(np.argmax(np.where(bad.ravel(), ulp.ravel(), 0)))
    av, ev = a.ravel()[first], e.ravel()[first]
    u = int(ulp.ravel()[first])
    u_text = "NaN against a number" if u == _NAN_ULP else f"{u} ULP apart"
    w = int(ulp.ravel()[worst])
    w_text = "NaN" if w == _NAN_ULP else f"{w} ULP"
    return (f"{kind}: {n_bad} of {n} elements ({100.0 * n_bad / n:.3g}%) {bound_text}.\n"
            f"First mismatch at index {_index(first, a.shape)}: actual {float(av)!r} ({_bits(av)}), "
            f"expected {float(ev)!r} ({_bits(ev)}), {u_text}.\n"
            f"Greatest difference: {w_text} at index {_index(worst, a.shape)} "
            f"(actual {float(a.ravel()[worst])!r}, expected {float(e.ravel()[worst])!r}).")


def _same_shape(a, e):
    if a.shape != e.shape:
        raise AssertionError(f"Shapes differ: actual {a.shape}, expected {e.shape}.")


def assert_bit_exact(actual, expected, msg=None):
    """Every element of `actual` has the bit pattern of `expected` (float32, same shape)."""
    a, e = _as_f32(actual, "actual"), _as_f32(expected, "expected")
    _same_shape(a, e)
    bad = a.view(np.uint32) != e.view(np.uint32)
    if bad.any():
        text = _mismatch_message("Arrays are not bit-identical", a, e, bad, ulp_distances(a, e), "differ in their bits")
        raise AssertionError(text + (f"\n{msg}" if msg else ""))


def assert_within(actual, expected, bound=None, *, ulp=None, atol=None, msg=None):
    """Every element within `ulp` (= `bound`) ULPs of expected, and/or within `atol`
    absolute; NaN only against NaN."""
    ulp = bound if ulp is None else ulp
    if ulp is None and atol is None:
        raise TypeError("assert_within needs bound= (ULPs), ulp= or atol=")
    a, e = _as_f32(actual, "actual"), _as_f32(expected, "expected")
    _same_shape(a, e)
    d = ulp_distances(a, e)
    bad = np.zeros(a.shape, dtype=bool)
    parts = []
    if ulp is not None:
        bad |= d > np.uint64(ulp)
        parts.append(f"{ulp} ULP")
    if atol is not None:
        with np.errstate(invalid="ignore"):
            diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
        bad |= ~(diff <= atol) & (d != 0)
        parts.append(f"atol {atol}")
    if bad.any():
        text = _mismatch_message("Arrays are not close", a, e, bad, d, "are outside " + " and ".join(parts))
        raise AssertionError(text + (f"\n{msg}" if msg else ""))
