"""NumPy's own SVD tests with ``gpusvd.svd`` standing in for ``numpy.linalg.svd``.

Each test names the upstream test it mirrors (numpy/linalg/tests/test_linalg.py and
test_regression.py, NumPy 2.4) and asserts the same properties, with the same
tolerances, on the same matrices (``numpy_svd_cases``). ``TestNumPySVD_GR`` runs them
with ``method="gr"``, ``TestNumPySVD_Jacobi`` with ``method="jacobi"`` and
``TestNumPySVD_Polar`` with ``method="polar"``, on the CPU, and ``TestNumPySVD_GR_TwoStage``
all of them with ``method="gr", reduction="two-stage"``; the ``_GPU``
classes rerun each on the GPU (NumPy in, NumPy out).

NumPy's Hermitian cases run through each method's general SVD, held to the Hermitian
tests' properties, and with ``hermitian=True`` as upstream passes it
(``TestNumPySVD_Hermitian``: the eigendecomposition that ``method="auto"`` takes then).
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_almost_equal, assert_equal

import gpusvd
from .numpy_svd_cases import select, strided

# Upstream's get_rtol and the decimals of its assert_almost_equal wrapper.
RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-11}
DECIMAL = {np.dtype(np.float32): 6, np.dtype(np.float64): 12}

RECONSTRUCTION = select({"square"}) + select({"nonsquare"})  # each with its stacks
HERMITIAN = select({"hermitian"})


def _real(dtype):
    return np.finfo(dtype).dtype


def _ids(cases):
    return [c.name for c in cases]


class TestNumPySVD_GR:
    method = "gr"
    device = "cpu"

    def _call(self, fn, a, *args, **kwargs):
        """``fn`` with this class's method and device."""
        return fn(a, *args, method=self.method, device=self.device, **kwargs)

    def svd(self, a, *args, **kwargs):
        return self._call(gpusvd.svd, a, *args, **kwargs)

    def svdvals(self, a):
        return self._call(gpusvd.svdvals, a)

    def economy(self, a):
        """SVDCases.do on each strided view of ``a``: the economy SVD reconstructs the
        view to get_rtol, in ndarrays. Returns (U, S, Vh) of each view."""
        decompositions = []
        for _, view in strided(a):
            out = self.svd(view, False)
            u, s, vt = out
            rtol = RTOL[_real(u.dtype)]
            assert_allclose(view, np.matmul(u * s[..., None, :], vt), rtol=rtol)
            assert type(u) is np.ndarray and type(vt) is np.ndarray
            decompositions.append(out)
        return decompositions

    # TestSVD (SVDCases): test_sq_cases, test_empty_sq_cases, test_generalized_sq_cases,
    # test_generalized_empty_sq_cases; and the same check on the cases of
    # LinalgNonsquareTestCase (upstream runs them through lstsq, whose LstsqCases.do
    # takes this SVD too) and their stacks.
    @pytest.mark.parametrize("case", RECONSTRUCTION, ids=_ids(RECONSTRUCTION))
    def test_cases(self, case):
        self.economy(case.a)

    # TestSVDHermitian (SVDHermitianCases.do): test_herm_cases, test_empty_herm_cases,
    # test_generalized_herm_cases, test_generalized_empty_herm_cases: reconstruction,
    # unitary U and Vh, S descending
    @pytest.mark.parametrize("case", HERMITIAN, ids=_ids(HERMITIAN))
    def test_herm_cases(self, case):
        for u, s, vt in self.economy(case.a):
            dec = DECIMAL[_real(u.dtype)]
            eye_u = np.broadcast_to(np.eye(u.shape[-1]), u.shape)
            eye_v = np.broadcast_to(np.eye(vt.shape[-1]), vt.shape)
            assert_almost_equal(u @ np.swapaxes(u, -1, -2).conj(), eye_u, decimal=dec)
            assert_almost_equal(vt @ np.swapaxes(vt, -1, -2).conj(), eye_v, decimal=dec)
            assert_equal(np.sort(s)[..., ::-1], s)

    # SVDBaseTests.test_types
    @pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
    def test_types(self, dtype):
        x = np.array([[1, 0.5], [0.5, 1]], dtype=dtype)
        res = self.svd(x)
        assert_equal(res.U.dtype, dtype)
        assert_equal(res.S.dtype, _real(dtype))
        assert_equal(res.Vh.dtype, dtype)
        assert_equal(self.svd(x, compute_uv=False).dtype, _real(dtype))

    # TestSVD.test_empty_identity
    def test_empty_identity(self):
        u, s, vh = self.svd(np.empty((4, 0)), compute_uv=True)
        assert_equal(u.shape, (4, 4))
        assert_equal(vh.shape, (0, 0))
        assert_equal(u, np.eye(4))
        u, s, vh = self.svd(np.empty((0, 4)), compute_uv=True)
        assert_equal(u.shape, (0, 0))
        assert_equal(vh.shape, (4, 4))
        assert_equal(vh, np.eye(4))

    # TestSVD.test_svdvals
    def test_svdvals(self):
        x = np.array([[1, 0.5], [0.5, 1]])
        assert_almost_equal(self.svd(x, compute_uv=False), self.svdvals(x), decimal=12)

    # TestSVDHermitian.test_singular
    def test_singular(self):
        u, _, vh = self.svd(np.array([[1, 0], [0, 0]]))
        assert_allclose(u @ u.T.conj(), np.eye(2), rtol=1e-14)
        assert_allclose(vh @ vh.T.conj(), np.eye(2), rtol=1e-14)

    # test_regression.py TestRegression.test_svd_build (ticket 627)
    def test_svd_build(self):
        a = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
        u, s, vh = self.svd(a)
        assert_almost_equal(u[:, 2:].T @ a, np.zeros((2, 2)), decimal=6)

    # test_regression.py TestRegression.test_large_svd_32bit (gh-4442): it must not fail
    def test_large_svd_32bit(self):
        x = np.eye(1000, 66)
        u, s, vh = self.svd(x)
        assert_allclose(s, np.ones(66))
        assert_allclose((u[:, :66] * s) @ vh, x, atol=1e-13)

    # test_regression.py TestRegression.test_svd_no_uv (gh-4733)
    @pytest.mark.parametrize("t", [float, complex])
    @pytest.mark.parametrize("shape", [(3, 4), (4, 4), (4, 3)])
    def test_svd_no_uv(self, shape, t):
        a = np.ones(shape, dtype=t)
        w = self.svd(a, compute_uv=False)
        assert_equal(np.count_nonzero(np.absolute(w) > 0.5), 1)
        assert_almost_equal(w, self.svdvals(a), decimal=6)


class TestNumPySVD_GR_TwoStage(TestNumPySVD_GR):
    """Every test, vectors too, through ``reduction="two-stage"``."""

    def _call(self, fn, a, *args, **kwargs):
        return super()._call(fn, a, *args, reduction="two-stage", **kwargs)

    # Values only of test_cases' and test_herm_cases' matrices, views and stacks
    # (upstream's values-only tests are test_svdvals and test_svd_no_uv): LAPACK's to
    # get_rtol·σ_max, in ndarrays.
    @pytest.mark.parametrize("case", RECONSTRUCTION + HERMITIAN,
                             ids=_ids(RECONSTRUCTION + HERMITIAN))
    def test_values_of_cases(self, case):
        for _, view in strided(case.a):
            s = self.svd(view, compute_uv=False)
            ref = np.linalg.svd(view, compute_uv=False)
            assert type(s) is np.ndarray and s.dtype == ref.dtype and s.shape == ref.shape
            assert_allclose(s, ref, rtol=0, atol=RTOL[ref.dtype] * ref.max(initial=0))


class TestNumPySVD_Hermitian:
    """TestSVDHermitian with ``hermitian=True``, as upstream calls it: its cases and
    test_singular, and their values against ``numpy.linalg.svd(hermitian=True)``'s."""
    device = "cpu"
    economy = TestNumPySVD_GR.economy
    test_herm_cases = TestNumPySVD_GR.test_herm_cases
    test_singular = TestNumPySVD_GR.test_singular

    def svd(self, a, *args, **kwargs):
        return gpusvd.svd(a, *args, hermitian=True, device=self.device, **kwargs)

    @pytest.mark.parametrize("case", HERMITIAN, ids=_ids(HERMITIAN))
    def test_values_of_herm_cases(self, case):
        for _, view in strided(case.a):
            s = self.svd(view, compute_uv=False)
            ref = np.linalg.svd(view, compute_uv=False, hermitian=True)
            assert type(s) is np.ndarray and s.dtype == ref.dtype and s.shape == ref.shape
            assert_allclose(s, ref, rtol=0, atol=RTOL[ref.dtype] * ref.max(initial=0))


@pytest.mark.gpu
class TestNumPySVD_Hermitian_GPU(TestNumPySVD_Hermitian):
    device = "gpu"


class TestNumPySVD_Jacobi(TestNumPySVD_GR):
    method = "jacobi"


class TestNumPySVD_Polar(TestNumPySVD_GR):
    method = "polar"


@pytest.mark.gpu
class TestNumPySVD_GR_GPU(TestNumPySVD_GR):
    device = "gpu"


@pytest.mark.gpu
class TestNumPySVD_GR_TwoStage_GPU(TestNumPySVD_GR_TwoStage):
    device = "gpu"


@pytest.mark.gpu
class TestNumPySVD_Jacobi_GPU(TestNumPySVD_GR):
    method = "jacobi"
    device = "gpu"


@pytest.mark.gpu
class TestNumPySVD_Polar_GPU(TestNumPySVD_GR):
    method = "polar"
    device = "gpu"
