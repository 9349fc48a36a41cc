"""Every tunable of gpusvd in one place.

Values are read at call time, so tests (and users chasing performance) can change
them with :func:`override`. Each default says where it came from.
"""

import contextlib
import dataclasses


@dataclasses.dataclass
class Tunables:
    # Householder panel width of the blocked bidiagonalization (paper 000, Alg. 2).
    # LAPACK's dgebrd uses 32; on the GPU a wider panel makes the trailing update a
    # larger GEMM. Chosen by measurement (NOTES.md).
    bidiag_block_size: int = 32
    # Reflectors per compact-WY block when applying Q and P (apply_q/apply_p), independent
    # of the panel width: wider blocks are fewer, larger GEMMs and fewer GPU launches, at
    # about nb/m more flops. NumPy, Q·I for n = 2000: 0.41–0.47 s at 32, 0.30–0.37 s at 64,
    # 0.27–0.31 s from 128 to 256, 0.37 s at 512.
    back_transform_block_size: int = 128
    # QR sweeps applied to X and Y in one pass over them (the on-chip window of the
    # rotation kernel, paper 000 Alg. 4/5 generalized to several sweeps). 8 or 16: at 32
    # the float64 kernel spills registers and takes minutes to compile.
    rotation_window: int = 16
    # Sweeps the bidiagonal QR emits before the driver applies them: bounds the
    # host memory of the rotation log and lets the GPU apply one chunk while the
    # CPU computes the next.
    qr_chunk_sweeps: int = 256
    # Smallest number of matrix entries for which device="auto" sends NumPy input
    # to a GPU: below it the transfers and launches cost more than they gain.
    auto_gpu_min_entries: int = 256 * 256


_TUNABLES = Tunables()


def get() -> Tunables:
    """The tunables in force."""
    return _TUNABLES


@contextlib.contextmanager
def override(**values):
    """Set some tunables for the duration of a ``with`` block.

    >>> from gpusvd._core import tunables
    >>> with tunables.override(bidiag_block_size=8):
    ...     tunables.get().bidiag_block_size
    8
    """
    unknown = set(values) - {f.name for f in dataclasses.fields(Tunables)}
    if unknown:
        raise ValueError(f"unknown tunables {sorted(unknown)}")
    saved = {name: getattr(_TUNABLES, name) for name in values}
    for name, value in values.items():
        setattr(_TUNABLES, name, value)
    try:
        yield _TUNABLES
    finally:
        for name, value in saved.items():
            setattr(_TUNABLES, name, value)
