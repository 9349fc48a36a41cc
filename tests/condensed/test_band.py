"""Stage 1, dense → band (condensed/band.py), against LAPACK and the unblocked oracle.

Bounds are in units of n·ε (ε of the working dtype) relative to ‖A‖.
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.condensed import band as stage1

from . import naive_condensed as naive

BOUND = 30  # in units of n·ε, as gr's property tests
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
# (m, n, b): panels of full and short width, tall, b = 1 (bidiagonal), b ≥ n, one column.
CASES = [(9, 7, 3), (40, 40, 8), (67, 30, 8), (30, 30, 1), (12, 12, 20), (1, 1, 4),
         (5, 1, 2), (33, 33, 32), (26, 26, 5)]


def _units(x, a):
    """max |x| in units of n·ε·max|A|."""
    m, n = a.shape
    scale = max(float(np.abs(a).max()), float(np.finfo(a.dtype).tiny))
    return float(np.abs(x).max(initial=0.0)) / (scale * max(m, n) * np.finfo(a.dtype).eps)


def _reduce(a, b):
    red = stage1.reduce_to_band(np.array(a, order="F"), bandwidth=b)
    m, n = a.shape
    bmat = stage1.band_matrix(stage1.band_of(red), m)
    q = stage1.apply_q(red, np.eye(m, dtype=a.dtype))
    p = stage1.apply_p(red, np.eye(n, dtype=a.dtype))
    return red, bmat, q, p


def _band_mask(m, n, b):
    i, j = np.indices((m, n))
    return (j - i >= 0) & (j - i <= b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n, b", CASES)
def test_band_keeps_values_and_factors(m, n, b, dtype):
    a = testing.random_matrix(m, n, dtype=dtype, seed=m + n + b)
    red, bmat, q, p = _reduce(a, b)
    assert bmat.dtype == a.dtype and red.factors.shape == (m, n)
    assert not bmat[~_band_mask(m, n, b)].any()  # the band, exactly
    s_ref = scipy.linalg.svdvals(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
    assert testing.sv_error(scipy.linalg.svdvals(bmat), s_ref) < BOUND * max(m, n)
    assert testing.orthogonality(q) < BOUND
    assert testing.orthogonality(p) < BOUND
    assert _units(q @ bmat @ p.conj().T - a, a) < BOUND
    # Qᴴ·A·P is B: in the band to rounding, and negligible outside it.
    assert _units(q.conj().T @ a @ p - bmat, a) < BOUND


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n, b", [(9, 7, 3), (24, 20, 4), (16, 16, 16)])
def test_band_matches_the_unblocked_oracle(m, n, b, dtype):
    """The blocked panels make the very reflectors of the column-by-column reduction."""
    a = testing.random_matrix(m, n, dtype=dtype, seed=7)
    bmat_naive, q_naive, p_naive = naive.reduce_to_band(a, b)
    _, bmat, _, _ = _reduce(a, b)
    assert _units(bmat - bmat_naive, a) < BOUND
    assert _units(q_naive @ bmat_naive @ p_naive.conj().T - a, a) < BOUND


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_apply_q_and_p_to_a_block(dtype):
    a = testing.random_matrix(30, 22, dtype=dtype, seed=3)
    red, _, q, p = _reduce(a, 6)
    c = testing.random_matrix(30, 4, dtype=dtype, seed=4)
    assert _units(stage1.apply_q(red, c.copy()) - q @ c, a) < BOUND
    c = testing.random_matrix(22, 3, dtype=dtype, seed=5)
    assert _units(stage1.apply_p(red, c.copy()) - p @ c, a) < BOUND


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("columns", [7, 10, 16, 10 ** 6])
def test_back_transformation_by_merged_blocks(columns, dtype):
    """Runs of consecutive panels applied as one compact WY block (the tunable
    back_transform_block_columns: runs of one, two and three panels of 5, one run of all,
    a short last panel, reflectors with τ = 0 from zero columns): Q·C and P·C as one panel
    at a time, to 30 n·ε; C untouched where a copy is passed."""
    a = testing.random_matrix(67, 32, dtype=dtype, seed=columns % 97)
    a[:, 3] = 0
    a[:, 11:13] = 0
    red = stage1.reduce_to_band(np.array(a, order="F"), bandwidth=5)
    c_left = testing.random_matrix(67, 9, dtype=dtype, seed=1)
    c_right = testing.random_matrix(32, 9, dtype=dtype, seed=2)
    with tunables.override(back_transform_block_columns=1):
        q_one, p_one = (stage1.apply_q(red, c_left.copy()),
                        stage1.apply_p(red, c_right.copy()))
    with tunables.override(back_transform_block_columns=columns):
        q, p = stage1.apply_q(red, c_left.copy()), stage1.apply_p(red, c_right.copy())
    assert _units(q - q_one, c_left) < BOUND
    assert _units(p - p_one, c_right) < BOUND
    assert _units(q.conj().T @ q - c_left.conj().T @ c_left, c_left) < BOUND * 67


def test_degenerate_columns():
    """Zero and already-triangular columns make reflectors with τ = 0 (H = I)."""
    a = np.eye(12, 10)
    a[:, 3] = np.arange(12.0)
    a[:, 5] = 0.0
    a[0, 7] = 2.0
    _, bmat, q, p = _reduce(a, 4)
    assert testing.sv_error(scipy.linalg.svdvals(bmat), scipy.linalg.svdvals(a)) < BOUND * 12
    assert testing.orthogonality(q) < BOUND and testing.orthogonality(p) < BOUND


def test_bad_input():
    with pytest.raises(ValueError, match="m >= n"):
        stage1.reduce_to_band(np.zeros((3, 5)), bandwidth=2)
    with pytest.raises(ValueError, match="bandwidth"):
        stage1.reduce_to_band(np.zeros((5, 3)), bandwidth=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_major_input_is_reduced_in_place_as_column_major(dtype):
    a = testing.random_matrix(40, 31, dtype=dtype, seed=4)
    column_major = stage1.reduce_to_band(np.array(a, order="F"), bandwidth=6)
    row_major = np.array(a, order="C")
    red = stage1.reduce_to_band(row_major, bandwidth=6)
    assert red.factors is row_major
    assert _units(red.factors - column_major.factors, a) < BOUND
    assert _units(red.t_left - column_major.t_left, np.eye(40, dtype=dtype)) < BOUND


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("merge_min_n", [0, 10 ** 9])
def test_gpu_band_matches_cpu(dtype, merge_min_n):
    """The GPU's band, Q₁·C and P₁·C are the host's to 30 n·ε, with runs of merged panels
    (back_transform_merge_min_n_gpu = 0) and one panel at a time (above n)."""
    import cupy

    a = testing.random_matrix(200, 150, dtype=dtype, seed=11)
    host = stage1.reduce_to_band(np.array(a, order="F"), bandwidth=16)
    red = stage1.reduce_to_band(cupy.asarray(a, order="F"), bandwidth=16)
    assert _units(stage1.band_of(red).get() - stage1.band_of(host), a) < BOUND
    c_left = testing.random_matrix(200, 30, dtype=dtype, seed=3)
    c_right = testing.random_matrix(150, 30, dtype=dtype, seed=4)
    with tunables.override(back_transform_merge_min_n_gpu=merge_min_n,
                           back_transform_block_columns=64):
        q = stage1.apply_q(red, cupy.eye(200, dtype=dtype))
        qc = stage1.apply_q(red, cupy.asarray(c_left, order="F")).get()
        pc = stage1.apply_p(red, cupy.asarray(c_right, order="F")).get()
    assert testing.orthogonality(q) < BOUND
    assert _units(qc - stage1.apply_q(host, c_left.copy()), c_left) < BOUND
    assert _units(pc - stage1.apply_p(host, c_right.copy()), c_right) < BOUND
