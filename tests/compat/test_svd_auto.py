"""``svd(method="auto")`` picks what the Notes of ``gpusvd.svd`` say it picks.

The rule, for real and complex input alike. On the CPU: LAPACK's gesdd (``"lapack"``),
faster than our methods at every shape measured (``bench/cpu.py``). On the
GPU: matrices with min(M, N) <= 2b (b the Jacobi block width), one or a stack, to the
one-sided Jacobi SVD in one kernel launch ("small-jacobi") where a matrix fits one thread
block; everything else to the polar method, a stack of them through
the batched engine (``bench/stacks.py``, ``bench/exact.py``). ``method="lapack"`` is also
asked for by name; NumPy's and SciPy's own
SVD tests rerun with it.
"""

import types

import numpy as np
import pytest
import scipy.linalg
from . import test_numpy_svd
from . import test_scipy_svd

import gpusvd
from gpusvd import _dispatch, testing
from gpusvd._core import tunables
from gpusvd.jacobi import orthogonalize

TWO_B_GPU = 2 * tunables.get().jacobi_block_width_gpu
# Any array namespace but NumPy's takes the GPU branch of the rule: checked without a GPU.
GPU = types.ModuleType("cupy_stand_in")
TOL = 10  # residual and orthogonality, in units of n·ε (LAPACK's xDRVBD flags 50)


@pytest.mark.parametrize(("shape", "dtype"), [
    ((500, 400), np.float64), ((8, 8), np.float32), ((1, 8, 8), np.float64),
    ((6, 5), np.complex128), ((3, 2, 400, 300), np.complex64), ((4, 8, 8), np.complex128),
    ((1000, 200, 32), np.float32), ((7, 32, 900), np.float64), ((0, 5, 5), np.float64),
])
def test_rule_on_the_cpu(shape, dtype):
    assert _dispatch._route(shape, np.dtype(dtype), np) == "lapack"


@pytest.mark.parametrize(("shape", "dtype", "expected"), [
    ((500, 400), np.float64, "polar"),
    ((8, 8), np.float32, "small-jacobi"),             # one small matrix: its few launches
    ((1, 8, 8), np.float64, "small-jacobi"),          # a stack of one is one matrix
    ((6, 5), np.complex128, "small-jacobi"),          # complex as well
    ((200, 65), np.complex128, "polar"),
    ((3, 2, 400, 300), np.complex64, "polar"),
    ((4, 8, 8), np.complex128, "small-jacobi"),
    ((2, 8, 8), np.float64, "small-jacobi"),          # a stack of small matrices
    ((1000, 200, TWO_B_GPU), np.float32, "small-jacobi"),  # tall, narrow: min(M, N) counts
    ((7, TWO_B_GPU, 900), np.float64, "small-jacobi"),
    ((2, TWO_B_GPU + 1, TWO_B_GPU + 1), np.float64, "polar"),
    ((0, 5, 5), np.float64, "small-jacobi"),          # no matrix at all (never run)
])
def test_rule_on_the_gpu(shape, dtype, expected):
    assert _dispatch._route(shape, np.dtype(dtype), GPU) == expected


@pytest.mark.parametrize(("shape", "dtype", "expected"), [
    ((4096, 4096), np.float64, "gr"),                # values only, large: two-stage gr
    ((9000, 4608), np.float32, "gr"),
    ((4096, 4095), np.float64, "polar"),             # min(M, N) counts
    ((4600, 4600), np.float32, "polar"),             # float32 from 4608
    ((4096, 4096), np.complex128, "gr"),             # complex values: gr from 4096
    ((4095, 5000), np.complex64, "polar"),
    ((2, 30, 30), np.float64, "small-jacobi"),        # small matrices first
    ((100, 100), np.float64, "polar"),
])
def test_rule_for_values_only_on_the_gpu(shape, dtype, expected):
    assert _dispatch._route(shape, np.dtype(dtype), GPU, compute_uv=False) == expected
    with tunables.override(auto_values_gr_min_n_gpu_float64=50):
        small = _dispatch._route((60, 50), np.dtype(np.float64), GPU, compute_uv=False)
        assert small == "gr"
    assert _dispatch._route(shape, np.dtype(dtype), np, compute_uv=False) == "lapack"


@pytest.mark.parametrize(("shape", "expected"), [
    ((8192, 8192), "gr"), ((3, 9000, 8192), "gr"), ((8191, 9000), "polar"),
    ((4096, 4096), "polar"),
])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_rule_for_complex_vectors_on_the_gpu(shape, dtype, expected):
    assert _dispatch._route(shape, np.dtype(dtype), GPU) == expected
    real = np.dtype(dtype).type(0).real.dtype
    assert _dispatch._route(shape, real, GPU) == (  # real: float64 from 6144, float32 8192
        "gr" if min(shape[-2:]) >= (6144 if real == np.float64 else 8192) else "polar")
    with tunables.override(auto_vectors_gr_min_n_gpu_complex=10 ** 6):
        assert _dispatch._route(shape, np.dtype(dtype), GPU) == "polar"


@pytest.mark.parametrize(("shape", "dtype", "expected"), [
    ((8192, 8192), np.float64, "gr"), ((2, 20000, 8192), np.float64, "gr"),
    ((6144, 6144), np.float64, "gr"), ((6143, 8192), np.float64, "polar"),
    ((8192, 8192), np.float32, "gr"), ((6144, 6144), np.float32, "polar"),
    ((16384, 16384), np.float32, "gr"), ((8191, 16384), np.float32, "polar"),
])
def test_rule_for_large_real_vectors_on_the_gpu(shape, dtype, expected):
    """Vectors: float64 from 6144, float32 from 8192; values only from 4096 and 4608."""
    assert _dispatch._route(shape, np.dtype(dtype), GPU) == expected
    assert _dispatch._route(shape, np.dtype(dtype), GPU, compute_uv=False) == (
        "gr" if min(shape[-2:]) >= (4096 if dtype == np.float64 else 4608) else "polar")
    with tunables.override(auto_vectors_gr_min_n_gpu_float64=10 ** 6,
                           auto_vectors_gr_min_n_gpu_float32=10 ** 6):
        assert _dispatch._route(shape, np.dtype(dtype), GPU) == "polar"


def test_boundary_follows_the_block_width():
    with tunables.override(jacobi_block_width_gpu=4):
        assert _dispatch._route((5, 8, 8), np.dtype(np.float64), GPU) == "small-jacobi"
        assert _dispatch._route((5, 9, 9), np.dtype(np.float64), GPU) == "polar"


@pytest.fixture
def spy(monkeypatch):
    """Record which route ``svd`` takes, and the stack it is given."""
    calls = []
    for name, route in list(_dispatch._ROUTES.items()):
        def recorded(job, *, _name=name, _route=route, **kw):
            calls.append((_name, job.stack.shape))
            return _route(job, **kw)
        monkeypatch.setitem(_dispatch._ROUTES, name, recorded)
    return calls


@pytest.mark.parametrize(("shape", "complex_"), [
    ((30, 20), False), ((30, 20), True), ((4, 3, 10, 6), False), ((5, 10, 6), True),
    ((3, 40, 40), False),
])
def test_svd_and_svdvals_dispatch(spy, shape, complex_):
    """Input that the front end's scan would scale (max|A| below smlnum) takes the front
    end: the whole stack in one call of the "lapack" entry."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if complex_ else 0)
    a *= 1e-300
    batch = int(np.prod(shape[:-2]))
    u, s, vh = gpusvd.svd(a, full_matrices=False, device="cpu")
    gpusvd.svdvals(a, device="cpu")
    assert spy == [("lapack", (batch, *shape[-2:]))] * 2  # the whole stack in one call
    assert np.allclose(np.matmul(u * s[..., None, :], vh) * 1e300, a * 1e300)


@pytest.fixture
def gesdd_calls(monkeypatch):
    """The shapes given to NumPy's SVD (LAPACK's gesdd), call by call."""
    calls, real = [], np.linalg.svd

    def counted(a, *args, **kwargs):
        calls.append(a.shape)
        return real(a, *args, **kwargs)
    monkeypatch.setattr(np.linalg, "svd", counted)
    return calls


@pytest.mark.parametrize(("shape", "dtype"), [
    ((2, 2), np.float64), ((30, 20), np.complex128), ((4, 3, 10, 6), np.float32),
    ((5, 10, 6), np.complex64), ((3, 40, 40), np.float64), ((20, 30), np.float32),
])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_numpy_input_in_range_goes_to_lapack_directly(monkeypatch, spy, gesdd_calls, shape,
                                                      dtype, full_matrices):
    """A NumPy array on the CPU, finite and inside the scan's range, goes to gesdd as it
    is, in one call, with the front end's results bit for bit (its "lapack" entry is
    never called) and the input unchanged."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a += 1j * rng.standard_normal(shape).astype(dtype)
    before = a.copy()
    u, s, vh = gpusvd.svd(a, full_matrices=full_matrices)
    values = gpusvd.svdvals(a, device="cpu")
    assert gesdd_calls == [shape] * 2 and spy == []
    np.testing.assert_array_equal(a, before)
    monkeypatch.setattr(_dispatch, "_lapack_directly", lambda *args, **kwargs: None)
    through = [gpusvd.svd(a, full_matrices=full_matrices), gpusvd.svdvals(a)]
    assert spy == [("lapack", (int(np.prod(shape[:-2])), *shape[-2:]))] * 2
    for ours, theirs in zip((u, s, vh, values), (*through[0], through[1])):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("a", [np.array([[1.0, np.nan], [0.0, 1.0]]),
                               np.array([[np.inf, 0.0], [0.0, 1.0]], np.float32),
                               np.full((3, 2, 2), 1e-320), np.full((2, 2), 1e300)])
def test_numpy_input_out_of_range_takes_the_front_end(spy, a):
    """NaN and infinity (ValueError, or NaN with check_finite=False), subnormal and huge
    entries (scaled by the scan) take the front end."""
    if not np.isfinite(a).all():
        with pytest.raises(ValueError, match="NaN or infinity"):
            gpusvd.svd(a)
        assert np.isnan(gpusvd.svdvals(a, check_finite=False)).all()
        return
    s = gpusvd.svdvals(a)
    assert spy == [("lapack", (int(np.prod(a.shape[:-2])), *a.shape[-2:]))]
    exact = a[..., 0, 0] * a.shape[-1]  # a constant matrix: σ₁ = n·c, the rest 0
    np.testing.assert_allclose(s[..., 0], exact, rtol=1e-14)


@pytest.fixture
def pointwise_calls(monkeypatch):
    """The shapes of the stacks given to the batched pointwise Jacobi, call by call."""
    calls = []
    small = orthogonalize.small_jacobi

    def counted(g, *args, **kwargs):
        calls.append(g.shape)
        return small(g, *args, **kwargs)
    monkeypatch.setattr(orthogonalize, "small_jacobi", counted)
    return calls


def test_jacobi_takes_a_stack_in_one_batched_call(pointwise_calls):
    a = np.random.default_rng(1).standard_normal((500, 12, 9))
    s = gpusvd.svdvals(a, method="jacobi", device="cpu")
    assert pointwise_calls == [(500, 9, 9)]  # after preconditioning: X = Rᴴ, 9 × 9
    assert np.allclose(s, np.linalg.svd(a, compute_uv=False))


def test_gr_takes_complex_on_the_cpu():
    z = np.array([[1.0, 2.0j], [0.0, 1.0]], np.complex64)
    u, s, vh = gpusvd.svd(z, method="gr", device="cpu")
    assert u.dtype == vh.dtype == np.complex64 and s.dtype == np.float32
    assert np.allclose(s, [1 + np.sqrt(2), np.sqrt(2) - 1])
    assert np.allclose(u * s @ vh, z, atol=1e-6)
    assert np.allclose(gpusvd.svdvals(z, method="gr", device="cpu"), s)


@pytest.mark.parametrize("shape", [(40, 30), (3, 12, 20)])
def test_lapack_falls_back_to_gesvd(monkeypatch, shape):
    """Where gesdd does not converge, gesvd through SciPy, check_finite=False."""
    def no_convergence(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")

    drivers, real = [], scipy.linalg.svd
    monkeypatch.setattr(np.linalg, "svd", no_convergence)
    monkeypatch.setattr(scipy.linalg, "svd", lambda *args, **kw: drivers.append(
        (kw["lapack_driver"], kw["check_finite"])) or real(*args, **kw))
    a = np.random.default_rng(3).standard_normal(shape)
    u, s, vh = gpusvd.svd(a, full_matrices=False, device="cpu")
    assert drivers == [("gesvd", False)]
    for a_i, u_i, vh_i, s_i in zip(*(x.reshape(-1, *x.shape[-2:]) for x in (a, u, vh)),
                                   s.reshape(-1, s.shape[-1])):
        assert testing.svd_residual(a_i, u_i, s_i, vh_i) < TOL
        assert testing.orthogonality(u_i) < TOL
        assert testing.orthogonality(vh_i, rows=True) < TOL
    values = gpusvd.svdvals(a, device="cpu")
    assert drivers == [("gesvd", False)] * 2
    # One matrix at a time (a 1-D s was zipped value by value, each its own scale), and
    # in n·ε as TOL (sv_error's unit is ‖A‖₂·ε): gesvd's values alone (dqds) and with
    # vectors (implicit QR) differ by 10.4 ‖A‖₂·ε on this 40×30 matrix.
    k, n = s.shape[-1], max(shape[-2:])
    assert all(testing.sv_error(x, y) < TOL * n
               for x, y in zip(values.reshape(-1, k), s.reshape(-1, k)))


def test_lapack_is_for_the_cpu():
    with pytest.raises(ValueError, match="method='lapack' is LAPACK's gesdd on the CPU"):
        _dispatch._lapack(np.eye(2)[None], GPU, full_matrices=False, compute_uv=True,
                          overwrite_a=False)


class TestNumPySVD_LAPACK(test_numpy_svd.TestNumPySVD_GR):
    method = "lapack"


class TestSciPySVD_LAPACK(test_scipy_svd.TestSciPySVD_GR):
    method = "lapack"


class TestSciPySVD_LAPACK_GESVD(test_scipy_svd.TestSciPySVD_GR):
    """Upstream's TestSVD_GESVD: TestSVD_GESDD again with ``lapack_driver="gesvd"``."""
    method = "lapack"

    def svd(self, a, **kwargs):
        return super().svd(a, lapack_driver="gesvd", **kwargs)


@pytest.mark.parametrize("method", ["auto", "lapack"])
@pytest.mark.parametrize("shape", [(40, 30), (3, 12, 20)])
def test_lapack_driver_as_scipy(monkeypatch, method, shape):
    """``lapack_driver="gesvd"``: LAPACK's gesvd where LAPACK computes, SciPy's bits; an
    unknown driver is a ValueError; gpusvd's own methods take it and compute as before."""
    drivers, real = [], scipy.linalg.svd
    monkeypatch.setattr(scipy.linalg, "svd", lambda *args, **kw: drivers.append(
        kw["lapack_driver"]) or real(*args, **kw))
    a = np.random.default_rng(5).standard_normal(shape)
    u, s, vh = gpusvd.svd(a, full_matrices=False, device="cpu", method=method,
                          lapack_driver="gesvd")
    assert drivers == ["gesvd"]
    want = real(a, full_matrices=False, lapack_driver="gesvd") if a.ndim == 2 else None
    if want is not None:
        for x, y in zip((u, s, vh), want):
            assert np.array_equal(x, y)
    drivers.clear()
    gpusvd.svd(a, device="cpu", method=method)
    assert drivers == []
    with pytest.raises(ValueError, match="lapack_driver"):
        gpusvd.svd(a, lapack_driver="gesvj")
    got = gpusvd.svd(a, method="gr", device="cpu", lapack_driver="gesvd")
    for x, y in zip(got, gpusvd.svd(a, method="gr", device="cpu")):
        assert np.array_equal(x, y)


@pytest.mark.gpu
def test_auto_takes_complex_on_the_gpu(spy):
    import cupy

    z = cupy.asarray(np.array([[1.0, 2.0j], [0.0, 1.0]], np.complex64))
    u, s, vh = gpusvd.svd(z)
    assert spy == [("small-jacobi", (1, 2, 2))]
    assert isinstance(u, cupy.ndarray) and u.dtype == vh.dtype == cupy.complex64
    assert np.allclose(s.get(), [1 + np.sqrt(2), np.sqrt(2) - 1])
    assert np.allclose((u * s @ vh).get(), z.get(), atol=1e-6)
    assert np.allclose(gpusvd.svdvals(z, method="gr").get(), s.get())


@pytest.mark.gpu
def test_gpu_boundary_and_one_launch(spy):
    import cupy

    two_b = 2 * tunables.get().jacobi_block_width_gpu
    assert _dispatch._route((2, 300, two_b), np.dtype(np.float64), cupy) == "small-jacobi"
    assert _dispatch._route((2, 300, two_b + 1), np.dtype(np.float64), cupy) == "polar"
    a = np.random.default_rng(2).standard_normal((2000, 40, 32))
    u, s, vh = gpusvd.svd(cupy.asarray(a), full_matrices=False)
    assert spy == [("small-jacobi", (2000, 40, 32))]  # the whole stack in one call
    assert np.allclose(np.matmul(u.get() * s.get()[..., None, :], vh.get()), a)
    spy.clear()
    tall = np.random.default_rng(3).standard_normal((3, 30000, 8))  # rows past one block
    u, s, vh = gpusvd.svd(cupy.asarray(tall), full_matrices=False)
    assert spy == [("polar", (3, 30000, 8))]
    assert np.allclose(np.matmul(u.get() * s.get()[..., None, :], vh.get()), tall)


@pytest.mark.parametrize("fn", [gpusvd.svd, gpusvd.svdvals])
def test_reduction_is_named_in_the_signature(fn):
    """``reduction`` is visible to help() and IDEs, and its error says which method takes it
    (it was once hidden in ``**options`` and its message named 'auto')."""
    import inspect

    assert inspect.signature(fn).parameters["reduction"].default == "auto"
    with pytest.raises(ValueError, match="option of method='gr' only, not of "
                                         "method='auto'; pass method='gr'"):
        fn(np.eye(3), reduction="two-stage", device="cpu")
    s = gpusvd.svdvals(np.eye(3), method="gr", reduction="two-stage", device="cpu")
    assert np.allclose(s, 1)


@pytest.mark.parametrize(("library", "dtype"), [("torch", "float64"), ("torch", "float16"),
                                                ("jax", "float32")])
def test_cpu_tensors_go_to_lapack_directly(monkeypatch, spy, gesdd_calls, library, dtype):
    """A PyTorch or JAX array on the CPU takes the same direct call (half precision in
    float32), its results in its own type and dtype, the front end's bit for bit."""
    lib = pytest.importorskip(library)
    a = np.random.default_rng(5).standard_normal((3, 6, 4))
    if library == "torch":
        x = lib.from_numpy(a).to(getattr(lib, dtype))
    else:
        x = pytest.importorskip("jax.numpy").asarray(a.astype(dtype))
    ours = [*gpusvd.svd(x, full_matrices=False), gpusvd.svdvals(x)]
    assert gesdd_calls == [(3, 6, 4)] * 2 and spy == []
    monkeypatch.setattr(_dispatch, "_lapack_directly", lambda *args, **kwargs: None)
    theirs = [*gpusvd.svd(x, full_matrices=False), gpusvd.svdvals(x)]
    assert spy == [("lapack", (3, 6, 4))] * 2
    for mine, other in zip(ours, theirs):
        assert type(mine) is type(x) and mine.dtype == x.dtype
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(other))
