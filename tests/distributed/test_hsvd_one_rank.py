"""The distributed HSVD in one process shares the single-process HSVD's preparation and
assembly (``gpusvd.jacobi.hyperbolic.prepare``/``assemble``/``empty``), edge cases
included."""

import numpy as np
import pytest

pytest.importorskip("mpi4py")

import gpusvd  # noqa: E402
from gpusvd import distributed  # noqa: E402


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_no_columns(dtype):
    """G of m×0 gives empty factors as the single-process HSVD does (it raised a NumPy
    ValueError about a zero-size reduction before the two shared one preparation)."""
    g = np.zeros((5, 0), dtype)
    out = distributed.hsvd(g, np.zeros(0), device="cpu")
    ref = gpusvd.hsvd(g, np.zeros(0), device="cpu")
    assert [(x.shape, x.dtype) for x in out] == [(x.shape, x.dtype) for x in ref]


def test_wide_rejected():
    with pytest.raises(ValueError, match=r"distributed hsvd: g must have at least as many "
                       r"rows as columns \(m >= n\), got 3×5"):
        distributed.hsvd(np.ones((3, 5)), np.ones(5), device="cpu")
