"""The gauge-invariant losses of the gradient tests, each written three ways: through
gpusvd (any framework's arrays: ``take`` gives the decomposition), and as a NumPy/SciPy
reference for the finite differences."""

import numpy as np
import scipy.linalg


def _top_projector(u, k):
    return u[..., :, :k] @ u[..., :, :k].conj().swapaxes(-1, -2)


# name: (loss of (u, s, vh, polar_u) for a framework, NumPy reference of a matrix)
LOSSES = {
    "sum_of_s": (lambda u, s, vh, w, W: s.sum(),
                 lambda a, W: np.linalg.svd(a, compute_uv=False).sum()),
    "polar_linear": (lambda u, s, vh, w, W: (w * W).sum(),
                     lambda a, W: (scipy.linalg.polar(a)[0] * W).sum()),
    "projector_top2": (lambda u, s, vh, w, W: (_top_projector(u, 2) @ W).sum(),
                       lambda a, W: (_top_projector(np.linalg.svd(a)[0], 2) @ W).sum()),
}


def finite_difference(reference, a, weights, h=1e-6):
    """Central differences of ``reference(a, weights)`` entry by entry (real ``a``)."""
    grad = np.zeros_like(a)
    for index in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[index] = h
        grad[index] = (reference(a + step, weights) - reference(a - step, weights)) / (2 * h)
    return grad


# Matrices with exactly repeated singular values, each with the losses whose gradient
# exists there (the projector needs a gap after the second value; the polar factor full
# rank).
DEGENERATE = {
    "identity": (np.eye(4), ("sum_of_s", "polar_linear")),
    "diag_1123": (np.diag([3.0, 2.0, 1.0, 1.0])[::-1].copy(), ("sum_of_s", "polar_linear",
                                                                "projector_top2")),
    "repeated_zeros": (np.diag([3.0, 2.0, 0.0, 0.0]), ("projector_top2",)),
    "rotated_cluster": (None, ("sum_of_s", "polar_linear", "projector_top2")),
}


def rotated_cluster():
    """Q·diag(5, 4, 1, 1, 1)·Zᵀ with Haar Q, Z: a repeated value not on the axes."""
    rng = np.random.default_rng(7)
    q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    z, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    return q @ np.diag([5.0, 4.0, 1.0, 1.0, 1.0]) @ z.T
