"""JAX arrays in, JAX arrays out, on the input's device.

GPU arrays cross to CuPy and back by DLPack with no host transfer (checked by JAX's own
transfer guard); JAX arrays are immutable, so ``overwrite_a`` never writes to them. CPU
arrays go through NumPy and come back as JAX CPU arrays.
"""

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave the GPU to CuPy

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpusvd  # noqa: E402
from gpusvd._core import arrays  # noqa: E402
from .interop_cases import CASES, IDS, as_numpy, results  # noqa: E402

jax = pytest.importorskip("jax", reason="JAX is not installed here")
jax.config.update("jax_enable_x64", True)  # the cases are float64 and complex128


def _numpy(x):
    return np.asarray(jax.device_get(x))


def _on(kind):
    try:
        return jax.devices(kind)[0]
    except RuntimeError:
        pytest.skip(f"JAX sees no {kind} device")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cpu_array(case):
    cpu = _on("cpu")
    a = case.make()
    out = case.call(jax.device_put(a, cpu))
    for r in results(out):
        assert isinstance(r, jax.Array) and r.devices() == {cpu}
    case.check(a, as_numpy(out, _numpy))


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gpu_same_type_and_device_no_host(case, monkeypatch):
    gpu = _on("gpu")
    a = case.make()
    x = jax.device_put(a, gpu)

    def boom(*args, **kwargs):
        raise AssertionError("host round trip")
    monkeypatch.setattr(arrays, "to_host", boom)
    monkeypatch.setattr(np, "from_dlpack", boom)
    with jax.transfer_guard_device_to_host("disallow"):
        out = case.call(x)
        for r in results(out):
            r.block_until_ready()
    monkeypatch.undo()
    for r in results(out):
        assert isinstance(r, jax.Array) and r.devices() == {gpu}
    case.check(a, as_numpy(out, _numpy))


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["gr", "jacobi"])
def test_gpu_input_never_overwritten(method):
    # Wide and C-ordered: Golub–Reinsch works on its transpose, F-ordered, which it takes
    # as workspace when overwrite_a is true and the input may be written.
    a = np.random.default_rng(4).standard_normal((24, 40))
    x = jax.device_put(a, _on("gpu"))
    u, s, vh = gpusvd.svd(x, full_matrices=False, method=method, overwrite_a=True)
    assert np.array_equal(_numpy(x), a)
    assert np.allclose(_numpy(u) * _numpy(s) @ _numpy(vh), a)


@pytest.mark.gpu
def test_gpu_results_feed_jit():
    a = np.random.default_rng(5).standard_normal((30, 20))
    u, s, vh = gpusvd.svd(jax.device_put(a, _on("gpu")), full_matrices=False)
    back = jax.jit(lambda u, s, vh: (u * s) @ vh)(u, s, vh)
    assert np.allclose(_numpy(back), a)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_round_trips_its_dtype(dtype):
    """float16 and bfloat16: computed in float32, returned in the input's dtype."""
    x = jax.numpy.asarray(np.random.default_rng(0).standard_normal((12, 7))).astype(dtype)
    u, s, vh = gpusvd.svd(x, full_matrices=False)
    assert str(u.dtype) == str(s.dtype) == str(vh.dtype) == dtype
    assert str(gpusvd.polar(x)[0].dtype) == dtype
