"""Loading the CUDA C++ kernels kept as ``.cu`` files inside the package.

Every kernel file ships compiled ahead of time: ``scripts/build-kernels`` builds one
fatbin per file with nvcc (SASS for :data:`SASS_ARCHS`, PTX for :data:`PTX_ARCH` so newer
GPUs JIT it once in the driver) into ``_core/cuda/bin/``, and records in its
``manifest.json`` the mangled name of each template instantiation and a hash of what was
compiled (:func:`source_hash`). A kernel is then loaded with ``cupy.RawModule(path=...)``
in milliseconds, where NVRTC takes seconds per file (26 s for the first ``gr`` call on a
fresh H100). NVRTC compiles the file at run time only as the fallback: when
the shipped binary is stale (the source changed since the build: a test fails in CI
then), when the driver cannot load it (no SASS or PTX it can use, or a driver older than
the nvcc that built it), or when ``GPUSVD_KERNELS=nvrtc`` asks for it.

:data:`REGISTRY` lists every file with its instantiations; ``scripts/check-kernels``
compiles the same code with ``nvcc -arch=sm_90`` on a machine without a GPU.
"""

import functools
import hashlib
import json
import os
import pathlib
import re
from typing import NamedTuple

import numpy as np

_PACKAGE = pathlib.Path(__file__).resolve().parent.parent
BINARIES = _PACKAGE / "_core" / "cuda" / "bin"
MANIFEST = BINARIES / "manifest.json"

# The C type a kernel template is instantiated with, by NumPy dtype (Complex<R>:
# _core/cuda/complex.cuh).
CTYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
         np.dtype(np.complex64): "Complex<float>", np.dtype(np.complex128): "Complex<double>"}
_REAL = ("float", "double")
_ALL = tuple(CTYPE.values())


class KernelFile(NamedTuple):
    names: tuple            # the template instantiations (NVRTC name expressions) launched
    cooperative: bool = False  # launched cooperatively (grid-wide sync)


# One row per kernel file, by its path under the package.
REGISTRY = {
    "golub_reinsch/kernels/bidiagonalize_panel.cu": KernelFile(
        tuple(f"bidiagonalize_panel<{ctype}>" for ctype in _ALL), cooperative=True),
    "takagi/kernels/takagi_steps.cu": KernelFile(tuple(
        f"{kernel}<{ctype}>"
        for kernel in ("takagi_rotations", "takagi_rotate_rows", "takagi_rotate_columns",
                       "takagi_solve_block_pairs", "takagi_solve_one_tile")
        for ctype in _REAL)),
    "jacobi/kernels/inner_jacobi.cu": KernelFile(tuple(
        f"inner_jacobi<{ctype}, {lanes}>" for ctype in _ALL for lanes in (4, 8, 16, 32))
        + tuple(f"rotation_table<{ctype}>" for ctype in _REAL)),
    "jacobi/kernels/small_svd.cu": KernelFile(tuple(
        f"small_svd<{ctype}, {lanes}>" for ctype in _ALL for lanes in (2, 4, 8, 16, 32))),
    "jacobi/kernels/block_copy.cu": KernelFile(
        ("copy_blocks<ulonglong2>", "copy_blocks<unsigned int>")),
    "jacobi/kernels/gram_cholesky.cu": KernelFile(tuple(
        f"gram_cholesky<{ctype}>" for ctype in _ALL)),
    "jacobi/kernels/small_qr.cu": KernelFile(tuple(f"small_qr<{ctype}>" for ctype in _ALL)),
    "condensed/kernels/bulge.cu": KernelFile(tuple(f"chase_band<{ctype}>" for ctype in _ALL)),
    "condensed/kernels/chase_back.cu": KernelFile(tuple(
        f"chase_back_passes<{ctype}, {b}, {g}>"
        for ctype, b, g in (("double", 32, 16), ("float", 32, 32), ("double", 16, 16),
                            ("float", 16, 16)))),
    "condensed/kernels/wy.cu": KernelFile(tuple(
        f"{kernel}<{ctype}>" for kernel in ("unit_lower", "larft_gram") for ctype in _ALL)),
    "bidiagonal/kernels/apply_rotations.cu": KernelFile(tuple(
        f"apply_rotations<{ctype}, {window}>" for ctype in _REAL for window in (8, 16))),
    "bidiagonal/kernels/bisection.cu": KernelFile(tuple(
        f"bisection_singular_values<{ctype}, {levels}>" for ctype in _REAL
        for levels in (2, 3, 4))),
    "bidiagonal/kernels/rotate_pairs.cu": KernelFile(tuple(
        f"rotate_pairs<{ctype}>" for ctype in _REAL)),
    "bidiagonal/kernels/merge_vectors.cu": KernelFile(tuple(
        f"{kernel}<double>" for kernel in ("svd_merge_weights", "svd_merge_columns",
                                           "place_blocks", "gather_columns",
                                           "scatter_columns"))),
    "bidiagonal/kernels/secular.cu": KernelFile(("svd_secular_roots<double>",)),
    "quic/kernels/weighted_means.cu": KernelFile(tuple(
        f"{kernel}<{ctype}>" for kernel in ("piece_sums", "child_sums", "row_dots")
        for ctype in _REAL)),
}

# How the shipped binaries are built (scripts/build-kernels reads these). SASS for the
# data-centre generations gpusvd is tuned on: sm_80 also runs on every 8.x GPU (A10, L4,
# RTX 30 and 40), sm_90 on H100 and H200; the PTX is JIT-compiled by the driver on newer
# GPUs (once: the driver caches it).
SASS_ARCHS = ("sm_80", "sm_90")
PTX_ARCH = "compute_90"
COMPILE_OPTIONS = ("-std=c++17",)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"[ \t]*$', re.MULTILINE)


def source(relpath):
    """The text of a kernel file, by its path under the package."""
    return (_PACKAGE / relpath).read_text()


@functools.cache
def expanded_source(relpath):
    """The kernel file with its quoted ``#include``s of package headers inlined (once
    each), as NVRTC compiles it and as :func:`source_hash` hashes it."""
    seen = set()

    def expand(path):
        def inline(match):
            header = (path.parent / match.group(1)).resolve()
            if header in seen:
                return ""
            seen.add(header)
            return expand(header)
        return _INCLUDE.sub(inline, path.read_text())

    return expand((_PACKAGE / relpath).resolve())


def source_hash(relpath):
    """SHA-256 of what the shipped binary of ``relpath`` is built from: the expanded
    source, the instantiations and the compile options and targets."""
    entry = REGISTRY[relpath]
    recipe = json.dumps({"source": expanded_source(relpath), "names": entry.names,
                         "options": COMPILE_OPTIONS, "sass": SASS_ARCHS, "ptx": PTX_ARCH})
    return hashlib.sha256(recipe.encode()).hexdigest()


@functools.cache
def manifest():
    """The build record of the shipped binaries ({} if there is none)."""
    try:
        return json.loads(MANIFEST.read_text())
    except FileNotFoundError:
        return {}


def shipped(relpath):
    """(fatbin path, {name expression: mangled name}) of the up-to-date shipped binary of
    ``relpath``, or None if there is none or the source changed since it was built."""
    record = manifest().get("files", {}).get(relpath)
    if record is None or record["hash"] != source_hash(relpath):
        return None
    path = BINARIES / record["fatbin"]
    return (path, record["symbols"]) if path.is_file() else None


class _Module(NamedTuple):
    raw: object       # cupy.RawModule
    symbols: dict     # name expression -> mangled name; {} when NVRTC resolves names


# How each file was loaded, by (path under the package, device id): "shipped" or "nvrtc".
LOADED = {}


@functools.cache
def _module(relpath, device_id):
    import cupy

    entry = REGISTRY[relpath]
    with cupy.cuda.Device(device_id):
        binary = None if os.environ.get("GPUSVD_KERNELS") == "nvrtc" else shipped(relpath)
        if binary is not None:
            path, symbols = binary
            raw = cupy.RawModule(path=str(path), enable_cooperative_groups=entry.cooperative)
            try:
                raw.get_function(symbols[entry.names[0]])  # loads the module
                LOADED[relpath, device_id] = "shipped"
                return _Module(raw, symbols)
            except cupy.cuda.driver.CUDADriverError:
                pass  # no usable SASS or PTX for this GPU and driver: compile instead
        raw = cupy.RawModule(code=expanded_source(relpath), options=COMPILE_OPTIONS,
                             name_expressions=entry.names,
                             enable_cooperative_groups=entry.cooperative)
        LOADED[relpath, device_id] = "nvrtc"
        return _Module(raw, {})


@functools.cache
def _function(relpath, name_expression, device_id):
    module = _module(relpath, device_id)
    return module.raw.get_function(module.symbols.get(name_expression, name_expression))


def get_kernel(relpath, name_expression):
    """The compiled kernel ``name_expression`` of file ``relpath`` on the current device."""
    import cupy

    if name_expression not in REGISTRY[relpath].names:
        raise KeyError(f"{name_expression} is not an instantiation registered for {relpath}")
    return _function(relpath, name_expression, cupy.cuda.Device().id)
