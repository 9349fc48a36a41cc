"""The calls every interop test makes, with NumPy checks of their results.

Each case builds a NumPy input, calls one public function on it (converted to the array
type under test), and checks the results after they are brought back to NumPy. The
interop tests only add what is particular to a library: how to convert in and out, and
what "the same type and device" means.
"""

import functools
from typing import Any, Callable, NamedTuple

import numpy as np
import scipy.linalg

import gpusvd
from gpusvd import testing

BOUND = 30  # residual and orthogonality in units of n·eps, as in tests/golub_reinsch
SIGNS = np.array([1.0] * 12 + [-1.0] * 8)


class Case(NamedTuple):
    name: str
    make: Callable[[], np.ndarray]      # the NumPy input
    call: Callable[[Any], Any]          # the gpusvd call on the converted input
    check: Callable[[np.ndarray, Any], None]  # (input, results as NumPy) -> asserts


def _check_svd(a, out):
    u, s, vh = out
    for idx in np.ndindex(a.shape[:-2]):
        assert testing.svd_residual(a[idx], u[idx], s[idx], vh[idx]) < BOUND
        assert testing.orthogonality(u[idx]) < BOUND
    _check_values(a, s)


def _check_values(a, s):
    ref = np.linalg.svd(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
                        compute_uv=False)
    assert s.shape == ref.shape and s.dtype == np.finfo(a.dtype).dtype
    assert np.allclose(s, ref, rtol=0, atol=BOUND * a.shape[-1] * np.finfo(a.dtype).eps
                       * ref.max())


def _check_takagi(a, out):
    s, u = out
    assert testing.relative_sv_error(s, scipy.linalg.svdvals(a)) < 1e-10
    assert np.linalg.norm(a - (u * s) @ u.T) <= 1e-12 * np.linalg.norm(a)


def _check_lowrank(a, out):
    assert out.rank == 6
    err = np.linalg.norm(a - (out.U * out.S) @ out.Vh) ** 2
    assert err <= 1e-10 * np.linalg.norm(a) ** 2


def _check_hsvd(g, out, signs=SIGNS):
    u, s, v, j = out
    assert np.allclose(g @ v, u * s, atol=1e-12 * s.max())
    assert np.allclose(v.T @ np.diag(signs) @ v, np.diag(j), atol=1e-10 * s.max())


CASES = [
    Case("svd", lambda: testing.random_matrix(40, 30, seed=1),
         lambda x: gpusvd.svd(x, full_matrices=False), _check_svd),
    Case("svd_gr_wide", lambda: testing.random_matrix(20, 35, dtype=np.float32, seed=2),
         lambda x: gpusvd.svd(x, full_matrices=False, method="gr"), _check_svd),
    Case("svd_stack", lambda: testing.random_matrix(64 * 6, 5, seed=3).reshape(64, 6, 5),
         lambda x: gpusvd.svd(x, full_matrices=False), _check_svd),
    Case("svd_complex", lambda: (testing.random_matrix(25, 18, seed=4)
                                 + 1j * testing.random_matrix(25, 18, seed=5)),
         lambda x: gpusvd.svd(x, full_matrices=False), _check_svd),
    Case("svdvals", lambda: testing.random_matrix(30, 30, seed=6),
         gpusvd.svdvals, _check_values),
    Case("jacobi_svd", lambda: testing.graded(30, 20, seed=7),
         lambda x: gpusvd.jacobi_svd(x, full_matrices=False), _check_svd),
    Case("takagi", lambda: testing.complex_symmetric(16, seed=8), gpusvd.takagi,
         _check_takagi),
    Case("svd_lowrank", lambda: testing.low_rank(80, 50, 6, seed=9),
         lambda x: gpusvd.svd_lowrank(x, eps=1e-10, seed=0), _check_lowrank),
    Case("hsvd", lambda: testing.random_matrix(30, 20, seed=10),
         lambda x: gpusvd.hsvd(x, SIGNS), _check_hsvd),
    # Definite signs: the one-sided Jacobi's J, the signs as they came
    Case("hsvd_definite", lambda: testing.random_matrix(30, 20, seed=11),
         lambda x: gpusvd.hsvd(x, np.ones(20)),
         functools.partial(_check_hsvd, signs=np.ones(20))),
]
IDS = [case.name for case in CASES]


def results(out):
    """The array results of a call: a bare array, or the array fields of a result tuple
    (``svd_lowrank``'s also carry plain numbers)."""
    if isinstance(out, tuple):
        return [x for x in out if not isinstance(x, (int, float, np.number))]
    return [out]


def as_numpy(out, convert):
    """The results with every array converted by ``convert``, the rest as they are."""
    if isinstance(out, tuple):
        return out._replace(**{f: convert(getattr(out, f)) for f in out._fields})
    return convert(out)
