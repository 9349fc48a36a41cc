"""tridiagonal_eigh by divide and conquer (condensed/tridiagonal_dc.py) against LAPACK
(scipy.linalg.eigh_tridiagonal) and the dense oracle (scipy.linalg.eigvalsh of T).

Bounds in units of n·ε, ε of the result's dtype: each eigenvalue within BOUND·n·ε·‖T‖₂
of both references, ‖T − Z·W·Zᵀ‖_F/(‖T‖_F·n·ε) and ‖ZᵀZ − I‖_F/(n·ε) at most BOUND.
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.condensed import tridiagonal_dc
from gpusvd.condensed.tridiagonal_dc import tridiagonal_eigh

BOUND = 30  # in units of n·ε, as gr's property tests (issue 2)
SIZES = (0, 1, 2, 3, 31, 32, 33, 100, 500, 1500)
DTYPES = (np.float32, np.float64)


def _wilkinson(m):
    """W_{2m+1}⁺: d = |i − m|, e = 1; its eigenvalues come in pairs close to 10⁻ᵐ."""
    return np.abs(np.arange(2 * m + 1) - m).astype(np.float64), np.ones(2 * m)


def _tridiagonal(kind, n, seed):
    """(d, e) in float64 of a named family."""
    rng = np.random.default_rng(seed)
    ones = np.ones(max(n - 1, 0))
    if kind == "random":
        return rng.standard_normal(n), rng.standard_normal(max(n - 1, 0))
    if kind == "wilkinson":  # W⁺ of odd order n or n + 1, cut to n
        d, e = _wilkinson(n // 2 + 10)
        return d[:n], e[:max(n - 1, 0)]
    if kind == "equal diagonal, tiny e":  # massive deflation
        return np.ones(n), 1e-12 * rng.standard_normal(max(n - 1, 0))
    if kind == "glued wilkinson":  # copies of W21⁺ glued by 1e-10: clusters of n/21
        d, e = _wilkinson(10)
        copies = n // 21 + 1
        return (np.tile(d, copies)[:n],
                np.tile(np.append(e, 1e-10), copies)[:max(n - 1, 0)])
    if kind == "zeros in e":  # splits into independent blocks
        e = rng.standard_normal(max(n - 1, 0))
        e[::7] = 0.0
        return rng.standard_normal(n), e
    if kind == "graded":
        return 2.0 ** -np.arange(n), 2.0 ** -np.arange(max(n - 1, 0)) * 0.7
    if kind == "1-2-1":
        return 2 * np.ones(n), -ones
    # "rank-one-like": one large eigenvalue, the rest within 1e-10 of zero
    d = 1e-10 * rng.standard_normal(n)
    if n:
        d[n // 2] = 1.0
    return d, 1e-10 * rng.standard_normal(max(n - 1, 0))


KINDS = ("random", "wilkinson", "equal diagonal, tiny e", "glued wilkinson", "zeros in e",
         "graded", "1-2-1", "rank-one-like")


def _dense(d, e):
    return np.diag(d) + np.diag(e, 1) + np.diag(e, -1)


def _value_units(w, ref, norm, n, eps):
    return float(np.abs(w - ref).max(initial=0.0)) / (max(norm, np.finfo(float).tiny)
                                                      * max(n, 1) * eps)


def _check(d, e):
    """The invariants of the module docstring; returns (w, z)."""
    saved = d.copy(), e.copy()
    w, z = tridiagonal_eigh(d, e)
    assert np.array_equal(d, saved[0]) and np.array_equal(e, saved[1])
    n = d.shape[0]
    dtype = np.float32 if np.result_type(d, e) == np.float32 else np.float64
    assert w.dtype == dtype and z.dtype == dtype and w.shape == (n,) and z.shape == (n, n)
    assert np.all(np.diff(w) >= 0)
    t = _dense(d.astype(np.float64), e.astype(np.float64))
    eps = float(np.finfo(dtype).eps)
    dense = scipy.linalg.eigvalsh(t) if n else np.zeros(0)
    norm = float(np.abs(dense).max(initial=0.0))
    assert _value_units(w, dense, norm, n, eps) <= BOUND
    if n:
        lapack = scipy.linalg.eigh_tridiagonal(d.astype(np.float64), e.astype(np.float64),
                                               eigvals_only=True)
        assert _value_units(w, lapack, norm, n, eps) <= BOUND
    assert testing.svd_residual(t.astype(dtype), z, w, z.T) <= BOUND
    assert testing.orthogonality(z) <= BOUND
    return w, z


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", KINDS)
def test_invariants(kind, n, dtype):
    d, e = _tridiagonal(kind, n, seed=n)
    _check(d.astype(dtype), e.astype(dtype))


@pytest.mark.parametrize("n", (3, 33, 500))
def test_toeplitz_121_known_eigenvalues(n):
    w, _ = _check(*_tridiagonal("1-2-1", n, seed=0))
    exact = 2 - 2 * np.cos(np.arange(1, n + 1) * np.pi / (n + 1))
    assert np.abs(w - exact).max() <= BOUND * n * np.finfo(float).eps * 4


@pytest.mark.parametrize("kind", ("random", "wilkinson", "glued wilkinson", "graded"))
def test_small_leaves(kind, monkeypatch):
    """Leaves of 4 rows: six levels of merges already at n = 200."""
    with tunables.override(divide_conquer_leaf_size=4):
        _check(*_tridiagonal(kind, 200, seed=1))


def test_close_poles_are_rotated(monkeypatch):
    """Glued Wilkinson matrices deflate close poles by rotations, and the rotations on
    whole columns (the path of other namespaces) give the Numba loop's bits."""
    calls = []

    def recorded(q, pairs, cs):
        calls.append(pairs.shape[0])
        tridiagonal_dc._rotate_host(q, pairs, cs)

    d, e = _tridiagonal("glued wilkinson", 420, seed=0)
    w, z = tridiagonal_eigh(d, e)
    monkeypatch.setitem(tridiagonal_dc._ROTATE, "numpy", recorded)
    _check(d, e)
    assert sum(calls) > 0
    monkeypatch.setattr(tridiagonal_dc, "_ROTATE", {})
    w_columns, z_columns = tridiagonal_eigh(d, e)
    assert np.array_equal(w, w_columns) and np.array_equal(z, z_columns)


def test_scaling_is_exact():
    """Entries near overflow and underflow: scaled by powers of two, same vectors."""
    d, e = _tridiagonal("random", 100, seed=2)
    w, z = tridiagonal_eigh(d, e)
    for k in (-1000, 1000):
        wk, zk = tridiagonal_eigh(np.ldexp(d, k), np.ldexp(e, k))
        assert np.array_equal(wk, np.ldexp(w, k)) and np.array_equal(zk, z)


def test_integer_input_gives_float64():
    w, z = tridiagonal_eigh(np.array([2, 2, 2]), np.array([-1, -1]))
    assert w.dtype == np.float64 and z.dtype == np.float64


@pytest.mark.parametrize("bad", (np.nan, np.inf, -np.inf))
@pytest.mark.parametrize("where", ("d", "e"))
def test_non_finite_input_is_rejected(bad, where):
    d, e = np.ones(5), np.ones(4)
    (d if where == "d" else e)[2] = bad
    with pytest.raises(ValueError, match="finite"):
        tridiagonal_eigh(d, e)


@pytest.mark.parametrize("d, e, message", [
    (np.ones(3), np.ones(3), "1-D of length"), (np.ones((2, 2)), np.ones(1), "1-D of length"),
    (np.ones(3, complex), np.ones(2), "float32 or float64")])
def test_bad_shapes_and_dtypes_are_rejected(d, e, message):
    with pytest.raises(ValueError, match=message):
        tridiagonal_eigh(d, e)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["glued wilkinson", "equal diagonal, tiny e", "random"])
def test_gpu_rotations_on_device(kind):
    """Z and the merges in CuPy, deflation's rotations by the CUDA kernel
    (rotate_cuda.py): the invariants hold and match the host's run."""
    import cupy

    d, e = _tridiagonal(kind, 420, seed=0)
    w, z = tridiagonal_eigh(d, e, xp=cupy)
    assert isinstance(z, cupy.ndarray)
    w, z = cupy.asnumpy(cupy.asarray(w)), cupy.asnumpy(z)
    t = _dense(d, e)
    eps, n = np.finfo(float).eps, len(d)
    w_host, _ = _check(d, e)
    assert _value_units(w, w_host, np.abs(w_host).max(), n, eps) <= BOUND
    assert testing.svd_residual(t, z, w, z.T) <= BOUND
    assert testing.orthogonality(z) <= BOUND
