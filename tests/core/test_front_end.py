"""What every public function's front end guarantees (issue 19): unusual input gets the
right answer or a clear error, the same way through every entry point.

Tolerances are in units of n·ε of the working precision (STYLE.md).
"""

import pickle

import numpy as np

import gpusvd
from gpusvd.testing import low_rank


class TestLowRankUnpacks:
    """``U, S, Vh = svd_lowrank(A)`` as with torch and scikit-learn (defect 5)."""

    def test_three_items_and_attributes(self):
        a = low_rank(40, 30, 3, seed=0)
        r = gpusvd.svd_lowrank(a, eps=1e-10, seed=0, device="cpu")
        U, S, Vh = r
        assert len(r) == 3
        assert U is r.U and S is r.S and Vh is r.Vh
        assert r.rank == 3 == S.shape[0] and r.error_bound <= 1e-10
        assert r.basis_size >= 3 and r.partitions == 1 and r.passes >= 2
        assert r.growth_steps >= 1 and r.mc_bound >= 0

    def test_pickles(self):
        r = gpusvd.svd_lowrank(low_rank(40, 30, 3, seed=0), eps=1e-10, seed=0, device="cpu")
        back = pickle.loads(pickle.dumps(r))
        assert type(back) is type(r) and back.rank == r.rank
        assert np.array_equal(back.S, r.S) and back.error_bound == r.error_bound
