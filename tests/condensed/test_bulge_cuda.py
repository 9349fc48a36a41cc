"""Stage 2 on the GPU (condensed/kernels/bulge.cu, bulge_cuda.py) against the Numba loop.

Without a GPU: the dependency the kernel waits on is checked on the index sets of the
tasks (lag 2 with each task's corner entry at lag 3 orders every pair of tasks of
different sweeps that share an entry, as lag 3 does; lag 2 alone does not), and the
kernel's source runs on the CPU (host_bulge.py, one thread per block), real and complex
bands: the persistent kernel, and random wavefronts of sweeps in flight that respect the
dependency (tasks waiting at their corner included), put in NumPy's row of
band_to_bidiagonal's twin table, must give the Numba loop's bits (same operations, same
order, same libm).
Both twins rescale a reflector of subnormal entries as dlarfg does (bulge._reflector):
without it the trailing block of a long chase overflowed to NaN (n = 3000, b = 16).
On the GPU (marked gpu) the kernel must agree with the Numba loop within BOUND·n·ε of
max|band| (only CUDA's hypot rounds differently, and the chase carries that on), keep
LAPACK's singular values, give the same bits run after run (it is deterministic: no
atomics on data, every entry's operations in one order), and serve band_to_bidiagonal
and the two-stage driver on CuPy.
"""

import numpy as np
import pytest
import scipy.linalg

from gpusvd import testing
from gpusvd.condensed import band as stage1
from gpusvd.condensed import bulge, bulge_cuda

from . import host_bulge
from ..jacobi import host_kernel
from . import naive_condensed as naive

BOUND = 30  # in units of n·ε of max|band|
REAL = (np.float32, np.float64)
DTYPES = REAL + (np.complex64, np.complex128)
# (n, b): b = 1 (nothing to chase), 2, 8, 32, one block (b ≥ n − 1), short last blocks.
CASES = [(3, 2), (9, 8), (12, 3), (41, 5), (100, 2), (200, 32), (300, 8), (500, 1),
         (500, 2), (500, 8), (500, 32)]
LAG, CORNER_LAG = 2, 3


def _task_entries(n, b, s):
    """The entries (i, j) each task of sweep s reads or writes, in the order of the Numba
    loop (bulge.py): the row reflector of row s and its rows, then for each block the
    column reflector and its columns and, while a bulge remains, the row reflector and
    its rows."""
    def block(rows, cols):
        return {(i, j) for i in rows for j in cols}

    st, ed = s + 1, min(s + b, n - 1)
    tasks = [block([s], range(st, ed + 1)) | block(range(st, ed + 1), range(st, ed + 1))]
    while True:
        j1, j2 = ed + 1, min(ed + b, n - 1)
        tasks.append(block(range(st, ed + 1), range(st, j2 + 1)))
        if j2 <= j1:
            return tasks
        tasks.append(block([st], range(j1, j2 + 1)) | block(range(st + 1, j2 + 1),
                                                            range(j1, j2 + 1)))
        st, ed = j1, j2


def _corners(n, b, s):
    """The corner entry of each task of sweep s (bulge.cu): the last entry of the last
    column a column task updates, or of the last row a row task updates."""
    ed = min(s + b, n - 1)
    corners = [(ed, ed)]
    while True:
        j2 = min(ed + b, n - 1)
        corners.append((ed, j2))
        if j2 <= ed + 1:
            return corners
        corners.append((j2, j2))
        ed = j2


def _random_band(n, b, dtype, seed):
    return testing.random_matrix(n, b + 1, dtype=dtype, seed=seed)


def _chased(chase, band, record, monkeypatch, **schedule):
    """band_to_bidiagonal(band) with ``chase`` as NumPy's twin: (its Bidiagonal, the arrays
    the twin chased, (ab, v_left, tau_left, v_right, tau_right), empty when there was
    nothing to chase, and what the twin returned)."""
    arrays, returned = [], []

    def twin(ab, b, *reflectors):
        returned.append(chase(ab, b, *reflectors, **schedule))
        arrays.extend((ab, *reflectors[:4]))

    with monkeypatch.context() as patch:
        patch.setitem(bulge._TWINS, "numpy", twin)
        bd = bulge.band_to_bidiagonal(band, record=record)
    return bd, arrays, returned


def _assert_same_bits(x, y):
    """The same Bidiagonal (reflectors included) and the same chased arrays."""
    assert len(x[1]) == len(y[1])
    fields = x[0][:4] + tuple(x[0].reflectors or ())[:4] + tuple(x[1])
    others = y[0][:4] + tuple(y[0].reflectors or ())[:4] + tuple(y[1])
    for a, b in zip(fields, others, strict=True):
        assert np.array_equal(a, b)


@pytest.fixture(autouse=True)
def chase_on_gpu():
    """The kernel is what this module tests: on, whatever the default (tunables)."""
    from gpusvd._core import tunables

    with tunables.override(chase_on_gpu=True):
        yield


@pytest.fixture(scope="module")
def host_chase(tmp_path_factory):
    return host_kernel.built_or_skip(host_bulge.build, tmp_path_factory, "host_bulge")


@pytest.mark.parametrize("n, b", [(12, 2), (13, 3), (30, 4), (41, 5), (40, 8), (9, 8),
                                  (50, 3), (33, 16)])
def test_lag_two_with_the_corner_at_three_is_exact(n, b):
    sweeps = [_task_entries(n, b, s) for s in range(n - 2)]
    corners = [_corners(n, b, s) for s in range(n - 2)]
    assert [len(c) for c in corners] == [len(t) for t in sweeps]
    assert all(c in t for cs, ts in zip(corners, sweeps) for c, t in zip(cs, ts))
    assert host_bulge.unordered_conflicts(sweeps, LAG, corners, CORNER_LAG) == 0
    assert host_bulge.unordered_conflicts(sweeps, CORNER_LAG) == 0
    if n - 2 > b:   # sweeps of more than one block: without the corner's wait they race
        assert host_bulge.unordered_conflicts(sweeps, LAG) > 0
        assert host_bulge.unordered_conflicts(sweeps, LAG, corners, LAG) > 0
        assert host_bulge.unordered_conflicts(sweeps, LAG - 1, corners, CORNER_LAG) > 0
    assert bulge_cuda._LAG == LAG
    kernel = host_bulge.KERNEL.read_text()
    assert f"CHASE_LAG = {LAG};" in kernel and f"CHASE_CORNER_LAG = {CORNER_LAG};" in kernel


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", CASES)
@pytest.mark.parametrize("record", [False, True])
def test_host_kernel_gives_the_numba_bits(host_chase, monkeypatch, n, b, dtype, record):
    band = _random_band(n, b, dtype, seed=n + b)
    _assert_same_bits(_chased(bulge._chase, band, record, monkeypatch),
                      _chased(host_chase, band, record, monkeypatch))


@pytest.mark.parametrize("dtype", DTYPES)
# b = 40: windows longer than a thread holds, so the corner waits in the loops.
@pytest.mark.parametrize("n, b", [(41, 5), (100, 2), (300, 8), (500, 32), (200, 40)])
@pytest.mark.parametrize("seed, window", [(0, 2), (1, 7), (2, 1000)])
def test_any_wavefront_that_respects_the_lag_gives_the_numba_bits(host_chase, monkeypatch,
                                                                   n, b, dtype, seed, window):
    band = _random_band(n, b, dtype, seed=seed)
    wavefront = _chased(host_chase, band, True, monkeypatch, schedule=(seed, window))
    _assert_same_bits(_chased(bulge._chase, band, True, monkeypatch), wavefront)
    # Sweeps ran concurrently, never more than the launch configuration allows for.
    assert 1 < wavefront[2][0] <= min(window, bulge_cuda.sweeps_in_flight(n, b))


@pytest.mark.parametrize("n, b", [(41, 5), (300, 8)])
def test_a_wavefront_without_the_corners_wait_races(host_chase, monkeypatch, n, b):
    # The wavefronts above reach the corners: with the corner at the task's own lag, one
    # of them changes the bits.
    band = _random_band(n, b, np.float64, seed=1)
    numba = _chased(bulge._chase, band, True, monkeypatch)
    raced = _chased(host_chase, band, True, monkeypatch, schedule=(1, 1000, LAG))
    assert not (np.array_equal(numba[0].d, raced[0].d)
                and np.array_equal(numba[0].e, raced[0].e))


@pytest.mark.parametrize("n, b, dtype, scale", [
    (3000, 16, np.float64, 1.0),         # the race report's band: the Numba loop gave NaN
    (200, 8, np.float64, 2.0 ** -1060),  # subnormal from the start
    (200, 8, np.float32, 2.0 ** -140),   # float32 subnormals: double arithmetic, no rescaling
    (200, 8, np.complex128, 2.0 ** -1060),
    (200, 8, np.complex64, 2.0 ** -140),
])
def test_subnormal_reflectors_are_rescaled_alike(host_chase, monkeypatch, n, b, dtype, scale):
    band = _random_band(n, b, dtype, seed=n * b) * dtype(scale)
    record = n <= 200
    numba = _chased(bulge._chase, band, record, monkeypatch)
    assert np.isfinite(numba[0].d).all() and np.isfinite(numba[0].e).all()
    _assert_same_bits(numba, _chased(host_chase, band, record, monkeypatch))


def test_launch_config():
    for n, b in [(3, 2), (100, 2), (1000, 16), (8192, 32), (16384, 64), (5000, 200)]:
        config = bulge_cuda.launch_config(n, b, 8, 132, 8)
        assert config.threads % 32 == 0
        assert config.threads >= min(2 * b - 1, 256) and config.threads <= 256
        assert 1 <= config.blocks <= min(n - 2, 132 * 8, bulge_cuda.sweeps_in_flight(n, b))
        # the squares (b doubles), tau, the reflector, each on 16 bytes (the Scratch)
        assert config.shared_bytes == -(-(-(-8 * b // 16) * 16 + 8) // 16) * 16 + b * 8
        wide = bulge_cuda.launch_config(n, b, 16, 132, 8, complex_data=True)
        assert wide.shared_bytes == -(-(-(-8 * b // 16) * 16 + 16) // 16) * 16 + b * 16
        assert wide[:2] == config[:2]
    assert bulge_cuda.launch_config(16384, 16, 4, 132, 8).blocks == 1025
    assert bulge_cuda.launch_config(16384, 16, 4, 132, 2).blocks == 264


def test_the_kernel_takes_real_and_complex_bands():
    assert all(bulge_cuda.supports(dtype) for dtype in DTYPES)
    assert not bulge_cuda.supports(np.int32) and not bulge_cuda.supports(np.float16)
    with pytest.raises(ValueError, match="float32, float64, complex64 and complex128"):
        bulge_cuda.chase(np.zeros((5, 5), np.int32), 2, None, None, None, None, False)


# ---------------------------------------------------------------------------- GPU


def _units(x, y, band):
    n = max(band.shape[0], 1)
    scale = max(float(np.abs(band).max(initial=0.0)), float(np.finfo(band.dtype).tiny))
    return float(np.abs(x - y).max(initial=0.0)) / (scale * n * np.finfo(band.dtype).eps)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n, b", [(3, 2), (41, 5), (500, 2), (500, 8), (1000, 32),
                                  (2000, 64), (3000, 16)])
def test_cuda_kernel_is_a_backward_stable_chase(n, b, dtype):
    """The kernel's bidiagonal and recorded reflectors rebuild the band (Q·B·Pᴴ = band,
    Q and P orthogonal, to n·ε), and its singular values are the Numba loop's and
    LAPACK's. Entries are not compared one by one: CUDA's hypot and the Numba loop's
    differ by an ulp, and the chase's forward error is not bounded by n·ε where its
    backward error is (H100, 2026-11-25: d, e and signs of tiny entries differed by up
    to 170 n·ε on graded bands whose singular values agreed)."""
    import cupy

    band = _random_band(n, b, dtype, seed=n * b)
    a = stage1.band_matrix(band).astype(np.result_type(dtype, np.float64))
    gpu = bulge.band_to_bidiagonal(cupy.asarray(band), record=True)
    assert isinstance(gpu.d, cupy.ndarray) and isinstance(gpu.reflectors.v_left, cupy.ndarray)
    if n <= 1000:
        host = bulge.Bidiagonal(*(x.get() for x in gpu[:4]), bulge.ChaseReflectors(
            *(x.get() if hasattr(x, "get") else x for x in gpu.reflectors)))
        eye = np.eye(n, dtype=dtype)
        q = naive.apply_chase_reflectors(host.reflectors, n, eye, side="left") * host.phase_left
        p = naive.apply_chase_reflectors(host.reflectors, n, eye, side="right") * host.phase_right
        assert testing.orthogonality(q) < BOUND and testing.orthogonality(p) < BOUND
        b_real = naive.bidiagonal_matrix(host.d, host.e).astype(dtype)
        assert _units(q @ b_real @ p.conj().T, a, band) < BOUND
    numba = bulge.band_to_bidiagonal(band)
    s_gpu = scipy.linalg.svdvals(naive.bidiagonal_matrix(gpu.d.get(), gpu.e.get()).astype(np.float64))
    s_numba = scipy.linalg.svdvals(naive.bidiagonal_matrix(numba.d, numba.e).astype(np.float64))
    ref = scipy.linalg.svdvals(a)
    assert testing.sv_error(s_gpu.astype(dtype), ref) < BOUND * n
    assert testing.sv_error(s_gpu.astype(dtype), s_numba) < BOUND * n


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_cuda_kernel_is_bitwise_reproducible(dtype):
    """The race report's case (NaN once, H100, 2026-11-25: the dlarfg rescaling was
    missing, in both twins) chased 20 times: the same finite bits every time."""
    import cupy

    band = cupy.asarray(_random_band(3000, 16, dtype, seed=3000 * 16))
    first = None
    for _ in range(20):
        bd = bulge.band_to_bidiagonal(band, record=True)
        run = [x.get() for x in bd[:4] + tuple(bd.reflectors[:4])]
        assert all(np.isfinite(x).all() for x in run)
        first = first or run
        assert all(np.array_equal(x, y) for x, y in zip(first, run, strict=True))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_band_on_the_gpu_comes_back_on_the_gpu(dtype):
    """A complex band is chased by the kernel, its results on the GPU, the Numba loop's
    to rounding; with the tunable chase_on_gpu off, by the Numba loop on a host copy,
    bit for bit."""
    import cupy

    from gpusvd._core import tunables

    band = _random_band(60, 5, dtype, seed=1)
    host = bulge.band_to_bidiagonal(band, record=True)
    gpu = bulge.band_to_bidiagonal(cupy.asarray(band), record=True)
    for x, y in zip(host[:4] + tuple(host.reflectors[:4]), gpu[:4] + tuple(gpu.reflectors[:4])):
        assert isinstance(y, cupy.ndarray) and _units(x, y.get(), band) < BOUND
    with tunables.override(chase_on_gpu=False):
        copied = bulge.band_to_bidiagonal(cupy.asarray(band), record=True)
    for x, y in zip(host[:4] + tuple(host.reflectors[:4]),
                    copied[:4] + tuple(copied.reflectors[:4])):
        assert isinstance(y, cupy.ndarray) and np.array_equal(x, y.get())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_two_stage_values_on_the_gpu_keep_lapacks(dtype):
    import cupy

    from gpusvd.condensed.driver import two_stage_singular_values

    a = testing.random_matrix(1500, 1200, dtype=dtype, seed=2)
    s = two_stage_singular_values(cupy.asarray(a), bandwidth=32)
    assert isinstance(s, cupy.ndarray)
    ref = scipy.linalg.svdvals(a.astype(np.result_type(dtype, np.float64)))
    assert s.dtype == np.finfo(dtype).dtype and testing.sv_error(s.get(), ref) < BOUND * 1500


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_follow_reads_the_final_rows(dtype):
    """bulge_cuda.follow, reading the band while the kernel runs: pieces in order that
    cover B's n rows, their |d| and |e| bit for bit the chase's final ones (when a row is
    final: follow's docstring). The band of a Gaussian matrix, as the SVD chases it: its
    bidiagonal has no subnormal entries, which the device's float32 |x| would flush."""
    import cupy

    a = cupy.random.RandomState(6).standard_normal((6000, 6000)).astype(dtype)
    bd = bulge.band_to_bidiagonal(stage1.band_of(stage1.reduce_to_band(a, bandwidth=32)),
                                record=True)
    pieces = list(bulge_cuda.follow(bd.band, 32, bd.progress))
    d, e = (np.asarray(x.get(), np.float64) for x in (bd.d, bd.e))
    ends = np.cumsum([len(piece[1]) for piece in pieces])
    assert [piece[0] for piece in pieces] == [0, *ends[:-1]] and ends[-1] == 6000
    assert np.array_equal(np.concatenate([piece[1] for piece in pieces]), d)
    assert np.array_equal(np.concatenate([piece[2] for piece in pieces]), e)
