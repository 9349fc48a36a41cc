"""Loading the CUDA C++ kernels kept as ``.cu`` files inside the package.

Each kernel file is compiled at run time by CuPy's ``RawModule`` (NVRTC) for the
template instantiations it declares, once per process and device, and cached.
:data:`REGISTRY` lists every file with its instantiations, so CI can compile the same
code with ``nvcc -arch=sm_90`` on a machine without a GPU (``scripts/check-kernels``).
"""

import functools
import pathlib
from typing import NamedTuple

import numpy as np

_PACKAGE = pathlib.Path(__file__).resolve().parent.parent


class KernelFile(NamedTuple):
    names: tuple            # the template instantiations (NVRTC name expressions) launched
    cooperative: bool = False  # launched cooperatively (grid-wide sync)


# One row per kernel file, by its path under the package.
REGISTRY = {
    "golub_reinsch/kernels/apply_rotations.cu": KernelFile(tuple(
        f"apply_rotations<{ctype}, {window}>"
        for ctype in ("float", "double")
        for window in (8, 16))),
    "golub_reinsch/kernels/bidiagonalize_panel.cu": KernelFile(
        tuple(f"bidiagonalize_panel<{ctype}>"
              for ctype in ("float", "double", "Complex<float>", "Complex<double>")),
        cooperative=True),
    "takagi/kernels/takagi_steps.cu": KernelFile(tuple(
        f"{kernel}<{ctype}>"
        for kernel in ("takagi_rotations", "takagi_rotate_rows", "takagi_rotate_columns",
                       "takagi_solve_block_pairs")
        for ctype in ("float", "double"))),
    "jacobi/kernels/inner_jacobi.cu": KernelFile(tuple(
        f"inner_jacobi<{ctype}, {lanes}>"
        for ctype in ("float", "double", "Complex<float>", "Complex<double>")
        for lanes in (4, 8, 16, 32)) + ("rotation_table<float>", "rotation_table<double>")),
    "jacobi/kernels/block_copy.cu": KernelFile(
        ("copy_blocks<ulonglong2>", "copy_blocks<unsigned int>")),
    "jacobi/kernels/gram_cholesky.cu": KernelFile(tuple(
        f"gram_cholesky<{ctype}>"
        for ctype in ("float", "double", "Complex<float>", "Complex<double>"))),
    "jacobi/kernels/small_qr.cu": KernelFile(tuple(
        f"small_qr<{ctype}>"
        for ctype in ("float", "double", "Complex<float>", "Complex<double>"))),
}

# The C type a kernel template is instantiated with, by NumPy dtype.
CTYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}

_NVRTC_OPTIONS = ("-std=c++17",)


def source(relpath):
    """The text of a kernel file, by its path under the package."""
    return (_PACKAGE / relpath).read_text()


@functools.cache
def _module(relpath, device_id):
    import cupy

    with cupy.cuda.Device(device_id):
        entry = REGISTRY[relpath]
        # The kernel's own folder is on the include path, so its relative #include of
        # _core/cuda/complex.cuh resolves as it does for nvcc and g++.
        include = f"-I{(_PACKAGE / relpath).parent}"
        return cupy.RawModule(code=source(relpath), options=(*_NVRTC_OPTIONS, include),
                              name_expressions=entry.names,
                              enable_cooperative_groups=entry.cooperative)


def get_kernel(relpath, name_expression):
    """The compiled kernel ``name_expression`` of file ``relpath`` on the current device."""
    import cupy

    if name_expression not in REGISTRY[relpath].names:
        raise KeyError(f"{name_expression} is not an instantiation registered for {relpath}")
    return _module(relpath, cupy.cuda.Device().id).get_function(name_expression)
