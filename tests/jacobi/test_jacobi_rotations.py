"""The rotation formulas (15)–(18) on the shared table of cases, and DRDSSQ norms."""

import mpmath
import numpy as np
import pytest

from gpusvd.jacobi.norms import column_norms
from gpusvd.jacobi.rotations import orthogonality_tol, rotation, rotations
from .rotation_cases import cases, check


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rotation_table(dtype):
    table = cases(dtype)
    cs, tn = rotations(*(np.array([getattr(c, f) for c in table], dtype)
                         for f in ("app", "aqq", "apq_abs")),
                       np.array([c.hyperbolic for c in table]))
    for case, c, t in zip(table, cs, tn):
        check(case, dtype, c, t)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalar_rotation_keeps_the_type(dtype):
    rotation(dtype(3.0), dtype(2.0), dtype(1.0), False)
    name = np.dtype(dtype).name
    assert any(str(sig.return_type) == f"UniTuple({name} x 2)" and str(sig.args[0]) == name
               for sig in rotation.nopython_signatures)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_rotations_orthogonalize(dtype):
    rng = np.random.default_rng(5)
    for hyperbolic in (False, True):
        x = rng.standard_normal((200, 2, 8)).astype(dtype)
        app, aqq = (x[:, 0] ** 2).sum(1), (x[:, 1] ** 2).sum(1)
        apq = (x[:, 0] * x[:, 1]).sum(1)
        cs, tn = rotations(app, aqq, np.abs(apq), np.full(200, hyperbolic))
        t = -1 if hyperbolic else 1
        e = np.sign(apq)
        gp = cs[:, None] * (x[:, 0] - (t * tn * e)[:, None] * x[:, 1])
        gq = cs[:, None] * (x[:, 1] + (tn * e)[:, None] * x[:, 0])
        off = np.abs((gp * gq).sum(1)) / np.sqrt((gp ** 2).sum(1) * (gq ** 2).sum(1))
        u = np.finfo(dtype).eps
        # hyperbolic: relative to the grown norms, which cosh² scales up
        assert off.max() < 40 * u * (cs.max() ** 2 if hyperbolic else 1)


def test_orthogonality_tol():
    assert orthogonality_tol(np.float64, 32) == pytest.approx(2.0 ** -53 * np.sqrt(32))
    assert orthogonality_tol(np.complex64, 4) == 2.0 ** -23


def _column_norms_over_the_exponent_range(dtype, xp):
    finfo = np.finfo(dtype)
    big, tiny = float(finfo.max) / 4, float(finfo.tiny) * 4
    sub = float(finfo.smallest_subnormal)
    cols = [[3.0, 4.0], [big, big], [tiny, tiny], [big, tiny], [0.0, 0.0], [tiny / 16, 0.0],
            [sub * 3, sub * 4], [tiny / 64, sub * 5], [1.0, sub]]
    a = np.array(cols, dtype=dtype).T
    got = column_norms(xp.asarray(a), xp)
    got = got.get() if xp is not np else got
    assert got.dtype == finfo.dtype
    with mpmath.workdps(40):
        for c, value in zip(cols, got):
            ref = mpmath.sqrt(sum(mpmath.mpf(v) ** 2 for v in c))
            assert abs(mpmath.mpf(float(value)) - ref) <= 4 * float(finfo.eps) * ref + sub


DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES)
def test_column_norms_over_the_exponent_range(dtype):
    """Each norm to 4ε, columns of subnormal entries included (the last ones)."""
    _column_norms_over_the_exponent_range(dtype, np)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_column_norms_over_the_exponent_range_on_the_gpu(dtype):
    """As on the CPU (norms of columns of subnormal float32 entries that came out 0 left
    the Jacobi SVD's U = G·Σ⁻¹ of graded input 2000 n·ε from orthogonal)."""
    import cupy
    _column_norms_over_the_exponent_range(dtype, cupy)


def test_column_norms_of_random_stacks():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 70, 5)) + 1j * rng.standard_normal((3, 70, 5))
    np.testing.assert_allclose(column_norms(a), np.linalg.norm(a, axis=-2), rtol=1e-14)
    assert column_norms(np.zeros((0, 4))).shape == (4,)
