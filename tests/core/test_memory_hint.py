"""Running out of memory: a MemoryError that says what to try, and nothing left allocated."""

import gc
import weakref

import numpy as np
import pytest

import gpusvd
from gpusvd import testing
from gpusvd._core import memory
from gpusvd.jacobi import driver as jacobi_driver
from gpusvd.takagi import driver as takagi_driver
from gpusvd.takagi import embedding as takagi_embedding

OOM = "Out of memory allocating 1,073,741,824 bytes (allocated so far: 0 bytes)."


@pytest.mark.parametrize(("exc", "expected"), [
    (MemoryError("x"), True),
    (RuntimeError("CUBLAS_STATUS_ALLOC_FAILED"), True),
    (RuntimeError("cudaErrorMemoryAllocation: out of memory"), True),
    (ValueError("a must be 2-D"), False),
    (RuntimeError("CUSOLVER_STATUS_INVALID_VALUE"), False),
])
def test_is_exhaustion(exc, expected):
    assert memory.is_exhaustion(exc) is expected


def _failing(held):
    """A stand-in for a driver that allocates, then runs out of memory."""
    def fail(*args, **kwargs):
        work = np.ones(1000)
        held.append(weakref.ref(work))
        raise MemoryError(OOM)
    return fail


@pytest.mark.parametrize(("call", "target", "name", "hint"), [
    (lambda: gpusvd.jacobi_svd(np.eye(4), device="cpu"), (jacobi_driver, "svd_stack"),
     "jacobi_svd", "float32"),
    (lambda: gpusvd.svd(np.eye(4), method="jacobi", device="cpu"),
     (jacobi_driver, "svd_stack"), "svd", "float32"),
    (lambda: gpusvd.takagi(testing.complex_symmetric(4, seed=0), method="jacobi",
                           device="cpu"),
     (takagi_driver, "factorize"), "takagi", "complex64"),
    (lambda: gpusvd.takagi(testing.complex_symmetric(4, seed=0), device="cpu"),
     (takagi_embedding, "factorize"), "takagi", "complex64"),
])
def test_public_functions_hint_and_release(monkeypatch, call, target, name, hint):
    held = []
    monkeypatch.setattr(*target, _failing(held))
    with pytest.raises(MemoryError) as info:
        call()
    message = str(info.value)
    assert message.startswith(f"{name} ran out of memory (")
    assert OOM in message and hint in message and "svd_lowrank" in message
    # not chained: the failed call's frames (and what they allocated) are not kept
    assert info.value.__cause__ is None and info.value.__context__ is None
    gc.collect()
    assert held and held[0]() is None


def test_other_errors_pass_through(monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("CUSOLVER_STATUS_INVALID_VALUE")
    monkeypatch.setattr(jacobi_driver, "svd_stack", fail)
    with pytest.raises(RuntimeError, match="INVALID_VALUE"):
        gpusvd.jacobi_svd(np.eye(4), device="cpu")


def test_lowrank_hint(monkeypatch):
    from gpusvd.quic import lowrank

    monkeypatch.setattr(lowrank, "quic_svd", _failing([]))
    with pytest.raises(MemoryError, match="svd_lowrank ran out of memory .*memmap"):
        gpusvd.svd_lowrank(testing.random_matrix(50, 40, seed=1), 0.1, device="cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["gr", "jacobi"])
def test_gpu_pool_limit(method):
    """A CuPy pool limit makes the GPU run out: MemoryError with the hint, and the pool
    holds no more than before the call."""
    import cupy

    pool = cupy.get_default_memory_pool()
    a = cupy.asarray(testing.random_matrix(1024, 1024, seed=2))
    cupy.cuda.Device().synchronize()
    before = pool.used_bytes()
    limit = pool.get_limit()
    pool.set_limit(size=before + 4 * 2**20)  # 4 MiB: less than one copy of a
    try:
        with pytest.raises(MemoryError, match="ran out of memory .*float32"):
            gpusvd.svd(a, method=method)
    finally:
        pool.set_limit(size=limit)
    gc.collect()
    assert pool.used_bytes() <= before


def test_a_cpu_svd_larger_than_the_host_raises_before_it_starts(monkeypatch):
    """Where the results and workspace exceed the host's available memory, a MemoryError
    with the hint before anything is allocated (Linux would kill the process instead);
    the economy SVD of the same matrix, which fits, runs."""
    monkeypatch.setattr(memory, "available_host_bytes", lambda: 2**30)
    a = np.ones((2, 20000))
    with pytest.raises(MemoryError, match=r"svd ran out of memory \(needs about 3\.0 GiB "
                       r"of host memory .*1\.0 GiB available\)\. The dense methods"):
        gpusvd.svd(a, device="cpu")
    u, s, vh = gpusvd.svd(a, full_matrices=False, device="cpu")
    assert vh.shape == (2, 20000) and abs(s[0] - np.sqrt(40000)) < 1e-9
    assert gpusvd.svdvals(np.ones((3, 30000)), device="cpu").shape == (3,)
    monkeypatch.setattr(memory, "available_host_bytes", lambda: None)   # not Linux
    assert gpusvd.svd(np.ones((2, 3)), device="cpu").S.shape == (2,)


def test_small_needs_are_not_checked(monkeypatch):
    """Below UNCHECKED_HOST_BYTES no /proc/meminfo is read (a third of a 2×2 call's
    time); at it, the check runs."""
    def unread():
        raise AssertionError("read /proc/meminfo")

    monkeypatch.setattr(memory, "available_host_bytes", unread)
    assert gpusvd.svd(np.eye(64), device="cpu").S.shape == (64,)
    memory.check_host_memory(memory.UNCHECKED_HOST_BYTES - 1, "a test")
    with pytest.raises(AssertionError, match="meminfo"):
        memory.check_host_memory(memory.UNCHECKED_HOST_BYTES, "a test")
