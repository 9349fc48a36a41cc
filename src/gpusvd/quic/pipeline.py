"""Feeding row partitions to the computation, one pass at a time (paper 001 §2.3).

``ResidentFeeder`` serves blocks that are already where the work runs: views of a CuPy
array on the GPU, or host blocks on the CPU (a memmap view, or one block read from an
h5py/zarr/Dask source; host memory holds one partition at a time).

``PinnedFeeder`` streams a host source to the GPU. Two pinned staging buffers and two
device buffers alternate: while the caller computes on partition i (on the current
stream), a loader thread reads partition i + 1 into the other pinned buffer — in chunks,
by a pool of threads, since one memcpy thread reaches only a fraction of the PCIe
bandwidth — and issues each chunk's host→device copy on a separate non-blocking stream as
soon as the chunk is read, so the disk or memory read, the PCIe copy and the compute all
overlap. Events order the reuse of buffers: a pinned buffer is refilled only after its
previous copy finished, a device buffer is overwritten only after the compute that used
it (an event recorded when the caller asks for the next block).
"""

import time
from concurrent.futures import ThreadPoolExecutor

from .._core import tunables


class ResidentFeeder:
    """Blocks of ``source`` on the computation's side already, in ``dtype``."""

    def __init__(self, source, bounds, dtype, xp):
        self.source = source
        self.bounds = bounds
        self.dtype = dtype
        self.xp = xp
        self.bytes_copied = 0
        self.seconds_waiting = 0.0

    def blocks(self, which):
        for i in which:
            block = self.xp.asarray(self.source.block(*self.bounds[i]))
            yield i, block.astype(self.dtype, copy=False)

    def close(self):
        pass


class PinnedFeeder:
    """Double-buffered host→device streaming of ``source``'s partitions (CuPy ``xp``)."""

    def __init__(self, source, bounds, dtype, xp):
        import cupyx

        self.source = source
        self.bounds = bounds
        self.xp = xp
        t = tunables.get()
        n = source.shape[1]
        rows = max(r1 - r0 for r0, r1 in bounds)
        self._pinned = [cupyx.empty_pinned((rows, n), dtype) for _ in range(2)]
        self._device_buffers = [xp.empty((rows, n), dtype) for _ in range(2)]
        self._stream = xp.cuda.Stream(non_blocking=True)
        self._copied = [None, None]
        self._released = [None, None]
        self._readers = ThreadPoolExecutor(max(1, t.quic_reader_threads))
        self._loader = ThreadPoolExecutor(1)
        self._chunk_rows = max(1, t.quic_read_chunk_bytes // (n * dtype.itemsize))
        self._device = xp.cuda.Device()
        self.bytes_copied = 0
        self.seconds_waiting = 0.0

    def _load(self, slot, r0, r1):
        """Read rows r0:r1 into pinned buffer ``slot`` and copy them to the device."""
        with self._device:
            if self._copied[slot] is not None:
                self._copied[slot].synchronize()
            if self._released[slot] is not None:
                self._stream.wait_event(self._released[slot])
            host, dev = self._pinned[slot], self._device_buffers[slot]
            spans = [(c0 - r0, min(c0 + self._chunk_rows, r1) - r0)
                     for c0 in range(r0, r1, self._chunk_rows)]
            reads = [self._readers.submit(self.source.read_into, r0 + a, r0 + b, host[a:b])
                     for a, b in spans]
            for (a, b), read in zip(spans, reads):
                read.result()
                dev[a:b].set(host[a:b], stream=self._stream)
            self._copied[slot] = self._stream.record()

    def blocks(self, which):
        which = list(which)
        if not which:
            return
        stream = self.xp.cuda.get_current_stream()
        pending = self._loader.submit(self._load, 0, *self.bounds[which[0]])
        for t, i in enumerate(which):
            slot = t % 2
            r0, r1 = self.bounds[i]
            t0 = time.perf_counter()
            pending.result()
            self.seconds_waiting += time.perf_counter() - t0
            if t + 1 < len(which):
                pending = self._loader.submit(self._load, (t + 1) % 2,
                                              *self.bounds[which[t + 1]])
            stream.wait_event(self._copied[slot])
            self.bytes_copied += (r1 - r0) * self._pinned[slot][0].nbytes
            yield i, self._device_buffers[slot][:r1 - r0]
            self._released[slot] = stream.record()

    def close(self):
        self._loader.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        self._stream.synchronize()
        self._pinned = self._device_buffers = None
        self.xp.get_default_pinned_memory_pool().free_all_blocks()


def make_feeder(source, bounds, dtype, xp):
    """The feeder for ``source`` split at ``bounds`` on ``xp`` (NumPy or CuPy)."""
    if xp.__name__ == "cupy" and source.kind != "device":
        return PinnedFeeder(source, bounds, dtype, xp)
    return ResidentFeeder(source, bounds, dtype, xp)
