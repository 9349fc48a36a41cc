"""gpusvd's ``svd``, ``svdvals``, ``polar`` and ``takagi`` as JAX primitives, usable inside
``jax.jit``, ``jax.vmap``, ``jax.grad``, ``jax.jvp``, ``jax.jacfwd``, ``jax.jacrev`` and
``jax.hessian`` in any composition.

Each decomposition is one primitive whose value is gpusvd's eager function on concrete
arrays (``autodiff.EAGER``); its keywords are the primitive's parameters, so that ``method``,
``device`` and the other options reach it. Where it runs:

- outside ``jax.jit``: the eager function on the JAX array itself;
- compiled for the CPU: ``jax.experimental.buffer_callback`` with the eager function on
  a NumPy view of XLA's input buffer, the results copied into its output buffers. On
  2 cores, a jitted 4×4 float64 SVD took 57 µs through it against 330 µs through
  ``jax.pure_callback`` (which copies in and out and converts to ``jax.Array``s), the
  eager call on a JAX array 157 µs; at 256² all three take the SVD's 12 ms;
- compiled for a CUDA GPU: ``jax.experimental.buffer_callback``, whose callback gets
  XLA's own device buffers and its stream. The buffers are wrapped as CuPy arrays (no
  copy), gpusvd runs on them under a CuPy stream on XLA's stream, so
  that its work follows the input's producer, and the results are copied into XLA's
  output buffers on that stream, before its consumers. Nothing crosses to the host.
  The call is not command-buffer safe (``command_buffer_compatible=False``): a command
  buffer records one run of the callback and replays it, while gpusvd synchronizes with
  the host inside (convergence flags, the front end's finite check, the host loops of
  Golub–Reinsch), captures CUDA graphs of its own and allocates from CuPy's pool, not
  XLA's: leave CuPy room (``XLA_PYTHON_CLIENT_MEM_FRACTION`` below its default 0.75,
  or ``XLA_PYTHON_CLIENT_PREALLOCATE=false``).

Batching moves the mapped axis to the front and binds the same primitive on the stack,
which gpusvd decomposes in one call (its batched engine on a GPU).

Derivatives, from :mod:`.formulas` (written once for torch and JAX):

- ``svd``'s JVP binds ``svd`` for (U, s, Vh) and ``svd_tangent``, a primitive linear in
  dA, for (dU, ds, dVh): its value is :func:`.formulas.svd_jvp` in ``jax.numpy``, its
  transpose :func:`.formulas.svd_backward`, its own JVP that of its value (higher
  derivatives). JAX could transpose the ``jax.numpy`` JVP itself, but at a repeated
  singular value the forward formula multiplies by NaN (the direction inside the
  cluster is undefined) and the transpose of x·NaN is NaN even where the cotangent is
  exactly zero; the reverse rule leaves out the terms whose cotangent columns are zero,
  so a loss that never reads a repeated value's columns keeps its finite gradient.
- ``takagi``'s JVP binds ``takagi`` for (s, U) and ``takagi_tangent``, made as
  ``svd_tangent`` is (:func:`_linear_tangent`), from :func:`.formulas.takagi_jvp` and
  :func:`.formulas.takagi_backward`.
- ``svdvals``' JVP binds ``svd`` (ds needs U and V) and keeps ds; its primal is that s.
- ``polar``'s JVP binds ``polar`` for the factors and ``svd`` for (U, s, Vh); the tangent
  is :func:`.formulas.polar_jvp` in ``jax.numpy``, transposed by JAX (its closed forms
  hold at repeated singular values, where they need no rule of zeros).
- ``full_matrices=True`` compiles and maps, but of a non-square matrix is not
  differentiable (the extra columns are arbitrary; ``jnp.linalg.svd`` refuses too); of a
  square one it is the economy SVD, differentiated as such (as ``jnp.linalg.svd`` does).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from . import EAGER, formulas

try:
    from jax.experimental.buffer_callback import buffer_callback
except ImportError:  # JAX before buffer_callback: eager calls work, traced ones cannot
    raise ImportError(
        f"gpusvd inside jax.jit, jax.vmap or jax.grad needs jax.experimental."
        f"buffer_callback, which JAX {jax.__version__} lacks (gpusvd is tested with JAX "
        f"0.10 and later); upgrade JAX, or call gpusvd outside the transformation") from None

FULL_NOT_DIFFERENTIABLE = (
    "svd: full_matrices=True is not differentiable for a non-square matrix (its extra "
    "columns are arbitrary); pass full_matrices=False under jax.grad, jax.jvp and the "
    "other derivatives")


_ct = formulas.conj_transpose


def _diag_embed(x):
    return x[..., :, None] * jnp.eye(x.shape[-1], dtype=x.dtype)


OPS = formulas.Ops(where=jnp.where, abs=jnp.abs, diag_embed=_diag_embed,
                   diagonal=lambda x: jnp.diagonal(x, axis1=-2, axis2=-1), real=jnp.real,
                   eps=lambda dtype: float(jnp.finfo(dtype).eps),
                   cast=lambda x, like: x.astype(like.dtype),
                   any=lambda x, axis: jnp.any(x, axis=axis))


# The eager call of each primitive: its results as a tuple of arrays of x's library.
def _svd_call(x, *, kw, full_matrices, **_):
    return tuple(EAGER["svd"](x, full_matrices=full_matrices, compute_uv=True, **dict(kw)))


def _svdvals_call(x, *, kw, **_):
    return (EAGER["svd"](x, full_matrices=False, compute_uv=False, **dict(kw)),)


def _polar_call(x, *, kw, side, **_):
    return tuple(EAGER["polar"](x, side=side, **dict(kw)))


def _takagi_call(x, *, kw, **_):
    return tuple(EAGER["takagi"](x, **dict(kw)))


# Their results' shapes and dtypes (s real: float32 for float32 and complex64 input).
def _svd_shapes(a, *, full_matrices, **_):
    *batch, m, n = a.shape
    k = min(m, n)
    return (ShapedArray((*batch, m, m if full_matrices else k), a.dtype),
            ShapedArray((*batch, k), jnp.finfo(a.dtype).dtype),
            ShapedArray((*batch, n if full_matrices else k, n), a.dtype))


def _svdvals_shapes(a, **_):
    return (_svd_shapes(a, full_matrices=False)[1],)


def _polar_shapes(a, *, side, **_):
    *batch, m, n = a.shape
    side_n = n if side == "right" else m
    return ShapedArray(a.shape, a.dtype), ShapedArray((*batch, side_n, side_n), a.dtype)


def _takagi_shapes(a, **_):
    *batch, n, _ = a.shape
    return ShapedArray((*batch, n), jnp.finfo(a.dtype).dtype), ShapedArray(a.shape, a.dtype)


def _structs(avals):
    return [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals]


def _on_host(call, params, ctx, out, x):
    """``buffer_callback``'s callback on the CPU: ``call`` on a NumPy view of XLA's input
    buffer, its results copied into the output buffers."""
    for buffer, result in zip(out, call(np.asarray(x), **params)):
        np.asarray(buffer)[...] = result


def _cupy_view(buffer, device):
    """A CuPy array on the memory of an XLA buffer of ``buffer_callback`` (dense, row
    major) on GPU ``device``, without a copy. Built from the pointer: CuPy's DLPack and
    CUDA array interface importers may refuse the read-only flag XLA sets on inputs,
    which gpusvd honours (it never writes to its input)."""
    import cupy

    shape, dtype = tuple(buffer.shape), np.dtype(buffer.dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    if size == 0:
        return cupy.empty(shape, dtype)
    memory = cupy.cuda.UnownedMemory(buffer.__cuda_array_interface__["data"][0], size,
                                     buffer, device)
    return cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(memory, 0))


class _StreamHandle:
    """XLA's stream pointer under the CUDA stream protocol (``__cuda_stream__``)."""

    def __init__(self, pointer):
        self.pointer = pointer

    def __cuda_stream__(self):
        return 0, self.pointer


def _external_stream(cupy, pointer):
    """A CuPy stream on XLA's: ``Stream.from_external`` where CuPy has it (14 deprecates
    ``ExternalStream``), else ``ExternalStream``."""
    if hasattr(cupy.cuda.Stream, "from_external"):
        return cupy.cuda.Stream.from_external(_StreamHandle(pointer))
    return cupy.cuda.ExternalStream(pointer)


def _on_device(call, params, ctx, out, x):
    """``buffer_callback``'s callback on a CUDA GPU: ``call`` on CuPy views of XLA's
    buffers, on XLA's stream, its results copied into the output buffers on that stream
    (module docstring)."""
    import cupy

    device = x.__dlpack_device__()[1]
    stream = ctx.stream() if callable(ctx.stream) else ctx.stream  # a method at first
    # The stream's device is current: CuPy's ExternalStream takes it under other names
    # (dev, device_id) from one release to the next, or not at all.
    with cupy.cuda.Device(device), _external_stream(cupy, stream):
        for buffer, result in zip(out, call(_cupy_view(x, device), **params)):
            _cupy_view(buffer, device)[...] = result


def _lowering(call, shapes, callback):
    """A lowering rule: ``callback(call, params, ctx, out, x)`` in a ``buffer_callback``."""
    def lowered(x, **params):
        run = buffer_callback(functools.partial(callback, call, params),
                              _structs(shapes(x, **params)),
                              command_buffer_compatible=False)
        return run(x)
    return mlir.lower_fun(lowered, multiple_results=True)


def _stacked(primitive, args, dims, **params):
    """The batching rule: the mapped axis to the front, one call on the stack."""
    (x,), (dim,) = args, dims
    out = primitive.bind(jnp.moveaxis(x, dim, 0), **params)
    return out, (0,) * len(out)


def _decomposition(name, call, shapes):
    primitive = Primitive(f"gpusvd_{name}")
    primitive.multiple_results = True
    primitive.def_impl(call)
    primitive.def_abstract_eval(shapes)
    mlir.register_lowering(primitive, _lowering(call, shapes, _on_host), platform="cpu")
    mlir.register_lowering(primitive, _lowering(call, shapes, _on_device), platform="cuda")
    batching.primitive_batchers[primitive] = functools.partial(_stacked, primitive)
    return primitive


svd_p = _decomposition("svd", _svd_call, _svd_shapes)
svdvals_p = _decomposition("svdvals", _svdvals_call, _svdvals_shapes)
polar_p = _decomposition("polar", _polar_call, _polar_shapes)
takagi_p = _decomposition("takagi", _takagi_call, _takagi_shapes)


def _highest(formula, *args, **kwargs):
    """``formula`` with its matrix products at full precision: JAX's default for float32
    on a GPU is TF32 (a relative error of ~10⁻³ in a gradient, H200); JAX's own SVD rule
    asks for the highest precision too."""
    with jax.default_matmul_precision("highest"):
        return formula(*args, **kwargs)


def _conj(g):
    return None if g is None else jnp.conj(g)


def _linear_tangent(name, forward, backward):
    """The primitive of a decomposition's tangent map (module docstring): linear in its
    last argument dA, its value ``forward(OPS, *factors, dA, **rule)`` in ``jax.numpy``
    (a tangent of each factor), its transpose ``backward(OPS, *factors, *cotangents,
    **rule)``, its own JVP that of its value (higher derivatives)."""
    primitive = Primitive(f"gpusvd_{name}_tangent")
    primitive.multiple_results = True

    def value(*args, **rule):
        return tuple(_highest(forward, OPS, *args, **rule))

    def shapes(*args, **_):
        return tuple(ShapedArray(x.shape, x.dtype) for x in args[:-1])

    def transpose(cotangents, *args, **rule):
        """dA's cotangent by ``backward``. JAX pairs a cotangent with its tangent as
        Re Σ x·y, the formulas (as torch) as Re Σ conj(x)·y: the complex cotangents are
        conjugated on the way in and out."""
        *factors, da = args
        none = (None,) * len(factors)
        given = [None if type(c) is ad.Zero else c for c in cotangents]
        if all(c is None for c in given):
            return (*none, ad.Zero(da.aval))
        bar = _highest(backward, OPS, *factors, *map(_conj, given), **rule)
        return (*none, jnp.conj(bar))

    def jvp(primals, tangents, **rule):
        """Linear in dA: the map at dA's tangent, plus the derivative of its
        ``jax.numpy`` value along the factors' tangents (left out where all are zero,
        where the NaN of a repeated value's columns times zero would otherwise
        appear)."""
        *factors, da = primals
        moved = []
        if all(type(t) is ad.Zero for t in tangents[:-1]):
            out = primitive.bind(*primals, **rule)
        else:
            out, along = jax.jvp(lambda *f: value(*f, da, **rule), tuple(factors),
                                 tuple(ad.instantiate_zeros(t) for t in tangents[:-1]))
            moved.append(along)
        if type(tangents[-1]) is not ad.Zero:
            moved.append(primitive.bind(*factors, tangents[-1], **rule))
        return out, [sum(terms) for terms in zip(*moved)]

    def batch(args, dims, **rule):
        """Every argument stacked on the front axis (broadcast where it is not mapped)."""
        size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
        args = [jnp.broadcast_to(x, (size, *x.shape)) if d is None
                else jnp.moveaxis(x, d, 0) for x, d in zip(args, dims)]
        return primitive.bind(*args, **rule), (0,) * (len(args) - 1)

    primitive.def_impl(value)
    primitive.def_abstract_eval(shapes)
    mlir.register_lowering(primitive, mlir.lower_fun(value, multiple_results=True))
    ad.primitive_transposes[primitive] = transpose
    ad.primitive_jvps[primitive] = jvp
    batching.primitive_batchers[primitive] = batch
    return primitive


svd_tangent_p = _linear_tangent("svd", formulas.svd_jvp, formulas.svd_backward)
takagi_tangent_p = _linear_tangent("takagi", formulas.takagi_jvp, formulas.takagi_backward)


# The JVP rules of the decompositions (module docstring). JAX calls a rule only with a
# nonzero tangent: with one input, ``da`` is an array.
def _svd_jvp(primals, tangents, **params):
    (a,), (da,) = primals, tangents
    if params["full_matrices"] and a.shape[-1] != a.shape[-2]:
        raise ValueError(FULL_NOT_DIFFERENTIABLE)
    u, s, vh = svd_p.bind(a, **params)
    return (u, s, vh), svd_tangent_p.bind(u, s, vh, da,
                                          gauge_invariant=params["gauge_invariant"],
                                          broadening=params["broadening"])


def _economy_svd(a, kw, gauge_invariant, broadening):
    """The economy SVD under a derivative of s or of the polar factors: its own tangent
    map enters second derivatives only."""
    return svd_p.bind(a, kw=kw, full_matrices=False,
                      gauge_invariant=gauge_invariant, broadening=broadening)


def _svdvals_jvp(primals, tangents, *, kw, gauge_invariant, broadening):
    (a,), (da,) = primals, tangents
    u, s, vh = _economy_svd(a, kw, gauge_invariant, broadening)
    ds = svd_tangent_p.bind(u, s, vh, da, gauge_invariant=gauge_invariant,
                            broadening=broadening)[1]
    return (s,), (ds,)


def _polar_jvp(primals, tangents, **params):
    (a,), (da,) = primals, tangents
    w, p = polar_p.bind(a, **params)
    # Not gauge-invariant for every s (formulas, rule 3): polar_jvp weighs U's and V's
    # columns by 1/(s_i + s_j), so second derivatives at repeated values are NaN.
    u, s, vh = _economy_svd(a, params["kw_svd"], False,
                            params["broadening"])
    if params["side"] == "right":
        dw, dp = _highest(formulas.polar_jvp, OPS, u, s, vh, da)
    else:  # A = P·W, so Aᴴ = Wᴴ·P is the right polar decomposition of Aᴴ = V·S·Uᴴ
        dwh, dp = _highest(formulas.polar_jvp, OPS, _ct(vh), s, _ct(u), _ct(da))
        dw = _ct(dwh)
    return (w, p), (dw, dp)


def _takagi_jvp(primals, tangents, **params):
    (a,), (da,) = primals, tangents
    s, u = takagi_p.bind(a, **params)
    return (s, u), takagi_tangent_p.bind(s, u, da, gauge_invariant=params["gauge_invariant"],
                                         broadening=params["broadening"])


ad.primitive_jvps[svd_p] = _svd_jvp
ad.primitive_jvps[svdvals_p] = _svdvals_jvp
ad.primitive_jvps[polar_p] = _polar_jvp
ad.primitive_jvps[takagi_p] = _takagi_jvp


def working(a):
    """``a`` in the dtype the primitives take, and the map of their results back: half
    precision computed in float32 and returned in its own dtype, integers and booleans
    promoted to JAX's default float (as gpusvd's front end promotes them to float64)."""
    dtype = jnp.dtype(a.dtype)
    if jnp.issubdtype(dtype, jnp.inexact) and dtype.itemsize > 2:
        return a, lambda r: r
    if jnp.issubdtype(dtype, jnp.floating):
        return a.astype(jnp.float32), lambda r: r.astype(dtype)
    return a.astype(jax.dtypes.canonicalize_dtype(np.float64)), lambda r: r


def complex_working(a):
    """``a`` in the complex dtype the Takagi primitive takes: complex64 from float32,
    complex64 and half precision, complex128 otherwise (JAX's default complex for
    integers), as gpusvd's ``takagi`` computes them."""
    dtype = jnp.dtype(a.dtype)
    if not jnp.issubdtype(dtype, jnp.inexact):
        return a.astype(jax.dtypes.canonicalize_dtype(np.complex128))
    single = dtype.itemsize <= (8 if jnp.issubdtype(dtype, jnp.complexfloating) else 4)
    return a.astype(jnp.complex64 if single else jnp.complex128)
