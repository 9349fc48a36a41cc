"""SciPy's own SVD tests with ``gpusvd.svd`` standing in for ``scipy.linalg.svd``.

Each test names the upstream test it mirrors (scipy/linalg/tests/test_decomp.py:
TestSVD_GESDD, which TestSVD_GESVD reruns with the other LAPACK driver; TestSVDVals;
TestOverwrite.test_svd and test_svdvals; test_gesdd_nan_error_message) and asserts the
same properties on the same matrices. As upstream subclasses one class per LAPACK
driver, ``TestSciPySVD_Jacobi`` and ``TestSciPySVD_Polar`` rerun ``TestSciPySVD_GR`` with
``method="jacobi"`` and ``method="polar"``, and ``TestSciPySVD_GR_TwoStage`` reruns
them all with ``method="gr", reduction="two-stage"``; the ``_GPU`` classes
rerun each on the GPU (NumPy in, NumPy out).

Departures: a method (or ``lapack_driver``) that is not a string is a ``ValueError``
(SciPy: ``TypeError``); TestSVD_GESVD, ``lapack_driver="gesvd"``, runs in
test_svd_auto.py, where LAPACK computes. gpusvd makes no
promise for NaN with ``check_finite=False``, so the NaN test checks the default.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_almost_equal, assert_equal

import gpusvd

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
# What scipy.linalg.svd returns for each input dtype of its test_empty: (U/Vh, S).
EMPTY_DTYPES = {int: (np.float64, np.float64), float: (np.float64, np.float64),
                np.float32: (np.float32, np.float32), complex: (np.complex128, np.float64),
                np.complex64: (np.complex64, np.float32)}


def _sigma(rows, cols, s):
    sigma = np.zeros((rows, cols), s.dtype)
    sigma[np.arange(len(s)), np.arange(len(s))] = s
    return sigma


class TestSciPySVD_GR:
    method = "gr"
    device = "cpu"

    def _call(self, fn, a, **kwargs):
        """``fn`` with this class's method and device."""
        kwargs.update(method=self.method, device=self.device)
        return fn(a, **kwargs)

    def svd(self, a, **kwargs):
        return self._call(gpusvd.svd, a, **kwargs)

    def svdvals(self, a, **kwargs):
        return self._call(gpusvd.svdvals, a, **kwargs)

    # TestSVD_GESDD.test_degenerate
    def test_degenerate(self):
        with pytest.raises(ValueError):
            gpusvd.svd([[1.0]], method=1.0)
        with pytest.raises(ValueError):
            gpusvd.svd([[1.0]], method="foo")

    # TestSVD_GESDD.test_simple, test_simple_singular, test_check_finite
    @pytest.mark.parametrize("check_finite", [True, False])
    @pytest.mark.parametrize("a", [[[1, 2, 3], [1, 20, 3], [2, 5, 6]],
                                   [[1, 2, 3], [1, 2, 3], [2, 5, 6]]],
                             ids=["simple", "simple_singular"])
    def test_simple(self, a, check_finite):
        for full_matrices in (True, False):
            u, s, vh = self.svd(a, full_matrices=full_matrices, check_finite=check_finite)
            assert_array_almost_equal(u.T @ u, np.eye(3))
            assert_array_almost_equal(vh.T @ vh, np.eye(3))
            assert_array_almost_equal(u @ _sigma(u.shape[0], vh.shape[0], s) @ vh, a)

    # TestSVD_GESDD.test_simple_underdet
    def test_simple_underdet(self):
        a = [[1, 2, 3], [4, 5, 6]]
        for full_matrices in (True, False):
            u, s, vh = self.svd(a, full_matrices=full_matrices)
            assert_array_almost_equal(u.T @ u, np.eye(u.shape[0]))
            assert_array_almost_equal(u @ _sigma(u.shape[0], vh.shape[0], s) @ vh, a)

    # TestSVD_GESDD.test_simple_overdet
    def test_simple_overdet(self):
        a = [[1, 2], [4, 5], [3, 4]]
        for full_matrices in (True, False):
            u, s, vh = self.svd(a, full_matrices=full_matrices)
            assert_array_almost_equal(u.T @ u, np.eye(u.shape[1]))
            assert_array_almost_equal(vh.T @ vh, np.eye(2))
            assert_array_almost_equal(u @ _sigma(u.shape[1], vh.shape[0], s) @ vh, a)

    # TestSVD_GESDD.test_random
    def test_random(self):
        rng = np.random.RandomState(1234)
        for _ in range(3):
            for a in [rng.random([20, 15]), rng.random([15, 20])]:
                for full_matrices in (True, False):
                    u, s, vh = self.svd(a, full_matrices=full_matrices)
                    assert_array_almost_equal(u.T @ u, np.eye(u.shape[1]))
                    assert_array_almost_equal(vh @ vh.T, np.eye(vh.shape[0]))
                    assert_array_almost_equal(u @ _sigma(u.shape[1], vh.shape[0], s) @ vh, a)

    # TestSVD_GESDD.test_simple_complex
    def test_simple_complex(self):
        a = [[1, 2, 3], [1, 2j, 3], [2, 5, 6]]
        for full_matrices in (True, False):
            out = self.svd(a, full_matrices=full_matrices)
            u, s, vh = out
            assert_array_almost_equal(u.conj().T @ u, np.eye(u.shape[1]))
            assert_array_almost_equal(vh.conj().T @ vh, np.eye(vh.shape[0]))
            assert_array_almost_equal(u @ _sigma(u.shape[0], vh.shape[0], s) @ vh, a)

    # TestSVD_GESDD.test_random_complex
    def test_random_complex(self):
        rng = np.random.RandomState(1234)
        for _ in range(3):
            for full_matrices in (True, False):
                for a in [rng.random([20, 15]), rng.random([15, 20])]:
                    a = a + 1j * rng.random(list(a.shape))
                    out = self.svd(a, full_matrices=full_matrices)
                    u, s, vh = out
                    assert_array_almost_equal(u.conj().T @ u, np.eye(u.shape[1]))
                    assert_array_almost_equal(u @ _sigma(u.shape[1], vh.shape[0], s) @ vh, a)

    # TestSVD_GESDD.test_crash_1580: it must not crash (here also: it must be right)
    @pytest.mark.parametrize("dt", DTYPES)
    @pytest.mark.parametrize("size", [(13, 23), (30, 50), (60, 100)])
    def test_crash_1580(self, size, dt):
        a = np.random.RandomState(1234).rand(*size).astype(dt)
        out = self.svd(a)
        u, s, vh = out
        rtol = 1e-4 if np.dtype(dt) in (np.float32, np.complex64) else 1e-10
        assert_allclose(u[:, :len(s)] * s @ vh[:len(s)], a, atol=rtol * np.abs(a).max())

    # TestSVD_GESDD.test_gh_5039 (a smoke test: a B-spline matrix)
    def test_gh_5039(self):
        b = np.array([[0.16666667, 0.66666667, 0.16666667, 0., 0., 0.],
                      [0., 0.16666667, 0.66666667, 0.16666667, 0., 0.],
                      [0., 0., 0.16666667, 0.66666667, 0.16666667, 0.],
                      [0., 0., 0., 0.16666667, 0.66666667, 0.16666667]])
        u, s, vh = self.svd(b)
        assert_array_almost_equal(u @ _sigma(4, 6, s) @ vh, b)

    # TestSVD_GESDD.test_shape_dtype
    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("m", [0, 1, 2])
    @pytest.mark.parametrize("n", [0, 1, 2])
    def test_shape_dtype(self, m, n, dtype):
        a = np.zeros((m, n), dtype=dtype)
        k = min(m, n)
        real = np.finfo(dtype).dtype
        out = self.svd(a)
        u, s, v = out
        assert_equal((u.shape, u.dtype, s.shape, s.dtype, v.shape, v.dtype),
                     ((m, m), dtype, (k,), real, (n, n), dtype))
        u, s, v = self.svd(a, full_matrices=False)
        assert_equal((u.shape, u.dtype, s.shape, s.dtype, v.shape, v.dtype),
                     ((m, k), dtype, (k,), real, (k, n), dtype))
        s = self.svd(a, compute_uv=False)
        assert_equal((s.shape, s.dtype), ((k,), real))

    # TestSVD_GESDD.test_empty
    @pytest.mark.parametrize("dt", list(EMPTY_DTYPES))
    @pytest.mark.parametrize(("m", "n"), [(0, 0), (0, 2), (2, 0)])
    def test_empty(self, dt, m, n):
        uv_dtype, s_dtype = EMPTY_DTYPES[dt]
        a = np.empty((m, n), dtype=dt)
        out = self.svd(a)
        u, s, v = out
        assert_allclose(u, np.identity(m))
        assert_allclose(s, np.empty((0,)))
        assert_allclose(v, np.identity(n))
        assert (u.dtype, v.dtype, s.dtype) == (uv_dtype, uv_dtype, s_dtype)
        u, s, v = self.svd(a, full_matrices=False)
        assert_allclose(u, np.empty((m, 0)))
        assert_allclose(s, np.empty((0,)))
        assert_allclose(v, np.empty((0, n)))
        assert (u.dtype, v.dtype, s.dtype) == (uv_dtype, uv_dtype, s_dtype)
        s = self.svd(a, compute_uv=False)
        assert_allclose(s, np.empty((0,)))
        assert s.dtype == s_dtype

    # test_gesdd_nan_error_message (with check_finite at its default: see the docstring)
    def test_nan_error_message(self):
        a = np.eye(2)
        a[0, 0] = np.nan
        with pytest.raises(ValueError, match="NaN"):
            self.svd(a)

    # TestOverwrite.test_svd and test_svdvals (scipy.linalg._testutils.assert_no_overwrite)
    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("layout", ["C", "F", "transposed"])
    def test_no_overwrite(self, dtype, layout):
        a = np.random.RandomState(0).randn(3, 3).astype(dtype)
        if np.dtype(dtype).kind == "c":
            a = a + 1j * np.random.RandomState(1).randn(3, 3).astype(dtype)
        x = {"C": np.ascontiguousarray, "F": np.asfortranarray,
             "transposed": lambda y: y.T.copy().T}[layout](a.copy())
        self.svd(x)
        self.svdvals(x)
        assert_equal(x, a)

    # TestSVDVals.test_empty
    @pytest.mark.parametrize("dt", list(EMPTY_DTYPES))
    def test_svdvals_empty(self, dt):
        for a in [[]], np.empty((2, 0)), np.ones((0, 3)):
            a = np.array(a, dtype=dt)
            s = self.svdvals(a)
            assert_equal(s, np.empty(0))
            assert s.dtype == EMPTY_DTYPES[dt][1]

    # TestSVDVals.test_simple, test_simple_underdet, test_simple_overdet,
    # test_simple_complex, test_simple_underdet_complex, test_simple_overdet_complex,
    # test_check_finite
    @pytest.mark.parametrize(("a", "check_finite"), [
        ([[1, 2, 3], [1, 2, 3], [2, 5, 6]], True),
        ([[1, 2, 3], [4, 5, 6]], True),
        ([[1, 2], [4, 5], [3, 4]], True),
        ([[1, 2, 3], [1, 20, 3j], [2, 5, 6]], True),
        ([[1, 2, 3], [4, 5j, 6]], True),
        ([[1, 2], [4, 5], [3j, 4]], True),
        ([[1, 2, 3], [1, 2, 3], [2, 5, 6]], False),
    ], ids=["simple", "underdet", "overdet", "complex", "underdet_complex",
            "overdet_complex", "check_finite"])
    def test_svdvals(self, a, check_finite):
        s = self.svdvals(a, check_finite=check_finite)
        assert len(s) == min(np.shape(a))
        assert np.all(s[:-1] >= s[1:])
        ref = np.linalg.svd(np.array(a), compute_uv=False)
        assert_allclose(s, ref, rtol=0, atol=1e-13 * ref[0])


class TestSciPySVD_GR_TwoStage(TestSciPySVD_GR):
    """Every test, vectors too, through ``reduction="two-stage"``."""

    def _call(self, fn, a, **kwargs):
        return super()._call(fn, a, reduction="two-stage", **kwargs)


class TestSciPySVD_Jacobi(TestSciPySVD_GR):
    method = "jacobi"


class TestSciPySVD_Polar(TestSciPySVD_GR):
    method = "polar"


@pytest.mark.gpu
class TestSciPySVD_GR_GPU(TestSciPySVD_GR):
    device = "gpu"


@pytest.mark.gpu
class TestSciPySVD_GR_TwoStage_GPU(TestSciPySVD_GR_TwoStage):
    device = "gpu"


@pytest.mark.gpu
class TestSciPySVD_Jacobi_GPU(TestSciPySVD_GR):
    method = "jacobi"
    device = "gpu"


@pytest.mark.gpu
class TestSciPySVD_Polar_GPU(TestSciPySVD_GR):
    method = "polar"
    device = "gpu"
