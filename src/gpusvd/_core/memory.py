"""Running out of memory: one clear ``MemoryError`` with a hint, and nothing left allocated.

The public functions are wrapped by :func:`hint_on_exhaustion`. When a decomposition runs
out of device (or host) memory, CuPy raises its ``OutOfMemoryError`` (a ``MemoryError``),
and cuBLAS or cuSOLVER may instead report ``*_ALLOC_FAILED``, which CuPy raises as its own
error type. Either way the user gets a ``MemoryError`` that keeps the original message
and says what to try instead.

Nothing may stay allocated: a traceback holds the frames of the failed call, and the
frames hold its device arrays. So the original exception's traceback is dropped before
the new error is raised (outside the ``except`` clause, so that it is not chained either),
and CuPy's memory pools and the kept CUDA graphs' pools then return their blocks to the
device.
"""

import functools

from . import graphs

# Markers of an allocation failure in the messages of errors that are not MemoryError:
# cuBLAS and cuSOLVER statuses, and the CUDA runtime's.
_ALLOCATION_FAILURES = ("ALLOC_FAILED", "cudaErrorMemoryAllocation")

# What to try instead, by kind of decomposition (the message's second part).
DENSE_HINT = ("The dense methods hold the matrix and its factors on one device: try "
              "float32 (or complex64) for half the memory, compute_uv=False or "
              "full_matrices=False, device='cpu', gpusvd.svd_lowrank for a low-rank "
              "approximation (it streams matrices larger than memory), or "
              "gpusvd.distributed over several GPUs.")
LOWRANK_HINT = ("Pass the matrix as a NumPy memmap, a .npy path or an h5py dataset so "
                "that it is streamed in row partitions, lower max_rank, or raise "
                "partitions.")


def available_host_bytes():
    """The host memory available to a new allocation (Linux's MemAvailable), in bytes, or
    None where /proc/meminfo cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def free_device_bytes(xp):
    """Device memory free for new arrays on CuPy's current device: the driver's free bytes
    and the blocks CuPy's pool holds unused."""
    free, _ = xp.cuda.runtime.memGetInfo()
    return free + xp.get_default_memory_pool().free_bytes()


# Below this, a CPU computation's needs are not checked: reading /proc/meminfo took a third
# of a 2×2 call's time (40 of 110 µs), and no host that runs gpusvd lacks this much.
UNCHECKED_HOST_BYTES = 2 ** 26


def check_host_memory(nbytes, what):
    """``MemoryError`` where a CPU computation needs more than the host has available:
    Linux lets the allocations succeed and then kills the process when their pages are
    touched (its out-of-memory killer), so a user's session dies instead of getting an
    error (SciPy's test_svd_gesdd_nofegfault, a 4799 × 53130 float64 with full matrices:
    22.6 GB for Vh). ``what`` names the results and workspace ``nbytes`` counts; needs
    below :data:`UNCHECKED_HOST_BYTES` are not checked."""
    if nbytes < UNCHECKED_HOST_BYTES:
        return
    available = available_host_bytes()
    if available is not None and nbytes > available:
        raise MemoryError(f"needs about {nbytes / 2**30:.1f} GiB of host memory for {what}, "
                          f"{available / 2**30:.1f} GiB available")


def is_exhaustion(exc):
    """Whether ``exc`` reports memory exhaustion.

    Examples
    --------
    >>> is_exhaustion(MemoryError("out of memory")), is_exhaustion(ValueError("bad shape"))
    (True, False)
    >>> is_exhaustion(RuntimeError("CUSOLVER_STATUS_ALLOC_FAILED"))
    True
    """
    if isinstance(exc, MemoryError):
        return True
    return any(marker in str(exc) for marker in _ALLOCATION_FAILURES)


def release_pools():
    """Return the blocks cached by CuPy's memory pools, and the CUDA graphs kept with
    their own pools (:func:`.graphs.clear`), to the device (no-op without CuPy)."""
    import sys

    cupy = sys.modules.get("cupy")  # never imported here: only if the call used it
    if cupy is None:
        return
    graphs.clear()
    try:
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()
    except Exception:  # a CuPy without a usable device: nothing was allocated on it
        pass


def hint_on_exhaustion(hint):
    """Decorator: a function that runs out of memory raises ``MemoryError(message + hint)``.

    Other exceptions pass through unchanged.

    Examples
    --------
    >>> @hint_on_exhaustion("Try float32.")
    ... def decompose(n):
    ...     raise MemoryError(f"no {n} bytes")
    >>> decompose(2**40)
    Traceback (most recent call last):
    ...
    MemoryError: decompose ran out of memory (no 1099511627776 bytes). Try float32.
    """
    def decorate(fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            message = None
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                if not is_exhaustion(exc):
                    raise
                message = f"{fn.__name__} ran out of memory ({exc}). {hint}"
                exc.__traceback__ = None  # the failed call's frames, and its arrays, go
            release_pools()
            raise MemoryError(message)
        return wrapped
    return decorate
