"""The CUDA twins of the bidiagonal divide and conquer's merge vectors and leaves
(bidiagonal/merge_vectors_cuda.py, kernels/merge_vectors.cu) against the NumPy code they
replace: dc_svd._merge_vectors and the leaves' setitems
(dc_svd._place_host).

The merges' inputs are real ones: the poles, weights and roots each merge of a host solve
passes to its vectors (random, clustered, graded and mass-deflating problems), k from 1
to a few thousand. Each entry is computed by the same operations as the NumPy code; only
the order of the product over j (ẑ) and of the sums of squares (the norms) differs, so the
entries, at most 1 in size, agree to BOUND·k·ε. The placement copies: bit for bit.

Without a GPU the kernel file runs on the host (g++, one thread per block, the stubs of
tests/jacobi/host_kernel.py), which checks the same arithmetic and indexing in CI; the
GPU tests (pytest -m gpu) run the kernels themselves and the solver end to end.
"""

import ctypes
import pathlib

import numpy as np
import pytest

from gpusvd import testing
from gpusvd._core import tunables
from gpusvd.bidiagonal import dc_svd as svd_dc

from ..jacobi import host_kernel  # the CUDA stubs of every host build
from . import test_dc_svd as svd_tests

_ROOT = pathlib.Path(__file__).resolve().parents[2]

KERNEL = _ROOT / "src/gpusvd/bidiagonal/kernels/merge_vectors.cu"
BOUND = 8  # entries within BOUND·k·ε of the NumPy twin's
END_TO_END = 30  # residual and orthogonality in units of n·ε, as the solvers' tests
EPS = np.finfo(np.float64).eps

SHIM = host_kernel.STUBS + f"""
#include "{KERNEL}"
static void start(long long block)
{{
    blockDim.x = 1;
    threadIdx.x = 0;
    blockIdx.x = (unsigned)block;
    blockIdx.y = 0;
}}
extern "C" void svd_vectors(const double *d, const double *z, const double *tau,
                            const long long *origin, const long long *starts,
                            const long long *ks, long long count, long long ld, double *zhat,
                            double *u, double *v)
{{
    for (long long p = 0; p < count; ++p)
        for (long long i = 0; i < ks[p] + 3; ++i)  // rows past k: the idle blocks
            start(i), blockIdx.y = (unsigned)p,
                svd_merge_weights<double>(d, z, tau, origin, starts, ks, zhat);
    for (long long p = 0; p < count; ++p)
        for (long long j = 0; j < ks[p] + 3; ++j)
            start(j), blockIdx.y = (unsigned)p,
                svd_merge_columns<double>(d, tau, origin, zhat, starts, ks, ld, u, v);
}}
extern "C" void place(double *out, long long ld, const double *packed, long long size,
                      const long long *starts, const long long *sizes, long long count)
{{
    for (long long b = 0; b < count; ++b)
        start(b), place_blocks<double>(out, ld, packed, size, starts, sizes);
}}
extern "C" void gather(const double *q, long long ld, const long long *starts,
                       const long long *rows, const long long *offsets, const long long *cols,
                       long long count, long long width, long long height,
                       const long long *ones, double *stack)
{{
    for (long long b = 0; b < count * width; ++b)
        start(b), gather_columns<double>(q, ld, starts, rows, offsets, cols, width, height,
                                         ones, stack);
}}
extern "C" void scatter(double *q, long long ld, const long long *starts,
                        const long long *rows, const long long *offsets, const long long *cols,
                        long long count, long long width, long long height,
                        const double *stack)
{{
    for (long long b = 0; b < count * width; ++b)
        start(b), scatter_columns<double>(q, ld, starts, rows, offsets, cols, width, height,
                                          stack);
}}
"""


def _record(solve, table, kind, n, monkeypatch):
    """The (poles, z, origin, tau) of every merge of a host solve of the family ``kind``."""
    merges = []
    twin = table["numpy"]

    def recorded(poles, z, origin, tau):
        merges.append((poles.copy(), z.copy(), np.asarray(origin).copy(), tau.copy()))
        return twin(poles, z, origin, tau)

    with monkeypatch.context() as patch:
        patch.setitem(table, "numpy", recorded)
        solve(kind, n)
    return merges


def _svd_solve(kind, n):
    svd_dc.bidiagonal_svd_dc(*svd_tests._family(kind, n, seed=n))


SVD_KINDS = ("random", "clustered", "graded", "gaussian", "equal", "rank-deficient")


def svd_merges(kind, n, monkeypatch):
    return _record(_svd_solve, svd_dc._MERGE_VECTORS, kind, n, monkeypatch)


def _assert_close(got, want, k):
    assert got.shape == want.shape == (k, k)
    assert np.abs(got - want).max() <= BOUND * k * EPS


def _pointer(x):
    return x.ctypes.data_as(ctypes.c_void_p)


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """The kernel file built for the host (skipped without g++)."""
    return host_kernel.built_or_skip(
        lambda folder: host_kernel.compile_host(folder, SHIM, "merge_vectors"),
        tmp_path_factory, "merge_vectors")


def _host_vectors(lib, name, poles, z, origin, tau, outputs, sizes=None, width=None):
    """The host build's (U_M, V_M) of one merge (k×k, column-major), or with ``sizes``
    of several laid end to end: (count, width, width) stacks of U_Mᵀ and V_Mᵀ."""
    total = poles.shape[0]
    arrays = [np.ascontiguousarray(a, np.float64) for a in (poles, z, tau)]
    origin = np.ascontiguousarray(origin, np.int64)
    if sizes is None:
        sizes, width = [total], total
    sizes = np.asarray(sizes, np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    results = [np.zeros((len(sizes), width, width)) for _ in range(outputs)]
    getattr(lib, name)(*map(_pointer, arrays), _pointer(origin), _pointer(starts),
                       _pointer(sizes), ctypes.c_longlong(len(sizes)),
                       ctypes.c_longlong(width), _pointer(np.zeros(total)),
                       *map(_pointer, results))
    if len(sizes) == 1 and width == total:
        return [np.asfortranarray(r[0].T) for r in results]
    return results


@pytest.mark.parametrize("kind", SVD_KINDS)
def test_host_build_svd_matches_numpy(host, kind, monkeypatch):
    for poles, z, origin, tau in svd_merges(kind, 500, monkeypatch):
        u, v = _host_vectors(host, "svd_vectors", poles, z, origin, tau, 2)
        u_np, v_np = svd_dc._merge_vectors(poles, z, origin, tau, np)
        _assert_close(u, u_np, len(poles))
        _assert_close(v, v_np, len(poles))


def _end_to_end(merges):
    """Merges laid end to end as one launch takes them: (poles, z, origin, tau), the
    sizes, the width of the stacks (one more than the largest, so every slot has
    padding)."""
    sizes = [m[0].shape[0] for m in merges]
    joined = [np.concatenate([m[i] for m in merges]) for i in range(4)]
    return joined, sizes, max(sizes) + 1


@pytest.mark.parametrize("kind", ["random", "clustered"])
def test_host_build_several_merges_as_each_alone(host, kind, monkeypatch):
    """A tree level's merges in one launch of each kernel: each merge's vectors in its
    slot of the stacks, transposed, the bits of the merge alone; zeros elsewhere."""
    merges = svd_merges(kind, 500, monkeypatch)[:6]
    joined, sizes, width = _end_to_end(merges)
    ut, vt = _host_vectors(host, "svd_vectors", *joined, 2, sizes, width)
    for merge, k, slot_u, slot_v in zip(merges, sizes, ut, vt):
        u, v = _host_vectors(host, "svd_vectors", *merge, 2)
        assert np.array_equal(slot_u[:k, :k].T, u) and np.array_equal(slot_v[:k, :k].T, v)
        for slot in (slot_u, slot_v):
            assert not slot[k:].any() and not slot[:, k:].any()


def _leaves(seed):
    """Blocks of sizes 1 to 33 along a diagonal with gaps (the SVD's coupling rows), in
    the leaves' layout (dc_svd._solve_leaves: slot[:m, :m] = blockᵀ, NaN elsewhere, which
    no placement may read)."""
    rng = np.random.default_rng(seed)
    sizes = np.array([1, 33, 5, 32, 2, 17], np.int64)
    packed = np.full((len(sizes), 33, 33), np.nan)
    for slot, m in zip(packed, sizes):
        slot[:m, :m] = rng.standard_normal((m, m))
    starts = np.cumsum([0] + [m + 1 for m in sizes[:-1]]).astype(np.int64)
    return packed, starts, sizes, int(starts[-1] + sizes[-1] + 3)


def test_host_build_places_leaves(host):
    packed, starts, sizes, n = _leaves(1)
    want = np.zeros((n, n), order="F")
    svd_dc._place_host(want[1:, 1:], packed, starts, sizes)
    assert not np.isnan(want).any()
    for slot, start, m in zip(packed, starts, sizes):
        assert np.array_equal(want[1 + start:1 + start + m, 1 + start:1 + start + m],
                              slot[:m, :m].T)
    got = np.zeros((n, n), order="F")
    host.place(_pointer(got[1:, 1:]), ctypes.c_longlong(n), _pointer(packed),
               ctypes.c_longlong(packed.shape[1]), _pointer(starts), _pointer(sizes),
               ctypes.c_longlong(len(sizes)))
    assert np.array_equal(got, want)


def _level(seed, n=60):
    """A tree level's merges on an n×n column-major q: blocks with a row between them
    (the coupling rows of the level above), each with its kept columns in the merge's
    order (not sorted, the zero pole's first), of several counts; the row of each
    merge's 1 in its first kept column, or −1 (a V update); and their vectors'
    zero-padded transposes."""
    rng = np.random.default_rng(seed)
    q = np.asfortranarray(rng.standard_normal((n, n)))
    starts, rows, cols, ones = [], [], [], []
    start = 1
    for m in (7, 12, 1, 9, 13):
        k = int(rng.integers(1, m + 1))
        starts.append(start)
        rows.append(m + int(rng.integers(0, 2)))  # V's block has a column more (sqre)
        cols.append(start + rng.permutation(m)[:k])
        ones.append(int(rng.integers(-1, m)))
        start += m + 1
    width = max(len(c) for c in cols)
    wt = np.zeros((len(cols), width, width))
    for slot, c in zip(wt, cols):
        slot[:len(c), :len(c)] = rng.standard_normal((len(c), len(c)))
    return q, starts, rows, cols, ones, wt


def _indices(starts, rows, cols):
    offsets = np.concatenate(([0], np.cumsum([len(c) for c in cols])))
    return [np.ascontiguousarray(x, np.int64) for x in
            (starts, rows, offsets, np.concatenate(cols))]


def _gathered(q, starts, rows, cols, ones, shape):
    """gather_columns' stack by NumPy's indexing."""
    want = np.zeros(shape)
    for i, (s, m, c, one) in enumerate(zip(starts, rows, cols, ones)):
        want[i, :len(c), :m] = q[s:s + m, c].T
        if one >= 0:
            want[i, 0, one] = 1.0
    return want


def test_host_build_gathers_and_scatters_a_level(host):
    """gather_columns: each merge's kept columns on its rows, transposed into a stack
    and zero-padded; scatter_columns: the stack back into those entries and no other;
    both bit for bit against NumPy's indexing."""
    q, starts, rows, cols, ones, wt = _level(5)
    count, width, height = len(cols), wt.shape[1], max(rows)
    indices = _indices(starts, rows, cols)
    stack = np.full((count, width, height), np.nan)
    host.gather(_pointer(q), ctypes.c_longlong(q.shape[0]), *map(_pointer, indices),
                ctypes.c_longlong(count), ctypes.c_longlong(width), ctypes.c_longlong(height),
                _pointer(np.asarray(ones, np.int64)), _pointer(stack))
    assert np.array_equal(stack, _gathered(q, starts, rows, cols, ones, stack.shape))
    new = np.random.default_rng(6).standard_normal(stack.shape)
    got, want = q.copy(order="F"), q.copy(order="F")
    host.scatter(_pointer(got), ctypes.c_longlong(q.shape[0]), *map(_pointer, indices),
                 ctypes.c_longlong(count), ctypes.c_longlong(width), ctypes.c_longlong(height),
                 _pointer(new))
    for i, (s, m, c) in enumerate(zip(starts, rows, cols)):
        want[s:s + m, c] = new[i, :len(c), :m].T
    assert np.array_equal(got, want)


def test_update_columns_is_each_merge_s_product():
    """dc_svd._update_columns: q's kept columns of each merge (with its 1) times
    W_i = wt[i]ᵀ on the merge's rows, every other entry unchanged."""
    q, starts, rows, cols, ones, wt = _level(7)
    want = q.copy(order="F")
    for i, (s, m, c, one) in enumerate(zip(starts, rows, cols, ones)):
        k = len(c)
        block = np.eye(q.shape[1])
        block[np.ix_(c, c)] = wt[i, :k, :k].T
        rows_i = slice(s, s + m)
        if one >= 0:
            want[s + one, c[0]] = 1.0
        want[rows_i] = want[rows_i] @ block
    svd_dc._update_columns(q, starts, rows, cols, ones, wt, np)
    assert np.abs(q - want).max() <= 4 * q.shape[0] * EPS * np.abs(want).max()


# The kernels on the device.

@pytest.mark.gpu
@pytest.mark.parametrize("seed", [8, 9])
def test_gpu_update_columns(seed):
    import cupy

    from gpusvd.bidiagonal.merge_vectors_cuda import update_columns

    q, starts, rows, cols, ones, wt = _level(seed, n=80)
    got = cupy.asarray(q, order="F")
    update_columns(got[1:, 1:], [s - 1 for s in starts], rows, [c - 1 for c in cols], ones,
                   cupy.asarray(wt))
    svd_dc._update_columns(q[1:, 1:], [s - 1 for s in starts], rows, [c - 1 for c in cols],
                           ones, wt, np)
    assert np.abs(cupy.asnumpy(got) - q).max() <= 4 * q.shape[0] * EPS * np.abs(q).max()
    with pytest.raises(ValueError, match="column-major"):
        update_columns(cupy.asarray(q, order="C"), starts, rows, cols, ones,
                       cupy.asarray(wt))

@pytest.mark.gpu
@pytest.mark.parametrize("n", [700, 2500])
@pytest.mark.parametrize("kind", SVD_KINDS)
def test_gpu_svd_merge_vectors(kind, n, monkeypatch):
    import cupy

    from gpusvd.bidiagonal.merge_vectors_cuda import svd_merge_vectors

    for poles, z, origin, tau in svd_merges(kind, n, monkeypatch):
        u, v = svd_merge_vectors(poles, z, origin, tau)
        assert u.flags.f_contiguous and v.flags.f_contiguous
        u_np, v_np = svd_dc._merge_vectors(poles, z, origin, tau, np)
        _assert_close(cupy.asnumpy(u), u_np, len(poles))
        _assert_close(cupy.asnumpy(v), v_np, len(poles))


@pytest.mark.gpu
def test_gpu_several_merges_as_each_alone(monkeypatch):
    """A tree level's merges in one launch of each kernel on the device: each merge's
    slot the transposed bits of its own launch, zeros elsewhere."""
    import cupy

    from gpusvd.bidiagonal.merge_vectors_cuda import svd_merge_vectors

    merges = svd_merges("random", 1500, monkeypatch)[-6:]
    joined, sizes, width = _end_to_end(merges)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    poles, z, tau = (cupy.asarray(x, np.float64) for x in (joined[0], joined[1], joined[3]))
    ut, vt = svd_merge_vectors(poles, z, cupy.asarray(joined[2], np.int64), tau,
                               starts=starts, sizes=sizes, width=width)
    assert ut.shape == vt.shape == (len(sizes), width, width)
    for merge, k, slot_u, slot_v in zip(merges, sizes, cupy.asnumpy(ut), cupy.asnumpy(vt)):
        u, v = svd_merge_vectors(*merge)
        assert np.array_equal(slot_u[:k, :k].T, cupy.asnumpy(u))
        assert np.array_equal(slot_v[:k, :k].T, cupy.asnumpy(v))
        for slot in (slot_u, slot_v):
            assert not slot[k:].any() and not slot[:, k:].any()


@pytest.mark.gpu
def test_gpu_single_pole():
    """k = 1: M is 1×1, its vectors ±1."""
    import cupy

    from gpusvd.bidiagonal.merge_vectors_cuda import svd_merge_vectors

    poles, z, origin, tau = np.zeros(1), np.array([-0.5]), np.zeros(1, np.int64), np.array([0.5])
    u, v = svd_merge_vectors(poles, z, origin, tau)
    u_np, v_np = svd_dc._merge_vectors(poles, z, origin, tau, np)
    assert np.array_equal(cupy.asnumpy(u), u_np) and np.array_equal(cupy.asnumpy(v), v_np)


@pytest.mark.gpu
def test_gpu_places_leaves():
    import cupy

    from gpusvd.bidiagonal.merge_vectors_cuda import leaf_stack, place_blocks

    packed, starts, sizes, n = _leaves(2)
    want = np.zeros((n, n), order="F")
    svd_dc._place_host(want[1:, 1:], packed, starts, sizes)
    for stack in (packed, leaf_stack(packed.shape)):  # pageable, then page-locked memory
        stack[...] = packed
        got = cupy.zeros((n, n), order="F")
        place_blocks(got[1:, 1:], stack, starts, sizes)
        assert np.array_equal(cupy.asnumpy(got), want)
    with pytest.raises(ValueError, match="column-major"):
        place_blocks(cupy.zeros((n, n)), packed, starts, sizes)


# The solver end to end on CuPy (merges' vectors and leaves by the kernels).

@pytest.mark.gpu
@pytest.mark.parametrize("leaf", [4, 32])
@pytest.mark.parametrize("kind", SVD_KINDS)
def test_gpu_bidiagonal_svd_dc(kind, leaf):
    import cupy

    d, e = svd_tests._family(kind, 1200, seed=3)
    with tunables.override(divide_conquer_leaf_size=leaf):
        u, s, vt = (cupy.asnumpy(x) for x in svd_dc.bidiagonal_svd_dc(d, e, xp=cupy))
    b = np.diag(d) + np.diag(e, 1)
    assert testing.svd_residual(b, u, s, vt) <= END_TO_END
    assert testing.orthogonality(u) <= END_TO_END
    assert testing.orthogonality(vt, rows=True) <= END_TO_END
