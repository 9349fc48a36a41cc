"""The one benchmark harness of gpusvd, and the ``gpusvd bench`` and ``gpusvd info`` commands.

Two layers; the lower never imports the upper:

- the harness, used by ``gpusvd bench`` and, through the thin ``bench/common.py``, by the
  scripts in ``bench/`` (that folder is not part of the wheel):
  :mod:`.timing` (the device synchronized around each call, warm-up, median),
  :mod:`.records` (JSON records), :mod:`.machine` (versions, GPUs, memory, caches; what
  ``gpusvd info`` prints) and :mod:`.accuracy` (any framework's SVD in the units of
  :mod:`gpusvd.testing.metrics`, their one definition);
- ``gpusvd bench``: :mod:`.peers` (gpusvd and its peers, side by side, on the inputs of
  :mod:`gpusvd.testing`), :mod:`.report` (the table and the plot) and :mod:`.command`
  (the options and the run).

Nothing here imports CuPy, PyTorch or JAX at module level. The names below are the ones
``gpusvd.cli``, ``bench/common.py``, the scripts in ``bench/`` and the tests use.
"""

from .accuracy import eps_of, sv_accuracy, svd_accuracy, to_cupy, values_accuracy
from .command import add_arguments, run
from .machine import device_info, format_machine_info, machine_info
from .peers import ALGORITHMS, COND
from .records import short_error, write_json
from .report import METRICS, plot
from .timing import Timing, free_gpu_memory, synchronize, time_calls, time_interleaved

__all__ = ["ALGORITHMS", "COND", "METRICS", "Timing", "add_arguments", "device_info", "eps_of",
           "format_machine_info", "free_gpu_memory", "machine_info", "plot", "run",
           "short_error", "sv_accuracy", "svd_accuracy", "synchronize", "time_calls",
           "time_interleaved", "to_cupy", "values_accuracy", "write_json"]
