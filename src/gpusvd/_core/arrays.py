"""Input and output arrays: where a problem is computed and in which type it comes back.

Input may be a NumPy or CuPy array, or anything with ``__dlpack__`` (PyTorch, JAX, …) or
``__array__``. The computation runs on NumPy (CPU) or CuPy (GPU) arrays; results go back
in the input's array type and on its device (DESIGN.md, "Public API").
"""

import sys

import numpy as np

from . import tunables
from .backend import cupy_or_none, is_cupy_array, to_host

_DLPACK_CUDA = 2  # DLDeviceType kDLCUDA


def _dlpack_device(a):
    try:
        return a.__dlpack_device__()
    except Exception:
        return None


def _from_dlpack_of(a):
    """The ``from_dlpack`` of the library that made ``a`` (torch, jax.numpy, …)."""
    root = sys.modules.get(type(a).__module__.split(".")[0])
    for owner in (root, getattr(root, "numpy", None)):
        if owner is not None and hasattr(owner, "from_dlpack"):
            return owner.from_dlpack
    return None


class Placement:
    """Where a problem is computed (``xp``, GPU index) and how results go back.

    Build it with :func:`place`; ``to_output`` turns a result array of ``xp`` into the
    input's type and device.
    """

    def __init__(self, xp, device_id, restore):
        self.xp = xp
        self.device_id = device_id
        self._restore = restore

    @property
    def on_gpu(self):
        return self.device_id is not None

    def device_context(self):
        """A context that makes the computing GPU current (a no-op on the CPU)."""
        if self.on_gpu:
            return self.xp.cuda.Device(self.device_id)
        import contextlib
        return contextlib.nullcontext()

    def to_output(self, r):
        return self._restore(r)


def _parse_device(device):
    if device in ("auto", "cpu", "gpu"):
        return device, None
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool) and device >= 0:
        return "gpu", int(device)
    raise ValueError(f"device must be 'auto', 'cpu', 'gpu' or a GPU index >= 0, got {device!r}")


def place(a, device="auto"):
    """Convert ``a`` to a NumPy or CuPy array and decide where to compute.

    Returns ``(array, Placement)``. The array may share memory with ``a``: callers copy
    before writing (the input is never modified unless ``overwrite_a=True``).
    """
    kind, index = _parse_device(device)
    cp = cupy_or_none()
    restore = _identity
    if is_cupy_array(a):
        arr = a
        home = "gpu"
        restore = _to_cupy_on(a.device.id)
    elif isinstance(a, np.ndarray):
        arr, home = a, "cpu"
        restore = _to_numpy
    elif hasattr(a, "__dlpack__"):
        dev = _dlpack_device(a)
        back = _from_dlpack_of(a)
        if dev is not None and dev[0] == _DLPACK_CUDA:
            if cp is None:
                raise ValueError("the input lives on a GPU but CuPy is not usable here; "
                                 "install gpusvd[cuda12] or gpusvd[cuda13]")
            arr, home = cp.from_dlpack(a), "gpu"
        else:
            arr, home = np.from_dlpack(a), "cpu"
        if back is not None:
            restore = _via(back, home, arr)
    else:
        arr, home = np.asarray(a), "cpu"
        restore = _to_numpy

    if kind == "auto":
        big = arr.size >= tunables.get().auto_gpu_min_entries
        kind = "gpu" if home == "gpu" or (cp is not None and big) else "cpu"
    if kind == "cpu":
        return to_host(arr), Placement(np, None, restore)
    if cp is None:
        raise ValueError("device='gpu' was asked for but no GPU is usable (CuPy missing, "
                         "no CUDA driver or no device)")
    if index is None:
        index = arr.device.id if home == "gpu" else cp.cuda.Device().id
    if index >= cp.cuda.runtime.getDeviceCount():
        raise ValueError(f"GPU index {index} out of range: "
                         f"{cp.cuda.runtime.getDeviceCount()} GPU(s) present")
    with cp.cuda.Device(index):
        arr = cp.asarray(arr)
    return arr, Placement(cp, index, restore)


def _identity(r):
    return r


def _to_numpy(r):
    return to_host(r)


def _to_cupy_on(device_id):
    def restore(r):
        import cupy
        with cupy.cuda.Device(device_id):
            return cupy.asarray(r)
    return restore


def _via(back, home, like):
    def restore(r):
        if home == "gpu":
            r = _to_cupy_on(like.device.id)(r)
        else:
            r = np.ascontiguousarray(to_host(r))
        return back(r)
    return restore
