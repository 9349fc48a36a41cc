"""Stage 2 of the Hermitian reduction on the GPU (condensed/kernels/sym_bulge.cu,
sym_bulge_cuda.py) against the Numba loop sym_bulge._chase.

Without a GPU: the dependency the kernel waits on is checked on the index sets of the
tasks (lag 2 orders every pair of tasks of different sweeps that share an entry, lag 1
does not), and the kernel's source runs on the CPU (host_sym_bulge.py, one thread per
block): the persistent kernel, and random wavefronts of sweeps in flight that respect the
dependency, put in place of band_to_tridiagonal's loop, must give the Numba loop's bits
(same operations, same order, same libm); wavefronts at lag 1 must not, for some seed.
On the GPU (marked gpu) the kernel must keep the band's eigenvalues and the Numba loop's
within BOUND·n·ε, rebuild the band from its reflectors, and give the same bits run after
run (it is deterministic: no atomics on data, every entry's operations in one order).
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd.condensed import sym_bulge, sym_bulge_cuda

import host_sym_bulge

BOUND = 30  # in units of n·ε of max|band|
REAL = (np.float32, np.float64)
SIZES = (3, 10, 57, 200)
BANDWIDTHS = (2, 3, 8, 16)
LAG = 2
_NUMBA_CHASE = sym_bulge._chase  # the loop itself, whatever a test puts in its place


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


def _unordered_conflicts(n, b, lag):
    """Pairs of tasks of different sweeps that share an entry but that waiting for task
    h + lag of the previous sweep (or its end) before task h does not order."""
    sweeps = [_task_entries(n, b, s) for s in range(n - 2)]
    bad = 0
    for later in range(1, len(sweeps)):
        for h, entries in enumerate(sweeps[later]):
            waited = h  # the last task of each earlier sweep that task h waits for
            for s in range(later - 1, -1, -1):
                waited = min(waited + lag, len(sweeps[s]) - 1)
                bad += sum(bool(t & entries) for t in sweeps[s][waited + 1:])
    return bad


def _random_band(n, b, dtype, seed):
    return testing.random_matrix(n, b + 1, dtype=dtype, seed=seed)


def _chased(chase, band, record, monkeypatch, **schedule):
    """band_to_tridiagonal(band) with ``chase`` in place of the Numba loop: (its
    Tridiagonal, the arrays chase ran on, (ab, v, tau), empty when there was nothing to
    chase, and what chase returned)."""
    arrays, returned = [], []

    def twin(ab, b, v, tau, record):
        returned.append(chase(ab, b, v, tau, record, **schedule))
        arrays.extend((ab, v, tau))

    with monkeypatch.context() as patch:
        patch.setattr(sym_bulge, "_chase", twin)
        t = sym_bulge.band_to_tridiagonal(band, record=record)
    return t, arrays, returned


def _numba(band, record, monkeypatch):
    return _chased(_NUMBA_CHASE, band, record, monkeypatch)


def _same_bits(x, y):
    """The same Tridiagonal (reflectors included) and the same chased arrays."""
    fields = x[0][:3] + tuple(x[0].reflectors or ())[:2] + tuple(x[1])
    others = y[0][:3] + tuple(y[0].reflectors or ())[:2] + tuple(y[1])
    return len(x[1]) == len(y[1]) and all(
        np.array_equal(a, b) for a, b in zip(fields, others, strict=True))


@pytest.fixture(scope="module")
def host_chase(tmp_path_factory):
    chase = host_sym_bulge.build(tmp_path_factory.mktemp("host_sym_bulge"))
    if chase is None:
        pytest.skip("g++ is not on PATH")
    return chase


@pytest.mark.parametrize("n, b", [(12, 2), (13, 3), (30, 4), (41, 5), (40, 8), (9, 8),
                                  (50, 3), (57, 16)])
def test_the_lag_of_two_tasks_is_exact(n, b):
    assert _unordered_conflicts(n, b, LAG) == 0
    if n - 3 >= 2 * b:  # sweeps of three tasks or more: one task less would race
        assert _unordered_conflicts(n, b, LAG - 1) > 0
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


# ---------------------------------------------------------------------------- GPU


def _gpu_chase(ab, b, v, tau, record):
    """sym_bulge_cuda.chase on device copies of the Numba loop's arrays, copied back."""
    import cupy

    arrays = [cupy.asarray(x) for x in (ab, v, tau)]
    sym_bulge_cuda.chase(arrays[0], b, arrays[1], arrays[2], record)
    for host, device in zip((ab, v, tau), arrays):
        host[...] = device.get()


def _dense(band):
    n, width = band.shape
    a = np.diag(band[:, 0].astype(np.float64))
    for k in range(1, width):
        a += np.diag(band[:n - k, k], -k) + np.diag(band[:n - k, k], k)
    return a


def _eig_units(t, ref, dtype):
    n = max(len(ref), 1)
    w = scipy.linalg.eigvalsh_tridiagonal(t.d.astype(np.float64), t.e.astype(np.float64))
    scale = max(float(np.abs(ref).max(initial=0.0)), float(np.finfo(np.float64).tiny))
    return float(np.abs(w - ref).max(initial=0.0)) / (scale * n * float(np.finfo(dtype).eps))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("n, b", [(3, 2), (57, 3), (200, 16), (500, 8), (1000, 32),
                                  (2000, 64), (3000, 16)])
def test_cuda_kernel_is_a_backward_stable_chase(monkeypatch, n, b, dtype):
    """The kernel's tridiagonal keeps the band's eigenvalues and the Numba loop's, and
    with its reflectors rebuilds the band (Q·T·Qᵀ = A, Q orthogonal, to n·ε). Entries are
    not compared one by one: CUDA's hypot and the C library's differ by an ulp, and the
    chase's forward error is not bounded by n·ε where its backward error is."""
    band = _random_band(n, b, dtype, seed=n * b)
    a = _dense(band)
    record = n <= 500
    with monkeypatch.context() as patch:
        patch.setattr(sym_bulge, "_chase", _gpu_chase)
        gpu = sym_bulge.band_to_tridiagonal(band, record=record)
    numba = sym_bulge.band_to_tridiagonal(band)
    ref = scipy.linalg.eigvalsh(a)
    assert _eig_units(gpu, ref, dtype) < BOUND
    numba_values = scipy.linalg.eigvalsh_tridiagonal(numba.d.astype(np.float64),
                                                     numba.e.astype(np.float64))
    assert _eig_units(gpu, numba_values, dtype) < BOUND
    if record:
        q = sym_bulge.apply_chase_q(gpu.reflectors, np.eye(n, dtype=dtype)) * gpu.phase
        tri = np.diag(gpu.d) + np.diag(gpu.e, 1) + np.diag(gpu.e, -1)
        assert testing.orthogonality(q) < BOUND
        scale = float(np.abs(band).max()) * n * float(np.finfo(dtype).eps)
        assert float(np.abs(q @ tri @ q.T - a).max()) / scale < BOUND


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", REAL)
def test_cuda_kernel_is_bitwise_reproducible(dtype):
    """A long chase (n = 3000, b = 16) 20 times on the device: the same finite bits every
    time, whatever the blocks' schedule."""
    import cupy

    n, b = 3000, 16
    band = _random_band(n, b, dtype, seed=n * b)
    ab = np.zeros((n, 2 * b), dtype)
    for k in range(b + 1):
        ab[:n - k, k] = band[:n - k, k]
    first = None
    for _ in range(20):
        run = cupy.asarray(ab)
        v = cupy.zeros((n - 2, -(-(n - 2) // b), b), dtype)
        tau = cupy.zeros(v.shape[:2], dtype)
        sym_bulge_cuda.chase(run, b, v, tau, True)
        out = [x.get() for x in (run, v, tau)]
        assert all(np.isfinite(x).all() for x in out)
        first = first or out
        assert all(np.array_equal(x, y) for x, y in zip(first, out, strict=True))
