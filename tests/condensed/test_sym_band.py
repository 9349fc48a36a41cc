"""Stage 1 of the Hermitian reduction, dense → Hermitian band (condensed/sym_band.py),
against LAPACK's eigenvalues and the one-reflector-at-a-time oracle.

Bounds are in units of n·ε (ε of the working dtype) relative to ‖A‖.  Every check runs on
NumPy input and, marked gpu, on CuPy input (``_reduce`` moves the results to the host).
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd._core.backend import to_host
from gpusvd.condensed import sym_band

import naive_symmetric as naive

BOUND = 30  # in units of n·ε, as gr's property tests (issue 2)
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
SIZES = (0, 1, 2, 3, 17, 64, 130)
BANDWIDTHS = (1, 2, 5, 16, 32)


def _hermitian(n, dtype, seed):
    x = testing.random_matrix(n, n, dtype=dtype, seed=seed)
    return (x + x.conj().T) / 2


def _eps_units(x, a):
    """max |x| in units of n·ε·max|A|."""
    n = max(a.shape[0], 1)
    scale = max(float(np.abs(a).max(initial=0.0)), float(np.finfo(a.dtype).tiny))
    return float(np.abs(x).max(initial=0.0)) / (scale * n * np.finfo(a.dtype).eps)


def _reduce(a, b, xp=np):
    """(reduction, band, B, Q) on the host, the reduction run on ``xp`` input."""
    red = sym_band.reduce_to_hermitian_band(xp.asarray(a, order="F"), bandwidth=b)
    band = sym_band.hermitian_band_of(red)
    q = sym_band.apply_q(red, xp.eye(a.shape[0], dtype=a.dtype))
    return red, to_host(band), to_host(sym_band.hermitian_band_matrix(band)), to_host(q)


def _lower_band_mask(n, b):
    i, j = np.indices((n, n))
    return (i - j >= 0) & (i - j <= b)


def _check_reduction(a, b, xp=np):
    """The invariants of A = Q·B·Qᴴ: B Hermitian, banded and stored as the factors say;
    A's eigenvalues kept; Q unitary."""
    n = a.shape[0]
    red, band, bmat, q = _reduce(a, b, xp)
    factors = to_host(red.factors)
    assert band.shape == (n, b + 1) and band.dtype == bmat.dtype == q.dtype == a.dtype
    for k in range(1, min(b + 1, n + 1)):
        assert not band[n - k:, k].any()  # past the last row: exactly zero
    assert np.array_equal(bmat, bmat.conj().T) and not np.imag(band[:, 0]).any()
    assert not np.imag(band[:n - b, b]).any()  # the b-th subdiagonal: geqrf's real diagonal
    assert not bmat[np.abs(np.subtract.outer(np.arange(n), np.arange(n))) > b].any()
    inside = _lower_band_mask(n, b)
    assert np.array_equal(factors[inside], bmat[inside])
    assert np.array_equal(np.triu(factors), np.triu(bmat))  # the upper triangle is Bᴴ's
    ref = scipy.linalg.eigvalsh(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
    norm = max(float(np.abs(ref).max(initial=0.0)), float(np.finfo(a.dtype).tiny))
    error = np.abs(scipy.linalg.eigvalsh(bmat) - ref).max(initial=0.0)
    assert error / (norm * max(n, 1) * np.finfo(a.dtype).eps) < BOUND
    assert testing.orthogonality(q) < BOUND
    assert _eps_units(q @ bmat @ q.conj().T - a, a) < BOUND
    return bmat, q


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b", BANDWIDTHS)
@pytest.mark.parametrize("n", SIZES)
def test_hermitian_band_keeps_eigenvalues_and_factors(n, b, dtype):
    _check_reduction(_hermitian(n, dtype, seed=n + b), b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", [(17, 5), (24, 4), (12, 1), (20, 19), (33, 8)])
def test_hermitian_band_matches_the_oracle(n, b, dtype):
    """The blocked panels make the very reflectors of one reflector at a time: the panel's
    later columns see only the left halves of its earlier reflectors."""
    a = _hermitian(n, dtype, seed=9)
    bmat_naive, q_naive = naive.reduce_to_hermitian_band(a, b)
    _, _, bmat, _ = _reduce(a, b)
    assert _eps_units(bmat - bmat_naive, a) < BOUND
    assert _eps_units(q_naive @ bmat_naive @ q_naive.conj().T - a, a) < BOUND


def _with_eigenvalues(w, dtype, seed):
    u = testing.haar_orthogonal(len(w), dtype=dtype, seed=seed)
    return ((u * w) @ u.conj().T).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_graded_clustered_and_rank_deficient(dtype):
    n = 60
    g = testing.graded(n, n, grading=1e-6, dtype=dtype, seed=1)
    cases = {
        "graded D·G·Gᴴ·D": g @ g.conj().T,
        "clustered": _with_eigenvalues(np.r_[np.full(30, 1.0), np.full(29, -1.0), 1e-8], dtype, 2),
        "geometric": _with_eigenvalues(np.logspace(0, -12, n) * (-1) ** np.arange(n), dtype, 3),
    }
    low = testing.low_rank(n, n, 5, dtype=dtype, seed=4)
    cases["rank 10"] = low + low.conj().T
    for a in cases.values():
        for b in (3, 16):
            _check_reduction(a, b)
    w = np.abs(scipy.linalg.eigvalsh(_check_reduction(cases["rank 10"], 7)[0]))
    assert np.sum(w < BOUND * n * np.finfo(dtype).eps * w.max()) >= n - 10


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_only_the_lower_triangle_is_read(dtype):
    a = _hermitian(20, dtype, seed=5)
    scribbled = np.tril(a, -1) + 7 * np.triu(np.ones_like(a), 1) + np.diag(np.diag(a))
    if a.dtype.kind == "c":
        scribbled += np.diag(np.full(20, 3j, dtype=dtype))
    assert np.array_equal(_reduce(scribbled, 4)[1], _reduce(a, 4)[1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_band_is_left_exactly(dtype):
    """Zero panels make reflectors with τ = 0 (H = I): B = A and Q = I, bit for bit, once
    the b-th subdiagonal is real."""
    a = np.triu(np.tril(_hermitian(15, dtype, seed=6), 2), -2)
    i = np.arange(13)
    a[i + 2, i] = a[i, i + 2] = np.abs(a[i + 2, i])
    _, _, bmat, q = _reduce(a, 2)
    assert np.array_equal(bmat, a) and np.array_equal(q, np.eye(15))
    _, _, bmat, q = _reduce(np.zeros((9, 9), dtype=dtype), 3)
    assert not bmat.any() and np.array_equal(q, np.eye(9))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_apply_q_to_a_block(dtype):
    a = _hermitian(30, dtype, seed=7)
    red, _, _, q = _reduce(a, 6)
    c = testing.random_matrix(30, 4, dtype=dtype, seed=8)
    assert _eps_units(sym_band.apply_q(red, c.copy()) - q @ c, a) < BOUND


def test_bad_input():
    with pytest.raises(ValueError, match="square"):
        sym_band.reduce_to_hermitian_band(np.zeros((3, 5)), bandwidth=2)
    with pytest.raises(ValueError, match="square"):
        sym_band.reduce_to_hermitian_band(np.zeros(4), bandwidth=2)
    for b in (0, -1):
        with pytest.raises(ValueError, match="bandwidth"):
            sym_band.reduce_to_hermitian_band(np.zeros((4, 4)), bandwidth=b)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", [(0, 2), (1, 1), (2, 1), (17, 5), (130, 32), (64, 1)])
def test_gpu_hermitian_band_keeps_eigenvalues_and_factors(n, b, dtype):
    import cupy

    _check_reduction(_hermitian(n, dtype, seed=n + b), b, cupy)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_gpu_hermitian_band_matches_cpu(dtype):
    import cupy

    a = _hermitian(200, dtype, seed=11)
    band_cpu = _reduce(a, 16)[1]
    assert _eps_units(_reduce(a, 16, cupy)[1] - band_cpu, a) < BOUND
