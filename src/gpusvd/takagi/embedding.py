"""Takagi factorization through a real symmetric eigenproblem twice the size
(``takagi(method="eigh")``, the CPU's default).

For a complex symmetric A = B + iC (B and C real symmetric) and a Takagi vector u = x + iy
with A·ū = σu, the real and imaginary parts of A·ū = σu read Bx + Cy = σx and Cx − By = σy:

    M [x; y] = σ [x; y],    M = [[B, C], [C, −B]]  (2n × 2n, real symmetric).

The eigenvalues of M are ±σ_k ([−y; x] belongs to −σ_k), so one call of LAPACK's
symmetric eigensolver (syevd) gives every Takagi value and, from the eigenvectors of the n
largest eigenvalues, U = X + iY, with the eigensolver's backward stability: residual and
unitarity of a few n·ε of ‖A‖, as the Jacobi method's.

Where σ_j + σ_k is as small as the eigensolver's error (values near zero), the vector it
returns for +σ_j may mix with the one of −σ_k, which is i·u_k: X + iY then loses
unitarity. A Householder QR of its columns, taken in descending σ, restores it: column j
moves by at most about ε‖A‖/(σ_i + σ_j) towards earlier columns, which moves the residual
by about ε‖A‖; the columns of values at zero become an orthonormal basis of the null
space of Ā, which is all that σ = 0 asks of them.
"""

import numpy as np


def factorize(stack, xp):
    """Takagi values and vectors of each matrix of ``stack``.

    Parameters
    ----------
    stack : (batch, n, n) complex64 or complex128 array of ``xp``
        Complex symmetric within rounding (its symmetric part is factored), scaled into
        the safe range and finite (the front end's); not modified.
    xp : module
        ``numpy`` or ``cupy``.

    Returns
    -------
    (S, U)
        S real (batch, n) descending and non-negative; U (batch, n, n) unitary, with
        A ≈ U diag(S) Uᵀ.

    Examples
    --------
    >>> a = np.array([[[1.0, 2.0j], [2.0j, 3.0]]])
    >>> s, u = factorize(a, np)
    >>> np.round(s, 6)
    array([[3.828427, 1.828427]])
    >>> bool(np.allclose(u[0] @ np.diag(s[0]) @ u[0].T, a[0]))
    True
    """
    batch, n, _ = stack.shape
    real = np.finfo(stack.dtype).dtype
    if n == 0 or batch == 0:
        return xp.zeros((batch, n), real), xp.zeros((batch, n, n), stack.dtype)
    sym = (stack + stack.transpose(0, 2, 1)) * real.type(0.5)
    b, c = sym.real, sym.imag
    m = xp.empty((batch, 2 * n, 2 * n), real)
    m[:, :n, :n] = b
    m[:, :n, n:] = c
    m[:, n:, :n] = c
    m[:, n:, n:] = -b
    lam, vec = xp.linalg.eigh(m)  # ascending
    lam, vec = lam[:, n:][:, ::-1], vec[:, :, n:][:, :, ::-1]  # the n largest, descending
    u = xp.empty((batch, n, n), stack.dtype)
    u.real, u.imag = vec[:, :n], vec[:, n:]
    q, r = _qr(u, xp)
    d = xp.diagonal(r, axis1=1, axis2=2)
    size = xp.abs(d)
    # Column j of Q times the phase of r_jj is column j of U where U was unitary.
    phase = xp.where(size > 0, d / xp.where(size > 0, size, 1), 1)
    u = q * phase[:, None, :]
    s = xp.abs(lam)  # a value at zero may come out as a tiny negative eigenvalue
    order = xp.argsort(-s, axis=1)
    s = xp.take_along_axis(s, order, axis=1)
    u = xp.take_along_axis(u, order[:, None, :], axis=2)
    return s, u


def _qr(stack, xp):
    """Householder QR of each matrix of ``stack``: NumPy takes the stack in one call;
    CuPy's QR is called matrix by matrix (a stack is not assumed there)."""
    if xp is np:
        return np.linalg.qr(stack)
    parts = [xp.linalg.qr(mat) for mat in stack]
    return xp.stack([q for q, _ in parts]), xp.stack([r for _, r in parts])
