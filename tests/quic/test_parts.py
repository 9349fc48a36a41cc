"""The pieces of QUIC-SVD against naive references: Monte Carlo bound, blocked
Gram–Schmidt, cosine-tree split, truncation."""

import numpy as np
import pytest
from .naive_quic import cosine_split, length_squared_pick, relative_error

from gpusvd import svd_lowrank, testing
from gpusvd._core import tunables
from gpusvd.quic import monte_carlo
from gpusvd.quic.cosine_tree import Node, row_norms2, split_nodes
from gpusvd.quic.extraction import extract, project, small_svd, truncation_rank
from gpusvd.quic.gram_schmidt import Basis
from gpusvd.testing import orthogonality, random_matrix



def test_z_score():
    assert monte_carlo.z_score(0.5) == pytest.approx(0.0, abs=1e-12)
    assert monte_carlo.z_score(0.025) == pytest.approx(1.959964, rel=1e-6)
    assert monte_carlo.z_score(1e-6) == pytest.approx(4.753424, rel=1e-6)


def test_sample_count_is_logarithmic():
    assert monte_carlo.sample_count(1, (8, 2.0)) == 8
    assert monte_carlo.sample_count(10 ** 6, (8, 2.0)) == 28


def _residual_setup(seed):
    """Rows with known residual norms against a fixed orthonormal V (k = 3 of n = 12)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((500, 12)) * rng.uniform(0.1, 3.0, (500, 1))
    v = np.linalg.qr(rng.standard_normal((12, 3)))[0]
    exact = np.sum((a - a @ v @ v.T) ** 2, axis=1)
    return a, v, exact


def test_small_sets_are_exact():
    a, v, exact = _residual_setup(0)
    norms2 = row_norms2(a, np)
    sets = [np.arange(5), np.arange(100, 103)]
    draw = monte_carlo.Draw(sets, norms2, [8, 8], np.random.default_rng(0))
    bounds = monte_carlo.upper_bounds(draw, monte_carlo.residual_norms2(a, draw.rows, v, np), 3.0)
    assert np.allclose(bounds, [exact[:5].sum(), exact[100:103].sum()], rtol=1e-12)


def test_bound_coverage():
    """At z = Φ⁻¹(1 − 0.05) the bound covers the true error in about 95 % of draws:
    failures over 400 independent draws stay within a binomial 4-sigma band."""
    a, v, exact = _residual_setup(1)
    norms2 = row_norms2(a, np)
    rows = np.arange(500)
    rng = np.random.default_rng(2)
    z = monte_carlo.z_score(0.05)
    trials, misses = 400, 0
    for _ in range(trials):
        draw = monte_carlo.Draw([rows], norms2, [60], rng)
        res2 = monte_carlo.residual_norms2(a, draw.rows, v, np)
        misses += monte_carlo.upper_bounds(draw, res2, z)[0] < exact.sum()
    assert misses <= 0.05 * trials + 4 * np.sqrt(trials * 0.05 * 0.95)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_gram_schmidt_orthonormal_and_drops_dependent(dtype):
    rng = np.random.default_rng(3)
    n = 80
    basis = Basis(n, dtype, np, limit=n)
    # A new direction this small relative to its vector (float32: captured earlier ones
    # are only good to u/scale, so the next must stand above that).
    scale = 1e-4 if dtype == np.float64 else 1e-2
    with tunables.override(quic_gs_block=7):
        seen = np.zeros((n, 0))
        for step in range(6):
            fresh = rng.standard_normal((n, 5))
            # Two candidates in the span of what came before (to rounding), one new
            # direction that is `scale` of its length.
            mixed = seen @ rng.standard_normal((seen.shape[1], 2)) if seen.shape[1] \
                else np.zeros((n, 2))
            tiny = (seen @ rng.standard_normal(seen.shape[1]) if seen.shape[1] else 0) \
                + scale * rng.standard_normal(n)
            x = np.column_stack([fresh, mixed, tiny]).astype(dtype)
            added = basis.extend(x)
            assert added == 5 + (1 if step else 1)
            seen = np.column_stack([seen, fresh, tiny])
    v = basis.v
    assert orthogonality(v) < 30 * v.shape[1]
    # The span is exactly what was fed in.
    proj = seen - v @ (v.T @ seen)
    assert np.linalg.norm(proj) <= 100 * np.finfo(dtype).eps * np.linalg.norm(seen)


def _counting_qr(monkeypatch):
    calls = []
    qr = np.linalg.qr

    def counted(x, *args, **kw):
        calls.append(x.shape)
        return qr(x, *args, **kw)

    monkeypatch.setattr(np.linalg, "qr", counted)
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gram_schmidt_trailing_drops_take_one_qr(dtype, monkeypatch):
    """Candidates in the span (of the basis, or of the candidates before them) placed
    last: one QR of the block, and its first columns are the new vectors."""
    rng = np.random.default_rng(10)
    n = 120
    basis = Basis(n, dtype, np, limit=n)
    basis.extend(rng.standard_normal((n, 15)).astype(dtype))
    fresh = rng.standard_normal((n, 6))
    x = np.column_stack([fresh, basis.v @ rng.standard_normal((15, 2)),
                         fresh[:, :2] @ rng.standard_normal((2, 2))]).astype(dtype)
    calls = _counting_qr(monkeypatch)
    assert basis.extend(x) == 6
    assert len(calls) == 1
    v = basis.v
    assert orthogonality(v) < 2
    proj = fresh - v @ (v.T @ fresh)
    assert np.linalg.norm(proj) <= 100 * np.finfo(dtype).eps * np.linalg.norm(fresh)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gram_schmidt_nearly_dependent_block(dtype):
    """A candidate mostly in the span of V̂ and of another candidate of its block
    (|r_jj| ≈ 1e-2 of its projected length) is kept, and V̂ stays orthonormal: without
    the extra projection and Newton–Schulz steps its components along V̂ would be
    u·‖x'‖/|r_jj| (float64: ‖V̂ᵀV̂ − I‖ about 1e9 k·ε)."""
    def grow(seed):
        rng = np.random.default_rng(seed)
        n = 300
        basis = Basis(n, dtype, np, limit=n)
        basis.extend(rng.standard_normal((n, 20)).astype(dtype))
        y = basis.v @ rng.standard_normal((20, 3)) + 1e-2 * rng.standard_normal((n, 3))
        near = y[:, 0] + y[:, 1] + 1000 * np.finfo(dtype).eps * rng.standard_normal(n)
        assert basis.extend(np.column_stack([y, near]).astype(dtype)) == 4
        return orthogonality(basis.v)

    for seed in range(3):
        assert grow(seed) < 2
    if dtype == np.float64:
        with tunables.override(quic_reorthogonalize_below=0.0):
            assert grow(0) > 1e6


def test_growth_takes_one_qr_per_step(monkeypatch):
    """Rows with a common positive part: one child of every split is dependent on its
    sibling, and with the siblings last every Gram–Schmidt call is one QR (plus one QR
    of the extraction). One level a step: a two-level step near the rank may keep a
    candidate after the span is full (a rounding-level one) and take a second QR."""
    rng = np.random.default_rng(17)
    a = rng.uniform(0.0, 1.0, (900, 100)) @ rng.uniform(0.0, 1.0, (100, 600))
    calls = _counting_qr(monkeypatch)
    with tunables.override(quic_two_levels_above=np.inf):
        r = svd_lowrank(a, eps=1e-10, seed=0, device="cpu")
    assert r.rank == 100 and r.passes == 2
    assert len(calls) == (r.growth_steps + 1) + 1


@pytest.mark.parametrize("low", [-1.0, 0.0])
def test_two_levels_a_step_take_fewer_steps_to_the_same_rank(low):
    """While the bound is far above the target a step splits the children too: fewer
    steps (the leaves double twice a step), the same rank and error guarantee."""
    rng = np.random.default_rng(17)
    a = rng.uniform(low, 1.0, (900, 100)) @ rng.uniform(low, 1.0, (100, 600))
    two = svd_lowrank(a, eps=1e-10, seed=0, device="cpu")
    with tunables.override(quic_two_levels_above=np.inf):
        one = svd_lowrank(a, eps=1e-10, seed=0, device="cpu")
    assert two.rank == one.rank == 100
    assert two.growth_steps <= one.growth_steps - 2
    for r in (one, two):
        assert relative_error(a, r.U, r.S, r.Vh) <= 1e-10
        assert r.error_bound <= 1e-10


def test_split_children_partition_node_and_means_are_aligned():
    a = random_matrix(60, 9, seed=4)
    a[10] = -a[3]  # an anti-parallel pair: |cos| puts them in the same child
    a[50] = 2.0 * a[51]  # a two-row node of parallel rows: the pivot against the other
    norms2 = row_norms2(a, np)
    nodes = [Node(np.arange(0, 40), 0.0), Node(np.arange(40, 50), 0.0),
             Node(np.arange(50, 52), 0.0)]
    center = a.mean(axis=0)
    children, cands = split_nodes(a, nodes, norms2, np.random.default_rng(5), np, center)
    assert len(children) == 6
    rng = np.random.default_rng(5)  # the same draws: one pivot per node, in order
    pivots = [length_squared_pick(node.rows, norms2, rng) for node in nodes]
    for j, node in enumerate(nodes):
        left, right = children[2 * j], children[2 * j + 1]
        near_min, near_max = cosine_split(a, list(node.rows), pivots[j])
        assert list(left.rows) == near_min and list(right.rows) == near_max
        assert len(left.rows) and len(right.rows)
    assert list(children[5].rows) == [pivots[2]]
    for c, child in enumerate(children):
        assert child.mass == pytest.approx(norms2[child.rows].sum())
        rows = a[child.rows]
        signs = np.where(rows @ a[pivots[c // 2]] >= 0, 1.0, -1.0)
        assert np.allclose(cands[c], (signs[:, None] * (rows - center)).mean(axis=0))
        if 3 in child.rows:
            assert 10 in child.rows


def test_split_of_high_dimensional_rows_is_not_one_row():
    """Random rows in many dimensions are all far from the pivot (|cos| ≈ 1/√n): the
    split must not peel off the pivot alone (mlpack's rule, the pivot left out of the
    maximum), or the tree degenerates into a list."""
    a = random_matrix(400, 200, seed=8)
    norms2 = row_norms2(a, np)
    children, _ = split_nodes(a, [Node(np.arange(400), 0.0)], norms2,
                              np.random.default_rng(0), np, np.zeros(200))
    assert min(len(children[0].rows), len(children[1].rows)) >= 4


def test_length_squared_positions_per_segment():
    """Draw frequencies ∝ weight inside each segment, a light segment next to heavy
    ones included (4-sigma binomial bands)."""
    rng = np.random.default_rng(9)
    weights = np.concatenate([rng.uniform(1, 5, 6) * 1e12, rng.uniform(1, 5, 5) * 1e-6,
                              rng.uniform(1, 5, 7)])
    starts = np.array([0, 6, 11])
    draws = np.array([3000, 4000, 5000])
    pos, seg = monte_carlo.length_squared_positions(weights, starts, draws, rng)
    assert np.array_equal(np.bincount(seg), draws)
    ends = np.append(starts[1:], len(weights))
    for j in range(3):
        mine = pos[seg == j]
        assert mine.min() >= starts[j] and mine.max() < ends[j]
        w = weights[starts[j]:ends[j]]
        p = w / w.sum()
        hits = np.bincount(mine - starts[j], minlength=len(w))
        assert np.all(np.abs(hits - draws[j] * p) <= 4 * np.sqrt(draws[j] * p * (1 - p)) + 1)


def test_truncation_rank_naive():
    s = np.array([3.0, 2.0, 1.0, 0.1])
    for eps in (1e-4, 0.001, 0.01, 0.07, 0.5):
        mass = 20.0
        r, err = truncation_rank(s, 0.05, mass, eps, None)
        tails = [0.05 + np.sum(s[j:] ** 2) for j in range(5)]
        want = next((j for j in range(5) if tails[j] <= eps * mass), 4)
        assert r == want and err == pytest.approx(tails[r] / mass)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extract_pythagoras(dtype):
    """error = residual + tail, against the directly computed error of the result."""
    a = random_matrix(50, 20, seed=6).astype(dtype)
    v = np.linalg.qr(random_matrix(20, 12, seed=7))[0].astype(dtype)
    p, res, mass = project(a, v, np)
    a64, v64 = a.astype(np.float64), v.astype(np.float64)
    rel = 1e-12 if dtype == np.float64 else 1e-5
    assert res == pytest.approx(np.sum((a64 - a64 @ v64 @ v64.T) ** 2), rel=rel)
    u, s, vh, err = extract(p, v, res, mass, 0.9, None, np)
    assert u.dtype == s.dtype == vh.dtype == dtype
    direct = np.sum((a64 - (u.astype(np.float64) * s) @ vh.astype(np.float64)) ** 2) / mass
    assert err == pytest.approx(direct, rel=1e-10 if dtype == np.float64 else 1e-5)
    assert orthogonality(u) < 30 and orthogonality(vh, rows=True) < 30


def _triangular(k, smallest, dtype, seed):
    """R of a QR of a 3k × k matrix, singular values geometric from 1 to ``smallest``."""
    a = testing.with_singular_values(np.geomspace(1.0, smallest, k), 3 * k, k, seed=seed)
    return np.linalg.qr(a)[1].astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_svd_tails_and_factors(dtype):
    """Both ways: the tail sums Σ_{j≥r} σ_j² the truncation uses within
    8·(u·σ₁·Σ_{j≥r} σ_j + k·u₆₄·σ₁²) (extraction's docstring; a float32 Gram would be
    off by u₃₂·σ₁² and fail at the small tails), and U_R, Σ, Wᵀ of a truncation."""
    k, r = 60, 40
    rf = _triangular(k, 1e-6, dtype, seed=1)
    ref = np.linalg.svd(rf.astype(np.float64), compute_uv=False)
    s, factors = small_svd(rf, np)
    assert s.dtype == np.float64 and np.all(s[:-1] >= s[1:])
    tail = np.cumsum(s[::-1] ** 2)[::-1]
    tail_ref = np.cumsum(ref[::-1] ** 2)[::-1]
    scale = (np.finfo(dtype).eps * ref[0] * np.cumsum(ref[::-1])[::-1]
             + k * np.finfo(np.float64).eps * ref[0] ** 2)
    assert np.all(np.abs(tail - tail_ref) <= 8 * scale)
    u_r, s_r, wt = factors(r)
    assert u_r.shape == (k, r) and s_r.shape == (r,) and wt.shape == (r, k)
    assert u_r.dtype == s_r.dtype == wt.dtype == dtype
    assert orthogonality(u_r) < 3 and orthogonality(wt, rows=True) < 3
    approx = (u_r.astype(np.float64) * s_r) @ wt.astype(np.float64)
    assert np.sum((rf - approx) ** 2) == pytest.approx(tail_ref[r], rel=1e-3)


def test_gram_u_orthonormal_past_the_divide_threshold():
    """σ_k/σ₁ = 1e-7 in float32: R·W·Σ⁻¹ is far from orthonormal (checked by dividing
    always), the QR that "gram" takes instead is not."""
    k = 60
    rf = _triangular(k, 1e-7, np.float32, seed=1)
    u_r, s_r, wt = small_svd(rf, np)[1](k)
    assert orthogonality(u_r) < 3
    assert np.linalg.norm(rf - (u_r * s_r) @ wt) <= 3 * k * np.finfo(np.float32).eps \
        * np.linalg.norm(rf)
    with tunables.override(quic_gram_divide_above=0.0):
        assert orthogonality(small_svd(rf, np)[1](k)[0]) > 30
