"""Array namespaces: NumPy on the CPU, CuPy on the GPU.

Drivers are written once against ``xp`` (paper-independent plumbing); this module
says which ``xp`` an array belongs to and whether a GPU is usable at all.
"""

import functools
import sys

import numpy as np


@functools.cache
def cupy_or_none():
    """The ``cupy`` module if it imports and sees a GPU, else ``None``."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cupy
    except Exception:  # no CuPy, no driver or no device: the CPU path serves
        return None


def simple_reductions(fn):
    """Decorator of the public functions: CuPy's reductions inside ``fn`` without CuPy's
    CUB block reduction, the user's setting restored after.

    With its reduction accelerator ``cub`` (CuPy's default), CuPy compiles a CUB block
    reduction through jitify for each power of two of the reduced length up to 2048,
    about 0.3-4 s a compilation: on the H200 the first SVD of each new shape compiled
    for seconds, after ``gpusvd precompile`` too (one 300² float64 matrix: 6 s). CuPy's
    own reduction kernel depends on the dtypes and the number of dimensions only, so
    ``gpusvd precompile`` covers it. Nothing is imported: a call that does not use CuPy is
    left as it is, and so is one that ``torch.compile`` traces (its operators' eager calls
    come back here).
    """
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        torch = sys.modules.get("torch")
        if torch is not None and torch.compiler.is_compiling():
            return fn(*args, **kwargs)
        core = getattr(sys.modules.get("cupy"), "_core", None)
        saved = getattr(core, "get_reduction_accelerators", lambda: [])()
        if not saved:
            return fn(*args, **kwargs)
        core.set_reduction_accelerators([])
        try:
            return fn(*args, **kwargs)
        finally:
            core.set_reduction_accelerators(saved)
    return wrapped


def constant_for_dynamo(fn):
    """``torch.compiler.assume_constant_result`` without importing torch (the attribute is
    that decorator's whole effect): Dynamo runs ``fn`` when it traces a call, and keeps
    the result as a constant."""
    fn._dynamo_marked_constant = True
    return fn


# The public functions that are not torch operators, as Dynamo is to call them: each one
# wrapped once in torch.compiler.disable (a graph break there), by :func:`eager_under_compile`.
_EAGER_UNDER_COMPILE = {}


def eager_under_compile(fn):
    """Decorator of the public functions that are not torch operators (they have no
    derivative): traced by ``torch.compile``, the call breaks the graph and runs
    eagerly on the real tensors (``torch.compiler.disable``), as any Python function
    that Dynamo cannot trace; ``fullgraph=True`` refuses it, naming the function. Nothing
    is imported: without torch, or outside a compiled function, ``fn`` is called as it is.
    """
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        torch = sys.modules.get("torch")
        if torch is None or not torch.compiler.is_compiling():
            return fn(*args, **kwargs)
        eager = _EAGER_UNDER_COMPILE.get(fn)
        if eager is None:
            eager = _EAGER_UNDER_COMPILE[fn] = torch.compiler.disable(
                fn, reason=f"gpusvd.{fn.__name__} is not a torch operator: it runs "
                           f"eagerly (a graph break, which fullgraph=True refuses)")
        return eager(*args, **kwargs)
    return wrapped


def total(x, axes=None, *, dtype=None):
    """The sum of ``x`` over ``axes`` (default all), one axis at a time from the last.

    Under :func:`simple_reductions` a CuPy sum into few outputs runs one thread block an
    output: on the H200 a whole-array sum of 8M float32 entries into float64 took 5.4 ms,
    by rows first 0.10 ms (0.08 with CUB), and QUIC's projection pass at 16384² took 0.35 s
    against 0.017. The same for NumPy arrays (in another order of addition).

    Examples
    --------
    >>> float(total(np.ones((3, 4)), dtype=np.float64))
    12.0
    >>> total(np.ones((2, 3, 4)), (1, 2))
    array([12., 12.])
    """
    axes = range(x.ndim) if axes is None else axes
    for axis in sorted(axes, reverse=True):
        x = x.sum(axis=axis, dtype=dtype)
    return x


def is_cupy_array(a) -> bool:
    return type(a).__module__.startswith("cupy") and hasattr(a, "device")


def array_namespace(a):
    """``cupy`` for a CuPy array, ``numpy`` for everything else."""
    if is_cupy_array(a):
        import cupy
        return cupy
    return np


def to_host(a):
    """``a`` as a NumPy array: a CuPy array is copied to the host (which synchronizes)."""
    return a.get() if is_cupy_array(a) else np.asarray(a)


@functools.cache
def _scipy_linalg(xp_name):
    if xp_name == "cupy":
        import cupyx.scipy.linalg
        return cupyx.scipy.linalg
    import scipy.linalg
    return scipy.linalg


def scipy_linalg(xp):
    """SciPy's ``linalg`` for NumPy, ``cupyx.scipy.linalg`` for CuPy: the triangular
    solves (batched too, SciPy >= 1.15) and LU factorizations the drivers share."""
    return _scipy_linalg(xp.__name__)
