"""gpusvd.polar.fixed_schedule: the polar SVD of one real matrix of up to 512 columns
as one fixed sequence, replayed as a CUDA graph on the GPU (the full property suite runs
through it in test_svd_polar.py's TestSVD_Polar_FixedSchedule_CPU and, on the GPU, in
TestSVD_Polar_GPU). Here: its schedule, its agreement with the eager driver, the extra
Halley step, and on the GPU the graph's replays."""

import numpy as np
import pytest

from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.polar import fixed_schedule, qdwh
from gpusvd.polar import svd as driver

DTYPES = [np.float32, np.float64]
# fixed_schedule_namespaces that route the CPU's real matrices through the fixed
# sequence's NumPy twin, as the GPU's go through its CUDA graph.
ON_THE_CPU = ("numpy", "cupy")


@pytest.fixture
def fixed_on_the_cpu():
    with tunables.override(fixed_schedule_namespaces=ON_THE_CPU):
        yield


def _eager(a):
    """The driver's own path (no fixed sequence)."""
    up, _ = driver.polar_factor(a, np, triangular=False)
    h = up.T @ a
    lam, v = np.linalg.eigh((h + h.T) / 2)
    return np.sort(np.abs(lam))[::-1]


@pytest.mark.parametrize("dtype", DTYPES)
def test_schedule_reaches_one(dtype):
    eps = float(np.finfo(dtype).eps)
    steps = fixed_schedule.schedule(eps)
    kinds = [qdwh.step_kind(float(c[0]), eps) for *_, c in steps]
    expected = (["cholesky in float64"] + ["cholesky"] * 3 if dtype == np.float32
                else ["qr", "qr"] + ["cholesky"] * 4)
    assert kinds == expected
    l = eps
    for a, b, c in steps:
        l = float(qdwh.next_lower_bound(l, a[0], b[0], c[0]))
    assert 1 - l <= qdwh.STOP_L_FACTOR * eps


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cond", [10.0, 1e4, 1e12])
def test_values_match_the_driver(dtype, cond):
    """Same singular values as the eager QDWH within 30 n·ε·σ₁ (well-conditioned to
    beyond 1/ε: the unsettled case takes the extra Halley step)."""
    n = 60
    a = testing.with_condition(n, n, cond, dtype=dtype, seed=7)
    eps = np.finfo(dtype).eps
    s = fixed_schedule.svd(a, np, compute_uv=True).s
    want = _eager(a)
    assert np.abs(s - want).max() <= 30 * n * eps * want[0]
    assert s.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rank", [0, 5])
def test_rank_deficient(dtype, rank, fixed_on_the_cpu):
    """Rank 5 and an exact zero column block in 40 columns: singular values that QDWH
    does not bring to 1 (the extra Halley step, U a partial isometry where they are
    exactly 0); through the driver, values, residual and orthogonality within 30 n·ε."""
    import gpusvd

    n = 40
    a = testing.low_rank(n, n, 5, dtype=dtype, seed=3)
    if rank == 0:
        a[:, 20:] = 0
    eps = np.finfo(dtype).eps
    u, s, vh = gpusvd.svd(a, method="polar", device="cpu", full_matrices=False)
    ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    assert np.abs(s - ref).max() <= 30 * n * eps * ref[0]
    assert np.linalg.norm(a - (u * s) @ vh) <= 30 * n * eps * np.linalg.norm(a)
    assert np.linalg.norm(u.T @ u - np.eye(n)) <= 30 * n * eps


def test_values_only():
    a = testing.random_matrix(30, 20, dtype=np.float64, seed=2)
    none_u, s, none_vh, deviation, largest = fixed_schedule.svd(a, np, compute_uv=False)
    assert none_u is None and none_vh is None and deviation == 0.0
    assert largest == np.abs(a).max()
    ref = np.linalg.svd(a, compute_uv=False)
    assert np.abs(s - ref).max() <= 30 * 20 * np.finfo(np.float64).eps * ref[0]


@pytest.fixture
def entries(monkeypatch):
    """(fixed, eager): lists that grow by one at each call of the fixed sequence and of
    the eager one-matrix QDWH."""
    fixed, eager = [], []
    real_fixed, real_eager = fixed_schedule.svd, qdwh.polar_factor_one
    monkeypatch.setattr(fixed_schedule, "svd",
                        lambda *a, **kw: fixed.append(1) or real_fixed(*a, **kw))
    monkeypatch.setattr(qdwh, "polar_factor_one",
                        lambda *a, **kw: eager.append(1) or real_eager(*a, **kw))
    return fixed, eager


@pytest.mark.parametrize("shape", [(40, 40), (44, 40), (40, 44)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_one_entry(shape, full_matrices, entries, fixed_on_the_cpu):
    """One matrix enters the fixed sequence once, before the front end's scan (whose
    work it does itself), and the eager QDWH not at all; U is completed for
    full_matrices, square, tall and wide alike."""
    import gpusvd

    fixed, eager = entries
    a = testing.random_matrix(*shape, dtype=np.float64, seed=4)
    u, s, vh = gpusvd.svd(a, method="polar", device="cpu", full_matrices=full_matrices)
    assert fixed == [1] and eager == []
    k = min(shape)
    eps = np.finfo(np.float64).eps
    assert np.linalg.norm(a - (u[:, :k] * s) @ vh[:k]) <= 30 * k * eps * np.linalg.norm(a)
    assert np.linalg.norm(u.T @ u - np.eye(u.shape[1])) <= 30 * k * eps
    assert np.linalg.norm(vh @ vh.T - np.eye(vh.shape[0])) <= 30 * k * eps
    assert u.shape[1] == (shape[0] if full_matrices else k)


def test_scaled_input_enters_again_after_the_scan(entries, fixed_on_the_cpu):
    """Input the scan scales (max|A| below its safe range): the sequence's first result
    is refused, and it runs once more on the scaled matrix, which the eager QDWH never
    sees."""
    import gpusvd

    fixed, eager = entries
    a = testing.random_matrix(30, 30, dtype=np.float64, seed=5) * 1e-300
    s = gpusvd.svd(a, method="polar", device="cpu", compute_uv=False)
    assert len(fixed) == 2 and eager == []
    ref = np.linalg.svd(a * 1e300, compute_uv=False)
    assert np.abs(s * 1e300 - ref).max() <= 30 * 30 * np.finfo(np.float64).eps * ref[0]


def test_applies():
    a = np.zeros((10, 8))
    assert not fixed_schedule.applies(a, np)          # the GPU only by default
    with tunables.override(fixed_schedule_namespaces=ON_THE_CPU) as t:
        assert fixed_schedule.applies(a, np)
        assert not fixed_schedule.applies(a.astype(np.complex128), np)
        n = t.fixed_schedule_max_n + 1
        assert not fixed_schedule.applies(np.zeros((n, n)), np)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [16, 130, 300, 600])
def test_graph_replays(dtype, n):
    """First call eager, second captured, third and later replayed (above the tunable
    fixed_schedule_graph_eigh_max_n, n = 600: the QDWH part only, the eigendecomposition
    eager): the same bits every time, a new matrix of the same shape gives its own SVD,
    and the GPU result agrees with the NumPy twin within 30 n·ε."""
    import cupy

    from gpusvd._core import graphs

    graphs.clear()
    eps = np.finfo(dtype).eps
    a = testing.random_matrix(n + 5, n, dtype=dtype, seed=n)
    calls = [fixed_schedule.svd(cupy.asarray(a), cupy, compute_uv=True) for _ in range(4)]
    for call in calls[1:]:
        for got, first in zip(call[:3], calls[0][:3]):
            assert bool((got == first).all())
    s_host = fixed_schedule.svd(a, np, compute_uv=True).s
    assert np.abs(calls[0][1].get() - s_host).max() <= 30 * n * eps * s_host[0]
    b = testing.random_matrix(n + 5, n, dtype=dtype, seed=n + 1)
    u, s, vh, _, largest = fixed_schedule.svd(cupy.asarray(b), cupy, compute_uv=True)
    assert largest == np.abs(b).max()
    u, s, vh = u.get(), s.get(), vh.get()
    assert np.linalg.norm(b - (u * s) @ vh) / np.linalg.norm(b) <= 30 * n * eps
    assert np.linalg.norm(u.T @ u - np.eye(n)) <= 30 * n * eps


@pytest.mark.gpu
def test_graph_cache_is_bounded():
    import cupy

    from gpusvd._core import graphs

    graphs.clear()
    for n in range(10, 10 + graphs.CACHED_GRAPHS + 3):
        a = cupy.asarray(testing.random_matrix(n, n, dtype=np.float64, seed=n))
        for _ in range(2):
            fixed_schedule.svd(a, cupy, compute_uv=False)
    assert graphs.cached() == graphs.CACHED_GRAPHS
    graphs.clear()
    assert graphs.cached() == 0


@pytest.mark.parametrize("check_finite", [False, True])
def test_unscanned_non_finite_input(check_finite, fixed_on_the_cpu):
    """NaN reaches the fixed sequence before the front end's scan: its result is not
    kept, and the scan then raises (check_finite) or the values come back NaN."""
    import gpusvd

    a = testing.random_matrix(20, 20, dtype=np.float64, seed=4)
    a[3, 4] = np.nan
    if check_finite:
        with pytest.raises(ValueError):
            gpusvd.svdvals(a, method="polar", device="cpu")
    else:
        s = gpusvd.svdvals(a, method="polar", device="cpu", check_finite=False)
        assert np.isnan(s).all()
    assert fixed_schedule.svd(a, np, compute_uv=False) is None


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_unscanned_outside_the_safe_range(scale, fixed_on_the_cpu):
    """A matrix the scan would rescale: the fixed sequence's result is set aside and the
    scanned call's values stand, within 30 n·ε of LAPACK's."""
    import gpusvd

    n = 30
    a = testing.random_matrix(n, n, dtype=np.float64, seed=6) * scale
    s = gpusvd.svdvals(a, method="polar", device="cpu")
    ref = np.linalg.svd(a / scale, compute_uv=False) * scale
    assert np.abs(s - ref).max() <= 30 * n * np.finfo(float).eps * ref[0]
