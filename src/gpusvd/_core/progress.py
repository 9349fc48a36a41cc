"""Progress on stderr: a one-line bar (no tqdm needed) and the sweep observer.

The iterative drivers (the Jacobi block sweeps, the Takagi sweeps) call :func:`report`
once per sweep with a convergence measure they already hold on the host; it does nothing
unless a caller is :func:`observing`, so the library prints nothing of its own and its
signatures stay as they are. The ``gpusvd`` command observes with :func:`sweep_bars`.
"""

import contextlib
import contextvars
import sys
import time

BAR_WIDTH = 30

_observer = contextvars.ContextVar("gpusvd_progress_observer", default=None)


class ProgressBar:
    """``update(done, note)`` redraws ``label [####----] done/total note elapsed``."""

    def __init__(self, label, total, stream=None):
        self.label = label
        self.total = max(total, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self.done = 0

    def update(self, done=None, note=""):
        if done is not None:
            self.done = done
        filled = round(BAR_WIDTH * min(self.done, self.total) / self.total)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        elapsed = time.perf_counter() - self.start
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} {note} "
                          f"{elapsed:.1f}s\x1b[K")
        self.stream.flush()

    def close(self):
        self.stream.write("\n")
        self.stream.flush()


class NoProgress:
    """Stands in for :class:`ProgressBar` when no progress is wanted."""

    def update(self, done=None, note=""):
        pass

    def close(self):
        pass


@contextlib.contextmanager
def observing(callback):
    """Within the block, :func:`report` calls ``callback(task, sweep, total, measures)``.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd import takagi
    >>> from gpusvd._core.progress import observing
    >>> seen = []
    >>> with observing(lambda task, sweep, total, measures: seen.append((task, sweep))):
    ...     _ = takagi(np.array([[1.0, 2.0j], [2.0j, 3.0]]), method="jacobi", device="cpu")
    >>> seen[0]
    ('takagi', 1)
    """
    token = _observer.set(callback)
    try:
        yield
    finally:
        _observer.reset(token)


def report(task, sweep, total, **measures):
    """Tell the observer, if any, that ``sweep`` of at most ``total`` of ``task`` is done.

    ``measures`` (name: number) must already be on the host: reporting adds no
    synchronization with the GPU.
    """
    callback = _observer.get()
    if callback is not None:
        callback(task, sweep, total, measures)


def _note(measures):
    return "  ".join(f"{name} {value}" if isinstance(value, int) else f"{name} {value:.1e}"
                     for name, value in measures.items())


@contextlib.contextmanager
def sweep_bars(stream=None):
    """Within the block, draw each task's sweeps on a :class:`ProgressBar` of its own on
    ``stream`` (default stderr): ``Jacobi sweep [###---] 3/50 rotations 120 0.4s``; the
    bars end with a new line when the block does."""
    bars = {}

    def draw(task, sweep, total, measures):
        if task not in bars:
            bars[task] = ProgressBar(f"{task.capitalize()} sweep", total, stream)
        bars[task].update(sweep, _note(measures))

    try:
        with observing(draw):
            yield
    finally:
        for bar in bars.values():
            bar.close()
