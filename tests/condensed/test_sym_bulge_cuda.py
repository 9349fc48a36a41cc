"""Stage 2 of the Hermitian reduction on the GPU (condensed/kernels/sym_bulge.cu,
sym_bulge_cuda.py) against the Numba loop sym_bulge._chase.

Without a GPU: the dependency the kernel waits on is checked on the index sets of the
tasks (lag 2 orders every pair of tasks of different sweeps that share an entry, lag 1
does not), and the kernel's source runs on the CPU (host_sym_bulge.py, one thread per
block): the persistent kernel, and random wavefronts of sweeps in flight that respect the
dependency, put in NumPy's row of band_to_tridiagonal's twin table, must give the Numba
loop's bits (same operations, same order, same libm); wavefronts at lag 1 must not, for
some seed. The twin table sends real CuPy bands to the kernel and the rest to the host.
On the GPU (marked gpu) band_to_tridiagonal on CuPy bands must keep the band's
eigenvalues and the Numba loop's within BOUND·n·ε of max|band| (only CUDA's hypot rounds
differently, and the chase carries that on), rebuild the band from its reflectors, give
the same bits run after run (it is deterministic: no atomics on data, every entry's
operations in one order), and return every array on the device.
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd._core import kernels, tunables
from gpusvd.condensed import sym_bulge, sym_bulge_cuda
from gpusvd.condensed.sym_band import hermitian_band_matrix

import host_bulge
import host_kernel  # tests/jacobi, on sys.path once a host module is imported
import host_sym_bulge

BOUND = 30  # in units of n·ε of max|band|
REAL = (np.float32, np.float64)
SIZES = (3, 10, 57, 200)
BANDWIDTHS = (2, 3, 8, 16)
LAG = 2


def _task_entries(n, b, s):
    """The entries (i, j), i ≥ j, each task of sweep s reads or writes, as the kernel's
    comment lists them: the reflector's column and the bulge's other columns on block h,
    the two-sided update of block h, the right application to block h+1."""
    def block(rows, cols):
        return {(i, j) for i in rows for j in cols if i >= j}

    tasks = []
    for h in range(n):
        st, ed = s + 1 + h * b, min(s + (h + 1) * b, n - 1)
        c = s if h == 0 else st - b
        j1, j2 = ed + 1, min(ed + b, n - 1)
        tasks.append(block(range(st, ed + 1), range(c, st)) | block(range(st, ed + 1),
                     range(st, ed + 1)) | block(range(j1, j2 + 1), range(st, ed + 1)))
        if j2 <= j1:
            return tasks


def _random_band(n, b, dtype, seed):
    return testing.random_matrix(n, b + 1, dtype=dtype, seed=seed)


def _chased(chase, band, record, monkeypatch, **schedule):
    """band_to_tridiagonal(band) with ``chase`` as NumPy's twin: (its Tridiagonal, the
    arrays the twin chased, (ab, v, tau), empty when there was nothing to chase, and what
    the twin returned)."""
    arrays, returned = [], []

    def twin(ab, b, v, tau, record):
        returned.append(chase(ab, b, v, tau, record, **schedule))
        arrays.extend((ab, v, tau))

    with monkeypatch.context() as patch:
        patch.setitem(sym_bulge._TWINS, "numpy", twin)
        t = sym_bulge.band_to_tridiagonal(band, record=record)
    return t, arrays, returned


def _numba(band, record, monkeypatch):
    return _chased(sym_bulge._chase, band, record, monkeypatch)


def _same_bits(x, y):
    """The same Tridiagonal (reflectors included) and the same chased arrays."""
    fields = x[0][:3] + tuple(x[0].reflectors or ())[:2] + tuple(x[1])
    others = y[0][:3] + tuple(y[0].reflectors or ())[:2] + tuple(y[1])
    return len(x[1]) == len(y[1]) and all(
        np.array_equal(a, b) for a, b in zip(fields, others, strict=True))


@pytest.fixture(autouse=True)
def chase_on_gpu():
    """The kernel is what this module tests: on, whatever the default (tunables)."""
    with tunables.override(chase_on_gpu=True):
        yield


@pytest.fixture(scope="module")
def host_chase(tmp_path_factory):
    return host_kernel.built_or_skip(host_sym_bulge.build, tmp_path_factory, "host_sym_bulge")


@pytest.mark.parametrize("n, b", [(12, 2), (13, 3), (30, 4), (41, 5), (40, 8), (9, 8),
                                  (50, 3), (57, 16)])
def test_the_lag_of_two_tasks_is_exact(n, b):
    sweeps = [_task_entries(n, b, s) for s in range(n - 2)]
    assert host_bulge.unordered_conflicts(sweeps, LAG) == 0
    if n - 3 >= 2 * b:  # sweeps of three tasks or more: one task less would race
        assert host_bulge.unordered_conflicts(sweeps, LAG - 1) > 0
    assert sym_bulge_cuda._LAG == LAG
    assert f"CHASE_LAG = {LAG};" in host_sym_bulge.KERNEL.read_text()


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("b", BANDWIDTHS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("record", [False, True])
def test_host_kernel_gives_the_numba_bits(host_chase, monkeypatch, n, b, dtype, record):
    band = _random_band(n, b, dtype, seed=n + b)
    assert _same_bits(_numba(band, record, monkeypatch),
                      _chased(host_chase, band, record, monkeypatch))


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("b", BANDWIDTHS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed, window", [(0, 2), (1, 7), (2, 1000), (3, 1000)])
def test_any_wavefront_that_respects_the_lag_gives_the_numba_bits(host_chase, monkeypatch,
                                                                   n, b, dtype, seed, window):
    band = _random_band(n, b, dtype, seed=seed)
    wavefront = _chased(host_chase, band, True, monkeypatch, schedule=(seed, window))
    assert _same_bits(_numba(band, True, monkeypatch), wavefront)
    # Never more sweeps at once than the launch configuration allows for; some
    # concurrency wherever sweeps are long enough for it.
    widest = wavefront[2][0]
    assert widest <= min(window, sym_bulge_cuda.sweeps_in_flight(n, b))
    assert widest > 1 or n < 57


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n, b", [(10, 2), (57, 3), (200, 8), (200, 16)])
def test_a_wavefront_at_lag_one_races(host_chase, monkeypatch, n, b, dtype):
    band = _random_band(n, b, dtype, seed=n * b)
    numba = _numba(band, True, monkeypatch)
    racy = [_chased(host_chase, band, True, monkeypatch, schedule=(seed, 1000, LAG - 1))
            for seed in range(4)]
    assert not all(_same_bits(numba, x) for x in racy)


@pytest.mark.parametrize("n, b, dtype, scale", [
    (3000, 16, np.float64, 1.0),         # a long chase: the trailing entries shrink
    (200, 8, np.float64, 2.0 ** -1060),  # subnormal from the start
    (200, 8, np.float32, 2.0 ** -140),   # float32 subnormals: double arithmetic, no rescaling
])
def test_subnormal_reflectors_are_rescaled_alike(host_chase, monkeypatch, n, b, dtype, scale):
    band = _random_band(n, b, dtype, seed=n * b) * dtype(scale)
    record = n <= 200
    numba = _numba(band, record, monkeypatch)
    assert np.isfinite(numba[0].d).all() and np.isfinite(numba[0].e).all()
    assert _same_bits(numba, _chased(host_chase, band, record, monkeypatch))
    assert _same_bits(numba, _chased(host_chase, band, record, monkeypatch,
                                     schedule=(n, 1000)))


def test_launch_config():
    for n, b in [(3, 2), (100, 2), (1000, 16), (8192, 32), (16384, 64), (5000, 300)]:
        config = sym_bulge_cuda.launch_config(n, b, 8, 132, 8)
        assert config.threads % 32 == 0
        assert min(b, 256) <= config.threads <= 256
        assert 1 <= config.blocks <= min(n - 2, 132 * 8, sym_bulge_cuda.sweeps_in_flight(n, b))
        assert config.shared_bytes == (b + 2) * 8 + 2 * b * 8
    assert sym_bulge_cuda.sweeps_in_flight(3, 2) == 1
    assert sym_bulge_cuda.launch_config(16384, 16, 4, 132, 8).blocks == 513
    assert sym_bulge_cuda.launch_config(16384, 16, 4, 132, 2).blocks == 264


def test_complex_bands_are_not_taken():
    assert sym_bulge_cuda.supports(np.float32) and sym_bulge_cuda.supports(np.float64)
    assert not sym_bulge_cuda.supports(np.complex64)
    assert not sym_bulge_cuda.supports(np.complex128)
    with pytest.raises(ValueError, match="complex bands are chased on the host"):
        sym_bulge_cuda.chase(np.zeros((5, 4), np.complex128), 2, None, None, False)


def test_the_twin_table_sends_real_cupy_bands_to_the_kernel():
    assert sym_bulge._TWINS == {"numpy": sym_bulge._chase, "cupy": sym_bulge_cuda.chase}
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        assert sym_bulge._SUPPORTS["numpy"](np.dtype(dtype))
        assert sym_bulge._SUPPORTS["cupy"](np.dtype(dtype)) == (np.dtype(dtype).kind == "f")
        with tunables.override(chase_on_gpu=False):
            assert not sym_bulge._SUPPORTS["cupy"](np.dtype(dtype))


def test_the_kernel_is_registered_and_shipped():
    relpath = sym_bulge_cuda._KERNEL_FILE
    assert kernels.REGISTRY[relpath].names == ("sym_chase_band<float>",
                                               "sym_chase_band<double>")
    assert kernels.shipped(relpath) is not None
    assert '#include "chase_common.cuh"' in kernels.source(relpath)
    assert "run_sweeps" in kernels.expanded_source(relpath)


# ---------------------------------------------------------------------------- GPU


def _eig_units(t, ref, dtype):
    """max|eig(T) − ref| in units of n·ε(dtype)·max|ref|, T = (t.d, t.e) on the host."""
    n = max(len(ref), 1)
    w = scipy.linalg.eigvalsh_tridiagonal(np.asarray(t.d, np.float64),
                                          np.asarray(t.e, np.float64))
    scale = max(float(np.abs(ref).max(initial=0.0)), float(np.finfo(np.float64).tiny))
    return float(np.abs(w - ref).max(initial=0.0)) / (scale * n * float(np.finfo(dtype).eps))


def _host(t):
    """A Tridiagonal of CuPy arrays copied to the host."""
    refl = t.reflectors and sym_bulge.ChaseReflectors(
        t.reflectors.v.get(), t.reflectors.tau.get(), t.reflectors.bandwidth)
    return sym_bulge.Tridiagonal(*(x.get() for x in t[:3]), refl)


def _fields(t):
    return t[:3] + tuple(t.reflectors[:2] if t.reflectors else ())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n, b", [(3, 2), (57, 3), (200, 16), (500, 8), (1000, 32),
                                  (2000, 64), (3000, 16)])
def test_cuda_kernel_is_a_backward_stable_chase(monkeypatch, n, b, dtype):
    """band_to_tridiagonal on the CuPy band runs the kernel; its tridiagonal keeps the
    band's eigenvalues (LAPACK's) and the Numba loop's, and with its reflectors rebuilds
    the band (Q·T·Qᵀ = A, Q orthogonal, to BOUND·n·ε). Entries are not compared one by
    one: CUDA's hypot and the C library's differ by an ulp, and the chase's forward error
    is not bounded by n·ε where its backward error is (bulge.cu's GPU tests say so)."""
    import cupy

    band = _random_band(n, b, dtype, seed=n * b)
    a = hermitian_band_matrix(band).astype(np.float64)
    record = n <= 1000

    def no_host_chase(*args):
        raise AssertionError("a real CuPy band was chased on the host")

    with monkeypatch.context() as patch:
        patch.setitem(sym_bulge._TWINS, "numpy", no_host_chase)
        gpu = sym_bulge.band_to_tridiagonal(cupy.asarray(band), record=record)
    assert all(isinstance(x, cupy.ndarray) for x in _fields(gpu))
    host = _host(gpu)
    assert host.d.dtype == dtype and host.e.dtype == dtype
    assert np.isfinite(host.d).all() and np.isfinite(host.e).all() and (host.e >= 0).all()
    numba = sym_bulge.band_to_tridiagonal(band)
    assert _eig_units(host, scipy.linalg.eigvalsh(a), dtype) < BOUND
    numba_values = scipy.linalg.eigvalsh_tridiagonal(numba.d.astype(np.float64),
                                                     numba.e.astype(np.float64))
    assert _eig_units(host, numba_values, dtype) < BOUND
    if record:
        q = sym_bulge.apply_chase_q(host.reflectors, np.eye(n, dtype=dtype)) * host.phase
        tri = np.diag(host.d) + np.diag(host.e, 1) + np.diag(host.e, -1)
        assert testing.orthogonality(q) < BOUND
        scale = float(np.abs(band).max()) * n * float(np.finfo(dtype).eps)
        assert float(np.abs(q @ tri @ q.T - a).max()) / scale < BOUND


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REAL)
def test_cuda_kernel_is_bitwise_reproducible(dtype):
    """A long chase (n = 3000, b = 16) 20 times on the device: the same finite bits every
    time (reflectors included), whatever the blocks' schedule."""
    import cupy

    band = cupy.asarray(_random_band(3000, 16, dtype, seed=3000 * 16))
    first = None
    for _ in range(20):
        run = [x.get() for x in _fields(sym_bulge.band_to_tridiagonal(band, record=True))]
        assert all(np.isfinite(x).all() for x in run)
        first = first or run
        assert all(np.array_equal(x, y) for x, y in zip(first, run, strict=True))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_band_on_the_gpu_comes_back_on_the_gpu(dtype):
    """Complex bands are chased by the Numba loop on a host copy: its bits, on the device."""
    import cupy

    band = _random_band(60, 5, dtype, seed=1)
    host = sym_bulge.band_to_tridiagonal(band, record=True)
    gpu = sym_bulge.band_to_tridiagonal(cupy.asarray(band), record=True)
    for x, y in zip(_fields(host), _fields(gpu), strict=True):
        assert isinstance(y, cupy.ndarray) and np.array_equal(x, y.get())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REAL)
def test_without_chase_on_gpu_the_numba_loop_chases_a_host_copy(dtype):
    import cupy

    band = _random_band(200, 8, dtype, seed=2)
    host = sym_bulge.band_to_tridiagonal(band, record=True)
    with tunables.override(chase_on_gpu=False):
        gpu = sym_bulge.band_to_tridiagonal(cupy.asarray(band), record=True)
    for x, y in zip(_fields(host), _fields(gpu), strict=True):
        assert isinstance(y, cupy.ndarray) and np.array_equal(x, y.get())
