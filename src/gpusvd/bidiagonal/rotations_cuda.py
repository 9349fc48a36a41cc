"""The GPU twin of :func:`gpusvd.bidiagonal.rotations.apply_rotations`.

The bidiagonal QR runs on the host and hands over its rotation log chunk by chunk
(paper 000, Alg. 3 on the CPU, Alg. 4/5 on the GPU). :class:`RotationPipeline` copies each
chunk from pinned host memory to the device and launches ``kernels/apply_rotations.cu`` on
one stream; it holds two pinned buffers, so the host computes the next chunk into one
while the copy out of the other is still in flight.
"""

import numpy as np

from .._core import kernels, tunables

_KERNEL_FILE = "bidiagonal/kernels/apply_rotations.cu"
_MAX_THREADS = 128  # threads per block (one row each) when there are rows enough
_MIN_BLOCKS_PER_SM = 2  # below it, blocks shrink (to one warp) to reach more SMs
_WINDOWS = (8, 16)  # the window sizes instantiated in kernels.REGISTRY


def group_windows(sweeps, window):
    """Split sweeps into runs of at most ``window`` consecutive sweeps of one direction.

    Returns an int32 array (nw, 2) of (first sweep, number of sweeps).
    """
    k = len(sweeps)
    if k == 0:
        return np.zeros((0, 2), np.int32)
    change = np.flatnonzero(sweeps[1:, 2] != sweeps[:-1, 2]) + 1
    bounds = np.concatenate(([0], change, [k]))
    rows = [(first, min(window, end - first))
            for start, end in zip(bounds[:-1], bounds[1:])
            for first in range(start, end, window)]
    return np.asarray(rows, np.int32)


def _threads_per_block(rows, sms):
    """One row per thread: blocks of up to 128 threads, down to one warp for small n."""
    threads = _MAX_THREADS
    while threads > 32 and 2 * -(-rows // threads) < _MIN_BLOCKS_PER_SM * sms:
        threads //= 2
    return threads


class RotationPipeline:
    """Applies rotation-log chunks to the column-major n×n GPU arrays ``x`` and ``y``.

    Use :meth:`buffers` to get the host arrays for the next chunk, fill them with
    :meth:`BidiagonalQR.run`, then :meth:`submit` the counts it returned.
    """

    def __init__(self, x, y, sweep_capacity, rotation_capacity):
        import cupy

        self._cp = cupy
        self.x, self.y = x, y
        window = tunables.get().rotation_window
        if window not in _WINDOWS:
            raise ValueError(f"rotation_window must be one of {_WINDOWS}, got {window}")
        self._window = window
        self._kernel = kernels.get_kernel(
            _KERNEL_FILE, f"apply_rotations<{kernels.CTYPE[x.dtype]}, {window}>")
        self._stream = cupy.cuda.Stream(non_blocking=True)
        self._threads = _threads_per_block(x.shape[0], cupy.cuda.Device().attributes[
            "MultiProcessorCount"])
        # the kernel's tile: 2W steps of W rotations (c, s), and 2W loaded columns
        self._shared_bytes = 2 * window * (2 * window + self._threads) * x.dtype.itemsize
        self._host = [self._pinned_set(sweep_capacity, rotation_capacity) for _ in range(2)]
        self._done = [None, None]
        self._turn = 0

    def _pinned_set(self, sweep_capacity, rotation_capacity):
        def pinned(shape, dtype):
            count = int(np.prod(shape))
            mem = self._cp.cuda.alloc_pinned_memory(max(count, 1) * np.dtype(dtype).itemsize)
            return np.frombuffer(mem, dtype, count).reshape(shape)
        return (pinned((sweep_capacity, 3), np.int64),
                pinned((rotation_capacity, 2), np.float64),
                pinned((rotation_capacity, 2), np.float64))

    def buffers(self):
        """Host buffers (sweeps, cs_left, cs_right) free to be written now."""
        event = self._done[self._turn]
        if event is not None:
            event.synchronize()
        return self._host[self._turn]

    def submit(self, nsweeps, nrotations):
        """Copy the chunk just written into :meth:`buffers` and apply it, asynchronously."""
        cp = self._cp
        sweeps, cs_left, cs_right = self._host[self._turn]
        if nsweeps:
            with self._stream:
                d_sweeps = cp.asarray(sweeps[:nsweeps], blocking=False)
                offsets = np.concatenate(([0], np.cumsum(sweeps[:nsweeps - 1, 1])))
                d_offsets = cp.asarray(offsets)
                windows = cp.asarray(group_windows(sweeps[:nsweeps], self._window))
                dtype = self.x.dtype
                d_left = cp.asarray(cs_left[:nrotations], blocking=False).astype(dtype)
                d_right = cp.asarray(cs_right[:nrotations], blocking=False).astype(dtype)
                n = self.x.shape[0]
                grid = ((n + self._threads - 1) // self._threads, 2)
                self._kernel(grid, (self._threads,),
                             (self.x, np.int64(n), np.int32(n), np.int32(n), d_sweeps,
                              d_offsets, windows, np.int32(len(windows)), d_left, self.y,
                              d_right),
                             shared_mem=self._shared_bytes)
                event = cp.cuda.Event(block=False, disable_timing=True)
                event.record(self._stream)
                self._done[self._turn] = event
        self._turn ^= 1

    def finish(self):
        """Wait until every submitted chunk has been applied."""
        self._stream.synchronize()
