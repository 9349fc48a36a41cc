"""gpusvd.distributed.svd_lowrank in one process (a communicator of one rank): the input
forms of gpusvd.svd_lowrank, its guarantee, and its errors. Several ranks: worker.py."""

import numpy as np
import pytest

pytest.importorskip("mpi4py")

from gpusvd import distributed  # noqa: E402
from gpusvd.testing import low_rank  # noqa: E402


def test_npy_path_and_max_rank(tmp_path):
    a = low_rank(200, 60, 12, noise=1e-6, seed=3)
    path = tmp_path / "a.npy"
    np.save(path, a)
    r = distributed.svd_lowrank(str(path), 1e-8, seed=1, device="cpu")
    assert type(r.U) is np.ndarray and r.rank == 12 and r.error_bound <= 1e-8
    assert np.linalg.norm(a - (r.U * r.S) @ r.Vh) ** 2 <= 1e-8 * np.linalg.norm(a) ** 2
    capped = distributed.svd_lowrank(a, 1e-8, seed=1, device="cpu", max_rank=5)
    # the basis stops at 2·max_rank vectors: eps is missed, and the error says by how much
    assert capped.rank == 5 and capped.error_bound > 1e-8
    true = np.linalg.norm(a - (capped.U * capped.S) @ capped.Vh) ** 2 / np.linalg.norm(a) ** 2
    assert abs(true - capped.error_bound) <= 1e-9 * true


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"eps": 0.0}, "eps"), ({"delta": 1.5}, "delta"), ({"max_rank": 0}, "max_rank"),
    ({"seed": np.random.default_rng(0)}, "seed must be an integer"),
])
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        distributed.svd_lowrank(np.ones((5, 4)), device="cpu", **kwargs)


@pytest.mark.parametrize("a", [np.zeros((0, 4)), np.ones(5), np.full((4, 3), np.inf)])
def test_bad_input(a):
    with pytest.raises(ValueError):
        distributed.svd_lowrank(a, device="cpu")
