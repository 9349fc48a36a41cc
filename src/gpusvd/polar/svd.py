"""SVD through the polar decomposition (``method="polar"``), for one matrix and stacks.

Higham & Papadimitriou, *A parallel algorithm for computing the polar decomposition*,
Parallel Comput. 20, 1994, §4, with the QDWH polar factor of Nakatsukasa & Higham, SIAM J.
Sci. Comput. 35(3), 2013, Algorithm 5.1 (QDWH-SVD):

1. A = U_p·H, the polar decomposition, by QDWH (qdwh.py);
2. H = V·Σ·Vᴴ, the Hermitian eigendecomposition of H = U_pᴴ·A (eigh.py, syevd for one
   matrix);
3. U = U_p·V, so A = U·Σ·Vᴴ.

Nearly all the work is matrix products, QR and Cholesky factorizations and one
eigendecomposition: on a GPU these run near the GEMM rate, where the Golub–Reinsch SVD's
one-stage bidiagonalization is memory bound and its QR loop sequential.

One entry, :func:`decompose`, takes the front end's job and routes it:

- **one matrix** (and matrices past the tunable ``batched_max_n`` columns, one after
  another): a real matrix of up to 1024 columns on the GPU by the fixed sequence
  (fixed_schedule.py), tried before the front end's scan, which it does inside its CUDA
  graph; otherwise QDWH in the input's precision with estimates (estimates.py). A tall A
  with m > 1.15·n is first reduced by A = Q·R (as NH §5 and JAX do: QDWH on the n×n R
  costs O(n³) instead of O(mn²) per step), and U = Q·U_R. A is scaled by a power of two
  to max|A| ≈ 1 first where max|A| is far from 1 (exact): the power iteration for ‖A‖₂
  squares norms of AᴴA·x, which overflow from max|A| ≈ 10⁷⁷ in float64 (10¹⁰ in float32).
- **a stack**: every matrix at once (the batched engine): QDWH with weights per matrix,
  one batched eigensolver call, one batched GEMM, so the number of launches does not
  grow with the batch. Each matrix is scaled to max|A| in [1/2, 1) and the iteration
  runs in float64 (complex128) for every input: products of float32 numbers are exact
  there, the Gram matrices of the estimates and of the QR step need the range, and a
  float64 GEMM is as fast as a float32 one on the H100 and H200 (docs/design.md,
  "Ceilings and targets"). A tall matrix runs QDWH on its m×n self (no batched
  Householder QR exists, and Cholesky QR of A itself would need A of full rank). A
  stack too large for the GPU's free memory is decomposed in chunks (:func:`chunk_size`).

A wide A is decomposed through Aᴴ. Values only skip step 3 and take eigenvalues only.

Numerical rank deficiency: U_p is unique only for full-rank A; its columns on singular
values that QDWH did not bring to 1 need not be orthonormal (NH §5.3; cuSOLVER's gesvdp
documents that its U "may not be a full unitary"). With U_p = W·f(Σ)·Vᴴ (A = W·Σ·Vᴴ, f the
iteration's composed rational function), U = U_p·V = W·f(Σ) has orthogonal columns of norms
f(σ_i): every f(σ_i) is 1 exactly when every column norm is, so the check is one pass over
U (max |‖u_i‖ − 1| ≤ 10·√n·ε). Where it fails U is replaced by the Q factor of U's
Householder QR, signs fixed (NH §5.5): the columns with f(σ_i) = 1 change by O(ε), the
others become an orthonormal completion; their σ_i lie below the iteration's reach,
ε·‖A‖₂, so the residual grows by O(ε·‖A‖₂). ``full_matrices`` completes U the same way.
Values only skip the check: an unconverged σ_i below ε·‖A‖₂ is returned as f(σ_i)·σ_i,
within the same bound.
"""

import numpy as np

from .._core import profile, tunables
from .._core.backend import to_host
from .._core.memory import free_device_bytes
from .._core.scaling import scale_values, times_power_of_two, unit_exponent
from ..jacobi.small_qr_cuda import stack_qr
from . import cholesky_qr, estimates, fixed_schedule, qdwh
from .eigh import eigh

# Columns of U = U_p·V with max |‖u_i‖ − 1| above this, in units of √n·ε, mark U_p a partial
# isometry (module docstring): converged QDWH gives O(ε) per column (‖U_pᴴU_p − I‖_F
# measured 0.4–0.6 n·ε), and a column at the bound adds 20/√n n·ε to U's.
ORTHONORMAL_TOL = 10.0
# A is normalized only when max|A| is outside [2^−8, 2^8]: inside, ‖A·x‖ ≤ √(mn)·2^8 and
# the squares that norms of AᴴA·x sum stay below 10³⁰ even in float32 for m·n ≤ 2⁶².
NORMALIZE_BEYOND = 8
# NH §5 and JAX's svd.py: QR first for m > 1.15·n. LAPACK's dgesvd crosses over at 1.6·n
# for its one-stage bidiagonalization; QDWH's steps cost O(m·n²) each, so it gains sooner.
QR_FIRST_RATIO = 1.15
# Bytes of device memory per matrix entry of A that one matrix of a stack uses at its
# peak: the float64 iterate and the QR step's stacked copy, its Q, the Gram matrices and
# the results (a count of the arrays alive at once, rounded up).
WORK_BYTES_PER_ENTRY = 96


def _ct(x):
    return x.conj().swapaxes(-1, -2)


def orthonormal_columns(u, xp, *, complete):
    """Q of the Householder QR of each matrix of ``u`` (batch, m, k), each of the first k
    columns with the sign of R's diagonal: orthonormal even where ``u``'s columns are
    not, equal to them to O(ε) where they are (R ≈ ±I there). ``complete``: m columns,
    the last m − k an orthonormal completion."""
    _, m, k = u.shape
    q, r = stack_qr(u, xp, m if complete else k)
    signs = xp.sign(xp.diagonal(r, axis1=1, axis2=2).real)
    signs = xp.where(signs == 0, 1, signs).astype(u.dtype)
    q[:, :, :k] *= signs[:, None, :]
    return q


def orthonormal_tolerance(n, dtype):
    """ORTHONORMAL_TOL·√n·ε: the largest max |‖u_i‖ − 1| of an orthonormal U."""
    return ORTHONORMAL_TOL * np.sqrt(n) * float(np.finfo(dtype).eps)


def normalized(a, xp):
    """(A·2^e, e) with max|A·2^e| near 1, or (A, 0) where max|A| lies within
    2^±NORMALIZE_BEYOND (no copy of A where its norms cannot overflow); None for a zero
    A. The scaling of one matrix here and in ``gpusvd.polar``."""
    anrm = float(xp.abs(a).max())
    if anrm == 0.0:
        return None
    exponent = unit_exponent(anrm)
    if abs(exponent) <= NORMALIZE_BEYOND:
        return a, 0
    return times_power_of_two(a, exponent, xp), exponent


def polar_factor(a, xp, *, triangular):
    """The unitary polar factor U_p of one m×n, m ≥ n (square or nearly), finite matrix,
    scaled by :func:`normalized`, by QDWH with its estimates (step 1; ``triangular``:
    ``a`` is R of a QR). Returns ``(U_p, converged)`` (:func:`.qdwh.polar_factor_one`);
    also the unitary factor of ``gpusvd.polar`` for one matrix."""
    with profile.phase("qdwh_estimates", xp):
        alpha, l0 = estimates.one_matrix(a, xp, triangular=triangular)
    y = _ct(a)[None] / a.dtype.type(alpha)
    uh, _, converged = qdwh.polar_factor_one(xp, xp.ascontiguousarray(y), l0=l0)
    return xp.ascontiguousarray(_ct(uh[0])), converged


def _tall_qr(work, xp, *, full_matrices, compute_uv):
    """(Q, R) of one tall ``work`` (m > QR_FIRST_RATIO·n): on the GPU by shifted
    CholeskyQR3 up to the tunable ``cholesky_qr_max_entries`` where it succeeds (economy
    Q: not for a complete U), else by Householder QR; on the CPU by Householder QR
    (LAPACK's geqrf is as fast there, in fewer flops). Q is None without ``compute_uv``."""
    n = work.shape[1]
    t = tunables.get()
    if (xp.__name__ in t.cholesky_qr_namespaces and not (compute_uv and full_matrices)
            and work.size <= t.cholesky_qr_max_entries):
        found = cholesky_qr.cholesky_qr(work, xp)
        if found is not None:
            return found
    if compute_uv:
        q, r = xp.linalg.qr(work, mode="complete" if full_matrices else "reduced")
        return q, xp.triu(r[:n])
    return None, xp.triu(xp.linalg.qr(work, mode="r")[:n])


def _one_square(a, xp, *, compute_uv, triangular, fixed):
    """The economy SVD of one m×n, m ≥ n, finite, scaled matrix by steps 1–3 (no QR
    first, so ``a`` is square or nearly): ``(U, S, Vᴴ, orthonormal)``, ``orthonormal``
    whether U passed the column-norm test where that is known already (the fixed
    sequence measures it), else None. ``fixed``: try the fixed sequence first."""
    if fixed and fixed_schedule.applies(a, xp):
        found = _fixed(a, xp, compute_uv=compute_uv)
        if found is not None:
            return found
    real = np.finfo(a.dtype).dtype
    up, _ = polar_factor(a, xp, triangular=triangular)
    with profile.phase("polar_h", xp):
        h = _ct(up) @ a
        h = (h + _ct(h)) * real.type(0.5)
    with profile.phase("eigh", xp):
        lam, v = descending_eigh(h, xp, vectors=compute_uv)
    s = xp.abs(lam).astype(real)
    if not compute_uv:
        return None, s, None, None
    # H is positive semidefinite; an eigenvalue below 0 is rounding (|λ| ≤ O(ε)‖A‖):
    # σ = |λ| with u = −U_p·v keeps A = U·Σ·Vᴴ exact.
    with profile.phase("polar_u", xp):
        u = up @ (v * xp.where(lam < 0, -1, 1).astype(a.dtype))
    return u, s, _ct(v), None


def descending_eigh(h, xp, *, vectors):
    """H = V·Λ·Vᴴ of one Hermitian ``h``, the eigenvalues in descending |λ| (ties in index
    order): (λ, V), V None without ``vectors`` (step 2 of one matrix)."""
    if not vectors:
        lam = xp.linalg.eigvalsh(h)
        return lam[xp.argsort(-xp.abs(lam), kind="stable")], None
    lam, v = xp.linalg.eigh(h)
    order = xp.argsort(-xp.abs(lam), kind="stable")
    return lam[order], v[:, order]


def _fixed(a, xp, *, compute_uv):
    """The fixed sequence's result as :func:`_one_square` returns it, or None where it is
    not finite."""
    found = fixed_schedule.svd(a, xp, compute_uv=compute_uv)
    if found is None:
        return None
    orthonormal = found.deviation <= orthonormal_tolerance(a.shape[1], a.dtype)
    return found.u, found.s, found.vh, orthonormal


def _one_tall(a, xp, *, full_matrices, compute_uv, fixed):
    """SVD of one m×n, m ≥ n ≥ 1, finite matrix, scanned by the front end."""
    m, n = a.shape
    q, exponent, found = None, 0, None
    square = m <= QR_FIRST_RATIO * n
    scaled = normalized(a, xp)
    if scaled is None:
        return _zero(1, m, n, xp, a.dtype, full_matrices, compute_uv)
    work, exponent = scaled
    if square:
        found = _one_square(work, xp, compute_uv=compute_uv, triangular=False, fixed=fixed)
    else:
        with profile.phase("qr", xp):
            q, r = _tall_qr(work, xp, full_matrices=full_matrices, compute_uv=compute_uv)
        found = _one_square(r, xp, compute_uv=compute_uv, triangular=True, fixed=True)
    return _one_finish(found, q, xp, exponent=exponent, full_matrices=full_matrices,
                       compute_uv=compute_uv)


def _one_finish(found, q, xp, *, exponent, full_matrices, compute_uv):
    """(U, S, Vh) stacks of one from :func:`_one_square`'s ``found``: S scaled back by
    2^−``exponent``, U orthonormalized where its column norms fail, times Q of the QR
    that came first, completed for ``full_matrices``."""
    u, s, vh, orthonormal = found
    if exponent:
        s = scale_values(s, -exponent, xp)
    if not compute_uv:
        return None, s[None], None
    m, n = u.shape
    with profile.phase("polar_u", xp):
        if orthonormal is None:
            deviation = float(xp.abs(xp.linalg.norm(u, axis=0) - 1).max())
            orthonormal = deviation <= orthonormal_tolerance(n, u.dtype)
        if not orthonormal:
            u = orthonormal_columns(u[None], xp, complete=False)[0]
        if q is not None:
            if full_matrices:
                q[:, :n] = q[:, :n] @ u
                u = q
            else:
                u = q @ u
        elif full_matrices and m > n:
            u = orthonormal_columns(u[None], xp, complete=True)[0]
    return xp.ascontiguousarray(u)[None], s[None], xp.ascontiguousarray(vh)[None]


def _zero(batch, m, n, xp, dtype, full_matrices, compute_uv):
    """The SVD of ``batch`` zero (or empty) m×n matrices: S zero, U and Vh identities."""
    k = min(m, n)
    s = xp.zeros((batch, k), dtype=np.finfo(dtype).dtype)
    if not compute_uv:
        return None, s, None
    k_u, k_v = (m, n) if full_matrices else (k, k)
    u = xp.broadcast_to(xp.eye(m, k_u, dtype=dtype), (batch, m, k_u)).copy()
    vh = xp.broadcast_to(xp.eye(k_v, n, dtype=dtype), (batch, k_v, n)).copy()
    return u, s, vh


def chunk_size(batch, m, n, xp):
    """Matrices per chunk of a stack: all of them on the CPU; on the GPU as many as fit
    in the share ``batched_memory_share`` of its free memory (at least one)."""
    if xp is np:
        return batch
    free = free_device_bytes(xp)
    per_matrix = WORK_BYTES_PER_ENTRY * (m + n) * n
    share = tunables.get().batched_memory_share
    return max(1, min(batch, int(free * share) // per_matrix))


def _stack_tall(a, xp, *, full_matrices, compute_uv):
    """(U, S, Vh) of a stack (batch, m, n), m >= n >= 1, finite, every matrix at once."""
    _, m, n = a.shape
    dtype = a.dtype
    eps = float(np.finfo(dtype).eps)
    with profile.phase("batched_scale", xp):
        a64, e = estimates.unit_scaled(a, xp)
        y = _ct(a64).copy()  # a new array: QDWH overwrites it
    uh, converged = qdwh.polar_factor(xp, y, eps)
    with profile.phase("batched_eigh", xp):
        h = xp.matmul(uh, a64)
        h = ((h + _ct(h)) * 0.5).astype(dtype)
        lam, v = eigh(h, xp, vectors=compute_uv)
    real = np.finfo(dtype).dtype
    order = xp.argsort(-xp.abs(lam), axis=1)
    s = xp.ldexp(xp.take_along_axis(xp.abs(lam), order, axis=1).astype(np.float64),
                 e[:, None]).astype(real)
    if not compute_uv:
        return None, s, None
    with profile.phase("batched_u", xp):
        lam = xp.take_along_axis(lam, order, axis=1)
        v = xp.take_along_axis(v, order[:, None, :], axis=2)
        flip = xp.where(lam < 0, -1, 1).astype(dtype)[:, None, :]
        u = xp.matmul(_ct(uh).astype(dtype), v * flip)
        deviation = xp.abs(xp.linalg.norm(u, axis=1) - 1).max(axis=1)
        fix = to_host(deviation > orthonormal_tolerance(n, dtype)) | ~converged
        if full_matrices and m > n:
            u = orthonormal_columns(u, xp, complete=True)
        elif fix.any():
            index = xp.asarray(np.flatnonzero(fix))
            u[index] = orthonormal_columns(u[index], xp, complete=False)
    return u, s, _ct(v)


def _stack(a, xp, *, full_matrices, compute_uv):
    """(U, S, Vh) of a finite stack (batch, m, n), m >= n >= 1, in chunks that fit."""
    batch, m, n = a.shape
    step = chunk_size(batch, m, n, xp)
    if step >= batch:
        return _stack_tall(a, xp, full_matrices=full_matrices, compute_uv=compute_uv)
    parts = [_stack_tall(a[i:i + step], xp, full_matrices=full_matrices,
                         compute_uv=compute_uv) for i in range(0, batch, step)]
    s = xp.concatenate([p[1] for p in parts])
    if not compute_uv:
        return None, s, None
    return (xp.concatenate([p[0] for p in parts]), s,
            xp.concatenate([p[2] for p in parts]))


def _transposed(found, compute_uv):
    """The SVD of Aᴴ from that of A (stacks)."""
    u, s, vh = found
    if not compute_uv:
        return None, s, None
    return _ct(vh), s, _ct(u)


def svd(stack, xp, *, full_matrices, compute_uv, fixed=True):
    """SVD of each matrix of the finite stack ``stack`` (batch, m, n), NumPy or CuPy,
    scanned by the front end: every matrix at once up to the tunable ``batched_max_n``
    columns, else one after another (module docstring). ``stack`` is not changed.
    ``fixed``: one matrix may take the fixed sequence.

    Returns (U, S, Vh) stacks, U and Vh None without ``compute_uv``; S descending, of the
    real dtype of ``stack``.

    Examples
    --------
    >>> a = np.array([[[3.0, 0.0], [4.0, 5.0]], [[1.0, 0.0], [0.0, 2.0]]])
    >>> u, s, vh = svd(a, np, full_matrices=False, compute_uv=True)
    >>> np.round(s ** 2, 10)
    array([[45.,  5.],
           [ 4.,  1.]])
    >>> bool(np.allclose((u * s[:, None, :]) @ vh, a))
    True
    """
    batch, m, n = stack.shape
    if m == 0 or n == 0:
        return _zero(batch, m, n, xp, stack.dtype, full_matrices, compute_uv)
    if m < n:
        return _transposed(svd(_ct(stack), xp, full_matrices=full_matrices,
                               compute_uv=compute_uv, fixed=fixed), compute_uv)
    if batch > 1 and n <= tunables.get().batched_max_n:
        return _stack(stack, xp, full_matrices=full_matrices, compute_uv=compute_uv)
    parts = [_one_tall(mat, xp, full_matrices=full_matrices, compute_uv=compute_uv,
                       fixed=fixed) for mat in stack]
    if len(parts) == 1:
        return parts[0]
    return tuple(None if parts[0][i] is None else xp.concatenate([p[i] for p in parts])
                 for i in range(3))


def _unscanned(a, xp, *, full_matrices, compute_uv, accept):
    """One matrix by the fixed sequence before the front end's scan, which the sequence
    does in its CUDA graph (saving the scan's reduction and host synchronization):
    (found, retry). ``found`` (U, S, Vh) stacks of one where the sequence applies and
    ``accept`` says the scan would have left A as it is; otherwise None, and ``retry``
    says whether the fixed sequence may run on the scanned A (it ran, and the scan will
    change A)."""
    m, n = a.shape
    square = max(m, n) <= QR_FIRST_RATIO * min(m, n)
    work = a if m >= n else _ct(a)
    if not (square and fixed_schedule.applies(work, xp)):
        return None, True
    found = fixed_schedule.svd(work, xp, compute_uv=compute_uv)
    if found is None:
        return None, False
    if not accept(found.largest):
        return None, True
    orthonormal = found.deviation <= orthonormal_tolerance(work.shape[1], work.dtype)
    result = _one_finish((found.u, found.s, found.vh, orthonormal), None, xp, exponent=0,
                         full_matrices=full_matrices, compute_uv=compute_uv)
    return (result if m >= n else _transposed(result, compute_uv)), False


def decompose(job, *, full_matrices, compute_uv, what, check_finite):
    """``method="polar"`` for the front end's ``job``: a matrix or stack (module
    docstring), the job scanned here (after the fixed sequence's attempt, which does not
    need it). Returns (U, S, Vh) stacks."""
    xp, (batch, m, n) = job.xp, job.stack.shape
    fixed = True
    if batch == 1 and m and n:
        found, fixed = _unscanned(job.stack[0], xp, full_matrices=full_matrices,
                                  compute_uv=compute_uv, accept=job.unchanged_by_scan)
        if found is not None:
            return found
    job.scan(what=what, check_finite=check_finite)
    return svd(job.stack, xp, full_matrices=full_matrices, compute_uv=compute_uv,
               fixed=fixed)
