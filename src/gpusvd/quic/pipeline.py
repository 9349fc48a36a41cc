"""Feeding row partitions to the computation, one pass at a time (paper 001 §2.3).

``ResidentFeeder`` serves blocks that are already where the work runs: views of a CuPy
array on the GPU, or host blocks on the CPU (a memmap view, or one block read from an
h5py/zarr/Dask source; host memory holds one partition at a time).

``PinnedFeeder`` streams a host source to the GPU. Two pinned staging buffers alternate
and ``depth`` device buffers form a ring: a loader thread reads partition after partition
into a pinned buffer — in chunks, by a pool of threads, since one memcpy thread reaches
only a fraction of the PCIe bandwidth — and issues each chunk's host→device copy on a
separate non-blocking stream as soon as the chunk is read, so the disk or memory read,
the PCIe copy and the compute all overlap. The loader runs up to ``depth`` − 1
partitions ahead of the caller: a long compute on one partition (the first partition's
tree growth takes over a second at 150000 × 140000) does not leave the copy engine idle
after one partition is staged. Events order the reuse of buffers: a pinned buffer is
refilled only after its previous copy finished, a device buffer is overwritten only
after the compute that used it (an event recorded when the caller asks for the next
block). The ring and the load count persist across passes, so a new pass respects the
last pass's events.
"""

import time
from concurrent.futures import ThreadPoolExecutor

from .._core import tunables
from .._core.memory import free_device_bytes


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
    """Double-buffered host→device streaming of ``source``'s partitions (CuPy ``xp``),
    up to ``depth`` partitions on the device (None: as many as the tunables allow)."""

    def __init__(self, source, bounds, dtype, xp, depth=None):
        import cupyx

        self.source = source
        self.bounds = bounds
        self.xp = xp
        t = tunables.get()
        n = source.shape[1]
        rows = max(r1 - r0 for r0, r1 in bounds)
        if depth is None:
            depth = stream_depth(rows * n * dtype.itemsize, len(bounds), xp)
        self.depth = depth
        self._pinned = [cupyx.empty_pinned((rows, n), dtype) for _ in range(2)]
        self._device_buffers = [xp.empty((rows, n), dtype) for _ in range(depth)]
        self._stream = xp.cuda.Stream(non_blocking=True)
        self._copied = [None, None]            # per pinned buffer: its last copy done
        self._released = [None] * depth        # per device buffer: its last use done
        self._loads = 0                        # loads issued, over all passes
        self._readers = ThreadPoolExecutor(max(1, t.quic_reader_threads))
        self._loader = ThreadPoolExecutor(1)
        self._chunk_rows = max(1, t.quic_read_chunk_bytes // (n * dtype.itemsize))
        self._device = xp.cuda.Device()
        self.bytes_copied = 0
        self.seconds_waiting = 0.0

    def _load(self, pin, dev_slot, r0, r1):
        """Read rows r0:r1 through pinned buffer ``pin`` into device buffer ``dev_slot``;
        returns the copy's event. Runs on the loader thread, one load at a time."""
        with self._device:
            if self._copied[pin] is not None:
                self._copied[pin].synchronize()
            if self._released[dev_slot] is not None:
                self._stream.wait_event(self._released[dev_slot])
            host, dev = self._pinned[pin], self._device_buffers[dev_slot]
            spans = [(c0 - r0, min(c0 + self._chunk_rows, r1) - r0)
                     for c0 in range(r0, r1, self._chunk_rows)]
            reads = [self._readers.submit(self.source.read_into, r0 + a, r0 + b, host[a:b])
                     for a, b in spans]
            for (a, b), read in zip(spans, reads):
                read.result()
                dev[a:b].set(host[a:b], stream=self._stream)
            self._copied[pin] = self._stream.record()
            return self._copied[pin]

    def _submit(self, i):
        """Queue the load of partition i; returns (device slot, future of its event)."""
        pin, dev_slot = self._loads % 2, self._loads % self.depth
        self._loads += 1
        return dev_slot, self._loader.submit(self._load, pin, dev_slot, *self.bounds[i])

    def blocks(self, which):
        which = list(which)
        stream = self.xp.cuda.get_current_stream()
        ahead = [self._submit(i) for i in which[:self.depth - 1]]
        for t, i in enumerate(which):
            r0, r1 = self.bounds[i]
            if t + self.depth - 1 < len(which):
                # the ring's free slot: its last user is the block before this one
                ahead.append(self._submit(which[t + self.depth - 1]))
            dev_slot, pending = ahead.pop(0)
            t0 = time.perf_counter()
            copied = pending.result()
            self.seconds_waiting += time.perf_counter() - t0
            stream.wait_event(copied)
            self.bytes_copied += (r1 - r0) * self._pinned[0][0].nbytes
            yield i, self._device_buffers[dev_slot][:r1 - r0]
            self._released[dev_slot] = stream.record()

    def close(self):
        self._loader.shutdown(wait=True)
        self._readers.shutdown(wait=True)
        self._stream.synchronize()
        self._pinned = self._device_buffers = None
        self.xp.get_default_pinned_memory_pool().free_all_blocks()


def stream_depth(partition_bytes, partitions, xp):
    """Device buffers of a :class:`PinnedFeeder`: as many partitions as fit the tunable
    share of free device memory less one for the computation's temporaries, at least 2,
    at most ``quic_stream_depth`` and the number of partitions."""
    t = tunables.get()
    free = free_device_bytes(xp)
    fits = int(t.quic_device_memory_fraction * free // max(partition_bytes, 1)) - 1
    return max(2, min(fits, t.quic_stream_depth, partitions))


def make_feeder(source, bounds, dtype, xp):
    """The feeder for ``source`` split at ``bounds`` on ``xp`` (NumPy or CuPy)."""
    if xp.__name__ == "cupy" and source.kind != "device":
        return PinnedFeeder(source, bounds, dtype, xp)
    return ResidentFeeder(source, bounds, dtype, xp)
