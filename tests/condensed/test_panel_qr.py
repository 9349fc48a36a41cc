"""Stage 1's panel QR by one cooperative kernel (condensed/kernels/panel_qr.cu,
band_cuda.panel_qr_into) against LAPACK's geqrf, its twin, and inside stage 1.

Without a GPU the kernel's source runs on the CPU (host_panel_qr.py: each block a host
thread, the grid barrier a std::barrier, so blocks really meet at every barrier): on
column panels and, in place, on the transpose of a row panel; short panels, more blocks
than rows, zero and rank-deficient columns, and panels whose every entry lies below
2^-480 (the kernel's rescaled sum of squares) or is subnormal. It must give geqrf's R, V
and τ to rounding (the same reflectors: β = −sign(α)·‖x‖), and stage 1 with the tunable
``stage1_panel_kernel`` (band.py, sym_band.py) must keep A's values with the host build
standing in for the kernel. On the GPU (marked gpu) the kernel itself, and stage 1 and
the two-stage SVD with it. Bounds are in units of m·ε (ε of the working dtype).
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.condensed import band as stage1
from gpusvd.condensed import sym_band

import host_panel_qr
import host_kernel  # tests/jacobi, on sys.path once host_panel_qr is imported

BOUND = 30  # in units of m·ε, as gr's property tests
REAL = (np.float32, np.float64)
# (m, nb, blocks): one block, several, more blocks than rows (empty blocks), short panels
# (m < nb), one row, one column, the tuned b = 32.
CASES = [(40, 8, 1), (100, 32, 3), (257, 32, 7), (64, 16, 4), (5, 3, 7), (5, 9, 2),
         (1, 4, 1), (30, 1, 3), (33, 32, 2)]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return host_kernel.built_or_skip(host_panel_qr.build, tmp_path_factory, "panel_qr")


def _geqrf(a):
    """LAPACK's geqrf of a (in float64): (h with R above and V below the diagonal, τ)."""
    h, tau = np.linalg.qr(np.asarray(a, dtype=np.float64), mode="raw")
    return h.T, tau


def _q(h, tau):
    """Q = H_0·H_1·… (m × m) from geqrf's h and τ, in their precision."""
    m = h.shape[0]
    q = np.eye(m, dtype=h.dtype)
    for j in reversed(range(tau.shape[0])):
        v = np.zeros(m, dtype=h.dtype)
        v[j] = 1.0
        v[j + 1:] = h[j + 1:, j]
        q -= tau[j] * np.outer(v, v @ q)
    return q


def _units(x, scale, m, dtype):
    return float(np.abs(x).max(initial=0.0)) / (scale * max(m, 1) * np.finfo(dtype).eps)


def _check_against_lapack(a, h, tau):
    """Q·R = A with Q orthogonal; and geqrf's R, V and τ to rounding where they are
    determined (a well-conditioned leading part: past a dependent column the reflectors
    are made of rounding errors, in the kernel as in LAPACK)."""
    m, nb = a.shape
    dtype = a.dtype
    k = min(m, nb)
    norm = max(float(np.linalg.norm(np.asarray(a, np.float64), 2)), np.finfo(dtype).tiny)
    r = np.triu(h)
    q = _q(np.asarray(h), np.asarray(tau))
    assert testing.orthogonality(q) < BOUND
    assert _units(q[:, :k] @ r[:k] - a, norm, m, dtype) < BOUND
    cond = np.linalg.cond(np.asarray(a[:, :k], np.float64)) if k else 1.0
    if cond < 1e3:
        href, tref = _geqrf(a)
        assert _units(r - np.triu(href), norm, m, dtype) < BOUND
        assert _units(np.tril(h, -1) - np.tril(href, -1), cond, m, dtype) < BOUND
        assert _units(tau - tref, cond, m, dtype) < BOUND
    return cond


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("m, nb, blocks", CASES)
def test_column_panel_matches_geqrf(lib, m, nb, blocks, dtype):
    a = testing.random_matrix(m, nb, dtype=dtype, seed=m * 31 + nb)
    big = np.zeros((m + 5, nb + 2), dtype=dtype, order="F")  # lda = m + 5
    big[2:m + 2, 1:nb + 1] = a
    view = big[2:m + 2, 1:nb + 1]
    tau = host_panel_qr.panel_qr(lib, view, blocks)
    assert _check_against_lapack(a, view, tau) < 1e3  # R, V and τ were compared
    assert not big[:2].any() and not big[m + 2:].any()  # nothing outside the view
    assert not big[:, 0].any() and not big[:, nb + 1:].any()


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("m, nb, blocks", [(60, 20, 3), (100, 32, 5), (7, 9, 2)])
def test_row_panel_in_place(lib, m, nb, blocks, dtype):
    """The LQ step's use: the transpose of a row panel of a column-major matrix."""
    a = testing.random_matrix(m, nb, dtype=dtype, seed=m + 7 * nb)
    big = np.zeros((nb + 3, m), dtype=dtype, order="F")
    big[1:nb + 1] = a.T
    view = big[1:nb + 1].T  # m × nb, rows contiguous
    tau = host_panel_qr.panel_qr(lib, view, blocks)
    _check_against_lapack(a, view, tau)
    assert not big[0].any() and not big[nb + 1:].any()


@pytest.mark.parametrize("blocks", [1, 3])
def test_the_number_of_blocks_changes_only_rounding(lib, blocks):
    a = testing.random_matrix(200, 32, dtype=np.float64, seed=5)
    one, many = np.array(a, order="F"), np.array(a, order="F")
    host_panel_qr.panel_qr(lib, one, 1)
    host_panel_qr.panel_qr(lib, many, blocks * 4)
    assert _units(one - many, float(np.abs(a).max()), 200, np.float64) < BOUND


@pytest.mark.parametrize("dtype", REAL)
def test_zero_and_dependent_columns(lib, dtype):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((50, 12)).astype(dtype)
    a[:, 3] = 0          # x = 0 from the start: τ = 0, H = I
    a[:, 7] = a[:, 2]    # dependent: its x is rounding after the first reflectors
    a[:, 10] = 2 * a[:, 5] - a[:, 1]
    h = np.array(a, order="F")
    tau = host_panel_qr.panel_qr(lib, h, 4)
    _check_against_lapack(a, h, tau)
    zero = np.zeros((20, 6), dtype=dtype, order="F")
    tau = host_panel_qr.panel_qr(lib, zero, 3)
    assert not zero.any() and not tau.any()  # every H = I, nothing written but zeros


@pytest.mark.parametrize("scale", [2.0 ** -600, 2.0 ** -1000, 1e-310])
def test_tiny_panels_are_rescaled(lib, scale):
    """Every entry below 2^-480: the squares underflow, so the kernel sums them again
    scaled by 2^600 (a second barrier), as dlarfg rescales; down to subnormal entries."""
    a = testing.random_matrix(80, 10, dtype=np.float64, seed=9) * scale
    h = np.array(a, order="F")
    tau = host_panel_qr.panel_qr(lib, h, 3)
    assert np.isfinite(h).all() and np.isfinite(tau).all()
    href, tref = _geqrf(a)
    norm = float(np.linalg.norm(a, 2))
    # Relative to the panel's own norm (subnormal entries: a few digits fewer).
    digits = 1.0 if scale > 1e-300 else 10.0
    assert _units(np.triu(h) - np.triu(href), norm, 80, np.float64) < BOUND * digits
    assert _units(tau - tref, 1.0, 80, np.float64) < BOUND * digits


def test_mixed_scales(lib):
    """A column far below the rest is reduced with the others (no rescaling: the squares
    that underflow are below the band's rounding)."""
    a = testing.random_matrix(60, 8, dtype=np.float64, seed=4)
    a[:, 5] *= 1e-200
    h = np.array(a, order="F")
    tau = host_panel_qr.panel_qr(lib, h, 3)
    _check_against_lapack(a, h, tau)


def _host_twin(lib, blocks):
    """The host build in _PANEL_QR's place: stage 1 runs the kernel's source."""
    return lambda view: host_panel_qr.panel_qr(lib, view, blocks)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("twin", ["lapack", "host_build"])
@pytest.mark.parametrize("m, n, b", [(70, 50, 8), (64, 64, 32), (45, 45, 5)])
def test_stage1_with_the_panel_kernel(lib, monkeypatch, m, n, b, dtype, twin):
    """reduce_to_band with stage1_panel_kernel: the row panels factored in place on their
    transpose, by LAPACK on the view (the NumPy twin) or the kernel's host build."""
    if twin == "host_build":
        monkeypatch.setitem(stage1._PANEL_QR, "numpy", _host_twin(lib, 3))
    a = testing.random_matrix(m, n, dtype=dtype, seed=m + n + b)
    with tunables.override(stage1_panel_kernel=True):
        red = stage1.reduce_to_band(np.array(a, order="F"), bandwidth=b)
        bmat = stage1.band_matrix(stage1.band_of(red), m)
        q = stage1.apply_q(red, np.eye(m, dtype=dtype))
        p = stage1.apply_p(red, np.eye(n, dtype=dtype))
    plain = stage1.reduce_to_band(np.array(a, order="F"), bandwidth=b)
    scale = float(np.abs(a).max())
    assert _units(red.factors - plain.factors, scale, max(m, n), dtype) < BOUND * 10
    s_ref = scipy.linalg.svdvals(a.astype(np.float64))
    assert testing.sv_error(scipy.linalg.svdvals(bmat), s_ref) < BOUND * max(m, n)
    assert testing.orthogonality(q) < BOUND and testing.orthogonality(p) < BOUND
    assert _units(q @ bmat @ p.T - a, scale, max(m, n), dtype) < BOUND


@pytest.mark.parametrize("twin", ["lapack", "host_build"])
def test_hermitian_stage1_with_the_panel_kernel(lib, monkeypatch, twin):
    if twin == "host_build":
        monkeypatch.setitem(stage1._PANEL_QR, "numpy", _host_twin(lib, 2))
    g = testing.random_matrix(60, 60, dtype=np.float64, seed=8)
    a = (g + g.T) / 2
    with tunables.override(stage1_panel_kernel=True):
        red = sym_band.reduce_to_hermitian_band(np.array(a, order="F"), bandwidth=6)
    bmat = sym_band.hermitian_band_matrix(sym_band.hermitian_band_of(red))
    w, ref = np.linalg.eigvalsh(bmat), np.linalg.eigvalsh(a)
    assert np.abs(w - ref).max() < BOUND * 60 * np.finfo(float).eps * np.abs(ref).max()


def test_complex_and_wide_bands_keep_geqrf():
    """The tunable applies to real data with b ≤ 32 only: complex input and b = 40 take
    geqrf on a copy, as without it."""
    assert not stage1._panel_kernel(np, np.dtype(np.float64), 32)  # off by default
    with tunables.override(stage1_panel_kernel=True):
        assert stage1._panel_kernel(np, np.dtype(np.float32), 32)
        assert not stage1._panel_kernel(np, np.dtype(np.complex128), 8)
        assert not stage1._panel_kernel(np, np.dtype(np.float64), 40)
        a = testing.random_matrix(30, 30, dtype=np.complex128, seed=2)
        red = stage1.reduce_to_band(np.array(a, order="F"), bandwidth=4)
    s = scipy.linalg.svdvals(stage1.band_matrix(stage1.band_of(red)))
    assert testing.sv_error(s, scipy.linalg.svdvals(a)) < BOUND * 30


# ---------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("m, nb", [(8192, 32), (1000, 17), (64, 32), (20, 32), (3, 1)])
def test_gpu_kernel_matches_geqrf(m, nb, dtype):
    import cupy

    from gpusvd.condensed import band_cuda

    a = testing.random_matrix(m, nb, dtype=dtype, seed=m + nb)
    column = cupy.asarray(a, order="F")
    tau = band_cuda.panel_qr_into(column)
    _check_against_lapack(a, column.get(), tau.get())
    row = cupy.asarray(a.T, order="F")  # nb × m, column-major: its transpose is the panel
    tau = band_cuda.panel_qr_into(row.T)
    _check_against_lapack(a, row.T.get(), tau.get())


@pytest.mark.gpu
@pytest.mark.parametrize("scale", [2.0 ** -1000, 1e-310])
def test_gpu_tiny_panel(scale):
    import cupy

    from gpusvd.condensed import band_cuda

    a = testing.random_matrix(5000, 32, dtype=np.float64, seed=1) * scale
    h = cupy.asarray(a, order="F")
    tau = band_cuda.panel_qr_into(h)
    assert bool(cupy.isfinite(h).all()) and bool(cupy.isfinite(tau).all())
    href, _ = _geqrf(a)
    digits = 1.0 if scale > 1e-300 else 10.0
    assert _units(np.triu(h.get()) - np.triu(href), float(np.linalg.norm(a, 2)), 5000,
                  np.float64) < BOUND * digits


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REAL)
def test_gpu_stage1_and_two_stage_svd_with_the_kernel(dtype):
    import cupy

    from gpusvd.condensed import driver

    a = testing.random_matrix(1500, 1200, dtype=dtype, seed=12)
    with tunables.override(stage1_panel_kernel=True):
        red = stage1.reduce_to_band(cupy.asarray(a, order="F"), bandwidth=32)
        s = driver.two_stage_singular_values(cupy.asarray(a))
        u, s_full, vh = driver.two_stage_svd(cupy.asarray(a))
    band = stage1.band_matrix(stage1.band_of(red).get(), 1500)
    s_ref = scipy.linalg.svdvals(a.astype(np.float64))
    assert testing.sv_error(scipy.linalg.svdvals(band), s_ref) < BOUND * 1500
    assert testing.sv_error(s.get(), s_ref) < BOUND * 1500
    assert testing.sv_error(s_full.get(), s_ref) < BOUND * 1500
    assert testing.orthogonality(u.get()) < BOUND and testing.orthogonality(vh.get().T) < BOUND
