"""Worked example (a), docs/python.md: a numpy "kernel under test" — RMSNorm and
softmax written the naive way — checked against llm_oracle.ops. The suite prints
their real ULP distance from the reference and holds them to it; a planted
off-by-one (the mean over n - 1 elements) fails with the readable message."""
import numpy as np
import pytest

from llm_oracle import ops
from llm_oracle.testing import assert_bit_exact, assert_within, ulp_distances


def naive_rmsnorm(x, w, eps=1e-5):
    ms = np.mean(x * x, axis=-1, keepdims=True, dtype=np.float32)  # numpy's pairwise sum
    return (x / np.sqrt(ms + np.float32(eps))) * w


def naive_rmsnorm_off_by_one(x, w, eps=1e-5):
    n = x.shape[-1]
    ms = np.sum(x * x, axis=-1, keepdims=True, dtype=np.float32) / np.float32(n - 1)  # BUG: n - 1
    return (x / np.sqrt(ms + np.float32(eps))) * w


def naive_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


X = np.random.default_rng(0).standard_normal((4, 4096)).astype(np.float32)
W = np.random.default_rng(1).standard_normal(4096).astype(np.float32)


def test_naive_rmsnorm_real_ulp_distance():
    got, ref = naive_rmsnorm(X, W), ops.rmsnorm(X, W, 1e-5)
    worst = int(ulp_distances(got, ref).max())
    print(f"naive numpy rmsnorm vs llm_oracle.ops.rmsnorm: max {worst} ULP")
    assert 0 < worst <= 8  # different summation order and a division: a few ULP, never 0 here
    assert_within(got, ref, ulp=worst)
    with pytest.raises(AssertionError):
        assert_bit_exact(got, ref)


def test_naive_softmax_real_ulp_distance():
    got, ref = naive_softmax(X), ops.softmax(X)
    worst = int(ulp_distances(got, ref).max())
    print(f"naive numpy softmax vs llm_oracle.ops.softmax: max {worst} ULP")
    assert worst <= 16
    assert_within(got, ref, ulp=worst)


def test_planted_off_by_one_fails_readably():
    ref = ops.rmsnorm(X, W, 1e-5)
    with pytest.raises(AssertionError) as e:
        assert_within(naive_rmsnorm_off_by_one(X, W), ref, ulp=8)
    msg = str(e.value)
    print(msg)
    assert msg.startswith("Arrays are not close: ")
    assert "elements" in msg and "are outside 8 ULP" in msg
    first = np.argmax(ulp_distances(naive_rmsnorm_off_by_one(X, W), ref).ravel() > 8)
    idx = np.unravel_index(first, X.shape)
    a, b = naive_rmsnorm_off_by_one(X, W)[idx], ref[idx]
    assert f"First mismatch at index {tuple(int(i) for i in idx)}" in msg
    assert f"actual {float(a)!r} (0x{int(a.view(np.uint32)):08x})" in msg
    assert f"expected {float(b)!r} (0x{int(b.view(np.uint32)):08x})" in msg
    assert f"{int(ulp_distances(a, b))} ULP apart" in msg


def test_bit_exact_message_and_shape_and_dtype_checks():
    ref = ops.softmax(X)
    bad = ref.copy()
    bad[2, 7] = np.nextafter(bad[2, 7], np.float32(1))
    with pytest.raises(AssertionError, match=r"1 of 16384 elements .* differ in their bits") as e:
        assert_bit_exact(bad, ref)
    assert "First mismatch at index (2, 7)" in str(e.value) and "1 ULP apart" in str(e.value)
    with pytest.raises(AssertionError, match="Shapes differ"):
        assert_bit_exact(ref[:2], ref)
    with pytest.raises(TypeError, match="float32"):
        assert_bit_exact(ref.astype(np.float64), ref)
    assert_bit_exact(ref, ref.copy())


def test_assert_within_bound_is_inclusive_and_exact():
    ref = ops.softmax(X[:1])
    two = np.nextafter(np.nextafter(ref, np.float32(1)), np.float32(1))  # every element 2 ULP up
    assert_within(two, ref, ulp=2)
    with pytest.raises(AssertionError, match="are outside 1 ULP"):
        assert_within(two, ref, ulp=1)
    assert_within(two, ref, atol=1e-6)
    with pytest.raises(AssertionError, match="atol 1e-12"):
        assert_within(two, ref, atol=1e-12)
    with pytest.raises(TypeError):
        assert_within(two, ref)
