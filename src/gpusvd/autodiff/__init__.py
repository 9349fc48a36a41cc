"""The framework layer: gpusvd's decompositions as PyTorch operators and JAX primitives,
with their derivatives.

The derivative is written once (:mod:`.formulas`: right or NaN, never finite and wrong);
:mod:`.torch_ops` registers the operators and their autograd, :mod:`.jax_autodiff` the
primitives and their transformation rules. Neither library is imported unless its arrays
come in.
"""

# gpusvd's eager ``svd`` and ``polar``, which the operators and primitives compute on
# concrete arrays; the package's __init__ hands them over.
EAGER = {}

from . import jax_autodiff, torch_ops  # noqa: E402


def binding_for(a):
    """The module that takes ``a`` (a torch tensor that is differentiated, transformed or
    compiled; a traced JAX array), or None for any other input, which gpusvd computes
    eagerly."""
    if torch_ops.handles(a):
        return torch_ops
    if jax_autodiff.traced(a):
        return jax_autodiff
    return None
