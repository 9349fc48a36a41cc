"""gpusvd: singular value decompositions for NVIDIA GPUs, with a CPU path.

See the README for the methods and their papers.
"""

from . import autodiff
from ._core.errors import LinAlgError
from ._core.results import HSVDResult, LowRankSVD, SVDResult, TakagiResult
from ._dispatch import svd, svdvals
from .jacobi import eigh_factored, hsvd, jacobi_svd
from .polar.decomposition import polar
from .quic.lowrank import svd_lowrank
from .takagi import takagi

__all__ = ["HSVDResult", "LinAlgError", "LowRankSVD", "SVDResult", "TakagiResult",
           "eigh_factored", "hsvd", "jacobi_svd", "polar", "svd", "svd_lowrank", "svdvals",
           "takagi"]
__version__ = "0.1.0"

autodiff.EAGER.update(svd=svd, polar=polar, takagi=takagi)  # what the framework operators compute
