"""gpusvd: singular value decompositions for NVIDIA GPUs, with a CPU path.

See the README for the methods and their papers.
"""

from ._core.errors import LinAlgError
from ._core.results import SVDResult
from ._dispatch import svd, svdvals

__all__ = ["LinAlgError", "SVDResult", "svd", "svdvals"]
__version__ = "0.1.0"
