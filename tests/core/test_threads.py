"""CPU thread limits: inside :func:`gpusvd._core.threads.single_threaded_blas`
every BLAS pool runs one thread, the earlier sizes come back afterwards (also after an
error, and when nested), and the CPU call sites of the Numba parallel kernels, the Takagi
block update and the Jacobi SVD run under the limit."""

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import gpusvd
from gpusvd import testing
from gpusvd._core import threads
from gpusvd.bidiagonal import rotations
from gpusvd.jacobi import driver as jacobi_driver, inner
from gpusvd.takagi import block_update


def blas_threads():
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads():
    """BLAS pools of two threads, so that a limit to one is visible (CI may have one core)."""
    with threadpool_limits(2, user_api="blas"):
        assert blas_threads() and set(blas_threads()) == {2}
        yield


def test_limit_in_force_and_restored(two_blas_threads):
    with threads.single_threaded_blas():
        assert set(blas_threads()) == {1}
        with threads.single_threaded_blas():
            assert set(blas_threads()) == {1}
        assert set(blas_threads()) == {1}
    assert set(blas_threads()) == {2}


def test_restored_after_an_error(two_blas_threads):
    with pytest.raises(RuntimeError):
        with threads.single_threaded_blas():
            raise RuntimeError
    assert set(blas_threads()) == {2}


@pytest.mark.parametrize("first", ["worker", "main"])
def test_overlapping_threads(two_blas_threads, first):
    """Calls from two threads overlap, either one leaving first: the calling thread's own
    limit holds for its whole block, and the sizes from before come back after both, not
    the limit of one that the later entrant found (threadpoolctl >= 3.8 lets one thread
    at a time set OpenBLAS's process-wide size)."""
    entered, leave, left = threading.Event(), threading.Event(), threading.Event()

    def worker_call():
        with threads.single_threaded_blas():
            entered.set()
            leave.wait(10)
        left.set()

    worker = threading.Thread(target=worker_call)
    if first == "worker":
        worker.start()
        entered.wait(10)
        with threads.single_threaded_blas():
            leave.set()
            left.wait(10)
            assert set(blas_threads()) == {1}
    else:
        with threads.single_threaded_blas():
            worker.start()
            entered.wait(10)
        leave.set()
        left.wait(10)
    worker.join(10)
    assert set(blas_threads()) == {2}


def spy(monkeypatch, module, name):
    """Replace ``module.name`` by a wrapper that records the BLAS pool sizes it ran under."""
    real, seen = getattr(module, name), []

    def wrapper(*args, **kwargs):
        seen.append(set(blas_threads()))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return seen


@pytest.mark.parametrize("module, name, call", [
    (inner, "_inner_jacobi", lambda a, c: gpusvd.jacobi_svd(a, device="cpu")),
    (rotations, "_apply_rotations",
     lambda a, c: gpusvd.svd(a, method="gr", device="cpu", reduction="one-stage")),
    (block_update.HostUpdate, "_step_products",
     lambda a, c: gpusvd.takagi(c, method="jacobi", device="cpu")),
    (jacobi_driver, "svd_stack", lambda a, c: gpusvd.svd(a, method="jacobi", device="cpu")),
    (jacobi_driver, "svd_stack", lambda a, c: gpusvd.jacobi_svd(a, device="cpu")),
], ids=["inner_jacobi", "apply_rotations", "takagi_update", "svd_jacobi", "jacobi_svd"])
def test_call_sites_run_single_threaded_blas(two_blas_threads, monkeypatch, module, name,
                                             call):
    from gpusvd._core import tunables

    seen = spy(monkeypatch, module, name)
    a = testing.with_condition(80, 70, 1e3, seed=0)
    c = testing.complex_symmetric(80, seed=0)
    # Takagi's blocked update runs from takagi_blocked_min_n on.
    with tunables.override(takagi_blocked_min_n=64):
        call(a, c)
    assert seen and all(s == {1} for s in seen)
    assert set(blas_threads()) == {2}


def _blas_threads():
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


@pytest.mark.parametrize("method", ["gr", "polar", "jacobi"])
def test_our_methods_run_blas_at_one_thread_on_the_cpu(monkeypatch, method):
    """With the default pools on 2 cores, gr, polar and svdvals(gr) ran
    2–11× slower than with one BLAS thread; gpusvd's own methods now size BLAS at one
    thread for their whole run on the CPU (Numba keeps the cores), LAPACK's gesdd keeps
    its pool."""
    from gpusvd import _dispatch

    seen = []
    for name in (method, "lapack"):
        real = _dispatch._ROUTES[name]

        def spy(*args, _real=real, **kwargs):
            seen.append(_blas_threads())
            return _real(*args, **kwargs)
        monkeypatch.setitem(_dispatch._ROUTES, name, spy)
    gesdd, real_svd = [], np.linalg.svd

    def gesdd_spy(*args, **kwargs):
        gesdd.append(_blas_threads())
        return real_svd(*args, **kwargs)
    monkeypatch.setattr(np.linalg, "svd", gesdd_spy)
    before = _blas_threads()
    a = np.random.default_rng(0).standard_normal((40, 30))
    gpusvd.svd(a, method=method, device="cpu")
    gpusvd.svdvals(a, method=method, device="cpu")
    gpusvd.svd(a, method="lapack", device="cpu")          # gesdd directly (in range)
    gpusvd.svd(a * 1e-300, method="lapack", device="cpu")  # through the front end
    assert seen[:2] == [{1}, {1}] and seen[2] == before and _blas_threads() == before
    assert gesdd[-2:] == [before, before]


def test_usable_cores_follow_the_affinity(monkeypatch):
    """The cores a process may run on: its affinity (one for a rank MPI bound to one
    core), else the machine's count."""
    import os

    from gpusvd._core import threads

    assert 1 <= threads.usable_cores() <= (os.cpu_count() or 1)
    if hasattr(os, "sched_getaffinity"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
        assert threads.usable_cores() == 1
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    assert threads.usable_cores() == (os.cpu_count() or 1)
