import pytest

from gpusvd._core.backend import cupy_or_none


def pytest_collection_modifyitems(config, items):
    if cupy_or_none() is not None:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy (scripts/gpu-tests)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def jax_float64():
    """JAX computes in float64 only when asked (its default is float32): asked for one
    test, and the setting put back after it."""
    jax = pytest.importorskip("jax")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)
