"""The table of 2×2 complex symmetric Takagi steps that every implementation must pass.

Both twins of the 2×2 step, the Numba reference (``takagi/rotation.py``) and the CUDA
``takagi_rotation`` (through the ``takagi_rotations`` kernel), are checked on these
cases: V unitary and Vᴴ M V̄ diagonal with |diagonal| equal to the singular values of M,
all to a few ε·‖M‖; and the step applied by ``rotate`` equals V applied as a matrix.
"""

import numpy as np

from gpusvd.takagi.rotation import rotation_matrix

# (name, a, b, c): M = [[a, b], [b, c]]. "tiny" and "huge" are scaled per dtype.
_CASES = [
    ("generic", 1 + 2j, 0.5 - 1j, -0.3 + 0.7j),
    ("real", 2.0, -1.0, 0.5),
    ("negative real diagonal", -1.0, 0.5, -2.0),
    ("zero off-diagonal", 2.0, 0.0, 3j),
    ("zero a", 0.0, 1 + 1j, 2.0),
    ("zero c", 3j, -1.0, 0.0),
    ("zero diagonal", 0.0, 2j, 0.0),
    ("equal moduli, equal values", 1.0, 1.0, -1.0),
    ("equal moduli", 1j, 0.5 + 0.25j, 1.0),
    ("equal entries", 1 + 1j, 1 + 1j, 1 + 1j),
    ("equal diagonal, tiny off-diagonal", 1.0, 1e-7j, 1.0),
    ("tiny off-diagonal", 1.0, 1e-20, -2j),
    ("dominant off-diagonal", 1e-8, 1.0, 1e-8j),
    ("nearly equal moduli", 1.0, 1e-3 + 2e-3j, 1.0 + 1e-9j),
    ("tiny", "tiny"),
    ("huge", "huge"),
]

_SCALED = (0.5 + 1j, -0.25 + 0.5j, 1j)  # a, b, c of "tiny" and "huge" before scaling

# Cases whose step is not unique (equal singular values: any V that diagonalizes is
# right), so the twins may pick different valid V's under different rounding.
NOT_UNIQUE = {"equal moduli, equal values"}


def cases(dtype):
    """``[(name, a, b, c)]`` as scalars of the complex ``dtype``."""
    dtype = np.dtype(dtype)
    info = np.finfo(dtype)
    scale = {"tiny": float(info.tiny) * 4, "huge": float(info.max) / 16}
    out = []
    for name, *entries in _CASES:
        if entries == [name]:
            entries = [z * scale[name] for z in _SCALED]
        out.append((name, *(dtype.type(z) for z in entries)))
    return out


def check(name, a, b, c, g, tol_units=8):
    """Assert that g = (p₁, p₂, μ, sn) is a valid Takagi step of [[a, b], [b, c]]."""
    dtype = np.result_type(a, b, c)
    eps = float(np.finfo(dtype).eps)
    m = np.array([[a, b], [b, c]], np.complex128)
    v = rotation_matrix(*(np.complex128(x) for x in g))
    scale = float(np.max(np.abs(m)))
    if b == 0:
        assert np.array_equal(v, np.eye(2)), name
        return
    unitary = np.linalg.norm(v.conj().T @ v - np.eye(2))
    assert unitary < tol_units * eps, (name, unitary)
    w = (v.conj().T @ (m / scale)) @ v.conj()  # scaled: "huge" and "tiny" stay normal
    off = max(abs(w[0, 1]), abs(w[1, 0]))
    assert off < tol_units * eps, (name, off / eps)
    values = np.sort(np.abs(np.diag(w)))[::-1]
    reference = np.linalg.svd(m / scale, compute_uv=False)
    assert np.max(np.abs(values - reference)) < tol_units * eps, (name, values, reference)
