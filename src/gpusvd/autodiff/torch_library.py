"""The torch side of :mod:`.torch_ops`: the operators ``gpusvd::svd``, ``svdvals``,
``polar`` and ``takagi``, their fake implementations, vmap rules and reverse mode, and
the autograd Functions that ``gpusvd.svd`` and friends apply. Imported only when a tensor needs them
(it imports torch); importing it registers the operators."""

import functools
import json
import sys

import torch
from torch import Tensor
from torch._functorch.utils import enable_single_level_autograd_function
from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters

from .._core.arrays import plain_torch_tensor
from .._core.backend import constant_for_dynamo
from . import EAGER, formulas

OPS = formulas.Ops(where=torch.where, abs=torch.abs, diag_embed=torch.diag_embed,
                   diagonal=lambda x: torch.diagonal(x, dim1=-2, dim2=-1),
                   real=torch.real, eps=lambda dtype: torch.finfo(dtype).eps,
                   cast=lambda x, like: x.to(like.dtype), any=lambda x, axis: x.any(axis))

_ct = formulas.conj_transpose


@constant_for_dynamo
def encode(kw):
    """The operators' ``options`` string: the eager call's keywords (a constant to
    Dynamo, which runs this once when it traces a call)."""
    try:
        return json.dumps(kw, sort_keys=True)
    except TypeError as e:
        raise ValueError(f"with torch tensors, gpusvd's options must be numbers, strings "
                         f"or booleans: {e}") from None


@functools.lru_cache(maxsize=256)
def _decode(options):
    return json.loads(options)


def _own(outputs, a):
    """gpusvd's results as an operator's outputs: each contiguous (forward mode wants a
    tangent laid out as its primal) and in memory of its own (an operator's output may
    alias neither its input nor another output), copied only where it is not."""
    taken = {a.untyped_storage().data_ptr()}
    owned = []
    for x in outputs:
        if x.untyped_storage().data_ptr() in taken or not x.is_contiguous():
            x = x.clone(memory_format=torch.contiguous_format)
        taken.add(x.untyped_storage().data_ptr())
        owned.append(x)
    return tuple(owned)


def _svd_eager(a, full_matrices, options):
    return _own(EAGER["svd"](a, full_matrices=full_matrices, **_decode(options)), a)


def _traced(a):
    """Whether the SVD of ``a`` must be the operator (Dynamo traces it, ``torch.func``
    wraps it, it is a tensor subclass) rather than gpusvd's eager call, which saves the
    dispatcher's layers (0.2 ms of a 64² call on an H200)."""
    return (torch.compiler.is_compiling() or not plain_torch_tensor(a)
            or torch._C._functorch.is_functorch_wrapped_tensor(a))


def _dtypes(dtype):
    """(dtype of the vectors and factors, dtype of the values) of gpusvd's results."""
    if not (dtype.is_floating_point or dtype.is_complex):
        dtype = torch.float64
    return dtype, (dtype.to_real() if dtype.is_complex else dtype)


def _to_front(a, dim):
    """The mapped argument of a vmap rule with its batch axis first."""
    return a if dim is None else a.movedim(dim, 0)


# --- the operators ---------------------------------------------------------------------
# Defined by schema, with an Autograd kernel of gpusvd's own (``_autograd``): a
# ``torch.library.custom_op`` has reverse mode only, and its Autograd kernel hands a tensor
# with a forward-mode tangent to the implementation, whose results then carry a zero
# tangent (``torch.func.jvp``, ``jacfwd``), silently.

_LIB = torch.library.Library("gpusvd", "FRAGMENT")


def _operator(schema, implementation, fake):
    """The operator ``gpusvd::<schema>`` with its implementation on every device (which
    Dynamo does not trace) and its fake implementation; its Autograd kernel is
    :func:`_autograd`'s. Tagged ``cudagraph_unsafe``: gpusvd decides on the host
    (routing, convergence), so a recorded CUDA graph would replay one input's work."""
    name = schema.partition("(")[0]
    _LIB.define(schema, tags=(torch.Tag.pt2_compliant_tag, torch.Tag.cudagraph_unsafe))
    torch.library.register_kernel(f"gpusvd::{name}", None, implementation, lib=_LIB)
    torch.library.register_fake(f"gpusvd::{name}", fake, lib=_LIB)
    return getattr(torch.ops.gpusvd, name).default


def _svd_fake(a, full_matrices, options):
    *batch, m, n = a.shape
    k = min(m, n)
    vectors, values = _dtypes(a.dtype)
    return (a.new_empty((*batch, m, m if full_matrices else k), dtype=vectors),
            a.new_empty((*batch, k), dtype=values),
            a.new_empty((*batch, n if full_matrices else k, n), dtype=vectors))


def _svdvals_impl(a, options):
    return _own((EAGER["svd"](a, full_matrices=False, compute_uv=False,
                              **_decode(options)),), a)[0]


def _svdvals_fake(a, options):
    *batch, m, n = a.shape
    return a.new_empty((*batch, min(m, n)), dtype=_dtypes(a.dtype)[1])


def _polar_impl(a, side, options):
    return _own(EAGER["polar"](a, side=side, **_decode(options)["polar"]), a)


def _polar_fake(a, side, options):
    *batch, m, n = a.shape
    k = n if side == "right" else m
    dtype = _dtypes(a.dtype)[0]
    return a.new_empty(a.shape, dtype=dtype), a.new_empty((*batch, k, k), dtype=dtype)


def _takagi_impl(a, options):
    return _own(EAGER["takagi"](a, **_decode(options)), a)


def _takagi_fake(a, options):
    dtype = a.dtype
    if not dtype.is_complex:   # gpusvd's takagi computes in complex: float32 and half in
        dtype = (torch.complex64 if dtype.is_floating_point and dtype.itemsize <= 4
                 else torch.complex128)           # complex64, the rest in complex128
    return a.new_empty(a.shape[:-1], dtype=dtype.to_real()), a.new_empty(a.shape, dtype=dtype)


svd_op = _operator(
    "svd(Tensor a, bool full_matrices, str options) -> (Tensor, Tensor, Tensor)",
    _svd_eager, _svd_fake)
svdvals_op = _operator("svdvals(Tensor a, str options) -> Tensor", _svdvals_impl, _svdvals_fake)
polar_op = _operator("polar(Tensor a, str side, str options) -> (Tensor, Tensor)",
                     _polar_impl, _polar_fake)
takagi_op = _operator("takagi(Tensor a, str options) -> (Tensor, Tensor)", _takagi_impl,
                      _takagi_fake)

torch.library.register_vmap(svd_op, lambda info, dims, a, full_matrices, options: (
    svd_op(_to_front(a, dims[0]), full_matrices, options), (0, 0, 0)), lib=_LIB)
torch.library.register_vmap(svdvals_op, lambda info, dims, a, options: (
    svdvals_op(_to_front(a, dims[0]), options), 0), lib=_LIB)
torch.library.register_vmap(polar_op, lambda info, dims, a, side, options: (
    polar_op(_to_front(a, dims[0]), side, options), (0, 0)), lib=_LIB)
torch.library.register_vmap(takagi_op, lambda info, dims, a, options: (
    takagi_op(_to_front(a, dims[0]), options), (0, 0)), lib=_LIB)


_DERIVATIVES = (torch._C._functorch.TransformType.Grad, torch._C._functorch.TransformType.Jvp)


def _refuse_nested(a):
    """Refuses a derivative of ``a`` under two or more ``torch.func`` derivative
    transforms (``hessian``, ``jacrev`` of ``jacrev``, ``jvp`` of ``grad``): the Function
    that :func:`_autograd` applies at one level records the inner level's derivative
    but not the outer's (a zero or wrong second derivative, eager and compiled). gpusvd's
    own ``svd``, ``svdvals`` and ``polar`` serve them through ``torch.func``'s rules
    (eagerly; in compiled code from PyTorch 2.13, behind a graph break); ``vmap`` of one
    derivative passes."""
    derivatives = sum(i.key() in _DERIVATIVES for i in retrieve_all_functorch_interpreters())
    if derivatives > 1:
        raise NotImplementedError(
            "gpusvd: nested torch.func derivatives (hessian, jacrev of jacrev, jvp of grad) "
            "of gpusvd's torch operators are not supported: differentiate gpusvd.svd, "
            "svdvals or polar (inside torch.compile, with PyTorch 2.13 or later), or apply "
            "the outer transform outside the compiled function")


def _autograd(op, function):
    """Registers the Autograd kernel of ``op``: ``function`` (an autograd Function with
    ``backward`` and ``jvp``) where the input requires grad or carries a tangent, the
    implementation below autograd otherwise (``function``'s forward calls ``op`` again,
    which lands there: a Function runs its forward without grad or tangents).

    ``function`` is applied at one level, as autograd alone would: here, under a
    ``torch.func`` transform, the dispatcher has already lowered the call to the
    transform's level, where the tensors are that level's (``Function.apply`` would hand
    them to the transforms once more)."""
    apply = super(torch.autograd.Function, function).apply

    def kernel(keyset, a, *args):
        _refuse_nested(a)
        if ((a.requires_grad and torch.is_grad_enabled())
                or torch.autograd.forward_ad.unpack_dual(a).tangent is not None):
            with enable_single_level_autograd_function():
                return apply(a, *args)
        with torch._C._AutoDispatchBelowAutograd():
            return op.redispatch(keyset & torch._C._after_autograd_keyset, a, *args)

    _LIB.impl(op.name().partition("::")[2], kernel, "Autograd", with_keyset=True)


# --- the SVD's derivative, shared by the operators and the Functions -----------------

def _svd_grad(u, s, vh, gu, gs, gvh, k, rule, opaque=False):
    """Ā of an SVD whose U and Vh may be full (of which the first k columns and rows, an
    economy SVD, are given): a loss that reads the extra ones, which are arbitrary, gets
    NaN. ``opaque``: complex data through the derivative's operator (compiled code)."""
    reads_extra = []
    if gu is not None and gu.shape[-1] > k:
        reads_extra.append((gu[..., k:] != 0).flatten(-2).any(-1))
        gu = gu[..., :k]
    if gvh is not None and gvh.shape[-2] > k:
        reads_extra.append((gvh[..., k:, :] != 0).flatten(-2).any(-1))
        gvh = gvh[..., :k, :]
    grad = _svd_derivative(u, s, vh, gu, gs, gvh, rule, opaque)
    for reads in reads_extra:
        grad = torch.where(reads[..., None, None], float("nan"), grad)
    return grad


# --- the derivatives of complex data as operators, for compiled code -------------------
# Inductor, torch.compile's default backend, does not generate code for complex operations
# and compiles the formulas' complex graph wrongly (zero gradients of Re tr P, torch 2.11,
# where aot_eager is right): under compilation the Functions below hand complex derivatives to
# these operators, which run the formulas eagerly and which inductor calls as they are.
# Their own derivative (a second derivative) differentiates the formulas by torch.func.vjp.

def _present(*tensors):
    return [t for t in tensors if t is not None]


def _formula_vjp(formula, inputs, grad):
    """The cotangents of ``inputs`` (None where an input is None) of ``formula(*inputs)``
    against ``grad``, by torch.func.vjp over the present ones."""
    where = [i for i, t in enumerate(inputs) if t is not None]

    def of_present(*present):
        full = list(inputs)
        for i, t in zip(where, present):
            full[i] = t
        return formula(*full)
    _, vjp = torch.func.vjp(of_present, *(inputs[i] for i in where))
    out = [None] * len(inputs)
    for i, g in zip(where, vjp(grad)):
        out[i] = g
    return out


@torch.library.custom_op("gpusvd::svd_backward", mutates_args=())
def svd_backward_op(u: Tensor, s: Tensor, vh: Tensor, gu: Tensor | None, gs: Tensor | None,
                    gvh: Tensor | None, gauge_invariant: bool, broadening: float) -> Tensor:
    return _svd_backward_formula(u, s, vh, gu, gs, gvh, gauge_invariant=gauge_invariant,
                                 broadening=broadening)


@svd_backward_op.register_fake
def _(u, s, vh, gu, gs, gvh, gauge_invariant, broadening):
    return u.new_empty((*u.shape[:-1], vh.shape[-1]))


def _svd_backward_formula(u, s, vh, gu, gs, gvh, *, gauge_invariant, broadening):
    return formulas.svd_backward(OPS, u, s, vh, gu, gs, gvh, gauge_invariant=gauge_invariant,
                                 broadening=broadening or None)


def _differentiated_by_rule(op, formula, tensors):
    """Registers the derivative of the derivative operator ``op``, whose first ``tensors``
    inputs are tensors (or None) and whose last two are the rule (``gauge_invariant``,
    ``broadening``): torch.func.vjp of ``formula`` under that rule."""
    def context(ctx, inputs, output):
        ctx.rule = inputs[tensors:]
        ctx.present = [t is not None for t in inputs[:tensors]]
        ctx.save_for_backward(*_present(*inputs[:tensors]))

    def backward(ctx, grad):
        saved = iter(ctx.saved_tensors)
        inputs = [next(saved) if here else None for here in ctx.present]
        gauge_invariant, broadening = ctx.rule
        ruled = functools.partial(formula, gauge_invariant=gauge_invariant,
                                  broadening=broadening)
        return (*_formula_vjp(ruled, inputs, grad), None, None)

    torch.library.register_autograd(op, backward, setup_context=context)


_differentiated_by_rule(svd_backward_op, _svd_backward_formula, 6)


@torch.library.custom_op("gpusvd::polar_backward", mutates_args=())
def polar_backward_op(u: Tensor, s: Tensor, vh: Tensor, gw: Tensor | None,
                      gp: Tensor | None) -> Tensor:
    return formulas.polar_backward(OPS, u, s, vh, gw, gp)


@polar_backward_op.register_fake
def _(u, s, vh, gw, gp):
    return u.new_empty((*u.shape[:-1], vh.shape[-1]))


def _polar_backward_op_context(ctx, inputs, output):
    ctx.present = [t is not None for t in inputs]
    ctx.save_for_backward(*_present(*inputs))


def _polar_backward_op_backward(ctx, grad):
    saved = iter(ctx.saved_tensors)
    inputs = [next(saved) if here else None for here in ctx.present]
    return tuple(_formula_vjp(lambda *t: formulas.polar_backward(OPS, *t), inputs, grad))


torch.library.register_autograd(polar_backward_op, _polar_backward_op_backward,
                                setup_context=_polar_backward_op_context)


@torch.library.custom_op("gpusvd::takagi_backward", mutates_args=())
def takagi_backward_op(s: Tensor, u: Tensor, gs: Tensor | None, gu: Tensor | None,
                       gauge_invariant: bool, broadening: float) -> Tensor:
    return _takagi_backward_formula(s, u, gs, gu, gauge_invariant=gauge_invariant,
                                    broadening=broadening)


@takagi_backward_op.register_fake
def _(s, u, gs, gu, gauge_invariant, broadening):
    return torch.empty_like(u)


def _takagi_backward_formula(s, u, gs, gu, *, gauge_invariant, broadening):
    return formulas.takagi_backward(OPS, s, u, gs, gu, gauge_invariant=gauge_invariant,
                                    broadening=broadening or None)


_differentiated_by_rule(takagi_backward_op, _takagi_backward_formula, 4)


def _batched(op, info, dims, *args):
    """A vmap rule of the derivative operators: the formulas take leading batch axes."""
    size = info.batch_size
    moved = []
    for x, dim in zip(args, dims):
        if isinstance(x, Tensor):
            x = x.movedim(dim, 0) if dim is not None else x.expand(size, *x.shape)
        moved.append(x)
    return op(*moved), 0


torch.library.register_vmap(svd_backward_op, functools.partial(_batched, svd_backward_op))
torch.library.register_vmap(polar_backward_op, functools.partial(_batched, polar_backward_op))
torch.library.register_vmap(takagi_backward_op,
                            functools.partial(_batched, takagi_backward_op))


def _svd_derivative(u, s, vh, gu, gs, gvh, rule, opaque):
    """formulas.svd_backward, or, for complex data where ``opaque``, its operator."""
    if opaque and u.dtype.is_complex:
        broadening = rule.get("broadening") or 0.0
        return svd_backward_op(u, s, vh, gu, gs, gvh, bool(rule.get("gauge_invariant")),
                               float(broadening))
    return formulas.svd_backward(OPS, u, s, vh, gu, gs, gvh, **rule)


# --- the autograd Functions of torch_ops's docstring, each without ``jvp`` (Dynamo traces
# no Function that has one) and with it ---------------------------------------------------

class SVD(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(a, full_matrices, options, gauge_invariant, broadening):
        if _traced(a):
            return torch.ops.gpusvd.svd(a, full_matrices, options)
        return _svd_eager(a.detach(), full_matrices, options)

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, full_matrices, _, gauge_invariant, broadening = inputs
        ctx.set_materialize_grads(False)
        ctx.k, ctx.full = min(a.shape[-2:]), full_matrices
        ctx.rule = dict(gauge_invariant=gauge_invariant, broadening=broadening)
        ctx.save_for_backward(*output)
        ctx.save_for_forward(*output)

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        # Under compilation (this class, without jvp): complex derivatives by the operator
        return SVD._backward(ctx, gu, gs, gvh, True)

    @staticmethod
    def _backward(ctx, gu, gs, gvh, opaque):
        u, s, vh = ctx.saved_tensors
        k = ctx.k
        grad = _svd_grad(u[..., :k], s, vh[..., :k, :], gu, gs, gvh, k, ctx.rule, opaque)
        return grad, None, None, None, None


class SVDWithJvp(SVD):
    @staticmethod
    def backward(ctx, gu, gs, gvh):
        return SVD._backward(ctx, gu, gs, gvh, False)

    @staticmethod
    def jvp(ctx, da, *_):
        u, s, vh = ctx.saved_tensors
        k = ctx.k
        du, ds, dvh = formulas.svd_jvp(OPS, u[..., :k], s, vh[..., :k, :], da, **ctx.rule)
        if ctx.full:  # the extra columns are arbitrary: no derivative
            du = torch.cat([du, torch.full_like(u[..., k:], float("nan"))], -1)
            dvh = torch.cat([dvh, torch.full_like(vh[..., k:, :], float("nan"))], -2)
        return du, ds, dvh


class Values(torch.autograd.Function):
    """s of the SVD (u, s, vh) of ``a`` for a call that returns only the values
    (``compute_uv=False``, ``svdvals``), differentiated as a function of ``a`` by the
    values' rule (rule 1: U·diag(ḡs)·Vᴴ) straight to ``a``, not through the SVD's
    Function. Under compilation the SVD's Function would get zero cotangents of U and
    Vh where eager code gets None, and zeros cannot say that no loss reads them (Σ W∘(U·S·Vᴴ)
    at a zero value gives them zero cotangents too: rule 2's NaN). The derivative is
    written in (u, s, vh), which carry the SVD's history, so second derivatives reach the
    SVD's Function with the cotangents the first derivative gives U and V."""

    generate_vmap_rule = True

    @staticmethod
    def forward(a, u, s, vh, broadening):
        return s.clone()

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, u, s, vh, broadening = inputs
        ctx.rule = dict(broadening=broadening)
        ctx.save_for_backward(u, s, vh)
        ctx.save_for_forward(u, s, vh)  # (vmap's generated rule of jvp expects them)

    @staticmethod
    def backward(ctx, gs):
        return Values._backward(ctx, gs, True)

    @staticmethod
    def _backward(ctx, gs, opaque):
        u, s, vh = ctx.saved_tensors
        return _svd_derivative(u, s, vh, None, gs, None, ctx.rule, opaque), None, None, None, None


class ValuesWithJvp(Values):
    @staticmethod
    def backward(ctx, gs):
        return Values._backward(ctx, gs, False)

    @staticmethod
    def jvp(ctx, da, du, ds, dvh, _):
        return ds.clone()


class RightPolar(torch.autograd.Function):
    """W = U·Vᴴ and P = V·S·Vᴴ from the SVD (u, s, vh) of ``a``, differentiated as
    functions of ``a`` by their own formulas; (u, s, vh) carry the second derivative."""

    generate_vmap_rule = True

    @staticmethod
    def forward(a, u, s, vh):
        return u @ vh, (_ct(vh) * s[..., None, :].to(vh.dtype)) @ vh

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, u, s, vh = inputs
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(u, s, vh)
        ctx.save_for_forward(u, s, vh)

    @staticmethod
    def backward(ctx, gw, gp):
        u, s, vh = ctx.saved_tensors
        if u.dtype.is_complex:  # under compilation (this class, without jvp): the operator
            return polar_backward_op(u, s, vh, gw, gp), None, None, None
        return formulas.polar_backward(OPS, u, s, vh, gw, gp), None, None, None


class RightPolarWithJvp(RightPolar):
    @staticmethod
    def backward(ctx, gw, gp):
        u, s, vh = ctx.saved_tensors
        return formulas.polar_backward(OPS, u, s, vh, gw, gp), None, None, None

    @staticmethod
    def jvp(ctx, da, *_):
        u, s, vh = ctx.saved_tensors
        return formulas.polar_jvp(OPS, u, s, vh, da)


class Takagi(torch.autograd.Function):
    """(S, U) of the Takagi factorization of ``a``, differentiated by
    :func:`.formulas.takagi_backward` (the gradient of real input is real)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(a, options, gauge_invariant, broadening):
        if _traced(a):
            return torch.ops.gpusvd.takagi(a, options)
        return _takagi_impl(a.detach(), options)

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, _, gauge_invariant, broadening = inputs
        ctx.set_materialize_grads(False)
        ctx.real = not a.dtype.is_complex
        ctx.rule = dict(gauge_invariant=gauge_invariant, broadening=broadening)
        ctx.save_for_backward(*output)
        ctx.save_for_forward(*output)

    @staticmethod
    def backward(ctx, gs, gu):
        # Under compilation (this class, without jvp): the derivative by its operator
        return Takagi._backward(ctx, gs, gu, True)

    @staticmethod
    def _backward(ctx, gs, gu, opaque):
        s, u = ctx.saved_tensors
        if opaque:
            grad = takagi_backward_op(s, u, gs, gu, bool(ctx.rule["gauge_invariant"]),
                                      float(ctx.rule["broadening"] or 0.0))
        else:
            grad = formulas.takagi_backward(OPS, s, u, gs, gu, **ctx.rule)
        return (grad.real if ctx.real else grad), None, None, None


class TakagiWithJvp(Takagi):
    @staticmethod
    def backward(ctx, gs, gu):
        return Takagi._backward(ctx, gs, gu, False)

    @staticmethod
    def jvp(ctx, da, *_):
        s, u = ctx.saved_tensors
        return formulas.takagi_jvp(OPS, s, u, da, **ctx.rule)


# The Functions with ``jvp`` run eagerly only, also where eager code runs inside
# torch.compile (behind the graph break of torch_ops._EAGERLY, under torch.func.jvp):
# Dynamo must not capture their forward there, which would hand the operator the
# transform's dual tensors below their derivative. Their forward is hidden from Dynamo
# (torch.compiler.disable) once Dynamo is loaded; before, nothing can capture it, and
# importing Dynamo would cost the first differentiated call about a second.
_HIDDEN = {}


def _hidden_from_dynamo(function):
    """``function`` (an autograd Function with ``jvp``) whose forward Dynamo never
    captures."""
    if "torch._dynamo" not in sys.modules:
        return function
    if function not in _HIDDEN:
        forward = torch.compiler.disable(function.forward,
                                         reason="gpusvd's forward-mode Functions run eagerly")
        _HIDDEN[function] = type(function.__name__, (function,),
                                 {"forward": staticmethod(forward)})
    return _HIDDEN[function]


def functions(traced):
    """The autograd Functions (SVD, RightPolar, Takagi) of a call that Dynamo traces
    (``traced``: the Functions without ``jvp``, which Dynamo does not trace) or of an
    eager one."""
    if traced:
        return SVD, RightPolar, Takagi
    return tuple(map(_hidden_from_dynamo, (SVDWithJvp, RightPolarWithJvp, TakagiWithJvp)))


def values_function(traced):
    """The autograd Function (:class:`Values`) of a values-only call, as
    :func:`functions`."""
    return Values if traced else _hidden_from_dynamo(ValuesWithJvp)


# --- the operators' own Functions (:func:`_autograd`): the default rule of
# :mod:`.formulas`; ``svdvals`` and ``polar`` compute the SVD again ----------------------

class _SVDOperator(SVDWithJvp):
    @staticmethod
    def forward(a, full_matrices, options):
        return svd_op(a, full_matrices, options)

    @staticmethod
    def setup_context(ctx, inputs, output):
        SVD.setup_context(ctx, (*inputs, False, None), output)

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        return SVDWithJvp.backward(ctx, gu, gs, gvh)[:3]


def _input_svd(ctx):
    """The economy SVD of the operator's saved input (of its conjugate transpose for the
    left polar decomposition), recomputed: differentiable, for second derivatives."""
    (a,) = ctx.saved_tensors
    if ctx.side is None:
        return svd_op(a, False, ctx.options)
    return svd_op(_ct(a) if ctx.side == "left" else a, False,
                  encode(_decode(ctx.options)["svd"]))


class _SVDValsOperator(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(a, options):
        return svdvals_op(a, options)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.options, ctx.side = inputs[1], None
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, gs):
        u, s, vh = _input_svd(ctx)
        return formulas.svd_backward(OPS, u, s, vh, None, gs, None), None

    @staticmethod
    def jvp(ctx, da, _):
        u, s, vh = _input_svd(ctx)
        return formulas.svd_jvp(OPS, u, s, vh, da)[1]


class _PolarOperator(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(a, side, options):
        return polar_op(a, side, options)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.options, ctx.side = inputs[2], inputs[1]
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, gw, gp):
        u, s, vh = _input_svd(ctx)
        if ctx.side == "left":
            gw = None if gw is None else _ct(gw)
            return _ct(formulas.polar_backward(OPS, u, s, vh, gw, gp)), None, None
        return formulas.polar_backward(OPS, u, s, vh, gw, gp), None, None

    @staticmethod
    def jvp(ctx, da, *_):
        u, s, vh = _input_svd(ctx)
        if ctx.side == "left":
            dw, dp = formulas.polar_jvp(OPS, u, s, vh, _ct(da))
            return _ct(dw), dp
        return formulas.polar_jvp(OPS, u, s, vh, da)


class _TakagiOperator(TakagiWithJvp):
    @staticmethod
    def forward(a, options):
        return takagi_op(a, options)

    @staticmethod
    def setup_context(ctx, inputs, output):
        Takagi.setup_context(ctx, (*inputs, False, None), output)

    @staticmethod
    def backward(ctx, gs, gu):
        return TakagiWithJvp.backward(ctx, gs, gu)[:2]


_autograd(svd_op, _SVDOperator)
_autograd(svdvals_op, _SVDValsOperator)
_autograd(polar_op, _PolarOperator)
_autograd(takagi_op, _TakagiOperator)
