"""gpusvd.svd(method="gr") and gpusvd.svdvals: properties against LAPACK.

One class per backend: ``TestSVD_GR_GPU`` reruns every test of the CPU class with CuPy
input (marker ``gpu``). Values only go through ``reduction="auto"`` there;
``TestSVDVals_GR_OneStage_CPU`` and ``TestSVDVals_GR_TwoStage_CPU`` hold the values of each
reduction to the same properties.
"""

import numpy as np
import pytest
import scipy.linalg

import gpusvd
from gpusvd import testing

BOUND = 30  # residual and orthogonality bound in units of n·eps
DTYPES = (np.float32, np.float64)
SHAPES = [(1, 1), (1, 7), (7, 1), (2, 2), (17, 5), (5, 17), (40, 40), (67, 30), (30, 67),
          (130, 97)]


def _host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


class TestSVD_GR_CPU:
    device = "cpu"
    method = "gr"
    values_options = {}  # of the calls for values only
    options = {}  # of every call (svd_options of a class of the two-stage reduction)
    # σ of the identity: exactly 1 (QR sweeps and dqds split at e = 0); bisection's
    # bound is 4·n·ε, the last interval's midpoint (TestSVDVals_GR_TwoStage_GPU).
    identity_error = 0

    def put(self, a):
        return a

    def svd(self, a, **kw):
        kw.setdefault("method", self.method)
        kw.update(self.options)
        if kw.get("compute_uv") is False:
            kw.update(self.values_options)
        return gpusvd.svd(self.put(a), device=self.device, **kw)

    def svdvals(self, a):
        return gpusvd.svdvals(self.put(a), method=self.method, device=self.device,
                              **self.options, **self.values_options)

    def check_values(self, a, s):
        """The values ``s`` of ``a``: dtype, shape, order, and LAPACK's to BOUND·n·ε."""
        m, n = a.shape
        assert s.dtype == np.finfo(a.dtype).dtype and s.shape == (min(m, n),)
        assert np.all(s[:-1] >= s[1:]) and np.all(s >= 0)
        s_ref = scipy.linalg.svd(a.astype(np.float64), compute_uv=False)
        assert testing.sv_error(s, s_ref) < BOUND * max(m, n)

    def check(self, a, full_matrices=False):
        dtype = a.dtype
        u, s, vh = self.svd(a, full_matrices=full_matrices)
        u, s, vh = _host(u), _host(s), _host(vh)
        m, n = a.shape
        k = min(m, n)
        assert u.dtype == dtype and vh.dtype == dtype
        assert u.shape == ((m, m) if full_matrices else (m, k))
        assert vh.shape == ((n, n) if full_matrices else (k, n))
        assert testing.svd_residual(a, u, s, vh) < BOUND
        assert testing.orthogonality(u) < BOUND
        assert testing.orthogonality(vh, rows=True) < BOUND
        self.check_values(a, s)
        return u, s, vh

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("shape", SHAPES)
    def test_random(self, shape, dtype):
        self.check(testing.random_matrix(*shape, dtype=dtype, seed=1))

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("shape", [(9, 9), (31, 12), (12, 31)])
    def test_full_matrices(self, shape, dtype):
        self.check(testing.random_matrix(*shape, dtype=dtype, seed=2), full_matrices=True)

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("side", ["left", "right", "both"])
    def test_graded(self, side, dtype):
        self.check(testing.graded(45, 33, side=side, dtype=dtype, seed=3))

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("kind", ["zero", "identity", "evenly_spaced", "near_underflow",
                                      "near_overflow"])
    @pytest.mark.parametrize("shape", [(25, 25), (40, 21), (21, 40)])
    def test_lapack_types(self, kind, shape, dtype):
        a = testing.lapack_type(kind, *shape, dtype=dtype, seed=4)
        _, s, _ = self.check(a)
        if kind == "zero":
            assert not s.any()
        if kind == "identity":
            unit = min(shape) * np.finfo(dtype).eps  # exact, or the solver's own bound
            assert np.abs(s - 1).max() <= self.identity_error * unit

    @pytest.mark.parametrize("dtype", DTYPES)
    def test_rank_deficient(self, dtype):
        a = testing.low_rank(50, 40, 7, dtype=dtype, seed=5)
        _, s, _ = self.check(a)
        assert s[7] <= 100 * np.finfo(dtype).eps * s[0]

    @pytest.mark.parametrize("shape", [(0, 0), (0, 4), (4, 0)])
    def test_empty(self, shape):
        a = np.zeros(shape)
        u, s, vh = self.svd(a, full_matrices=False)
        assert _host(s).shape == (0,)
        assert _host(u).shape == (shape[0], 0) and _host(vh).shape == (0, shape[1])
        u, s, vh = self.svd(a, full_matrices=True)
        assert np.array_equal(_host(u), np.eye(shape[0]))
        assert np.array_equal(_host(vh), np.eye(shape[1]))

    @pytest.mark.parametrize("dtype", DTYPES)
    def test_values_only_equals_full(self, dtype):
        a = testing.random_matrix(60, 45, dtype=dtype, seed=6)
        s_only = _host(self.svdvals(a))
        _, s, _ = self.svd(a)
        # Values only may take another algorithm (dqds for "gr"): equal to rounding.
        assert testing.relative_sv_error(s_only, _host(s)) < 10 * 45 * np.finfo(dtype).eps
        s_uv = _host(self.svd(a, compute_uv=False))
        assert np.array_equal(s_uv, s_only)

    def test_stacked(self):
        a = testing.random_matrix(3 * 2 * 14, 9, seed=7).reshape(3, 2, 14, 9)
        u, s, vh = (_host(x) for x in self.svd(a, full_matrices=False))
        assert u.shape == (3, 2, 14, 9) and s.shape == (3, 2, 9) and vh.shape == (3, 2, 9, 9)
        s_only = _host(self.svdvals(a))
        assert s_only.shape == (3, 2, 9)
        for idx in np.ndindex(3, 2):
            assert testing.svd_residual(a[idx], u[idx], s[idx], vh[idx]) < BOUND
            assert testing.sv_error(s_only[idx], s[idx]) < BOUND * 14

    def test_input_unchanged(self):
        a = testing.random_matrix(30, 20, seed=8)
        kept = a.copy()
        x = self.put(a)
        self.svd(x)
        self.svdvals(x)
        assert np.array_equal(_host(x), kept)

    def test_deterministic(self):
        a = testing.random_matrix(70, 50, seed=9)
        first, second = self.check(a), self.check(a)
        for p, q in zip(first, second):
            assert np.array_equal(p, q)

    def test_integer_input_promoted(self):
        a = np.arange(12).reshape(4, 3)
        u, s, vh = self.svd(a)
        assert _host(s).dtype == np.float64
        assert testing.svd_residual(a.astype(float), _host(u), _host(s), _host(vh)) < BOUND

    @pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
    def test_non_finite_raises(self, bad):
        a = testing.random_matrix(5, 4, seed=10)
        a[2, 1] = bad
        with pytest.raises(ValueError, match="NaN or infinity"):
            self.svd(a)

    def test_bad_input_raises(self):
        with pytest.raises(ValueError, match="2-D"):
            self.svd(np.ones(5))
        with pytest.raises(ValueError, match="unknown method"):
            self.svd(np.ones((3, 3)), method="magic")
        with pytest.raises(TypeError, match="unexpected keyword argument.*flavour"):
            self.svd(np.ones((3, 3)), flavour="vanilla")

    def test_overwrite_a(self):
        a = np.asfortranarray(testing.random_matrix(20, 10, seed=11))
        x = self.put(a.copy())
        u, s, vh = gpusvd.svd(x, full_matrices=False, method=self.method, device=self.device,
                              overwrite_a=True)
        assert testing.svd_residual(a, _host(u), _host(s), _host(vh)) < BOUND


@pytest.mark.gpu
class TestSVD_GR_GPU(TestSVD_GR_CPU):
    device = "auto"

    def put(self, a):
        import cupy
        return cupy.asarray(a)

    def test_numpy_input_returns_numpy(self):
        a = testing.random_matrix(300, 200, seed=12)
        u, s, vh = gpusvd.svd(a, full_matrices=False, device="gpu")
        assert all(isinstance(x, np.ndarray) for x in (u, s, vh))
        assert testing.svd_residual(a, u, s, vh) < BOUND

    def test_matches_cpu(self):
        a = testing.random_matrix(200, 150, seed=13)
        s_gpu = gpusvd.svdvals(a, device="gpu")
        s_cpu = gpusvd.svdvals(a, device="cpu")
        assert testing.sv_error(s_gpu, s_cpu) < BOUND * 200


class _Values(TestSVD_GR_CPU):
    """The value properties through the reduction of ``values_options``: every test that
    goes through :meth:`check` holds the values, computed alone, to them; the tests of
    vectors alone are not rerun."""

    def check(self, a, full_matrices=False):
        s = _host(self.svdvals(a))
        self.check_values(a, s)
        return None, s, None

    test_full_matrices = test_empty = test_integer_input_promoted = None
    test_non_finite_raises = test_bad_input_raises = test_overwrite_a = None

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("shape", [(300, 300), (700, 300), (257, 600)])
    def test_past_the_bandwidth(self, shape, dtype):
        """Several band panels and many bulge-chasing sweeps (b = 32): square, tall past
        the QR-first ratio 1.6, wide."""
        self.check(testing.random_matrix(*shape, dtype=dtype, seed=14))


class TestSVDVals_GR_OneStage_CPU(_Values):
    """The paper's reduction (Householder bidiagonalization), then dqds."""

    values_options = {"reduction": "one-stage"}


class TestSVDVals_GR_TwoStage_CPU(_Values):
    """Dense → band → bidiagonal (condensed/driver.py), then dqds on the CPU and
    bisection, in the working precision, on the GPU."""

    values_options = {"reduction": "two-stage"}

    @pytest.mark.parametrize("call", ["svd", "svdvals"])
    @pytest.mark.parametrize("value", ["two_stage", "Two-Stage", None, 2])
    def test_unknown_reduction_raises(self, call, value):
        fn = {"svd": gpusvd.svd, "svdvals": gpusvd.svdvals}[call]
        with pytest.raises(ValueError, match="unknown reduction .*expected one of 'auto', "
                                             "'one-stage', 'two-stage'"):
            fn(self.put(np.eye(3)), method="gr", device=self.device, reduction=value)

    @pytest.mark.parametrize("method", ["auto", "jacobi", "polar"])
    def test_reduction_is_an_option_of_gr_only(self, method):
        with pytest.raises(ValueError, match="reduction='two-stage' is an option of "
                                             "method='gr' only.*pass method='gr'"):
            gpusvd.svdvals(self.put(np.eye(3)), method=method, device=self.device,
                           reduction="two-stage")


@pytest.mark.gpu
class TestSVDVals_GR_TwoStage_GPU(TestSVDVals_GR_TwoStage_CPU):
    device = TestSVD_GR_GPU.device
    put = TestSVD_GR_GPU.put
    identity_error = 4  # bisection on the GPU (bidiagonal/bisection.py's bound)


class TestSVD_GR_TwoStage_CPU(TestSVD_GR_CPU):
    """Every property of the class, vectors too, through the two-stage reduction: stage 1
    and 2 with their reflectors recorded, divide and conquer on the bidiagonal (dbdsdc) and
    dqds' values, the blocked back-transformations (condensed/driver.two_stage_svd)."""

    options = {"reduction": "two-stage"}

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("shape", [(300, 300), (420, 300), (700, 300), (257, 600)])
    @pytest.mark.parametrize("full_matrices", [False, True])
    def test_past_the_bandwidth(self, shape, dtype, full_matrices):
        """Several band panels and many bulge-chasing sweeps (b = 32): square, tall below
        and past the QR-first ratio 1.6, wide."""
        self.check(testing.random_matrix(*shape, dtype=dtype, seed=14),
                   full_matrices=full_matrices)


@pytest.mark.gpu
class TestSVD_GR_TwoStage_GPU(TestSVD_GR_TwoStage_CPU):
    device = TestSVD_GR_GPU.device
    put = TestSVD_GR_GPU.put
    # the values by bisection on the GPU beside the divide and conquer's vectors
    # (condensed/driver._divide_and_conquer_on_device): its bound, as for values only
    identity_error = TestSVDVals_GR_TwoStage_GPU.identity_error
    test_numpy_input_returns_numpy = TestSVD_GR_GPU.test_numpy_input_returns_numpy


class TestSVD_Jacobi_CPU(TestSVD_GR_CPU):
    """The same contract through ``svd(method="jacobi")`` (paper 003's driver)."""

    method = "jacobi"


@pytest.mark.gpu
class TestSVD_Jacobi_GPU(TestSVD_GR_GPU):
    method = "jacobi"
