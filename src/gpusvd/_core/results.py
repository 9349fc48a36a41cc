"""Result types returned by the public functions."""

from typing import Any, NamedTuple


class SVDResult(NamedTuple):
    """``A = U @ diag(S) @ Vh``, singular values ``S`` descending."""

    U: Any
    S: Any
    Vh: Any
