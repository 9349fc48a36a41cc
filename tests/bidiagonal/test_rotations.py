"""The CPU rotation kernel against the one-rotation-at-a-time reference."""

import numpy as np
import pytest

from gpusvd.bidiagonal.rotations import apply_rotations
from .naive import apply_rotations_naive, random_rotation_log


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, n, k", [(1, 2, 1), (23, 37, 40), (70, 9, 200), (5, 100, 7), (100, 64, 30)])
def test_matches_naive(dtype, rows, n, k):
    rng = np.random.default_rng(rows * 1000 + n)
    sweeps, cs = random_rotation_log(rng, n, k)
    assert set(sweeps[:, 2]) == {-1, 1} or k < 4
    cs = cs.astype(dtype)
    x = rng.standard_normal((rows, n)).astype(dtype)
    expected = x.copy()
    apply_rotations_naive(expected, sweeps, cs)
    apply_rotations(x, sweeps, cs)
    # Rotations keep row norms, so entries stay O(1): a few ulps of absolute error.
    np.testing.assert_allclose(x, expected, rtol=0, atol=4 * np.finfo(dtype).eps * np.abs(expected).max())


def test_directions_differ():
    """Forward and backward order of the same rotations give different results."""
    x = np.eye(3)
    cs = np.array([[0.0, 1.0], [0.0, 1.0]])
    forward, backward = x.copy(), x.copy()
    apply_rotations(forward, np.array([[0, 2, 1]]), cs)
    apply_rotations(backward, np.array([[0, 2, -1]]), cs)
    np.testing.assert_array_equal(forward, [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(backward, [[0, -1, 0], [0, 0, -1], [1, 0, 0]])


def test_rotations_stay_orthogonal():
    rng = np.random.default_rng(5)
    sweeps, cs = random_rotation_log(rng, 50, 300)
    x = np.eye(50)
    apply_rotations(x, sweeps, cs)
    assert np.abs(x.T @ x - np.eye(50)).max() < 50 * np.finfo(float).eps


def test_empty():
    x = np.ones((0, 4))
    apply_rotations(x, np.array([[0, 3, 1]]), np.zeros((3, 2)))
    y = np.arange(6.0).reshape(2, 3)
    apply_rotations(y, np.zeros((0, 3), np.int64), np.zeros((0, 2)))
    np.testing.assert_array_equal(y, np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("x, sweeps, cs", [
    (np.eye(3, dtype=np.float32), [[0, 1, 1]], np.zeros((1, 2))),  # cs dtype differs
    (np.asfortranarray(np.ones((3, 2))), [[0, 1, 1]], np.zeros((1, 2))),  # not C order
    (np.eye(3, dtype=np.int64), [[0, 1, 1]], np.zeros((1, 2))),
    (np.eye(3), [[1, 2, 1]], np.zeros((2, 2))),  # lo + count = n
    (np.eye(3), [[0, 1, 0]], np.zeros((1, 2))),  # direction 0
    (np.eye(3), [[0, 2, 1]], np.zeros((1, 2))),  # cs too short
])
def test_bad_input(x, sweeps, cs):
    with pytest.raises(ValueError):
        apply_rotations(x, np.array(sweeps, np.int64), cs)
