"""Gradients of gpusvd's decompositions for PyTorch and JAX users.

The derivative is written once (:mod:`.formulas`, stable where singular values repeat);
:mod:`.torch_autograd` records it for tensors that require grad, :mod:`.jax_autodiff` as
a custom VJP for JAX's transformations. Neither library is imported unless its arrays
come in.
"""

from . import jax_autodiff, torch_autograd


def binding_for(a):
    """The module that records the derivative for ``a`` (a torch tensor that requires grad,
    a traced JAX array), or None for any other input."""
    if torch_autograd.records_grad(a):
        return torch_autograd
    if jax_autodiff.traced(a):
        return jax_autodiff
    return None
