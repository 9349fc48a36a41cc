"""Accuracy of an SVD from any framework, in the units of :mod:`gpusvd.testing.metrics`.

Results from CuPy, PyTorch, JAX or NumPy (through DLPack) are measured with CuPy in
float64, whatever the method's dtype, and reported in units of the method's own ε: the
functions of gpusvd.testing.metrics (residual in max(m, n)·ε, orthogonality in k·ε,
values in s_max·ε), applied to the float64 copies, measure in units of float64's ε and
are rescaled by ε_float64/ε_dtype. The raw (unnormalized) numbers are kept alongside.
CuPy is imported inside each function, so that the scripts using this module can be
imported (and their ``--help`` read) on a machine without a GPU.
"""

import numpy as np

from gpusvd import testing


def eps_of(dtype) -> float:
    return float(np.finfo(np.dtype(dtype)).eps)


def _in_units_of(dtype, value_in_float64_units: float) -> float:
    return value_in_float64_units * eps_of(np.float64) / eps_of(dtype)


def to_cupy(x):
    """A CuPy view of ``x`` (CuPy, PyTorch CUDA tensor, JAX GPU array, NumPy...)."""
    import cupy as cp
    if isinstance(x, cp.ndarray):
        return x
    if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
        try:
            return cp.from_dlpack(x)
        except Exception:
            if hasattr(x, "contiguous"):       # a strided or conjugated torch view
                return cp.from_dlpack(x.resolve_conj().contiguous())
            if hasattr(x, "is_cuda") and x.is_cuda:
                raise
    return cp.asarray(np.asarray(x))


def _defect(q, rows: bool):
    """Qᴴ Q − I (columns orthonormal) or Q Qᴴ − I (rows orthonormal)."""
    import cupy as cp
    g = q @ q.conj().T if rows else q.conj().T @ q
    g[cp.diag_indices(g.shape[0])] -= 1
    return g


def _two_norm(g, iterations: int = 40) -> float:
    """‖E‖₂ of a Hermitian defect E by power iteration (a lower estimate that converges to
    the 2-norm; 40 steps from a random start are within a few per cent for the defects
    seen here)."""
    import cupy as cp
    x = cp.random.default_rng(1).standard_normal(g.shape[0]).astype(g.dtype)
    est = 0.0
    for _ in range(iterations):
        nx = float(cp.linalg.norm(x))
        if nx == 0:
            return 0.0
        x = g @ (x / nx)
        est = float(cp.linalg.norm(x))
    return est


def sv_accuracy(s, s_ref, dtype) -> dict:
    """:func:`gpusvd.testing.sv_error` in units of ``dtype``'s ε, the raw max |s − s_ref|,
    and whether ``s`` is descending."""
    import cupy as cp
    s64 = to_cupy(s).astype(cp.float64).ravel()
    r64 = to_cupy(s_ref).astype(cp.float64).ravel()
    if s64.shape != r64.shape:
        raise ValueError(f"got {s64.size} singular values, expected {r64.size}")
    out = {"sv_error": None, "sv_error_raw": None, "sorted": None}
    if s64.size == 0:
        return out
    out["sv_error_raw"] = float(cp.max(cp.abs(s64 - r64)))
    out["sv_error"] = _in_units_of(dtype, testing.sv_error(s64, r64))
    out["sorted"] = bool(cp.all(s64[:-1] >= s64[1:])) if s64.size > 1 else True
    return out


def svd_accuracy(a, u, s, vh, s_ref, dtype) -> dict:
    """Residual, orthogonality and singular value error, computed in float64 on the GPU.

    ``a`` is the matrix the method was given (any dtype; it is upcast exactly), ``u``,
    ``s``, ``vh`` its economy SVD (any array type with DLPack), ``s_ref`` the float64
    reference singular values, ``dtype`` the method's dtype (sets ε).
    """
    import cupy as cp
    a64 = to_cupy(a).astype(cp.float64 if not cp.iscomplexobj(to_cupy(a)) else cp.complex128)
    m, n = a64.shape
    k = min(m, n)
    u64 = to_cupy(u).astype(a64.dtype)
    vh64 = to_cupy(vh).astype(a64.dtype)
    s64 = to_cupy(s).astype(cp.float64)
    if u64.shape != (m, k) or s64.shape != (k,) or vh64.shape != (k, n):
        raise ValueError(f"economy SVD of {m}x{n} expects U {(m, k)}, S {(k,)}, Vh {(k, n)}; "
                         f"got {u64.shape}, {s64.shape}, {vh64.shape}")
    eps = eps_of(dtype)
    residual = _in_units_of(dtype, testing.svd_residual(a64, u64, s64, vh64))
    orthogonality = _in_units_of(dtype, max(testing.orthogonality(u64),
                                            testing.orthogonality(vh64, rows=True)))
    out = {
        "residual": residual,
        "residual_raw": residual * max(m, n, 1) * eps,
        "residual_unit": "max(m,n)*eps",
        "orthogonality": orthogonality,
        "orthogonality_raw": orthogonality * max(k, 1) * eps,
        "orthogonality_v_2norm": _two_norm(_defect(vh64, rows=True)),   # ‖VᵀV − I‖₂
        "finite": bool(cp.isfinite(u64).all() and cp.isfinite(s64).all()
                       and cp.isfinite(vh64).all()),
    }
    out.update(sv_accuracy(s64, s_ref, dtype))
    return out


def values_accuracy(s, s_ref, dtype) -> dict:
    """Singular value error only (values-only mode)."""
    import cupy as cp
    out = {"residual": None, "residual_raw": None,
           "orthogonality": None, "orthogonality_raw": None}
    s64 = to_cupy(s).astype(cp.float64)
    out["finite"] = bool(cp.isfinite(s64).all())
    out.update(sv_accuracy(s64, s_ref, dtype))
    return out
