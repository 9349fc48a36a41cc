"""The progress bar of ``svd_lowrank(progress=True)``, shared with the sweep progress of
the ``gpusvd`` command (:mod:`gpusvd._core.progress`)."""

from .._core.progress import NoProgress, ProgressBar

__all__ = ["NoProgress", "ProgressBar"]
