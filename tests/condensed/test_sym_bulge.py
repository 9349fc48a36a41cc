"""Stage 2 of the Hermitian reduction, band → real symmetric tridiagonal by bulge chasing
(condensed/sym_bulge.py), against LAPACK and the dense oracle that applies every reflector
to whole rows and columns.

Bounds are in units of n·ε (ε of the working dtype) relative to ‖A‖.
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd.condensed import sym_bulge
from gpusvd.condensed.sym_band import hermitian_band_matrix

import naive_symmetric_chase as naive

BOUND = 30  # in units of n·ε
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
SIZES = (1, 2, 3, 10, 33, 100, 257)
BANDWIDTHS = (1, 2, 3, 8, 16, 32)


def _random_band(n, b, dtype, seed):
    return testing.random_matrix(n, b + 1, dtype=dtype, seed=seed)


def _wide(x):
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _eigenvalues(t, scale=1.0):
    """Eigenvalues of the real tridiagonal t / scale (LAPACK dstebz), in float64."""
    d, e = t.d.astype(np.float64) / scale, t.e.astype(np.float64) / scale
    return scipy.linalg.eigvalsh_tridiagonal(d, e) if len(d) > 1 else d


def _eig_units(w, a, dtype):
    """max |w − λ(A)| in units of n·ε·‖A‖₂, ε of ``dtype``, λ(A) in float64."""
    ref = scipy.linalg.eigvalsh(_wide(a))
    n = max(len(ref), 1)
    scale = max(float(np.abs(ref).max(initial=0.0)), float(np.finfo(np.float64).tiny))
    return float(np.abs(w - ref).max(initial=0.0)) / (scale * n * float(np.finfo(dtype).eps))


def _units(x, a):
    n = max(a.shape[0], 1)
    scale = max(float(np.abs(a).max(initial=0.0)), float(np.finfo(a.dtype).tiny))
    return float(np.abs(x).max(initial=0.0)) / (scale * n * np.finfo(a.dtype).eps)


def _q(t, n, dtype):
    return sym_bulge.apply_chase_q(t.reflectors, np.eye(n, dtype=dtype)) * t.phase


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b", BANDWIDTHS)
@pytest.mark.parametrize("n", SIZES)
def test_tridiagonal_keeps_the_eigenvalues(n, b, dtype):
    band = _random_band(n, b, dtype, seed=7 * n + b)
    saved = band.copy()
    t = sym_bulge.band_to_tridiagonal(band)
    assert np.array_equal(band, saved)
    real = np.finfo(dtype).dtype
    assert t.d.dtype == real and t.e.dtype == real and t.phase.dtype == dtype
    assert t.d.shape == (n,) and t.e.shape == (n - 1,) and t.phase.shape == (n,)
    assert np.all(t.e >= 0) and t.reflectors is None
    assert _eig_units(_eigenvalues(t), hermitian_band_matrix(band), dtype) < BOUND


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", [(3, 2), (10, 3), (33, 8), (40, 5), (20, 2), (9, 8),
                                  (100, 16), (33, 32)])
def test_recorded_reflectors_reconstruct_the_band(n, b, dtype):
    """A = (Q·D)·T·(Q·D)ᴴ with Q unitary: the phases and the reflectors as recorded."""
    band = _random_band(n, b, dtype, seed=n * b)
    a = hermitian_band_matrix(band)
    t = sym_bulge.band_to_tridiagonal(band, record=True)
    q = _q(t, n, dtype)
    assert testing.orthogonality(q) < BOUND
    tri = naive.tridiagonal_matrix(t.d, t.e).astype(dtype)
    assert _units(q @ tri @ q.conj().T - a, a) < BOUND
    plain = sym_bulge.band_to_tridiagonal(band)  # recording changes nothing
    assert np.array_equal(plain.d, t.d) and np.array_equal(plain.e, t.e)
    x = testing.random_matrix(n, 1, dtype=dtype, seed=1)[:, 0]
    qx = sym_bulge.apply_chase_q(t.reflectors, x)
    assert qx.shape == (n,) and _units(qx - (q / t.phase) @ x, x[:, None]) < BOUND


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", [(10, 3), (33, 8), (40, 5), (9, 8), (20, 2), (17, 16)])
def test_chase_matches_the_dense_oracle(n, b, dtype):
    """The same tridiagonal as the oracle (run in float64/complex128) that touches whole
    rows and columns: the compact kernel's windows miss no nonzero entry."""
    band = _random_band(n, b, dtype, seed=3 * n + b)
    a = hermitian_band_matrix(band)
    t = sym_bulge.band_to_tridiagonal(band)
    t_naive, _ = naive.band_to_tridiagonal(_wide(a), b)
    assert _units(t.d - np.diag(t_naive).real, a) < BOUND
    assert _units(t.e - np.abs(np.diag(t_naive, -1)), a) < BOUND
    outside = np.tril(t_naive, -2)
    assert not outside.any()


def _graded(n, b, dtype):
    band = _random_band(n, b, dtype, seed=5)
    rows = np.arange(n)[:, None] + np.arange(b + 1)[None, :]
    return (band * 0.8 ** (rows + np.arange(n)[:, None])).astype(dtype)


def _clustered(n, b, dtype):
    band = _random_band(n, b, dtype, seed=6) * np.finfo(dtype).dtype.type(1e-3)
    band[:, 0] = 1 + np.arange(n) % 3
    return band


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["graded", "clustered"])
def test_graded_and_clustered_bands(kind, dtype):
    band = {"graded": _graded, "clustered": _clustered}[kind](60, 6, dtype)
    t = sym_bulge.band_to_tridiagonal(band)
    assert _eig_units(_eigenvalues(t), hermitian_band_matrix(band), dtype) < BOUND


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("direction", [-1, 1])
def test_tiny_and_huge_bands(dtype, direction):
    """Near underflow (squares of entries underflow, the reflectors' columns near subnormal)
    and near overflow (squares overflow): finite, eigenvalues to the bound."""
    exponent = direction * (35 if np.finfo(dtype).dtype == np.float32 else 300)
    scale = 10.0 ** exponent
    band = _random_band(50, 8, dtype, seed=9)
    scaled = (band * np.finfo(dtype).dtype.type(scale)).astype(dtype)
    t = sym_bulge.band_to_tridiagonal(scaled, record=True)
    assert np.isfinite(t.d).all() and np.isfinite(t.e).all() and np.isfinite(t.phase).all()
    assert np.isfinite(t.reflectors.v).all() and np.isfinite(t.reflectors.tau).all()
    reference = hermitian_band_matrix(_wide(scaled) / scale)
    assert _eig_units(_eigenvalues(t, scale), reference, dtype) < BOUND
    assert testing.orthogonality(_q(t, 50, dtype)) < BOUND


def test_subnormal_columns_are_rescaled():
    """A band of subnormal entries (2^-1070 times small integers, exact): every reflector's
    column is below SAFMIN, where 1/(alpha − beta) would be inf without dlarfg's rescaling.
    Subnormals carry a few bits, so the eigenvalues are right to a few units of the
    subnormal spacing 2^-1074 per operation: n·b of them, times BOUND."""
    n, b, tiny = 20, 4, 2.0 ** -1070
    band = np.round(_random_band(n, b, np.float64, seed=2) * 8)
    t = sym_bulge.band_to_tridiagonal(band * tiny)
    assert np.isfinite(t.d).all() and np.isfinite(t.e).all() and t.e.any()
    ref = scipy.linalg.eigvalsh(hermitian_band_matrix(band))
    assert np.abs(_eigenvalues(t, tiny) - ref).max() * tiny <= BOUND * n * b * 2.0 ** -1074


@pytest.mark.parametrize("dtype", DTYPES)
def test_structured_bands(dtype):
    """Zero columns, an already tridiagonal band, a diagonal: reflectors with τ = 0."""
    n = 12
    zero_cols = _random_band(n, 4, dtype, seed=4)
    zero_cols[3:7] = 0
    tridiagonal = np.zeros((n, 4), dtype)
    tridiagonal[:, :2] = _random_band(n, 1, dtype, seed=8)
    diagonal = np.zeros((n, 4), dtype)
    diagonal[:, 0] = np.arange(n)
    for band in (np.zeros((n, 4), dtype), zero_cols, tridiagonal, diagonal):
        t = sym_bulge.band_to_tridiagonal(band, record=True)
        a = hermitian_band_matrix(band)
        assert _eig_units(_eigenvalues(t), a, dtype) < BOUND
        q = _q(t, n, dtype)
        assert _units(q @ naive.tridiagonal_matrix(t.d, t.e).astype(dtype) @ q.conj().T - a,
                      a) < BOUND
    t = sym_bulge.band_to_tridiagonal(tridiagonal, record=True)
    if np.dtype(dtype).kind == "f":  # H = I; complex entries are made real by H (zlarfg)
        assert np.array_equal(t.e, tridiagonal[:n - 1, 1] * t.phase[1:] * t.phase[:-1])
        assert not t.reflectors.tau.any()
    assert _units(t.e - np.abs(tridiagonal[:n - 1, 1]), tridiagonal) < BOUND


@pytest.mark.parametrize("dtype", DTYPES)
def test_bandwidth_one_is_copied_out_with_real_e(dtype):
    band = _random_band(7, 1, dtype, seed=3)
    t = sym_bulge.band_to_tridiagonal(band)
    assert np.array_equal(t.d, band[:, 0].real) and np.array_equal(t.e, np.abs(band[:6, 1]))
    # T_chased = D·T·Dᴴ: the subdiagonal is phase[i+1]·e[i]·conj(phase[i])
    assert np.allclose(t.phase[1:] * t.e * t.phase[:-1].conj(), band[:6, 1],
                       rtol=8 * np.finfo(dtype).eps, atol=0)
    assert np.allclose(np.abs(t.phase), 1, rtol=0, atol=8 * 7 * np.finfo(dtype).eps)


@pytest.mark.parametrize("n", [0, 1, 2])
@pytest.mark.parametrize("width", [1, 2, 5])
def test_tiny_matrices(n, width):
    band = _random_band(n, width - 1, np.complex128, seed=n)
    t = sym_bulge.band_to_tridiagonal(band, record=True)
    assert t.d.shape == (n,) and t.e.shape == (max(n - 1, 0),) and t.phase.shape == (n,)
    a = hermitian_band_matrix(band)
    assert np.array_equal(t.d, band[:, 0].real)
    if n:
        assert _eig_units(_eigenvalues(t), a, np.complex128) < BOUND
    assert sym_bulge.apply_chase_q(t.reflectors, np.ones((n, 2))).shape == (n, 2)


def test_ignored_entries():
    """Entries past the end and the diagonal's imaginary parts do not enter."""
    band = _random_band(9, 3, np.complex128, seed=1)
    clean = band.copy()
    clean[:, 0] = clean[:, 0].real
    for k in range(1, 4):
        band[9 - k:, k] = np.nan
        clean[9 - k:, k] = 0
    t, ref = sym_bulge.band_to_tridiagonal(band), sym_bulge.band_to_tridiagonal(clean)
    assert np.array_equal(t.d, ref.d) and np.array_equal(t.e, ref.e)


@pytest.mark.parametrize("band, message", [
    (np.zeros(5), "2-D"), (np.zeros((2, 3, 4)), "2-D"), (np.zeros((5, 0)), "b >= 0"),
    (np.zeros((5, 2), np.int64), "float32"), (np.zeros((5, 2), np.float16), "float32")])
def test_bad_input(band, message):
    with pytest.raises(ValueError, match=message):
        sym_bulge.band_to_tridiagonal(band)
