"""bidiagonal_svd_dc (bidiagonal/dc_svd.py, Gu & Eisenstat with GEMMs in xp).

Invariants in units of n·ε (gpusvd.testing), ε of the result's dtype:
‖B − U·S·Vt‖/(‖B‖·n·ε), ‖UᵀU − I‖/(n·ε), ‖Vt·Vtᵀ − I‖/(n·ε), each at most BOUND, and the
values within BOUND·n·ε·σ₁ of LAPACK's SVD of the dense B. The method claims absolute
accuracy only (its deflation tolerance is 64·ε·‖M‖ at each merge), so graded B is held to
n·ε·σ₁ against dqds, not to each value's own size; the case table's small cases that fit
one leaf (LAPACK's gesdd on the dense block) are not held to more either.
"""

import numpy as np
import pytest

from gpusvd import testing
from gpusvd._core import tunables
from gpusvd._core.errors import LinAlgError
from gpusvd.bidiagonal import dc_svd as dc
from gpusvd.bidiagonal.dbdsdc import bidiagonal_svd as dbdsdc
from gpusvd.bidiagonal.dc_svd import bidiagonal_svd_dc
from gpusvd.golub_reinsch.bidiagonalize import bidiagonalize
from gpusvd.bidiagonal.dqds import bidiagonal_singular_values

from . import bisection_cases
from .test_dbdsdc import _check as _check_solver

BOUND = 30  # in units of n·ε, as gr's property tests
SIZES = (0, 1, 2, 3, 31, 32, 33, 100, 500, 1500)
DTYPES = (np.float32, np.float64)


def _check(d, e):
    """test_dbdsdc.py's invariants (residual, orthogonality, values, dtypes,
    shapes, input unchanged) for bidiagonal_svd_dc; returns (u, s, vt)."""
    return _check_solver(d, e, solve=bidiagonal_svd_dc)


def _gaussian(n, seed):
    """The bidiagonal of a Gaussian n×n matrix, by golub_reinsch's reduction."""
    a = np.random.default_rng(seed).standard_normal((n, n))
    bd = bidiagonalize(np.asfortranarray(a), block_size=32)
    return np.asarray(bd.d), np.asarray(bd.e)


def _family(kind, n, seed):
    """(d, e) in float64 of a named family."""
    rng = np.random.default_rng(seed)
    if kind in ("random", "graded", "clustered"):
        return testing.bidiagonal(n, kind=kind, seed=seed)
    if kind == "gaussian":
        return _gaussian(n, seed)
    if kind == "equal":  # one value n times, vectors any basis: mass deflation
        return np.ones(n), np.zeros(max(n - 1, 0)) + 1e-12 * rng.standard_normal(
            max(n - 1, 0))
    if kind == "zeros":  # zeros in d and in e: splits and a zero pole in every merge
        d, e = rng.standard_normal(n), rng.standard_normal(max(n - 1, 0))
        d[::5], e[2::9] = 0.0, 0.0
        return d, e
    # "rank-deficient": every third d zero and the rest of B tiny around a few values
    d = rng.standard_normal(n)
    d[1::3] = 0.0
    return d, 1e-3 * rng.standard_normal(max(n - 1, 0))


KINDS = ("random", "graded", "clustered", "gaussian", "equal", "zeros", "rank-deficient")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", KINDS)
def test_invariants(kind, n, dtype):
    d, e = _family(kind, n, seed=n)
    _check(d.astype(dtype), e.astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(bisection_cases.CASES))
def test_case_table(name, dtype):
    if dtype == np.float32 and name not in bisection_cases.CASES32:
        pytest.skip("outside float32's range")
    _check(*bisection_cases.case(name, dtype))


@pytest.mark.parametrize("n", [33, 500, 1500])
def test_graded_against_dqds(n):
    """Absolute accuracy (module docstring): within n·ε·σ₁ of dqds's values."""
    d, e = testing.bidiagonal(n, kind="graded", seed=n)
    _, s, _ = _check(d, e)
    ref = bidiagonal_singular_values(d, e)
    assert np.abs(s - ref).max() <= BOUND * n * np.finfo(float).eps * ref[0]


@pytest.mark.parametrize("n", [100, 1000])
def test_against_dbdsdc(n):
    d, e = _gaussian(n, seed=3)
    _, s, _ = _check(d, e)
    assert testing.sv_error(s, dbdsdc(d, e)[1]) <= BOUND * n


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("leaf", [2, 4])
def test_small_leaves(kind, leaf, monkeypatch):
    """Leaves of 2 and 4 rows: seven or more levels of merges at n = 200, leaves with
    one row and two columns (sqre = 1) among them."""
    with tunables.override(divide_conquer_leaf_size=leaf):
        _check(*_family(kind, 200, seed=1))


def test_deflation_paths_taken(monkeypatch):
    """The equal-values family rotates close poles (U and V) and poles into the zero
    pole (V only), and deflates tiny weights."""
    seen = []
    deflate = dc._deflate

    def recorded(d, z, tol):
        out = deflate(d, z, tol)
        seen.append((out[1].size, out[2].shape[0], out[4].shape[0] - out[2].shape[0]))
        return out

    monkeypatch.setattr(dc, "_deflate", recorded)
    d, e = _family("equal", 200, seed=2)
    d[::4] = 1e-17
    with tunables.override(divide_conquer_leaf_size=32):  # merges at several levels
        _check(d, e)
    deflated, closes, into_zero = np.array(seen).sum(axis=0)
    assert deflated > 0 and closes > 0 and into_zero > 0


def test_rotations_on_whole_columns_match_the_numba_loop(monkeypatch):
    """Deflation's rotations (the equal-values family takes both kinds) by the Numba loop
    and on whole columns (the path of other namespaces) give the same bits."""
    calls = []

    def recorded(q, pairs, cs):
        calls.append(pairs.shape[0])
        dc._rotate_host(q, pairs, cs)

    d, e = _family("equal", 200, seed=2)
    d[::4] = 1e-17
    monkeypatch.setitem(dc._ROTATE, "numpy", recorded)
    with tunables.override(divide_conquer_leaf_size=32):  # merges at several levels
        u, s, vt = _check(d, e)
        assert sum(calls) > 0
        with tunables.override(divide_conquer_rotation_kernel=False):
            u_columns, s_columns, vt_columns = bidiagonal_svd_dc(d, e)
    assert (np.array_equal(u, u_columns) and np.array_equal(s, s_columns)
            and np.array_equal(vt, vt_columns))


@pytest.mark.parametrize("n", [12, 200])
@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_extreme_scales(n, scale):
    d, e = testing.bidiagonal(n, seed=5)
    _, s, _ = _check(d * scale, e * scale)
    s_one = bidiagonal_svd_dc(d, e)[1]
    np.testing.assert_allclose(s / scale, s_one, rtol=0, atol=BOUND * n * 2.3e-16 * s_one[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty(dtype):
    u, s, vt = bidiagonal_svd_dc(np.empty(0, dtype), np.empty(0, dtype))
    assert u.shape == vt.shape == (0, 0) and s.shape == (0,)
    assert u.dtype == s.dtype == vt.dtype == dtype


def test_integers_promote():
    u, s, vt = bidiagonal_svd_dc(np.arange(1, 41), np.ones(39, dtype=np.int32))
    assert u.dtype == s.dtype == vt.dtype == np.float64


@pytest.mark.parametrize("d, e", [([1.0, np.nan], [1.0]), ([1.0, 2.0], [np.inf]),
                                  (np.full(40, 1.0), np.r_[np.full(38, 1.0), -np.inf])])
def test_non_finite(d, e):
    """The error dbdsdc raises, with its message."""
    for solver in (bidiagonal_svd_dc, dbdsdc):
        with pytest.raises(LinAlgError, match="NaN or infinity"):
            solver(np.asarray(d), np.asarray(e))


@pytest.mark.parametrize("d, e, match", [
    (np.ones(3), np.ones(3), "length n-1"),
    (np.ones((2, 2)), np.ones(1), "1-D"),
    (np.ones(3, complex), np.ones(2), "float32 or float64"),
])
def test_bad_input(d, e, match):
    with pytest.raises(ValueError, match=match):
        bidiagonal_svd_dc(d, e)


def _on_gpu(d, e):
    """bidiagonal_svd_dc with its n×n work in CuPy (U, Vt and the merges' GEMMs, rotations
    and vectors on the device), the results copied back for _check."""
    import cupy

    u, s, vt = bidiagonal_svd_dc(d, e, xp=cupy)
    assert all(isinstance(x, cupy.ndarray) for x in (u, s, vt))
    return cupy.asnumpy(u), cupy.asnumpy(s), cupy.asnumpy(vt)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [33, 500, 1500])
@pytest.mark.parametrize("kind", KINDS)
def test_gpu_invariants(kind, n, dtype):
    d, e = _family(kind, n, seed=n)
    _check_solver(d.astype(dtype), e.astype(dtype), solve=_on_gpu)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", KINDS)
def test_gpu_small_leaves(kind):
    """Leaves of 4 rows on the device: every deflation path (rotations by the CUDA
    kernel) at seven levels of merges."""
    with tunables.override(divide_conquer_leaf_size=4):
        _check_solver(*_family(kind, 200, seed=1), solve=_on_gpu)


def _split_blocks(seed):
    """A random bidiagonal that falls apart into 40 blocks of 1–150 rows."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 150, 40)
    d, e = rng.standard_normal(int(sizes.sum())), rng.standard_normal(int(sizes.sum()) - 1)
    e[np.cumsum(sizes)[:-1] - 1] = 0.0
    return d, e


def test_many_split_blocks():
    _check_solver(*_split_blocks(8))


@pytest.mark.gpu
def test_gpu_many_split_blocks():
    """Most blocks a single leaf without merges, one after another: each block's leaves
    cross through CuPy's pinned pool (a buffer the next block may reuse at once), and the
    invariants hold."""
    _check_solver(*_split_blocks(8), solve=_on_gpu)


@pytest.mark.gpu
def test_gpu_matches_host():
    """The device run does the host run's arithmetic but for the GEMMs' order of sums."""
    d, e = _gaussian(700, seed=4)
    u, s, vt = bidiagonal_svd_dc(d, e)
    u_g, s_g, vt_g = _on_gpu(d, e)
    n, eps = len(d), np.finfo(float).eps
    assert np.abs(s_g - s).max() <= BOUND * n * eps * s[0]
    # the same columns up to sign (the values are distinct and well separated here)
    signs = np.sign(np.sum(u * u_g, axis=0))
    assert np.abs(u_g * signs - u).max() <= BOUND * n * eps / (np.diff(s).min() / -s[0])


@pytest.mark.parametrize("dense", [0, 64])
@pytest.mark.parametrize("kind", KINDS)
def test_support_split_merges(kind, dense):
    """The merges' GEMMs split by the columns' supports, for every merge (dense = 0) or
    above 64 rows with the dense update U·W below: the same invariants (the default
    threshold makes every merge of these sizes dense)."""
    with tunables.override(divide_conquer_dense_merge_rows=dense):
        _check(*_family(kind, 500, seed=2))


@pytest.mark.parametrize("leaf", [32, 128, 300])
def test_leaves_split_over_threads(leaf, monkeypatch):
    """The leaves, stacked by shape and split over host threads (LEAF_ROWS_PER_THREAD
    rows a thread at least): the same bits as one stack after another, and the solver's
    bounds at every leaf size."""
    d, e = _family("random", 700, seed=leaf)
    with tunables.override(divide_conquer_leaf_size=leaf):
        monkeypatch.setattr(dc, "LEAF_ROWS_PER_THREAD", 1)
        threaded = _check(d, e)
        monkeypatch.setattr(dc, "LEAF_ROWS_PER_THREAD", 10 ** 9)
        sequential = bidiagonal_svd_dc(d, e)
    for a, b in zip(threaded, sequential):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("cores", [1, 3])
def test_leaves_as_lapack_one_by_one(monkeypatch, cores):
    """Each leaf's (U, s, Vᵀ) is an SVD of its own block to 4 m·ε, bit for bit the one
    LAPACK gives it alone, scaled by itself (dlasd0; gesdd for one row), however the
    leaves are split over threads: blocks of both shapes (sqre 0 and 1), of four sizes."""
    monkeypatch.setattr(dc, "usable_cores", lambda: cores)
    rng = np.random.default_rng(4)
    d, e = rng.standard_normal(1620), rng.standard_normal(1619)
    # Σ rows 1618 > 3·LEAF_ROWS_PER_THREAD: three threads where three cores are allowed
    leaves = [(0, 400, 1), (401, 800, 0), (800, 1200, 1), (1201, 1616, 0), (1616, 1619, 0),
              (1619, 1620, 0)]
    eps = np.finfo(np.float64).eps
    lefts, rights = np.full((2, len(leaves), 416, 416), np.nan)
    values = dc._solve_leaves(d, e, leaves, lefts, rights)
    for i, (start, end, sqre) in enumerate(leaves):
        m = end - start
        block = np.diag(d[start:end]) + np.diag(e[start:end - 1], 1)
        if sqre:
            block = np.hstack((block, np.zeros((m, 1))))
            block[-1, -1] = e[end - 1]
        u, s, vt = lefts[i, :m, :m].T, values[i], rights[i, :m + sqre, :m + sqre]
        assert (s >= 0).all() and not np.isnan(u).any() and not np.isnan(vt).any()
        sigma = np.zeros(block.shape)
        sigma[np.arange(m), np.arange(m)] = s
        assert np.abs(u @ sigma @ vt - block).max() <= 4 * m * eps * np.abs(block).max()
        assert np.abs(u.T @ u - np.eye(m)).max() <= 4 * m * eps
        assert np.abs(vt @ vt.T - np.eye(m + sqre)).max() <= 4 * m * eps
        dl, el, exponent = dc._leaf_input(d, e, start, end, sqre)
        alone_u, alone_s, alone_vt = dc._solve_leaf(dl, el, sqre)
        for x, y in zip((u, s, vt), (alone_u, np.ldexp(alone_s, -exponent), alone_vt)):
            assert np.array_equal(x, y)


def test_precompile_reaches_both_forms_of_merge(monkeypatch):
    """Under precompile's DIVIDE_AND_CONQUER_MERGES the bidiagonal of its GPU two-stage
    call (a few dozen columns) merges densely and split by support, so a user's first
    large SVD finds both compiled."""
    from gpusvd._core import precompile

    seen = set()
    monkeypatch.setattr(dc, "_supports", lambda *a, _f=dc._supports:
                        seen.add("_supports") or _f(*a))
    monkeypatch.setitem(dc._UPDATE_COLUMNS, "numpy", lambda *a, _f=dc._UPDATE_COLUMNS["numpy"]:
                        seen.add("_update_columns") or _f(*a))
    cols = 2 * max(tunables.get().jacobi_block_width, tunables.get().jacobi_block_width_gpu) + 4
    d, e = _family("random", cols, seed=1)
    with tunables.override(**precompile.DIVIDE_AND_CONQUER_MERGES):
        _check(d, e)
    assert seen == {"_update_columns", "_supports"}


def test_groups_of_a_level_fit_the_budget():
    """_groups: consecutive merges, every group within the budget unless a merge alone
    exceeds it, all of them once and in order; no budget: one group."""
    from types import SimpleNamespace

    rng = np.random.default_rng(8)
    merges = [SimpleNamespace(columns=np.arange(int(rng.integers(1, 300))),
                              m=int(rng.integers(300, 400)), sqre=int(rng.integers(0, 2)))
              for _ in range(40)]
    assert dc._groups(merges, None) == [merges]
    for budget in (1, 5e6, 3e7, 1e12):
        groups = dc._groups(merges, budget)
        assert [m for g in groups for m in g] == merges
        for group in groups:
            width = max(len(m.columns) for m in group)
            height = max(m.m + m.sqre for m in group)
            held = 8 * len(group) * (2 * width ** 2 + 2 * width * height)
            assert len(group) == 1 or held <= budget
    assert len(dc._groups(merges, 1e12)) == 1 and len(dc._groups(merges, 1)) == 40


@pytest.mark.parametrize("kind", ["random", "clustered"])
def test_a_level_in_groups_gives_the_same_bits(kind, monkeypatch):
    """A level's batched update split into groups (a small device, here any budget on the
    host): the same U, s, Vᵀ, bit for bit, as in one group."""
    d, e = _family(kind, 600, seed=9)
    whole = bidiagonal_svd_dc(d, e)
    monkeypatch.setattr(dc, "_level_budget", lambda xp: 2e5)
    grouped = bidiagonal_svd_dc(d, e)
    for a, b in zip(whole, grouped):
        assert np.array_equal(a, b)


@pytest.mark.gpu
def test_gpu_level_in_groups(monkeypatch):
    """On the GPU with a budget that puts every merge of a level in a group of its own:
    the solver's bounds, and the values of one group to rounding."""
    d, e = _family("random", 1200, seed=10)
    whole = _on_gpu(d, e)[1]
    monkeypatch.setattr(dc, "_level_budget", lambda xp: 1)
    s = _check_solver(d, e, solve=_on_gpu)[1]
    assert np.abs(s - whole).max() <= BOUND * len(d) * np.finfo(float).eps * s[0]


def test_a_level_values_read_from_its_own_arrays():
    """_store_values of a level whose merges carry the level's arrays (as on the device,
    each merge's roots a part of them, end to end): the values the parts give, read
    without concatenating them; a root that did not converge still raises."""
    rng = np.random.default_rng(12)
    sizes = [3, 0, 5, 4]
    total = sum(sizes)
    origin = np.concatenate([rng.integers(0, max(k, 1), k) for k in sizes])
    tau = rng.standard_normal(total) * 1e-3
    steps = rng.integers(1, 5, total)
    level = (None, None, origin, tau, steps)

    parts, first, start = [], 0, 0
    for k in sizes:
        part = slice(first, first + k)
        parts.append(dc._Merge(start, k + 1, 0, 0, None, origin[part], tau[part], steps[part],
                               np.arange(k), np.sort(rng.random(k)), -2, None, None, False))
        first, start = first + k, start + k + 1
    # the parts themselves gone: the level's arrays alone are read
    level_merges = [m._replace(origin=None, tau=None, steps=None, level=level) for m in parts]
    from_level, from_parts = np.full(total + 4, np.nan), np.full(total + 4, np.nan)
    dc._store_values(from_level, level_merges)
    dc._store_values(from_parts, parts)
    assert np.array_equal(from_level, from_parts, equal_nan=True)
    assert np.isfinite(from_level).sum() == total
    steps[5] = 10 ** 6
    with pytest.raises(LinAlgError):
        dc._store_values(from_level, level_merges)


def _fed(d, e, pieces, *, rows=None):
    """bidiagonal_svd_dc(d, e) with a LeafFeed given B's first ``rows`` rows (all by
    default) in ``pieces`` pieces of random sizes, in order, as a chase would; the
    result and the feed."""
    n = d.shape[0]
    rows = n if rows is None else rows
    cuts = np.sort(np.random.default_rng(rows).choice(np.arange(1, rows), pieces - 1,
                                                      replace=False))
    with dc.LeafFeed(n, np) as feed:
        for start, end in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [rows]))):
            feed.add(int(start), d[start:end], e[start:min(end, n - 1)])
        return bidiagonal_svd_dc(d, e, early=feed), feed


@pytest.mark.parametrize("kind", ["random", "graded", "zeros", "rank-deficient"])
def test_leaves_fed_early_give_the_same_bits(kind):
    """The leaves solved as B's rows arrive (a LeafFeed) give U, s, Vᵀ bit for bit as
    the call without; every leaf is taken where B is one block (B's scale, 2^40 here,
    does not matter: each leaf is scaled by itself), none where it splits."""
    d, e = _family(kind, 700, seed=3)
    d, e = np.ldexp(d, 40), np.ldexp(e, 40)
    with tunables.override(divide_conquer_leaf_size=40):
        alone = bidiagonal_svd_dc(d, e)
        fed, feed = _fed(d, e, pieces=9)
    for a, b in zip(alone, fed):
        assert np.array_equal(a, b)
    one_block = len(dc._blocks(d, e)) == 1
    assert feed.taken == (len(feed.leaves) if one_block else 0)
    assert len(feed.leaves) >= 16


def test_leaves_fed_wrong_or_not_at_all_are_solved_again():
    """Rows that were not final when read (here B's first 300 rows off by one unit in
    the last place) and rows that never came (past row 500): those leaves are solved by
    the divide and conquer itself, the result bit for bit the one without a feed."""
    d, e = _family("random", 700, seed=4)
    with tunables.override(divide_conquer_leaf_size=40):
        alone = bidiagonal_svd_dc(d, e)
        wrong_d = d.copy()
        wrong_d[:300] = np.nextafter(d[:300], np.inf)
        with dc.LeafFeed(700, np) as feed:
            feed.add(0, wrong_d[:500], e[:500])
            fed = bidiagonal_svd_dc(d, e, early=feed)
    for a, b in zip(alone, fed):
        assert np.array_equal(a, b)
    right = [leaf for leaf in feed.leaves if leaf[0] >= 300 and leaf[1] <= 500]
    assert feed.taken == len(right) > 0


def test_leaf_feed_takes_rows_in_order():
    with dc.LeafFeed(300, np) as feed:
        feed.add(0, np.ones(10), np.ones(10))
        with pytest.raises(ValueError, match="in order"):
            feed.add(20, np.ones(10), np.ones(10))
    d, e = _family("random", 300, seed=5)
    with dc.LeafFeed(200, np) as feed:  # a feed of another size is not used
        feed.add(0, d[:200], e[:199])
        assert np.array_equal(bidiagonal_svd_dc(d, e, early=feed)[1], bidiagonal_svd_dc(d, e)[1])
    assert feed.taken == 0
