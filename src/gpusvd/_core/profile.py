"""Phase timings for benchmarks: where does the time of a decomposition go?

Off by default (zero cost). ``with profile.recording() as phases:`` turns it on; drivers
mark their phases with ``with profile.phase("name", xp):``, which synchronizes the device
around the phase only while recording.
"""

import contextlib
import time

_phases = None


@contextlib.contextmanager
def recording():
    """Collect ``{phase name: seconds}`` (summed over repeats) for the enclosed calls."""
    global _phases
    saved, _phases = _phases, {}
    try:
        yield _phases
    finally:
        _phases = saved


def _sync(xp):
    if xp.__name__ == "cupy":
        xp.cuda.Device().synchronize()


@contextlib.contextmanager
def phase(name, xp):
    if _phases is None:
        yield
        return
    _sync(xp)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _sync(xp)
        _phases[name] = _phases.get(name, 0.0) + time.perf_counter() - t0
