"""Timing of one call: the device synchronized around it, warm-up first, the median kept.

Timing synchronizes the device before and after every call and reads
``time.perf_counter`` only after synchronization, warms up first (module load, NVRTC
compilation, JIT tracing, handle and workspace creation stay out of the numbers),
repeats, reports the median and keeps every sample. Nothing here imports CuPy, PyTorch
or JAX: they are only touched once the caller has imported them.
"""

import functools
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from gpusvd._core.backend import cupy_or_none


@functools.lru_cache(maxsize=None)
def _gpu_usable() -> bool:
    return cupy_or_none() is not None


def synchronize() -> None:
    """Wait for all work queued on the current CUDA device by CuPy and PyTorch.

    Only frameworks that are already imported are touched (no import happens here), and
    CuPy only where it sees a device. ``cudaDeviceSynchronize`` (CuPy's
    ``Device.synchronize``) waits for every stream of the device in this process, JAX's
    included; torch's synchronize is added as asked.
    """
    cp = sys.modules.get("cupy")
    if cp is not None and _gpu_usable():
        cp.cuda.Device().synchronize()
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.synchronize()
        except Exception:  # a torch without CUDA: nothing to wait for
            pass


@dataclass
class Timing:
    median: float                 # seconds, median of ``times``
    times: list[float]            # every timed call, seconds, in order
    warmup_times: list[float]     # the untimed warm-up calls, seconds
    result: Any = field(default=None, repr=False)   # what the last call returned
    stopped_early: bool = False   # fewer than ``repeat`` timed calls (budget reached)

    @property
    def total(self) -> float:
        return sum(self.times) + sum(self.warmup_times)


def _one_call(fn, sync):
    """(seconds, result) of one call of ``fn``, the device synchronized before and after."""
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    return time.perf_counter() - t0, out


def time_calls(fn: Callable[[], Any], *, warmup: int = 1, repeat: int = 5,
               max_seconds: float = 60.0, sync: Callable[[], None] = synchronize) -> Timing:
    """Median wall time of ``fn()``, the device synchronized around each call.

    ``warmup`` untimed calls come first (their times are returned, not counted). Then up
    to ``repeat`` timed calls; after each, if the time spent so far in the timed loop plus
    one more call (the last one's time) would pass ``max_seconds``, repetition stops
    early. At least one timed call is made.
    ``fn``'s exceptions propagate. The last call's return value is kept in ``.result``
    (earlier results are dropped before the next call so memory pools can reuse them).
    """
    warm: list[float] = []
    out = None
    for _ in range(max(0, warmup)):
        out = None
        seconds, out = _one_call(fn, sync)
        warm.append(seconds)
    times: list[float] = []
    stopped = False
    t_begin = time.perf_counter()
    for i in range(max(1, repeat)):
        out = None
        seconds, out = _one_call(fn, sync)
        times.append(seconds)
        spent = time.perf_counter() - t_begin
        if i + 1 < repeat and spent + times[-1] > max_seconds:
            stopped = True
            break
    return Timing(float(np.median(times)), times, warm, out, stopped)


def time_interleaved(fns: dict[str, Callable[[], Any]], *, warmup: int = 1,
                     rounds: int = 20, sync: Callable[[], None] = synchronize,
                     seed: int = 0) -> dict[str, Timing]:
    """:func:`time_calls` of several functions side by side: ``warmup`` untimed calls of
    each, then ``rounds`` rounds of one timed call of each in turn, so that a shared
    host's drift reaches every function alike (calls of a millisecond or less on a loaded
    machine vary by ±0.1 ms from minute to minute). Each round takes the functions in a
    new random order (``seed``): what runs just before a call changes its time (gpusvd's
    calls at n <= 16 took 4–31% longer right after JAX's than after CuPy's on the H100;
    NOTES.md, "Small calls on a shared host: how to time them"), and a fixed cyclic
    order, even started one later each round, keeps each function's predecessor. A
    function that raises is left out of the rounds; its
    exception is returned in its place.

    Examples
    --------
    >>> out = time_interleaved({"a": lambda: 1, "b": lambda: 2}, rounds=3, sync=lambda: None)
    >>> [(name, len(t.times), t.result) for name, t in out.items()]
    [('a', 3, 1), ('b', 3, 2)]
    """
    warm: dict[str, list[float]] = {name: [] for name in fns}
    failed: dict[str, Exception] = {}
    for name, fn in fns.items():
        try:
            for _ in range(max(0, warmup)):
                warm[name].append(_one_call(fn, sync)[0])
        except Exception as exc:  # a peer that fails is a result, not the end of the run
            failed[name] = exc
    times: dict[str, list[float]] = {name: [] for name in fns if name not in failed}
    last: dict[str, Any] = {}
    order, shuffle = list(times), random.Random(seed).shuffle
    for _ in range(max(1, rounds)):
        shuffle(order)
        for name in order:
            last[name] = None  # the previous result freed before the next call
            seconds, last[name] = _one_call(fns[name], sync)
            times[name].append(seconds)
    return {name: failed[name] if name in failed else
            Timing(float(np.median(times[name])), times[name], warm[name], last[name])
            for name in fns}


def free_gpu_memory() -> None:
    """Return cached blocks of CuPy's pools and PyTorch's allocator to the device."""
    synchronize()
    cp = sys.modules.get("cupy")
    if cp is not None:
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.empty_cache()
        except Exception:
            pass
