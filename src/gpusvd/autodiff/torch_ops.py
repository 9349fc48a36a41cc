"""PyTorch operators ``gpusvd::svd``, ``svdvals``, ``polar`` and ``takagi``, and the autograd
of ``gpusvd.svd``, ``svdvals``, ``polar`` and ``takagi`` on tensors.

Each decomposition is a torch operator whose implementation is gpusvd's eager code on
the tensor's device, with a fake (meta) implementation, so that
``torch.compile(fullgraph=True)`` and ``torch.export`` capture it without a graph break;
a vmap rule that maps a batch onto gpusvd's stack engine (one call, no loop); and an
Autograd kernel of its own with reverse and forward mode (:mod:`.formulas`, written in
differentiable torch operations, so that ``gradgradcheck`` passes) that serves the
``torch.func`` transforms too, so that the operator alone passes
``torch.library.opcheck`` and ``gradcheck`` with forward mode.

``gpusvd.svd`` and friends reach the operators through ``torch.autograd.Function`` s with
``setup_context`` (what ``torch.func`` needs): reverse mode, forward mode (``jvp``),
double backward, ``vmap`` through the operators' rule. A Function whose input is a plain
tensor in eager code calls gpusvd's eager function itself, without the dispatcher's
layers (0.2 ms of a 64² call on an H200); traced, wrapped or subclassed input takes the
operator. Dynamo does not trace a Function with a custom ``jvp``; under
``torch.compile`` the same Functions without it run. One ``torch.func.grad`` or
``jacrev``, ``vmap`` of it and ``vmap`` alone stay in the graph (``fullgraph=True``
included). A tensor with a tangent (``torch.func.jvp``, ``jacfwd``, dual tensors) or,
from PyTorch 2.13, nested transforms (``hessian``, ``vmap`` of ``grad``) leave the
graph: Dynamo breaks it there and the call runs eagerly (``hessian``, ``vmap`` of
``grad``, ``jacfwd``, ``vmap`` of ``jvp`` right; ``jvp`` and dual tensors reach the
operator as dual tensors and are refused; ``fullgraph=True`` is Dynamo's error).
Compiled derivatives are right or refused, never silently wrong. A values-only call
(``svdvals``, ``compute_uv=False``) takes the SVD's Function and then
:class:`.torch_library.Values`, whose derivative goes straight to the input by the
values' rule: compiled code hands a Function zero cotangents for outputs no loss reads,
where eager code hands None, and the SVD's rule cannot tell those zeros from a loss's
(NaN at a zero value where eager code was right). A loss of ``takagi``'s S alone still
meets that at a zero value under compilation: NaN, where eager code gives the values'
rule.
The polar decomposition's derivative is its own
(:func:`.formulas.polar_backward`), exact at repeated singular values; its factors come
from the SVD when a derivative is needed, from gpusvd's polar method otherwise.

The options of the eager call (method, device, …) reach the operators as one JSON
string; those of the derivative (``gauge_invariant``, ``broadening``) are the Functions'
arguments. The torch side lives in :mod:`.torch_library`, imported at the first tensor.
"""

import importlib
import sys

from .._core.arrays import torch_use, under_autocast
from .._core.backend import constant_for_dynamo


def _torch():
    return sys.modules.get("torch")


def _needs_derivative(a):
    """Whether autograd, forward mode or a ``torch.func`` transform may differentiate
    ``a``."""
    return torch_use(a) == "differentiated"


def handles(a):
    """Whether ``a`` is a tensor whose decomposition goes through the operators: one that
    is differentiated (reverse or forward mode), wrapped by ``torch.func``, or traced by
    ``torch.compile`` (:func:`gpusvd._core.arrays.torch_use`)."""
    torch = _torch()
    if torch is None or not isinstance(a, torch.Tensor):
        return False
    return torch_use(a) is not None


# This module's svd and polar where Dynamo does not trace them (``torch.compiler.disable``:
# a graph break): the Functions with ``jvp`` then run, on the transforms' tensors as
# eager code has them (``is_compiling()`` is False inside). Filled by :func:`_library`
# once Dynamo is loaded (only a compiled call takes them; importing Dynamo would cost an
# eager first call about a second).
_EAGERLY = {}


@constant_for_dynamo
def _library():
    """Imports :mod:`.torch_library`, which registers the operators; Dynamo runs this
    rather than tracing it."""
    importlib.import_module(".torch_library", __package__)
    if not _EAGERLY and "torch._dynamo" in sys.modules:
        for name in ("svd", "polar", "takagi"):
            _EAGERLY[name] = _torch().compiler.disable(
                globals()[name],
                reason=f"gpusvd.{name} under a torch.func derivative or forward mode runs "
                       f"eagerly (a graph break, which fullgraph=True refuses)")
    return True


def _compiled_transform(a):
    """Whether Dynamo traces ``a`` with a tangent (``torch.func.jvp``, ``jacfwd``, dual
    tensors) or under nested ``torch.func`` transforms (``hessian``, ``vmap`` of
    ``grad``), where the call runs eagerly (``_EAGERLY``): Dynamo traces no Function's
    ``jvp``, and its traced forward mode of the operators fails. One ``grad`` or
    ``jacrev``, and ``vmap`` alone, stay traced: the operators' Autograd kernel and vmap
    rule serve the transforms' tensors."""
    torch = _torch()
    if not torch.compiler.is_compiling():
        return False
    if torch.autograd.forward_ad.unpack_dual(a).tangent is not None:
        return True
    if not (_resumes_reverse_transforms() and torch._C._are_functorch_transforms_active()):
        return False  # (Dynamo traces these calls)
    from torch._functorch.pyfunctorch import retrieve_current_functorch_interpreter

    interpreter = retrieve_current_functorch_interpreter()
    return interpreter.key() != _vmap_transform() and interpreter.level() > 1


@constant_for_dynamo
def _resumes_reverse_transforms():
    """Whether Dynamo resumes ``torch.func.jacrev`` right after a graph break inside it:
    from PyTorch 2.13 (2.11 returns a wrong finite Jacobian after any break there, a
    function of torch's own included; gpusvd's operator then stays in the graph, right
    under one reverse transform and ``vmap`` of it, refused loudly under ``hessian``)."""
    return _torch().__version__ >= "2.13"  # a TorchVersion, compared as a version


@constant_for_dynamo
def _vmap_transform():
    return _torch()._C._functorch.TransformType.Vmap


def svd(a, *, full_matrices, compute_uv, gauge_invariant, broadening, kw):
    """gpusvd's SVD of the tensor ``a`` (:func:`handles`) with the keywords ``kw``,
    through the operators, with its derivatives."""
    _library()
    from . import torch_library as library

    a = a.float() if under_autocast(a) else a
    if _compiled_transform(a):
        return _EAGERLY["svd"](
            a, full_matrices=full_matrices, compute_uv=compute_uv,
            gauge_invariant=gauge_invariant, broadening=broadening, kw=kw)
    options = library.encode(kw)
    traced = _torch().compiler.is_compiling()
    if not compute_uv and not _needs_derivative(a):
        return _torch().ops.gpusvd.svdvals(a, options)
    svd_fn, _, _ = library.functions(traced)
    if not compute_uv:
        u, s, vh = svd_fn.apply(a, False, options, gauge_invariant, broadening)
        return library.values_function(traced).apply(a, u, s, vh, broadening)
    return svd_fn.apply(a, full_matrices, options, gauge_invariant, broadening)


def polar(a, *, side, broadening, kw_polar, kw_svd):
    """gpusvd's polar decomposition of the tensor ``a`` (:func:`handles`): the
    polar method where no derivative is needed, else the factors of the SVD with their
    own derivative (the left decomposition of A is the right one of Aᴴ)."""
    _library()
    from . import torch_library as library

    a = a.float() if under_autocast(a) else a
    if _compiled_transform(a):
        return _EAGERLY["polar"](a, side=side, broadening=broadening, kw_polar=kw_polar,
                                 kw_svd=kw_svd)
    if not _needs_derivative(a):
        options = library.encode({"svd": kw_svd, "polar": kw_polar})
        return _torch().ops.gpusvd.polar(a, side, options)
    svd_fn, polar_fn, _ = library.functions(_torch().compiler.is_compiling())
    x = a if side == "right" else a.transpose(-1, -2).conj_physical()
    u, s, vh = svd_fn.apply(x, False, library.encode(kw_svd), False, broadening)
    w, p = polar_fn.apply(x, u, s, vh)
    return (w, p) if side == "right" else (w.transpose(-1, -2).conj_physical(), p)


def takagi(a, *, gauge_invariant, broadening, kw):
    """gpusvd's Takagi factorization (S, U) of the tensor ``a`` (:func:`handles`) with the
    keywords ``kw``, through its operator, with its derivatives
    (:func:`.formulas.takagi_backward`)."""
    _library()
    from . import torch_library as library

    a = a.float() if under_autocast(a) else a
    if _compiled_transform(a):
        return _EAGERLY["takagi"](a, gauge_invariant=gauge_invariant, broadening=broadening,
                                  kw=kw)
    _, _, function = library.functions(_torch().compiler.is_compiling())
    return function.apply(a, library.encode(kw), gauge_invariant, broadening)
