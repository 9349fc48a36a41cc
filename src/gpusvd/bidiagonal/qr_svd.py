"""The SVD of a real bidiagonal with vectors, as the paper's Golub–Reinsch path solves it:
the implicit-shift QR iteration on the host (qr.py) emits its rotations in
chunks, which are applied to X and Y where they lie (rotations.py on the CPU, the
pipelined CUDA kernel of rotations_cuda.py on the GPU), and dqds (dqds.py) gives the values.

With vectors, S is dqds' (as with values only), not the QR's own values: the QR stops
when an off-diagonal entry is below tol = ~90·ε relative to its neighbours (Demmel &
Kahan, as dbdsqr), and its values end up 45–110 s_max·ε from LAPACK's at n = 300–800
on the CPU (52–680 on the H100, complex128 n = 1024–4096), where dqds' are 9–22 (each
value to a few ulps of itself). The vectors are the QR's: they pair with the dqds values in
descending order, which can only swap vectors within a cluster of values closer than
the QR's tolerance, where either order is as good. dqds costs about half the QR loop
and runs on a second host thread while the QR loop and the rotations proceed (its
Numba loop releases the GIL), so it adds no time where a second core is free.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._core import tunables
from .._core.errors import LinAlgError
from .qr import BidiagonalQR
from .dqds import bidiagonal_singular_values
from .rotations import apply_rotations

# Below this n the dqds values are computed after the QR rather than on a thread beside
# it: a thread costs more than dqds there.
_DQDS_THREAD_MIN_N = 64


def _rotate_cpu(n, dtype, qr):
    """Run the bidiagonal QR to the end, applying its rotations to X and Y on the host."""
    cap_sweeps = tunables.get().qr_chunk_sweeps
    cap_rot = cap_sweeps * max(n - 1, 1)
    sweeps = np.empty((cap_sweeps, 3), np.int64)
    cs_left = np.empty((cap_rot, 2), np.float64)
    cs_right = np.empty((cap_rot, 2), np.float64)
    x = np.eye(n, dtype=dtype)
    y = np.eye(n, dtype=dtype)
    while not qr.done:
        k, r = qr.run(sweeps, cs_left, cs_right)
        apply_rotations(x, sweeps[:k], cs_left[:r].astype(dtype))
        apply_rotations(y, sweeps[:k], cs_right[:r].astype(dtype))
    return x, y


def _rotate_gpu(n, dtype, qr, xp):
    from .rotations_cuda import RotationPipeline

    cap_sweeps = tunables.get().qr_chunk_sweeps
    x = xp.asfortranarray(xp.eye(n, dtype=dtype))
    y = xp.asfortranarray(xp.eye(n, dtype=dtype))
    pipeline = RotationPipeline(x, y, cap_sweeps, cap_sweeps * max(n - 1, 1))
    while not qr.done:
        pipeline.submit(*qr.run(*pipeline.buffers()))
    pipeline.finish()
    return x, y


def bidiagonal_svd(d, e, xp, dtype):
    """B = X·diag(s)·Yᵀ for the real upper bidiagonal B of host float64 ``d``, ``e``.

    Parameters
    ----------
    d, e : (n,) and (n − 1,) float64 NumPy arrays, finite
    xp : module
        ``numpy`` or ``cupy``: where X and Y are built and returned.
    dtype : real dtype
        Of X and Y; the QR's tolerance is this dtype's ε.

    Returns
    -------
    x, y : (n, n) arrays of ``dtype`` in ``xp``, columns in descending order of s
    s : (n,) float64 NumPy array, descending (dqds')

    Examples
    --------
    >>> d, e = np.array([3.0, 2.0, 1.0]), np.array([0.5, 0.25])
    >>> x, y, s = bidiagonal_svd(d, e, np, np.float64)
    >>> bool(np.allclose(x * s @ y.T, np.diag(d) + np.diag(e, 1)))
    True
    """
    n = d.shape[0]
    qr = BidiagonalQR(d, e, eps=float(np.finfo(dtype).eps))
    with ThreadPoolExecutor(max_workers=1) as pool:
        values = (pool.submit(bidiagonal_singular_values, d, e)
                  if n >= _DQDS_THREAD_MIN_N else None)
        if xp is not np:
            x, y = _rotate_gpu(n, dtype, qr, xp)
        else:
            x, y = _rotate_cpu(n, dtype, qr)
        s, perm, flip = qr.singular_values()
        try:
            s = bidiagonal_singular_values(d, e) if values is None else values.result()
        except LinAlgError:  # dqds reached its step limit: keep the QR's values
            pass
    # Σ >= 0: a negative d_i flips column i of Y; then order by descending σ.
    y[:, xp.asarray(flip)] *= -1
    perm = xp.asarray(perm)
    return x[:, perm], y[:, perm], s
