"""Pivot strategies (paper 003, §3): coverage, disjointness, Lemma 2, Alg. 3.1 vs 3.2."""

import numpy as np
import pytest

from gpusvd.jacobi.strategies import (NAMES, PARALLEL, SEQUENTIAL, _column_cyclic, _expand,
                                      _row_cyclic, _search, block_count, pivot_strategy)

ORDERS = [2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 24, 32, 36, 40, 64]


@pytest.mark.parametrize("name", PARALLEL)
@pytest.mark.parametrize("n", ORDERS)
def test_parallel_sweep_covers_every_pair_once_in_disjoint_steps(name, n):
    table = pivot_strategy(name, n)
    assert table.shape == (n - 1, n // 2, 2) and table.dtype == np.int32
    pairs = table.reshape(-1, 2)
    assert (pairs[:, 0] < pairs[:, 1]).all()
    assert len({tuple(p) for p in pairs}) == n * (n - 1) // 2
    for step in table:
        assert len(set(step.ravel().tolist())) == n  # n/2 disjoint pairs cover 0..n-1


@pytest.mark.parametrize("name", SEQUENTIAL)
@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_sequential_strategies_are_the_cyclic_orders(name, n):
    table = pivot_strategy(name, n)
    assert table.shape == (n * (n - 1) // 2, 1, 2)
    expected = _row_cyclic(n) if name == "row-cyclic" else _column_cyclic(n)
    assert [tuple(p) for p in table[:, 0]] == expected


@pytest.mark.parametrize("name", ["row", "column", "brent-luk"])
@pytest.mark.parametrize("n", ORDERS)
def test_lemma_2_first_step(name, n):
    assert pivot_strategy(name, n)[0].tolist() == [[2 * k, 2 * k + 1] for k in range(n // 2)]


@pytest.mark.parametrize("n", [8, 12, 16, 20])
@pytest.mark.parametrize("rows", [True, False])
def test_expansion_equals_the_closest_p_strategy(n, rows):
    """Alg. 3.2 applied to O∥_(n/2) gives Alg. 3.1's O∥_n (the paper checked n <= 36)."""
    order = _row_cyclic if rows else _column_cyclic
    direct = _search(order(n), n)
    expanded = _expand(_search(order(n // 2), n // 2), rows)
    assert [sorted(s) for s in direct] == [sorted(s) for s in expanded]


@pytest.mark.parametrize("n", [4, 6, 12, 32])
def test_reverse_runs_the_sweep_backwards(n):
    for name in ("row", "column"):
        forward, backward = pivot_strategy(name, n), pivot_strategy(name + "-reverse", n)
        assert np.array_equal(forward[::-1], backward)


def test_r_parallel_of_order_6_is_the_papers():
    """Fig. 1's R∥_6: it starts with (1,2),(3,4),(5,6) and (1,3),(2,5),(4,6) (1-based)."""
    table = pivot_strategy("row", 6) + 1
    assert table[1].tolist() == [[1, 3], [2, 5], [4, 6]]


def test_block_count_has_a_searchable_odd_part():
    for blocks in range(1, 200):
        count = block_count(blocks)
        assert count >= blocks and count % 2 == 0 and count <= max(2, 1.25 * blocks + 2)
        pivot_strategy("row", count)


@pytest.mark.parametrize("name, n", [("bogus", 4), ("row", 5), ("row", 0), ("brent-luk", 1),
                                     ("row", 22)])
def test_bad_strategy_or_order(name, n):
    with pytest.raises(ValueError):
        pivot_strategy(name, n)
    assert "row-reverse" in NAMES
