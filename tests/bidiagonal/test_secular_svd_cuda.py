"""The CUDA twin of the bidiagonal SVD's secular equation roots
(bidiagonal/secular_svd_cuda.py, kernels/secular.cu) against the Numba solver it replaces:
secular_svd._root (dlasd4).

The problems: test_secular_svd's families (random, clustered, tiny weights, graded), poles
a few ε apart (as deflation lets them be), and the real merges of host solves of the
divide-and-conquer SVD's test families (clustered, graded, mass deflation, ...), k from 1
to 5000.

Without a GPU the kernel file runs on the host (host_secular.py: g++, one lane per root),
where each step's sums over the poles run in the Numba order: the origins, offsets and
step counts must be the Numba twin's bit for bit. On the GPU (pytest -m gpu) the 32 lanes
of a root add those sums in another order, so the roots may differ by its rounding: the
origins must agree and each root σ to within BOUND·k·ε·max(|d|, |σ|) (absolute, the max
over the problem's poles and roots, ε NumPy's machine epsilon).
"""

import numpy as np
import pytest

from gpusvd._core import tunables
from gpusvd._core.errors import LinAlgError
from gpusvd.bidiagonal import dc_svd as svd_dc
from gpusvd.bidiagonal import secular_svd
from gpusvd.bidiagonal.secular import _UNIT_ROUNDOFF, check_converged

from . import host_secular
from ..jacobi import host_kernel
from . import test_dc_svd as svd_tests
from . import test_secular_svd as svd_problems

BOUND = 4  # roots within BOUND·k·ε·max(|d|, |σ|) of the Numba twin's (GPU)
EPS = np.finfo(np.float64).eps
KINDS = ("random", "clustered", "tiny weights", "graded", "close")
SIZES = (1, 2, 3, 10, 33, 200, 1000)
SVD_SOLVES = ("random", "clustered", "graded", "gaussian", "equal", "rank-deficient")
MAX_STEPS = tunables.Tunables().secular_max_steps  # the default limit per root


def _close(k, seed):
    """Poles in clusters of four, 2 ulps apart, and weights of norm 1."""
    rng = np.random.default_rng(seed)
    centres = np.repeat(rng.standard_normal((k + 3) // 4), 4)[:k]
    d = np.unique(centres + np.spacing(centres) * 2 * (np.arange(k) % 4))
    z = rng.standard_normal(d.shape[0])
    return d, z / np.linalg.norm(z)


def svd_problem(kind, k, seed):
    """(d, z) of the SVD's secular equation, d[0] = 0."""
    if kind == "close":
        d, z = _close(k, seed)
        d = np.unique(np.append(0.0, np.abs(d)))[:k]
        return d, z[:d.shape[0]]
    return svd_problems._problem(kind, k, seed)


def svd_merges(kind, n):
    """The (d, z) of every call of secular_svd's Numba ``_roots`` in a host solve of the
    family ``kind``."""
    calls = []
    numba_roots = secular_svd._roots

    def recorded(d, z, *rest):
        calls.append((d.copy(), z.copy()))
        return numba_roots(d, z, *rest)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(secular_svd, "_roots", recorded)
        svd_dc.bidiagonal_svd_dc(*svd_tests._family(kind, n, seed=n))
    return calls


def numba_svd(d, z, max_steps=MAX_STEPS):
    """secular_svd._root on every root: (origin, tau, steps), unchecked."""
    out = np.empty(d.shape[0], np.int64), np.empty(d.shape[0]), np.empty(d.shape[0], np.int64)
    secular_svd._roots(d, z, *out, max_steps, _UNIT_ROUNDOFF)
    return out


# The kernel file built for the host: the Numba twin's bits.

@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return host_kernel.built_or_skip(host_secular.build, tmp_path_factory, "host_secular")


def _assert_same_bits(got, want):
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert want[2].max() <= MAX_STEPS  # converged, so the comparison covered whole runs


@pytest.mark.parametrize("k", SIZES + (5000,))
@pytest.mark.parametrize("kind", KINDS)
def test_host_build_svd_bit_for_bit(host, kind, k):
    d, z = svd_problem(kind, k, seed=k)
    _assert_same_bits(host.svd_roots(d, z, MAX_STEPS, _UNIT_ROUNDOFF), numba_svd(d, z))


@pytest.mark.parametrize("kind", SVD_SOLVES)
def test_host_build_svd_merges_bit_for_bit(host, kind):
    merges = svd_merges(kind, 700)
    assert merges
    for d, z in merges:
        _assert_same_bits(host.svd_roots(d, z, MAX_STEPS, _UNIT_ROUNDOFF), numba_svd(d, z))


def test_host_build_several_problems_as_each_alone(host):
    """A tree level's merges in one launch (a problem per blockIdx.y): each problem's
    roots, origins counted within it, the bits it gets alone."""
    problems = [svd_problem(kind, k, seed=k) for kind, k in
                (("random", 1), ("clustered", 40), ("graded", 7), ("random", 300))]
    d = np.concatenate([p[0] for p in problems])
    z = np.concatenate([p[1] for p in problems])
    sizes = [p[0].shape[0] for p in problems]
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    got = host.svd_roots(d, z, MAX_STEPS, _UNIT_ROUNDOFF, starts, sizes)
    for (dp, zp), first, k in zip(problems, starts, sizes):
        _assert_same_bits([x[first:first + k] for x in got], numba_svd(dp, zp))


def test_host_build_step_limit(host):
    """With no steps allowed every root but a lone pole's fails, as in the Numba twin,
    and check_converged raises the host solver's message."""
    d, z = svd_problem("random", 10, seed=1)
    got = host.svd_roots(d, z, 0, _UNIT_ROUNDOFF)
    np.testing.assert_array_equal(got[2], numba_svd(d, z, 0)[2])
    assert np.all(got[2] == 1)
    with tunables.override(secular_max_steps=0), pytest.raises(LinAlgError) as numba_error:
        secular_svd.secular_singular_values(d, z)
    with pytest.raises(LinAlgError) as error:
        check_converged(got[2], 0)
    assert str(error.value) == str(numba_error.value)


def test_check_converged_passes_converged_roots():
    check_converged(np.array([0, MAX_STEPS, 3]))
    with pytest.raises(LinAlgError, match="1 of 2 roots .* root 1.* in 30 steps"):
        check_converged(np.array([0, MAX_STEPS + 1]))


# The kernels on the device.

def _gpu_svd(d, z, max_steps=MAX_STEPS):
    import cupy

    from gpusvd.bidiagonal.secular_svd_cuda import svd_roots

    return [cupy.asnumpy(x) for x in svd_roots(cupy.asarray(d), cupy.asarray(z), max_steps)]


def _assert_close(d, got, want):
    """Same origins, every root converged and within BOUND·k·ε·scale of the twin's, the
    scale the largest |pole| or |root|."""
    origin, tau, steps = got
    check_converged(steps)
    np.testing.assert_array_equal(origin, want[0])
    roots, twins = d[origin] + tau, d[want[0]] + want[1]
    scale = max(np.abs(d).max(), np.abs(twins).max())
    assert np.abs(roots - twins).max() <= BOUND * d.shape[0] * EPS * scale


@pytest.mark.gpu
@pytest.mark.parametrize("k", SIZES + (5000,))
@pytest.mark.parametrize("kind", KINDS)
def test_gpu_svd_roots(kind, k):
    d, z = svd_problem(kind, k, seed=k)
    _assert_close(d, _gpu_svd(d, z), numba_svd(d, z))


@pytest.mark.gpu
@pytest.mark.parametrize("kind", SVD_SOLVES)
def test_gpu_svd_merges(kind):
    for d, z in svd_merges(kind, 2500):
        _assert_close(d, _gpu_svd(d, z), numba_svd(d, z))


@pytest.mark.gpu
def test_gpu_several_problems_as_each_alone():
    """A tree level's merges in one launch: each problem's roots the bits of its own
    launch, origins counted within it."""
    import cupy

    from gpusvd.bidiagonal.secular_svd_cuda import svd_roots

    problems = [svd_problem(kind, k, seed=k) for kind, k in
                (("random", 1), ("clustered", 40), ("graded", 7), ("random", 3000))]
    sizes = [p[0].shape[0] for p in problems]
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    got = svd_roots(cupy.asarray(np.concatenate([p[0] for p in problems])),
                    cupy.asarray(np.concatenate([p[1] for p in problems])),
                    starts=starts, sizes=sizes)
    got = [cupy.asnumpy(x) for x in got]
    for (d, z), first, k in zip(problems, starts, sizes):
        for x, alone in zip(got, _gpu_svd(d, z)):
            np.testing.assert_array_equal(x[first:first + k], alone)
    with pytest.raises(ValueError, match="within the 3 given"):
        svd_roots(cupy.zeros(3), cupy.ones(3), starts=[1], sizes=[3])


@pytest.mark.gpu
def test_gpu_one_pole_is_exact():
    origin, tau, steps = _gpu_svd(np.array([0.0]), np.array([-0.75]))
    assert origin[0] == 0 and tau[0] == 0.75 and steps[0] == 0


@pytest.mark.gpu
def test_gpu_step_limit_raises():
    d, z = svd_problem("random", 10, seed=1)
    _, _, steps = _gpu_svd(d, z, max_steps=0)
    with pytest.raises(LinAlgError, match=f"{len(d)} of {len(d)} roots .* did not converge "
                                          "in 0 steps"):
        check_converged(steps, 0)


@pytest.mark.gpu
def test_gpu_rejects_mismatched_shapes():
    import cupy

    from gpusvd.bidiagonal.secular_svd_cuda import svd_roots

    with pytest.raises(ValueError, match="k >= 1 poles"):
        svd_roots(cupy.zeros(0), cupy.zeros(0))
    with pytest.raises(ValueError, match="as many weights"):
        svd_roots(cupy.zeros(3), cupy.zeros(2))
