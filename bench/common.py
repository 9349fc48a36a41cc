"""Shared helpers for the benchmarks in ``bench/``: timing, device facts, JSON, accuracy.

A thin layer over :mod:`gpusvd._bench`, the one benchmark harness of the project (it also
serves ``gpusvd bench``, which must work where this folder is not installed), under the
names the scripts use. Nothing here imports CuPy, PyTorch or JAX at module level, so the
benchmark scripts can be imported (and their ``--help`` read) on a machine without a GPU.

Timing follows the workplace's method: synchronize the device before and after every
call, read ``time.perf_counter`` only after synchronization, warm up first (module load,
NVRTC compilation, JIT tracing, handle and workspace creation stay out of the numbers),
repeat, report the median and keep every sample.

Accuracy is measured on the GPU with CuPy in float64, whatever the method's dtype, and
is reported in units of the method's own machine epsilon (``numpy.finfo(dtype).eps``),
the units :mod:`gpusvd.testing.metrics` defines for the whole project:

* residual       ``‖A − U diag(S) Vh‖_F / (‖A‖_F · max(m, n) · ε)``
* orthogonality  ``max(‖Uᴴ U − I‖_F, ‖Vh Vhᴴ − I‖_F) / (k · ε)``; ``orthogonality_v_2norm``
  is ‖VᵀV − I‖₂ itself (power iteration)
* sv_error       ``max_i |S_i − S_ref,i| / (S_ref,0 · ε)`` against a float64 reference

with ``k = min(m, n)`` (results written before 2026-11-25 divided the residual by k·ε;
``residual_unit`` in each record says which). Values of order 1 to 10 are what a
backward-stable SVD gives; the raw (unnormalized) numbers are kept alongside.
"""

import os

# JAX takes 75% of the GPU's memory at its first call unless told not to: gpusvd's 16384²
# float64 SVD ran out of memory beside it in bench/exact.py (H100, 2026-11-27).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from gpusvd._bench import (  # noqa: E402, F401  (the names the scripts use)
    Timing,
    device_info,
    eps_of,
    free_gpu_memory,
    short_error,
    svd_accuracy,
    synchronize,
    time_interleaved,
    to_cupy,
    values_accuracy,
    write_json,
)
from gpusvd._bench import sv_accuracy as sv_error  # noqa: E402, F401
from gpusvd._bench import time_calls as time_gpu  # noqa: E402, F401


def torch_gesvdj_svd(compute_uv):
    """torch's SVD by cuSOLVER's gesvdj (``driver="gesvdj"``, torch's default on the GPU)
    of a CuPy array, shared through DLPack: the third peer of ``bench/exact.py`` (issue
    28). Returns ``run(a)``; the results are torch tensors (the accuracy functions take
    them through DLPack)."""
    import torch

    def run(a):
        t = torch.from_dlpack(a)
        if not compute_uv:
            return torch.linalg.svdvals(t, driver="gesvdj")
        return torch.linalg.svd(t, full_matrices=False, driver="gesvdj")
    return run


def jax_polar_svd(compute_uv):
    """JAX's POLAR SVD (cuSOLVER gesvdp) of a CuPy array, float64 enabled: the peer of
    ``bench/exact.py`` and ``bench/tall.py``. Returns ``run(a)``."""
    import jax
    jax.config.update("jax_enable_x64", True)
    from jax.lax import linalg as lax_linalg

    def run(a):
        x = jax.dlpack.from_dlpack(a)
        return lax_linalg.svd(x, full_matrices=False, compute_uv=compute_uv,
                              algorithm=lax_linalg.SvdAlgorithm.POLAR)
    return run
