"""Row-block sources for QUIC-SVD: anything that can be sliced by row blocks (§2.3).

A source has a ``shape`` (m, n), the input ``dtype``, a ``kind`` and two ways to read
rows r0:r1: ``block`` returns them as an array (a view where it can), ``read_into``
copies them into a caller's host buffer (the pinned staging buffer of the GPU pipeline).

- ``"device"``: a CuPy array; blocks are device views, nothing is copied.
- ``"memory"``: a NumPy array in RAM.
- ``"external"``: a NumPy memmap, a ``.npy`` path (opened with ``np.load(mmap_mode="r")``),
  an h5py dataset, a zarr array, a Dask array, or any object with ``shape``, ``dtype``
  and ``__getitem__`` on row slices returning something ``numpy.asarray`` takes (a
  ``compute()`` method, as Dask's, is called first). Only row blocks are ever read.

A whole C-contiguous memmap of a file (what ``np.load(mmap_mode="r")`` returns) is read
into the caller's buffer by ``os.preadv`` on the file, not through the mapping: copying
from a mapping takes a page fault per few pages, about 1 GB/s per thread even from the
page cache (the H100's host), where a read copies whole chunks.
"""

import mmap
import os

import numpy as np

from .._core.backend import is_cupy_array


class Source:
    """Rows of a 2-D matrix, read block by block."""

    def __init__(self, obj, kind):
        self.obj = obj
        self.kind = kind
        self.shape = tuple(int(d) for d in obj.shape)
        self.dtype = np.dtype(obj.dtype)

    @property
    def nbytes(self):
        return self.shape[0] * self.shape[1] * self.dtype.itemsize

    def block(self, r0, r1):
        """Rows r0:r1: a device array for a CuPy source, else a host NumPy array."""
        if self.kind in ("device", "memory"):
            return self.obj[r0:r1]
        part = self.obj[r0:r1]
        if hasattr(part, "compute"):
            part = part.compute()
        return np.asarray(part)

    def read_into(self, r0, r1, out):
        """Copy rows r0:r1 into the host array ``out`` (cast to its dtype)."""
        span = _file_span(self.obj)
        if span is None or out.dtype != self.dtype or not out.flags.c_contiguous:
            np.copyto(out, self.block(r0, r1), casting="same_kind")
            return
        path, offset, row_bytes = span
        _pread_exact(path, offset + r0 * row_bytes, memoryview(out.reshape(-1)).cast("B"))


def _file_span(obj):
    """``(path, offset, row_bytes)`` of a whole C-contiguous memmap of a file (rows
    contiguous on disk from ``offset``), else None (a view of one, an array in RAM)."""
    if not isinstance(obj, np.memmap) or not isinstance(obj.base, mmap.mmap):
        return None
    if not obj.flags.c_contiguous or not getattr(obj, "filename", None):
        return None
    return obj.filename, int(obj.offset), obj.strides[0]


def _pread_exact(path, offset, buffer):
    """Fill ``buffer`` (a byte memoryview) from ``path`` at ``offset``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        done = 0
        while done < len(buffer):
            got = os.preadv(fd, [buffer[done:]], offset + done)
            if got <= 0:
                raise OSError(f"svd_lowrank: {path} ended {len(buffer) - done} bytes early")
            done += got
    finally:
        os.close(fd)


def _describe(a):
    return f"{type(a).__module__}.{type(a).__name__}"


def open_source(a):
    """The :class:`Source` for ``a``, or ``None`` if ``a`` is not one of the kinds above.

    Raises ``ValueError`` for a path that is not a ``.npy`` file, or an object that is
    not 2-D.
    """
    if isinstance(a, (str, os.PathLike)):
        path = os.fspath(a)
        if not path.endswith(".npy"):
            raise ValueError(f"svd_lowrank: a path must name a .npy file, got {path!r}")
        a = np.load(path, mmap_mode="r")
    if is_cupy_array(a):
        kind = "device"
    elif isinstance(a, np.memmap):
        kind = "external"
    elif isinstance(a, np.ndarray):
        kind = "memory"
    elif all(hasattr(a, name) for name in ("shape", "dtype", "__getitem__")) \
            and not hasattr(a, "__dlpack__"):
        kind = "external"
    else:
        return None
    if len(a.shape) != 2:
        raise ValueError(f"svd_lowrank expects a 2-D matrix; got shape {tuple(a.shape)} "
                         f"({_describe(a)})")
    return Source(a, kind)
