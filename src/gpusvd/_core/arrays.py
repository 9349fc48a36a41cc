"""Input and output arrays: where a problem is computed and in which type it comes back.

Input may be a NumPy or CuPy array, or anything with ``__dlpack__`` (PyTorch, JAX, …) or
``__array__``. The computation runs on NumPy (CPU) or CuPy (GPU) arrays; results go back
in the input's array type and on its device (docs/design.md, "The public API").

GPU input crosses by DLPack both ways, without a copy and without the host: CuPy's
``from_dlpack`` hands the producer (torch, JAX) CuPy's current stream, so the producer's
pending work is ordered before ours, and the consumer of a result (``torch.from_dlpack``,
``jax.numpy.from_dlpack``) hands CuPy its stream, on which CuPy records the wait for our
work (the stream semantics of the Python DLPack specification). A CUDA tensor on the
stream CuPy works on (both libraries' default) needs no such exchange: it is viewed in
place and its results are handed to torch as DLPack capsules (:func:`_torch_cuda_view`).
Host input goes through ``numpy.from_dlpack`` and comes back the same way.

Two producers need care before export: a torch tensor that requires grad, or carries a
lazy conjugate or negative bit, refuses ``__dlpack__``, so the data (not the autograd
graph: the results do not require grad) is exported; a JAX array is immutable, so it is
never used as workspace, whatever ``overwrite_a`` says.
"""

import contextlib
import sys

import numpy as np

from . import tunables
from .backend import cupy_or_none, is_cupy_array, to_host

_DLPACK_CUDA = 2  # DLDeviceType kDLCUDA


def _instance_of(a, module, name):
    """Whether ``a`` is a ``module.name`` without importing ``module`` (it is loaded if
    ``a`` is one)."""
    mod = sys.modules.get(module)
    return mod is not None and isinstance(a, getattr(mod, name))


# What a user who passes a traced JAX array to a gpusvd function that is not a JAX
# primitive is told, after the function's name (svd, svdvals, polar and takagi are
# primitives: :mod:`gpusvd.autodiff.jax_primitives`).
JAX_TRACER_MESSAGE = (
    "cannot take a traced JAX array (inside jax.jit, jax.vmap, jax.grad or another "
    "transformation): its kernels are not XLA operations. gpusvd.svd, gpusvd.svdvals, "
    "gpusvd.polar and gpusvd.takagi are JAX primitives and work inside every "
    "transformation; call this one outside the transformed function, or pass the values "
    "in with jax.pure_callback")


def jax_tracer(a):
    """Whether ``a`` is a JAX tracer: an array inside ``jax.jit``, ``jax.vmap``,
    ``jax.grad`` or another transformation, whose values gpusvd's kernels cannot read."""
    core = sys.modules.get("jax.core")
    return core is not None and isinstance(a, core.Tracer)


# The half-precision dtypes of PyTorch and JAX (bfloat16 has no NumPy dtype, so neither
# crosses DLPack into NumPy as it is): computed in float32, as NumPy promotes float16.
_HALF = ("float16", "bfloat16")


def _half_precision(a):
    """The dtype of a PyTorch or JAX array in half precision, else None."""
    if not (_instance_of(a, "torch", "Tensor") or _instance_of(a, "jax", "Array")):
        return None
    return a.dtype if str(a.dtype).rpartition(".")[2] in _HALF else None


def under_autocast(a):
    """Whether ``a`` is a half-precision torch tensor inside ``torch.autocast`` for its
    device: gpusvd then computes in float32 and returns float32, as autocast runs
    ``torch.linalg``'s decompositions (the float32 list of its op reference)."""
    if not _instance_of(a, "torch", "Tensor") or _half_precision(a) is None:
        return False
    import torch

    return torch.is_autocast_enabled(a.device.type)


def _cast_back(restore, dtype):
    """``restore``, then floating results back to the input's half-precision ``dtype``."""
    def back(r):
        out = restore(r)
        if hasattr(out, "is_floating_point"):  # torch
            return out.to(dtype) if out.is_floating_point() else out
        return out.astype(dtype) if str(out.dtype).startswith(("float", "bfloat")) else out
    return back


def _dlpack_device(a):
    try:
        return a.__dlpack_device__()
    except Exception:
        return None


def _from_dlpack_of(a):
    """The ``from_dlpack`` of the library that made ``a`` (torch, jax.numpy, …): of the
    module that defines its class or the nearest package above it that has one (or that
    package's ``numpy``), else None."""
    if _instance_of(a, "jax", "Array"):  # its class lives in jaxlib, which has none
        return sys.modules["jax"].numpy.from_dlpack
    parts = type(a).__module__.split(".")
    for depth in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:depth]))
        for owner in (module, getattr(module, "numpy", None)):
            if owner is not None and hasattr(owner, "from_dlpack"):
                return owner.from_dlpack
    return None


# The torch dtypes that CuPy views as they are (the others cross DLPack).
_TORCH_DTYPES = {name: np.dtype(name) for name in
                 ("float32", "float64", "complex64", "complex128")}


def _torch_cuda_view(a, cp):
    """A CuPy view of the CUDA tensor ``a``, and the way back, without DLPack's
    stream exchange: where torch and CuPy work on one stream of ``a``'s device (the
    default stream unless the caller chose another), the order of their work needs no
    event. ``torch.from_dlpack`` of a result is handed a capsule made for that stream.
    A 2×2 float64 call takes 0.26 ms through the exchange, 0.17 viewed (H200;
    BENCHMARKS.md, "The small torch call"). For a plain, contiguous tensor of a CuPy
    dtype only, else None (the caller takes DLPack)."""
    torch = sys.modules["torch"]
    dtype = _TORCH_DTYPES.get(str(a.dtype).rpartition(".")[2])
    if (dtype is None or a.device.type != "cuda" or not plain_torch_tensor(a)
            or not a.numel() or not a.is_contiguous() or a.is_conj() or a.is_neg()):
        return None
    device = a.device.index
    stream = torch.cuda.current_stream(device).cuda_stream
    if stream != cp.cuda.get_current_stream(device).ptr:
        return None
    memory = cp.cuda.UnownedMemory(a.data_ptr(), a.numel() * dtype.itemsize, a, device)
    arr = cp.ndarray(tuple(a.shape), dtype, cp.cuda.MemoryPointer(memory, 0))
    consumer = stream or 1  # DLPack's number for the legacy default stream
    to_device = _to_cupy_on(device)

    def restore(r):
        r = to_device(r)
        if not r.flags.c_contiguous:
            with cp.cuda.Device(device):
                r = cp.ascontiguousarray(r)
        return torch.from_dlpack(r.__dlpack__(stream=consumer))
    return arr, restore


def _exportable(a):
    """``a`` ready for ``__dlpack__``: a torch tensor's data without its autograd graph
    and with lazy conjugation or negation applied (torch refuses to export either)."""
    if _instance_of(a, "torch", "Tensor"):
        return a.detach().resolve_conj().resolve_neg()
    return a


class Placement:
    """Where a problem is computed (``xp``, GPU index) and how results go back.

    Build it with :func:`place`; ``to_output`` turns a result array of ``xp`` into the
    input's type and device. ``writable`` is false where the array handed to the caller
    must not be used as workspace (it is a view of an immutable JAX array or of read-only
    memory).
    """

    def __init__(self, xp, device_id, restore, writable=True):
        self.xp = xp
        self.device_id = device_id
        self._restore = restore
        self.writable = writable

    @property
    def on_gpu(self):
        return self.device_id is not None

    def device_context(self):
        """A context that makes the computing GPU current (a no-op on the CPU)."""
        if self.on_gpu:
            return self.xp.cuda.Device(self.device_id)
        return contextlib.nullcontext()

    def to_output(self, r):
        return self._restore(r)


def parse_device(device):
    """(kind, GPU index or None) of a ``device`` argument; ``ValueError`` if it is none."""
    if device in ("auto", "cpu", "gpu"):
        return device, None
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool) and device >= 0:
        return "gpu", int(device)
    raise ValueError(f"device must be 'auto', 'cpu', 'gpu' or a GPU index >= 0, got {device!r}")


def plain_torch_tensor(a):
    """Whether ``a`` is a torch tensor of torch's own class (or a Parameter), not a
    subclass that intercepts torch's operations."""
    torch = sys.modules["torch"]
    return type(a) in (torch.Tensor, torch.nn.Parameter)


def torch_use(a):
    """What the torch tensor ``a`` asks of a decomposition beyond its values:
    ``"differentiated"`` (autograd, forward mode or a ``torch.func`` transform may
    differentiate or map it), ``"compiled"`` (``torch.compile`` traces it), or None
    (gpusvd's eager code serves). ``svd``, ``svdvals`` and ``polar`` take the first two
    as torch operators (:mod:`gpusvd.autodiff.torch_ops`); the other functions refuse
    them (:func:`place`)."""
    torch = sys.modules["torch"]
    if a.requires_grad and torch.is_grad_enabled():
        return "differentiated"
    if torch.compiler.is_compiling():
        return "compiled"
    if (torch._C._functorch.is_functorch_wrapped_tensor(a)  # (first: a batched tensor
            or _tangent(torch, a) is not None):                # has no unpack_dual)
        return "differentiated"
    return None


def _tangent(torch, a):
    """The forward-mode tangent of ``a``, or None. Below autograd (inside an operator's
    implementation) a tensor with a tangent fails PyTorch's internal assertion: that is
    traced code handing gpusvd's operator a dual tensor below its derivatives, refused
    here in words."""
    try:
        return torch.autograd.forward_ad.unpack_dual(a).tangent
    except RuntimeError as e:
        if not torch._C._dispatch_tls_is_dispatch_key_excluded(
                torch._C.DispatchKey.AutogradFunctionality):
            raise
        raise NotImplementedError(
            "gpusvd: a forward-mode derivative (torch.func.jvp or dual tensors) traced by "
            "torch.compile (or torch.func.linearize) reached gpusvd's operator below its "
            "derivatives; take it outside the compiled function (torch.func.jacfwd and "
            "vmap of jvp work compiled)") from e


# The differentiable call that computes what a function without derivatives computes.
_DIFFERENTIABLE_TWIN = {
    "jacobi_svd": "; gpusvd.svd(x, method='jacobi') is the same SVD (jacobi_svd's "
                  "defaults) with svd's derivatives, whose rule counts values below "
                  "4·ε·σ₁ as zero, however accurate"}


def _torch_refusal(a):
    """Why gpusvd's eager code must not take the torch tensor ``a``, else None: it is
    sparse (DLPack carries dense arrays only), traced by ``torch.compile`` (whose tracer
    cannot read the DLPack exchange), or differentiated or transformed (:func:`torch_use`),
    where results that carry no derivative would count as constants, silently."""
    torch = sys.modules["torch"]
    if a.layout != torch.strided:
        return (f"a {str(a.layout).rpartition('.')[2]} tensor is not taken; pass a dense "
                f"one (x.to_dense())")
    use = torch_use(a)
    if use == "compiled":
        return ("it is not a torch operator and cannot be traced by torch.compile; call it "
                "outside the compiled function, or wrap it in torch.compiler.disable")
    if use == "differentiated":
        return ("it has no derivative and is not a torch operator: under autograd, forward "
                "mode or torch.func its results would count as constants. Pass the input "
                "detached (x.detach()) or call it under torch.no_grad() to use them as "
                "constants")
    return None


def place(a, device="auto", what="this gpusvd function"):
    """Convert ``a`` to a NumPy or CuPy array and decide where to compute.

    Returns ``(array, Placement)``. The array may share memory with ``a``: callers copy
    before writing (the input is never modified unless ``overwrite_a=True`` and
    ``Placement.writable``). ``what``: the caller's name, for a refused torch tensor's
    ``ValueError``.
    """
    kind, index = parse_device(device)
    if jax_tracer(a):  # svd, svdvals, polar and takagi take tracers before they get here
        raise ValueError(f"{what}: {JAX_TRACER_MESSAGE}{_DIFFERENTIABLE_TWIN.get(what, '')}")
    if _instance_of(a, "torch", "Tensor") and (why := _torch_refusal(a)) is not None:
        raise ValueError(f"{what}: {why}{_DIFFERENTIABLE_TWIN.get(what, '')}")
    cp = cupy_or_none()
    immutable = _instance_of(a, "jax", "Array")
    if is_cupy_array(a):
        arr, home = a, "gpu"
        restore = _to_cupy_on(a.device.id)
    elif isinstance(a, np.ndarray):
        arr, home = a, "cpu"
        restore = to_host
    elif cp is not None and _instance_of(a, "torch", "Tensor") and (
            shared := _torch_cuda_view(a, cp)) is not None:
        (arr, restore), home = shared, "gpu"
    elif hasattr(a, "__dlpack__"):
        half = _half_precision(a)
        if half is not None:  # computed in float32, returned in the input's own dtype
            half = None if under_autocast(a) else half    # (or in float32 under autocast)
            a = a.float() if _instance_of(a, "torch", "Tensor") else a.astype("float32")
        dev = _dlpack_device(a)
        back = _from_dlpack_of(a)
        a = _exportable(a)
        if dev is not None and dev[0] == _DLPACK_CUDA:
            if cp is None:
                raise ValueError("the input lives on a GPU but CuPy is not usable here; "
                                 "install gpusvd[cuda12] or gpusvd[cuda13]")
            arr, home = cp.from_dlpack(a), "gpu"
        else:
            arr, home = np.from_dlpack(a), "cpu"
        if back is not None:
            restore = _via(back, home, arr)
        else:  # a library we cannot name: its device, in NumPy or CuPy
            restore = _to_cupy_on(arr.device.id) if home == "gpu" else to_host
        if half is not None:
            restore = _cast_back(restore, half)
    else:
        arr, home = np.asarray(a), "cpu"
        restore = to_host
    writable = not immutable and (home == "gpu" or arr.flags.writeable)

    if kind == "auto":
        big = arr.size >= tunables.get().auto_gpu_min_entries
        kind = "gpu" if home == "gpu" or (cp is not None and big) else "cpu"
    if kind == "cpu":
        return to_host(arr), Placement(np, None, restore, writable)
    if cp is None:
        raise ValueError("device='gpu' was asked for but no GPU is usable (CuPy missing, "
                         "no CUDA driver or no device)")
    if index is None:
        index = arr.device.id if home == "gpu" else cp.cuda.Device().id
    elif index >= cp.cuda.runtime.getDeviceCount():
        raise ValueError(f"GPU index {index} out of range: "
                         f"{cp.cuda.runtime.getDeviceCount()} GPU(s) present")
    if home == "gpu" and arr.device.id == index:
        return arr, Placement(cp, index, restore, writable)  # already there: no copy
    if not arr.dtype.isnative:  # CuPy takes native byte order only
        arr = arr.astype(arr.dtype.newbyteorder("="))
    with cp.cuda.Device(index):
        arr = cp.asarray(arr)
    return arr, Placement(cp, index, restore, writable)


def _to_cupy_on(device_id):
    def restore(r):
        import cupy
        if is_cupy_array(r) and r.device.id == device_id:
            return r
        if is_cupy_array(r):
            # A peer copy runs on the destination's stream, which does not wait for the
            # computing GPU's work.
            r.device.synchronize()
        with cupy.cuda.Device(device_id):
            return cupy.asarray(r)
    return restore


def _writable(h):
    """The host array ``h``, copied where it is read-only (a broadcast view)."""
    return h if h.flags.writeable else h.copy()


def _via(back, home, like):
    """Results to the input's library by its ``from_dlpack``, on the input's device.

    Contiguous first: DLPack carries strides, but not every consumer takes any (XLA
    imports only dense layouts); writable too: NumPy exports a read-only array only
    to consumers of DLPack 1.0, which JAX's ``from_dlpack`` is not.
    """
    if home == "cpu":
        return lambda r: back(_writable(np.ascontiguousarray(to_host(r))))
    home_id = like.device.id

    def restore(r):
        import cupy
        r = _to_cupy_on(home_id)(r)
        with cupy.cuda.Device(home_id):
            return back(cupy.ascontiguousarray(r))
    return restore
