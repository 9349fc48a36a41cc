"""Gradients of gpusvd's decompositions for PyTorch and JAX users.

The derivative is written once (:mod:`.formulas`, stable where singular values repeat);
:mod:`.torch_autograd` records it for tensors that require grad, :mod:`.jax_autodiff` as
a custom VJP for JAX's transformations. Neither library is imported unless its arrays
come in.
"""
