"""Stage 2, band → bidiagonal by bulge chasing (condensed/bulge.py), against LAPACK and the
dense oracle that applies every reflector to whole rows and columns.

Bounds are in units of n·ε (ε of the working dtype) relative to ‖A‖.
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd.condensed import band as stage1
from gpusvd.condensed import bulge

from . import naive_condensed as naive

BOUND = 30  # in units of n·ε
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
# (n, b): several blocks per sweep with a short last block, b = 2, one block (b ≥ n − 1),
# tiny matrices.
CASES = [(12, 3), (40, 8), (41, 5), (20, 2), (9, 8), (3, 2), (2, 1), (1, 1), (50, 16), (0, 3)]


def _random_band(n, b, dtype, seed):
    return testing.random_matrix(n, b + 1, dtype=dtype, seed=seed)


def _units(x, a):
    n = max(a.shape[0], 1)
    scale = max(float(np.abs(a).max(initial=0.0)), float(np.finfo(a.dtype).tiny))
    return float(np.abs(x).max(initial=0.0)) / (scale * n * np.finfo(a.dtype).eps)


def _reference(a):
    return scipy.linalg.svdvals(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", CASES)
def test_bidiagonal_keeps_the_values(n, b, dtype):
    band = _random_band(n, b, dtype, seed=n + b)
    saved = band.copy()
    a = stage1.band_matrix(band)
    bd = bulge.band_to_bidiagonal(band)
    assert np.array_equal(band, saved)
    real = np.finfo(dtype).dtype
    assert bd.d.dtype == real and bd.e.dtype == real
    assert bd.d.shape == (n,) and bd.e.shape == (max(n - 1, 0),)
    assert np.all(bd.d >= 0) and np.all(bd.e >= 0)
    s = np.sort(scipy.linalg.svdvals(naive.bidiagonal_matrix(bd.d, bd.e)))[::-1] if n else bd.d
    assert testing.sv_error(s, _reference(a)) < BOUND * max(n, 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", [(12, 3), (40, 8), (41, 5), (9, 8), (20, 2)])
def test_chase_matches_the_dense_oracle(n, b, dtype):
    """Same reflectors as the oracle that touches whole rows and columns: the windows of
    the compact kernel miss no nonzero entry."""
    band = _random_band(n, b, dtype, seed=3 * n + b)
    a = stage1.band_matrix(band)
    bd = bulge.band_to_bidiagonal(band)
    chased = (bd.phase_left[:, None] * naive.bidiagonal_matrix(bd.d, bd.e)
              * bd.phase_right.conj()[None, :])
    b_naive, _, _ = naive.band_to_bidiagonal(a, b)
    assert _units(chased - b_naive, a) < BOUND


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", [(12, 3), (41, 5), (9, 8), (30, 30)])
def test_recorded_reflectors_reconstruct_the_band(n, b, dtype):
    band = _random_band(n, b, dtype, seed=n * b)
    a = stage1.band_matrix(band)
    bd = bulge.band_to_bidiagonal(band, record=True)
    eye = np.eye(n, dtype=dtype)
    q = naive.apply_chase_reflectors(bd.reflectors, n, eye, side="left") * bd.phase_left
    p = naive.apply_chase_reflectors(bd.reflectors, n, eye, side="right") * bd.phase_right
    assert testing.orthogonality(q) < BOUND and testing.orthogonality(p) < BOUND
    b_real = naive.bidiagonal_matrix(bd.d, bd.e).astype(dtype)
    assert _units(q @ b_real @ p.conj().T - a, a) < BOUND
    assert np.array_equal(bulge.band_to_bidiagonal(band).d, bd.d)  # recording changes nothing


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("n, b", [(500, 8), (1000, 32)])
def test_reflectors_of_subnormal_sweeps_are_unitary(n, b, dtype):
    """Down a long single-precision chase the last sweeps' entries are all subnormal: their
    reflectors stay unitary (complex64's own modulus of a subnormal entry is up to 11%
    off; reflectors formed from it made Q and P 2000 n·ε from orthogonal at n = 1000)."""
    band = _random_band(n, b, dtype, seed=n * b)
    bd = bulge.band_to_bidiagonal(band, record=True)
    assert np.abs(bd.d[-2:]).min() < np.finfo(dtype).tiny  # the case: subnormal sweeps
    eye = np.eye(n, dtype=dtype)
    q = naive.apply_chase_reflectors(bd.reflectors, n, eye, side="left") * bd.phase_left
    p = naive.apply_chase_reflectors(bd.reflectors, n, eye, side="right") * bd.phase_right
    assert testing.orthogonality(q) < BOUND and testing.orthogonality(p) < BOUND


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("direction", [-1, 1])
def test_tiny_and_huge_bands(dtype, direction):
    """The reflectors' norms are scaled: a band times a power of two (exact) whose squares
    underflow or overflow has its values times that power, to rounding."""
    exponent = direction * (100 if np.finfo(dtype).dtype == np.float32 else 1000)
    band = _random_band(30, 6, dtype, seed=9)
    plain = bulge.band_to_bidiagonal(band)
    scaled = bulge.band_to_bidiagonal(band * np.finfo(dtype).dtype.type(2.0 ** exponent))
    for x, y in ((plain.d, scaled.d), (plain.e, scaled.e)):
        assert np.abs(x * 2.0 ** exponent - y).max() <= 4 * np.abs(y).max() * np.finfo(dtype).eps


def test_structured_bands():
    """Zero rows, an already bidiagonal band and a diagonal: reflectors with τ = 0."""
    for band in (np.zeros((10, 4)), np.c_[np.arange(1.0, 11.0), np.ones(10), np.zeros((10, 2))],
                 np.c_[np.arange(1.0, 11.0), np.zeros((10, 3))]):
        bd = bulge.band_to_bidiagonal(band)
        a = stage1.band_matrix(band)
        s = np.sort(scipy.linalg.svdvals(naive.bidiagonal_matrix(bd.d, bd.e)))[::-1]
        assert testing.sv_error(s, _reference(a)) < BOUND * 10


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_phases_of_subnormal_complex_entries_are_unit(dtype):
    """The phases that make the bidiagonal real have modulus 1 also where an entry is
    subnormal (a complex division by the subnormal modulus overflowed to NaN)."""
    info = np.finfo(dtype)
    tiny = np.ldexp(info.dtype.type(1), info.minexp - 4)  # subnormal, 4 bits short
    d = np.array([3 + 4j, (3 + 4j) * tiny, -tiny, 1j * tiny * 5, 0], dtype)
    e = np.array([(1 - 1j) * tiny, 2j, tiny * 7, 0], dtype)
    d_abs, e_abs, phi, psi = bulge._real_bidiagonal(d, e)
    assert np.isfinite(phi).all() and np.isfinite(psi).all()
    assert np.abs(np.abs(phi) - 1).max() <= 64 * info.eps  # 2^4 ulps of the subnormals
    assert np.abs(np.abs(psi) - 1).max() <= 64 * info.eps
    # (d, e) = diag(φ)·(|d|, |e|)·diag(ψ)ᴴ entrywise
    assert np.array_equal(np.abs(d), d_abs) and np.array_equal(np.abs(e), e_abs)
    assert np.allclose(phi * d_abs * np.conj(psi), d, rtol=64 * info.eps, atol=0)
