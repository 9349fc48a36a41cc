"""gpusvd: singular value decompositions for NVIDIA GPUs, with a CPU path.

See the README for the methods and their papers.
"""

from ._core.errors import LinAlgError
from ._core.results import LowRankSVD, SVDResult
from ._dispatch import svd, svdvals
from .quic.lowrank import svd_lowrank

__all__ = ["LinAlgError", "LowRankSVD", "SVDResult", "svd", "svd_lowrank", "svdvals"]
__version__ = "0.1.0"
