"""Chess-tournament ordering (paper 002, Alg. 1 and Fig. 1)."""

import itertools

import numpy as np
import pytest

from gpusvd.takagi.ordering import chess_tournament


def test_paper_example():
    table = chess_tournament(10)
    assert table[0].tolist() == [[0, 9], [1, 8], [2, 7], [3, 6], [4, 5]]
    assert table[1].tolist() == [[1, 9], [2, 0], [3, 8], [4, 7], [5, 6]]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 8, 9, 10, 17, 64, 101])
def test_round_robin(n):
    table = chess_tournament(n)
    players = n + n % 2
    assert table.dtype == np.int32
    if players < 2:
        assert table.size == 0
        return
    assert table.shape == (players - 1, players // 2, 2)
    for step in table:  # the pairs of a step are disjoint and cover every player
        assert sorted(step.ravel().tolist()) == list(range(players))
    seen = sorted(tuple(sorted(p)) for p in table.reshape(-1, 2).tolist())
    assert seen == list(itertools.combinations(range(players), 2))  # each pair once
    real = [p for p in table.reshape(-1, 2).tolist() if max(p) < n]
    assert len(real) == n * (n - 1) // 2
    if n % 2:  # the dummy index n sits out exactly one pair per step
        assert all((step == n).sum() == 1 for step in table)


def test_negative_raises():
    with pytest.raises(ValueError, match="non-negative"):
        chess_tournament(-1)
