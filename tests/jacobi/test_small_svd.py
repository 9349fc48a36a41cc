"""The small-matrix SVD of ``method="auto"`` on the GPU: one kernel launch
per stack (``jacobi/kernels/small_svd.cu``).

1. Its CPU twin (:mod:`gpusvd.jacobi.small_svd`) on mixed stacks of the LAPACK matrix
   types, graded, rank-deficient, κ = 10¹² and random matrices, square, tall and wide,
   real and complex, economy and full: residual, orthogonality of U and V, and values
   against LAPACK below BOUND in units of n·ε; the input unchanged; the same bits twice;
   a hard matrix changes nothing of the others; NaN and infinity, subnormal input and
   non-convergence reported.
2. The kernel compiled for the host (host_small_svd.py) gives the twin's bits.
3. On the GPU (marker ``gpu``): the kernel against the twin, and ``gpusvd.svd`` of CuPy
   stacks through it, with its finite check.
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd.jacobi import small_svd as twin
from gpusvd.jacobi import small_svd_cuda
from gpusvd.testing.generators import STACK_KINDS
from . import host_small_svd

BOUND = 30  # units of n·ε
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
SHAPES = [(1, 1), (2, 2), (3, 1), (1, 5), (7, 7), (16, 16), (20, 5), (5, 20), (33, 17),
          (17, 33), (64, 64), (90, 64), (64, 90)]


def _check(a, u, s, vh, full_matrices):
    batch, m, n = a.shape
    k = min(m, n)
    assert s.shape == (batch, k) and s.dtype == np.finfo(a.dtype).dtype
    assert u.shape == (batch, m, m if full_matrices else k) and u.dtype == a.dtype
    assert vh.shape == (batch, n if full_matrices else k, n) and vh.dtype == a.dtype
    for ai, ui, si, vhi in zip(a, u, s, vh):
        assert np.all(si[:-1] >= si[1:]) and np.all(si >= 0)
        assert testing.svd_residual(ai, ui, si, vhi) < BOUND
        assert testing.orthogonality(ui) < BOUND
        assert testing.orthogonality(vhi, rows=True) < BOUND
        wide = np.complex128 if a.dtype.kind == "c" else np.float64
        s_ref = scipy.linalg.svd(ai.astype(wide), compute_uv=False)
        assert testing.sv_error(si, s_ref) < BOUND * max(m, n)


@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_twin_meets_the_contract(dtype, shape, full_matrices):
    a = testing.mixed_stack(STACK_KINDS, *shape, dtype=dtype, seed=sum(shape))
    before = a.copy()
    u, s, vh, status = twin.small_svd(a, compute_uv=True, full_matrices=full_matrices)
    np.testing.assert_array_equal(a, before)
    assert status == 0
    _check(a, u, s, vh, full_matrices)
    again = twin.small_svd(a, compute_uv=True, full_matrices=full_matrices)
    for x, y in zip((u, s, vh), again):
        np.testing.assert_array_equal(x, y)
    _, values, _, _ = twin.small_svd(a, compute_uv=False, full_matrices=full_matrices)
    np.testing.assert_array_equal(values, s)  # the same sweeps with or without V


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_hard_matrix_changes_nothing_of_the_others(dtype):
    easy = testing.mixed_stack(["random"] * 3, 24, 24, dtype=dtype, seed=3)
    hard = testing.mixed_stack(["kappa1e12", "graded"], 24, 24, dtype=dtype, seed=4)
    mixed = np.concatenate([easy[:1], hard[:1], easy[1:2], hard[1:], easy[2:]])
    alone = twin.small_svd(easy, compute_uv=True, full_matrices=False)
    together = twin.small_svd(mixed, compute_uv=True, full_matrices=False)
    for x, y in zip(alone[:3], together[:3]):
        np.testing.assert_array_equal(x, y[[0, 2, 4]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_not_finite_matrices_get_nan_and_the_status_says_so(dtype):
    a = testing.mixed_stack(["random"] * 3, 6, 4, dtype=dtype, seed=5)
    a[1, 2, 3] = np.nan
    a[2, 0, 0] = np.inf
    u, s, vh, status = twin.small_svd(a, compute_uv=True, full_matrices=True)
    assert status == twin.NOT_FINITE
    for x in (u, s, vh):
        assert np.isnan(x[1:]).all() and np.isfinite(x[0]).all()
    ok = twin.small_svd(a[:1], compute_uv=True, full_matrices=True)
    for x, y in zip((u, s, vh), ok[:3]):
        np.testing.assert_array_equal(x[:1], y)


def test_non_convergence_is_reported():
    a = testing.mixed_stack(["random"] * 2, 16, 16, seed=6)
    assert twin.small_svd(a, compute_uv=False, full_matrices=False, max_sweeps=1)[3] \
        == twin.NOT_CONVERGED
    assert twin.small_svd(a, compute_uv=False, full_matrices=False)[3] == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_subnormal_and_huge_input(dtype):
    """The scaling is exact over the whole range: subnormal entries (whose 2^-e would
    overflow as one factor) and entries near overflow."""
    info = np.finfo(dtype)
    base = testing.random_matrix(8, 5, dtype=np.float64, seed=7)
    for scale in (float(info.smallest_subnormal) * 2 ** 20, float(info.max) / 64):
        a = (base * scale).astype(dtype)[None]
        u, s, vh, status = twin.small_svd(a, compute_uv=True, full_matrices=False)
        assert status == 0
        exact = np.linalg.svd(a[0].astype(np.float64), compute_uv=False)
        assert np.all(np.abs(s[0] - exact) <= BOUND * 8 * info.eps * exact[0])
        assert testing.orthogonality(u[0]) < BOUND
        assert testing.orthogonality(vh[0], rows=True) < BOUND


def _underflowing_columns(dtype):
    """Stacks whose columns' squared norms underflow or whose entries are subnormal after
    the scaling: one column of a random 6×4 matrix times 10^e down to the subnormal
    range, and matrices of identical rows (ones, rank one), whose rotated-away columns
    stay parallel to the kept one and shrink by ε at every sweep. Both once ran the kernel
    to its sweep limit (the GPU tests' 3×3 ones, 2026-11-27)."""
    tiny = np.finfo(dtype).bits <= 32 or dtype == np.complex64
    exponents = range(-44, 0, 3) if tiny else range(-300, 0, 7)
    rng = np.random.default_rng(14)
    base = rng.standard_normal((len(exponents), 6, 4))
    if np.dtype(dtype).kind == "c":
        base = base + 1j * rng.standard_normal(base.shape)
    base[:, :, 3] *= np.array([10.0 ** e for e in exponents])[:, None]
    stacks = [base.astype(dtype)]
    for n in (3, 16, 64):
        row = rng.standard_normal(n)
        stacks.append(np.stack([np.ones((n, n)), np.tile(row, (n, 1))]).astype(dtype))
    return stacks


@pytest.mark.parametrize("dtype", DTYPES)
def test_underflowing_columns_converge_with_orthogonal_vectors(dtype):
    """A pair whose h_pq² underflows is not rotated, columns below U_FLOOR are not rotated
    and are completed in U: no sweep limit, and U orthogonal to BOUND·n·ε."""
    for a in _underflowing_columns(dtype):
        for full in (False, True):
            u, s, vh, status = twin.small_svd(a, compute_uv=True, full_matrices=full)
            assert status == 0
            _check(a, u, s, vh, full)


def test_shared_memory_layout_and_what_fits():
    """The largest shapes of method="auto"'s small path fit an H100 block (227 kB opt-in),
    tall ones with many rows do not (they take the polar method)."""
    h100 = 227 * 1024 - small_svd_cuda._STATIC_SHARED
    for dtype in DTYPES:
        for full in (False, True):
            assert small_svd_cuda.shared_bytes(twin.Shape(64, 64, full), dtype, True) <= h100
    assert small_svd_cuda.shared_bytes(twin.Shape(100000, 32, False), np.float32, False) \
        > h100
    config = small_svd_cuda.launch_config(twin.Shape(64, 64, False), np.complex128, True)
    assert config.threads <= 512 and config.threads % config.lanes == 0


def test_lanes_by_shape_and_batch():
    """Every dtype and pivot order has a measured lanes count at each grid batch; a batch
    takes the nearest grid point on a log scale; X with many more rows than its order
    gets more lanes; an explicit count is checked."""
    for char, orders in small_svd_cuda.LANES_BY_BATCH.items():
        assert sorted(orders) == [2, 4, 8, 16, 32, 64]
        for row in orders.values():
            assert len(row) == len(small_svd_cuda.BATCH_GRID)
            assert set(row) <= set(small_svd_cuda.LANES)
    square = twin.Shape(32, 32, False)
    row = small_svd_cuda.LANES_BY_BATCH["f"][32]
    for batch, point in [(1, 0), (2, 0), (3, 1), (8, 1), (600, 3), (20000, 5), (10**6, 5)]:
        assert small_svd_cuda.lanes_for(square, np.float32, batch) == row[point]
    assert small_svd_cuda.lanes_for(twin.Shape(30, 30, False), np.float32, 1) == row[0]
    tall = small_svd_cuda.lanes_for(twin.Shape(200, 16, False), np.float64, 1)
    assert tall == 32 and small_svd_cuda.lanes_for(twin.Shape(5, 200, False), np.float64,
                                                   1) == 32
    assert small_svd_cuda.lanes_for(twin.Shape(40, 32, False), np.float64, 1) == 16
    for lanes in small_svd_cuda.LANES:
        config = small_svd_cuda.launch_config(square, np.float64, True, lanes=lanes)
        assert config.lanes == lanes and config.threads == lanes * min(16, 512 // lanes)
    with pytest.raises(ValueError, match="lanes"):
        small_svd_cuda.launch_config(square, np.float64, True, lanes=3)


@pytest.fixture(scope="module")
def host_small(tmp_path_factory):
    from . import host_kernel

    return host_kernel.built_or_skip(host_small_svd.build, tmp_path_factory, "host_small")


@pytest.mark.parametrize("compute_uv", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
def test_host_build_equals_the_twin_bit_for_bit(host_small, dtype, compute_uv):
    for shape in [(16, 16), (7, 7), (20, 5), (5, 20), (3, 1), (33, 17)]:
        a = testing.mixed_stack(STACK_KINDS, *shape, dtype=dtype, seed=8)
        a[-1, 0, 0] = np.nan
        for full in (False, True):
            ours = host_small(a, compute_uv=compute_uv, full_matrices=full)
            theirs = twin.small_svd(a, compute_uv=compute_uv, full_matrices=full)
            for x, y in zip(ours, theirs):
                np.testing.assert_array_equal(x, y)
    for a in _underflowing_columns(dtype):
        ours = host_small(a, compute_uv=compute_uv, full_matrices=True)
        theirs = twin.small_svd(a, compute_uv=compute_uv, full_matrices=True)
        for x, y in zip(ours, theirs):
            np.testing.assert_array_equal(x, y)


# --------------------------------------------------------------------- on the GPU

@pytest.mark.gpu
@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_against_the_twin(dtype, full_matrices):
    import cupy

    for shape in SHAPES:
        a = testing.mixed_stack(STACK_KINDS, *shape, dtype=dtype, seed=9)
        u, s, vh, status = small_svd_cuda.small_svd(cupy.asarray(a), compute_uv=True,
                                                    full_matrices=full_matrices)
        u, s, vh = u.get(), s.get(), vh.get()
        assert status.wait() == 0
        _check(a, u, s, vh, full_matrices)
        _, s_twin, _, _ = twin.small_svd(a, compute_uv=True, full_matrices=full_matrices)
        for si, ti in zip(s, s_twin):
            assert testing.sv_error(si, ti.astype(np.float64)) < 4 * max(shape)
        values = small_svd_cuda.small_svd(cupy.asarray(a), compute_uv=False,
                                          full_matrices=full_matrices)[1].get()
        for si, vi in zip(s, values):
            assert testing.sv_error(vi, si.astype(np.float64)) < 4 * max(shape)


@pytest.mark.gpu
@pytest.mark.parametrize("lanes", small_svd_cuda.LANES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_lanes_count_against_the_twin(dtype, lanes):
    """Each instantiated lanes count (the table picks among them by batch) meets the
    contract and agrees with the twin to rounding."""
    import cupy

    for shape in [(2, 2), (16, 16), (33, 17), (17, 33), (64, 64), (90, 64)]:
        a = testing.mixed_stack(STACK_KINDS, *shape, dtype=dtype, seed=12)
        for full in (False, True):
            u, s, vh, status = small_svd_cuda.small_svd(
                cupy.asarray(a), compute_uv=True, full_matrices=full, lanes=lanes)
            assert status.wait() == 0
            _check(a, u.get(), s.get(), vh.get(), full)
            _, s_twin, _, _ = twin.small_svd(a, compute_uv=False, full_matrices=full)
            for si, ti in zip(s.get(), s_twin):
                assert testing.sv_error(si, ti.astype(np.float64)) < 4 * max(shape)
    for a in _underflowing_columns(dtype):
        for full in (False, True):
            u, s, vh, status = small_svd_cuda.small_svd(
                cupy.asarray(a), compute_uv=True, full_matrices=full, lanes=lanes)
            assert status.wait() == 0
            _check(a, u.get(), s.get(), vh.get(), full)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_of_a_cupy_stack_takes_the_kernel(monkeypatch, dtype):
    import cupy

    import gpusvd

    calls = []
    launch = small_svd_cuda.small_svd

    def counted(stack, **kw):
        calls.append(stack.shape)
        return launch(stack, **kw)
    monkeypatch.setattr(small_svd_cuda, "small_svd", counted)
    a = testing.mixed_stack(STACK_KINDS * 20, 40, 32, dtype=dtype, seed=10)
    x = cupy.asarray(a)
    u, s, vh = gpusvd.svd(x, full_matrices=False)
    assert calls == [a.shape] and isinstance(u, cupy.ndarray)
    _check(a, u.get(), s.get(), vh.get(), False)
    np.testing.assert_array_equal(x.get(), a)
    x[3, 1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN|finite"):
        gpusvd.svd(x)
    s = gpusvd.svd(x, compute_uv=False, check_finite=False).get()
    assert np.isnan(s[3]).all() and np.isfinite(np.delete(s, 3, axis=0)).all()
    tall = cupy.asarray(testing.random_matrix(20000, 16, dtype=dtype, seed=11))
    calls.clear()
    u, s, vh = gpusvd.svd(tall, full_matrices=False)  # too many rows: the polar method
    assert calls == [] and testing.svd_residual(tall, u, s, vh) < BOUND


@pytest.mark.gpu
def test_each_launch_reports_its_own_status_on_its_stream():
    """The status lives in page-locked host memory per launch: two launches in flight on
    a non-default stream, one with NaN and one that cannot converge in one sweep, each
    read after the other was queued."""
    import cupy

    a = testing.random_matrix(16, 16, dtype=np.float64, seed=13)[None].repeat(3, axis=0)
    bad = a.copy()
    bad[1, 2, 3] = np.nan
    with cupy.cuda.Stream(non_blocking=True):
        _, s_bad, _, st_bad = small_svd_cuda.small_svd(cupy.asarray(bad), compute_uv=True,
                                                       full_matrices=False)
        _, _, _, st_slow = small_svd_cuda.small_svd(cupy.asarray(a), compute_uv=False,
                                                    full_matrices=False, max_sweeps=1)
        _, _, _, st_good = small_svd_cuda.small_svd(cupy.asarray(a), compute_uv=False,
                                                    full_matrices=False)
        assert st_slow.wait() == twin.NOT_CONVERGED
        assert st_bad.wait() == twin.NOT_FINITE
        assert st_good.wait() == 0
        s_bad = s_bad.get()
    assert np.isnan(s_bad[1]).all() and np.isfinite(s_bad[[0, 2]]).all()
