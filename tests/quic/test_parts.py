"""The pieces of QUIC-SVD against naive references: Monte Carlo bound, blocked
Gram–Schmidt, cosine-tree split, truncation (issue 5)."""

import numpy as np
import pytest
from naive_quic import cosine_split, length_squared_pick

from gpusvd._core import tunables
from gpusvd.quic import monte_carlo
from gpusvd.quic.cosine_tree import Node, row_norms2, split_nodes
from gpusvd.quic.extraction import extract, project, truncation_rank
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


def test_extract_pythagoras():
    """error = residual + tail, against the directly computed error of the result."""
    a = random_matrix(50, 20, seed=6)
    v = np.linalg.qr(random_matrix(20, 12, seed=7))[0]
    p, res, mass = project(a, v, np)
    assert res == pytest.approx(np.sum((a - a @ v @ v.T) ** 2), rel=1e-12)
    u, s, vh, err = extract(p, v, res, mass, 0.9, None, np)
    direct = np.sum((a - (u * s) @ vh) ** 2) / mass
    assert err == pytest.approx(direct, rel=1e-10)
    assert orthogonality(u) < 30 and orthogonality(vh, rows=True) < 30
