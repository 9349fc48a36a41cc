import pytest

from gpusvd._core.backend import cupy_or_none


def pytest_collection_modifyitems(config, items):
    if cupy_or_none() is not None:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy (scripts/gpu-tests)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
