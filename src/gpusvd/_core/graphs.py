"""Replaying a fixed sequence of GPU work as a CUDA graph.

A small matrix's SVD is a few hundred launches of microseconds each; issued one by one
from Python, the host's cost per launch (10–190 µs through CuPy) is most of the call.
Where the sequence depends only on the shapes and dtypes of its inputs (no host
synchronization, no branch on a computed value), it is captured once into a CUDA graph
and then replayed with one launch (NOTES.md, "One matrix below 1025 columns: a CUDA
graph").

The policy, per key (the caller's: shapes, dtypes, options):

1. the first call runs the function eagerly: a shape seen once pays no capture, and the
   eager run compiles the kernels and creates the library handles a capture cannot;
2. the second call captures it on a private stream into a private memory pool, which
   holds every intermediate buffer for as long as the graph lives (no other allocation
   can take them between replays);
3. every call from then on copies its inputs into the graph's input buffers, launches
   the graph on the current stream and returns copies of the outputs.

At most :data:`CACHED_GRAPHS` graphs holding :data:`CACHED_BYTES` of device memory in
their pools are kept (least recently used first out); :func:`clear` frees them all, and
so does the release after a MemoryError (:func:`gpusvd._core.memory.release_pools`).
Calls are serialized by a lock: a graph's buffers serve one call at a time.

Work that cannot be captured says so by raising :class:`Uncapturable` while the stream
is captured (:func:`capturing`): a cuSOLVER call that asks for host workspace, which the
call frees when it returns, so a replay would read freed memory. Its key then runs
eagerly on every call.
"""

import collections
import sys
import threading

# Graphs kept, and the device memory their pools may hold together (the newest graph is
# kept whatever its size): a 512² float64 SVD holds 27.5 MB on the H100.
CACHED_GRAPHS = 8
CACHED_BYTES = 2 ** 29
# Keys remembered as seen once, so that their second call captures.
REMEMBERED_KEYS = 256

_lock = threading.Lock()
_graphs = collections.OrderedDict()
_seen = collections.OrderedDict()
_eager = set()  # keys whose capture raised Uncapturable


class Uncapturable(RuntimeError):
    """GPU work that cannot be captured into a graph (module docstring)."""


def capturing():
    """Whether the current CuPy stream is being captured (False where CuPy was never
    imported: nothing is)."""
    cupy = sys.modules.get("cupy")
    return cupy is not None and bool(cupy.cuda.get_current_stream().is_capturing())


class _Graph:
    """A captured graph, the pool that holds its buffers, its input buffers and the
    arrays its outputs are written to."""

    def __init__(self, fn, inputs):
        import cupy

        self.pool = cupy.cuda.MemoryPool()
        stream = cupy.cuda.Stream(non_blocking=True)
        with cupy.cuda.using_allocator(self.pool.malloc), stream:
            self.inputs = [cupy.empty_like(x) for x in inputs]
            stream.begin_capture()
            try:
                self.outputs = fn(*self.inputs)
            finally:
                self.graph = stream.end_capture()
        self.device = cupy.cuda.Device().id

    def replay(self, inputs):
        import cupy

        for slot, x in zip(self.inputs, inputs):
            slot[...] = x
        self.graph.launch(stream=cupy.cuda.get_current_stream())
        return tuple(out.copy() for out in self.outputs)


def replayed(key, fn, *inputs):
    """``fn(*inputs)`` (CuPy arrays in, a tuple of CuPy arrays out) by the policy of the
    module docstring. ``fn`` must be a fixed sequence of GPU work for every input with
    this ``key``: no host synchronization, no CuPy library call (cuBLAS and cuSOLVER
    through :mod:`gpusvd._core.libraries`), no allocation it returns that an input
    aliases; it raises :class:`Uncapturable` where it cannot be captured."""
    import cupy

    key = (cupy.cuda.Device().id, *key)
    with _lock:
        graph = _graphs.get(key)
        if graph is None:
            if key not in _seen or key in _eager:
                _seen[key] = None
                while len(_seen) > REMEMBERED_KEYS:
                    _seen.popitem(last=False)
                return tuple(fn(*inputs))
            try:
                graph = _Graph(fn, inputs)
            except Uncapturable:
                _eager.add(key)
                return tuple(fn(*inputs))
            _graphs[key] = graph
            while len(_graphs) > 1 and (len(_graphs) > CACHED_GRAPHS or sum(
                    g.pool.total_bytes() for g in _graphs.values()) > CACHED_BYTES):
                _graphs.popitem(last=False)
        _graphs.move_to_end(key)
        return graph.replay(inputs)


def cached():
    """How many graphs are kept now."""
    return len(_graphs)


def clear():
    """Forget every captured graph and free the device memory their pools hold."""
    with _lock:
        for graph in _graphs.values():
            graph.pool.free_all_blocks()
        _graphs.clear()
        _seen.clear()
        _eager.clear()
