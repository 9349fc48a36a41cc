"""The GPU twins of the bidiagonal divide and conquer's per-merge vectors and per-leaf
placement: the launchers of ``kernels/merge_vectors.cu``.

A merge's k×k vectors (Gu & Eisenstat's ẑ, then the normalized columns) take about 25
CuPy operations on k×k arrays in the xp twin, :func:`.dc_svd._merge_vectors`
(dlasd3): fancy-index gathers, products, reductions, each a launch and its Python
overhead, 255 merges at n = 8192 (H100: 0.42 s). Here a tree level's merges are two
launches, the weights then the columns, doing the same arithmetic per entry (the kernel
file says where the order of sums differs), their vectors written straight into the
level's zero-padded stacks.

The leaves likewise: computed on the host (LAPACK) into one page-locked stack
(:func:`leaf_stack`), they cross to the device in one copy and one launch places them all
(:func:`place_blocks`), where each took a copy and a setitem. And a tree level's updates
of U (or V) by its merges' vectors: one copy of the merges' indices, one launch gathers
their kept columns into a stack, one batched GEMM, one launch scatters them back
(:func:`update_columns`), where each merge took about ten CuPy operations.
"""

import numpy as np

from .._core import kernels

_KERNEL_FILE = "bidiagonal/kernels/merge_vectors.cu"
# Threads per block of the weights kernel: 8 rows of 32 lanes (a warp per row).
_WEIGHT_THREADS = 256
_LANES = 32
# Threads per block of the columns kernel (one block per column, k up to n) and of the
# placement (one block per leaf of at most 33² entries), and of the gather and scatter of
# a level's columns (one block per column).
_COLUMN_THREADS = 256
_PLACE_THREADS = 256
_GATHER_THREADS = 256


def upload(*parts):
    """The host arrays ``parts`` (float64 or int64) on the device from one host→device
    copy: views, in order, of one buffer."""
    import cupy

    sizes = [part.size for part in parts]
    ends = np.cumsum(sizes)
    host = np.empty(int(ends[-1]))
    for part, end, size in zip(parts, ends, sizes):
        host[end - size:end].view(part.dtype)[:] = part.ravel()
    device = cupy.asarray(host)
    return [device[end - size:end].view(part.dtype).reshape(part.shape)
            for part, end, size in zip(parts, ends, sizes)]


def svd_merge_vectors(poles, z, origin, tau, *, starts=None, sizes=None, width=None):
    """(U_M, V_M) of one merge, k×k column-major float64 CuPy arrays, whose poles
    (ascending, ``poles[0] = 0``), weights and roots (offsets ``tau`` from
    ``poles[origin]``) are the host arrays given (one copy), or all device arrays (the
    roots from secular_svd_cuda.py, the poles and weights from :func:`upload`): the twin of
    ``dc_svd._merge_vectors``.

    With ``starts``, ``sizes`` and ``width`` (device arrays only), several merges in one
    launch of each kernel: merge p is the ``sizes[p]`` entries of each array from
    ``starts[p]`` (its origins counted within it), and the results are two zero-padded
    (count, width, width) C-ordered stacks, merge p's U_Mᵀ and V_Mᵀ in ``[p, :k, :k]`` (its
    vectors by columns, leading dimension width): the stacks of dc_svd._update_level."""
    import cupy

    if sizes is None:
        k = poles.shape[0]
        u, v = cupy.empty((k, k), order="F"), cupy.empty((k, k), order="F")
        if k == 0:
            return u, v
        if not isinstance(tau, cupy.ndarray):
            poles, z, tau, origin = upload(
                np.asarray(poles, np.float64), np.asarray(z, np.float64),
                np.asarray(tau, np.float64), np.asarray(origin, np.int64))
        starts, sizes, width = [0], [k], k
    else:
        u, v = cupy.zeros((2, len(sizes), width, width))
    total = poles.shape[0]
    problems = upload(np.asarray(starts, np.int64), np.asarray(sizes, np.int64))
    ctype = kernels.CTYPE[np.dtype(np.float64)]
    zhat = cupy.empty(total)
    rows = _WEIGHT_THREADS // _LANES
    longest = int(max(sizes))
    kernels.get_kernel(_KERNEL_FILE, f"svd_merge_weights<{ctype}>")(
        ((longest + rows - 1) // rows, len(sizes)), (_WEIGHT_THREADS,),
        (poles, z, tau, origin, *problems, zhat))
    kernels.get_kernel(_KERNEL_FILE, f"svd_merge_columns<{ctype}>")(
        (longest, len(sizes)), (_COLUMN_THREADS,),
        (poles, tau, origin, zhat, *problems, np.int64(width), u, v))
    return u, v


def leaf_stack(shape):
    """An uninitialized float64 host array of ``shape`` in page-locked memory (CuPy's
    pinned pool), for the leaves' blocks: :func:`place_blocks` copies it to the device at
    the bus's full rate, and a pooled buffer is already mapped, so threads filling it take
    no page faults."""
    import cupyx

    return cupyx.empty_pinned(shape, np.float64)


def place_blocks(target, packed, starts, sizes):
    """``target[s:s + m, s:s + m] = block`` for each leaf b (s = ``starts[b]``, m =
    ``sizes[b]``), its block by columns in the top-left corner of the host slot
    ``packed[b]`` (``packed[b, :m, :m]`` = blockᵀ), into the column-major float64 CuPy
    view ``target``: one copy and one launch for all of them (the twin of
    ``dc_svd._place_host``). The copy is synchronous, so the caller may free or reuse
    ``packed`` on return (an asynchronous one could still be reading a page-locked buffer
    that CuPy's pinned pool had handed to the next caller)."""
    import cupy

    if not len(starts):
        return
    if target.strides[0] != target.itemsize:
        raise ValueError("place_blocks needs a column-major target (Fortran order or a "
                         "view of it)")
    device = cupy.empty(packed.shape)
    device.set(packed)
    starts, sizes = upload(np.asarray(starts, np.int64), np.asarray(sizes, np.int64))
    kernel = kernels.get_kernel(_KERNEL_FILE, f"place_blocks<{kernels.CTYPE[target.dtype]}>")
    kernel((len(starts),), (_PLACE_THREADS,),
           (target, np.int64(target.strides[1] // target.itemsize), device,
            np.int64(packed.shape[1]), starts, sizes))


def update_columns(q, starts, rows, cols, ones, wt):
    """For each merge i of a tree level, ``q[s:s + m, c] ← q[s:s + m, c] · W_i`` with
    s = ``starts[i]``, m = ``rows[i]``, c = ``cols[i]`` (host int64 arrays of q's column
    indices, k_i of them) and W_i = ``wt[i, :k_i, :k_i]ᵀ``, the product reading 1 in row
    ``ones[i]`` (from s) of the first kept column where ``ones[i]`` ≥ 0: q a column-major
    float64 CuPy view, ``wt`` a C-ordered (count, K, K) CuPy stack, zero past each k_i.
    One upload of the indices, a gather of the kept columns into a zero-padded
    (count, K, max m) stack (their transposes, each column contiguous), one batched GEMM
    by ``wt`` and a scatter: the twin of ``dc_svd._update_columns``."""
    import cupy

    if q.strides[0] != q.itemsize:
        raise ValueError("update_columns needs a column-major q (Fortran order or a view "
                         "of it)")
    count, width = wt.shape[0], wt.shape[1]
    height = int(max(rows))
    offsets = np.concatenate(([0], np.cumsum([len(c) for c in cols]))).astype(np.int64)
    starts, rows, ones, offsets, flat = upload(
        np.asarray(starts, np.int64), np.asarray(rows, np.int64), np.asarray(ones, np.int64),
        offsets, np.concatenate(cols).astype(np.int64))
    ld = np.int64(q.strides[1] // q.itemsize)
    shape = (starts, rows, offsets, flat, np.int64(width), np.int64(height))
    ctype = kernels.CTYPE[np.dtype(np.float64)]
    stack = cupy.empty((count, width, height))
    kernels.get_kernel(_KERNEL_FILE, f"gather_columns<{ctype}>")(
        (count * width,), (_GATHER_THREADS,), (q, ld, *shape, ones, stack))
    stack = cupy.matmul(wt, stack)
    kernels.get_kernel(_KERNEL_FILE, f"scatter_columns<{ctype}>")(
        (count * width,), (_GATHER_THREADS,), (q, ld, *shape, stack))
