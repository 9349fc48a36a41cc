"""A Comm a decomposition makes for itself is closed before it returns (in one process).

NCCL's destroy is a collective among a node's GPUs: communicators left to the garbage
collector were destroyed at a different moment on each rank and hung the two-GPU test
(H200 ×2, 2026-11-22). Closing is checked here on the CPU, where it is a no-op that must
still run once per call, error or not.
"""

import numpy as np
import pytest

pytest.importorskip("mpi4py")

from gpusvd import distributed  # noqa: E402
from gpusvd.distributed import comm as comm_module  # noqa: E402
from gpusvd.testing import low_rank, random_matrix  # noqa: E402


@pytest.fixture
def closed(monkeypatch):
    """The Comms closed during the test."""
    seen = []
    close = comm_module.Comm.close

    def counting(self):
        seen.append(self)
        close(self)

    monkeypatch.setattr(comm_module.Comm, "close", counting)
    return seen


@pytest.mark.parametrize("call", [
    lambda: distributed.jacobi_svd(random_matrix(20, 12, seed=1), device="cpu"),
    lambda: distributed.hsvd(random_matrix(12, 10, seed=2), np.r_[-np.ones(3), np.ones(7)],
                             device="cpu"),
    lambda: distributed.svd_lowrank(low_rank(50, 20, 3, seed=3), 1e-8, device="cpu")],
    ids=["jacobi_svd", "hsvd", "svd_lowrank"])
def test_own_comm_closed_once(closed, call):
    assert call() is not None
    assert len(closed) == 1


def test_own_comm_closed_on_error(closed):
    with pytest.raises(ValueError, match="variant"):
        distributed.jacobi_svd(np.eye(4), device="cpu", variant="bogus")
    assert len(closed) == 1


def test_given_comm_stays_open(closed):
    comm = comm_module.Comm(device="cpu")
    distributed.jacobi_svd(np.eye(4), comm=comm)
    assert closed == []
    with comm:        # the owner closes it; closing twice is harmless
        pass
    comm.close()
    assert closed == [comm, comm]
