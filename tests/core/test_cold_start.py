"""A fresh process on a prepared install compiles nothing it could have had ready.

CPU: after ``gpusvd precompile`` (the install-time step of the README) a new process
calling every public function, on other shapes than the step used, compiles no gpusvd
Numba function: everything loads from the cache. GPU: every kernel file has an up-to-date
shipped binary (test_shipped_kernels.py); the GPU test loads each from it.
"""

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from gpusvd._core import backend

# Run in a fresh interpreter: public calls of every method and dtype, on shapes the
# precompile step does not use; prints the gpusvd functions Numba compiled.
_FIRST_CALLS = """
import json
import numpy as np
import gpusvd
from gpusvd._core.precompile import jit_compilations

rng = np.random.default_rng(1)
with jit_compilations() as compiled:
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        a = rng.standard_normal((150, 100)).astype(dtype)
        signs = np.where(np.arange(100) < 60, 1.0, -1.0).astype(a.real.dtype)
        gpusvd.svd(a, device="cpu")
        gpusvd.svd(a, method="polar", device="cpu")
        gpusvd.svd(a, method="jacobi", full_matrices=False, device="cpu")
        gpusvd.svd(a[:5, :3], method="gr", device="cpu")
        gpusvd.svd(a[:20].reshape(4, 5, 100).transpose(0, 2, 1), device="cpu")
        gpusvd.svdvals(a, device="cpu")
        gpusvd.svdvals(a, method="gr", device="cpu")  # the two-stage reduction
        gpusvd.jacobi_svd(a.T, device="cpu")
        gpusvd.hsvd(a, signs, device="cpu")
        gpusvd.eigh_factored(a, signs, device="cpu")
        if a.dtype.kind == "c":
            gpusvd.takagi(a[:60, :60] + a[:60, :60].T, device="cpu")
        else:
            gpusvd.svd_lowrank(a[:, :20] @ a[:20], device="cpu")
print(json.dumps(compiled))
"""


def _run(args, cache, timeout):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "NUMBA_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                         timeout=timeout)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_a_fresh_process_compiles_nothing_after_precompile(tmp_path):
    _run(["-m", "gpusvd", "precompile"], tmp_path, timeout=1200)
    compiled = json.loads(_run(["-c", _FIRST_CALLS], tmp_path, timeout=600).splitlines()[-1])
    assert compiled == [], f"compiled at the first call despite the cache: {compiled}"


# In a fresh interpreter on a GPU after precompile's GPU calls in float64: the first SVD
# past the size from which the bidiagonal divide and conquer splits its merges by support
# (divide_conquer_dense_merge_rows); prints the gpusvd Numba functions and the CuPy
# kernels it compiled.
_FIRST_LARGE_GPU_CALL = """
import json
import cupy
import numpy as np
import gpusvd
from cupy.cuda import compiler
from gpusvd._core import precompile, tunables

precompile.precompile(dtypes=(np.float64,), devices=("gpu",))
n = tunables.get().divide_conquer_dense_merge_rows + 200
a = cupy.asarray(np.random.default_rng(2).standard_normal((n, n)))
hook = next(h for h in ("_compile_using_nvrtc_no_warning", "compile_using_nvrtc")
            if hasattr(compiler, h))
kernels, original = [], getattr(compiler, hook)
setattr(compiler, hook, lambda source, *args, **kw: kernels.append(
    source.split("__global__", 1)[-1][:80]) or original(source, *args, **kw))
with precompile.jit_compilations() as compiled:
    gpusvd.svd(a, method="gr", reduction="two-stage", full_matrices=False)
    cupy.cuda.Device().synchronize()
print(json.dumps(compiled + kernels))
"""


@pytest.mark.gpu
def test_a_first_large_gr_call_compiles_nothing_after_precompile(tmp_path):
    """The divide and conquer's merges split by support (from 4096 rows) have their Numba
    loop and CuPy kernels compiled by precompile, not by a user's first large SVD."""
    compiled = json.loads(_run(["-c", _FIRST_LARGE_GPU_CALL], tmp_path,
                               timeout=900).splitlines()[-1])
    assert compiled == [], f"compiled at the first large call: {compiled}"


# The public functions, each of which runs its CuPy work without CuPy's CUB block
# reductions (compiled per reduced length: a new shape's first call compiled for seconds).
_PUBLIC = ("svd", "svdvals", "polar", "jacobi_svd", "hsvd", "eigh_factored", "takagi",
           "svd_lowrank")


def _wrappers(fn):
    while fn is not None:
        yield fn
        fn = getattr(fn, "__wrapped__", None)


@pytest.mark.parametrize("name", _PUBLIC)
def test_every_public_function_runs_without_block_reductions(name):
    import gpusvd
    from gpusvd import distributed

    distributed_forms = {"svd_lowrank": distributed.svd_lowrank, "svd": distributed.svd,
                         "jacobi_svd": distributed.jacobi_svd, "hsvd": distributed.hsvd}
    for fn in (getattr(gpusvd, name),) + ((distributed_forms[name],)
                                          if name in distributed_forms else ()):
        codes = [w.__code__ for w in _wrappers(fn)]
        assert backend.simple_reductions(len).__code__ in codes, name


class _Accelerators:
    """A stand-in for ``cupy._core``'s reduction accelerators, recording each setting."""

    def __init__(self, initial):
        self.current, self.settings = list(initial), []

    def get_reduction_accelerators(self):
        return self.current

    def set_reduction_accelerators(self, accelerators):
        self.current = list(accelerators)
        self.settings.append(list(accelerators))


@pytest.mark.parametrize("initial", [[1], []])
def test_the_users_reduction_accelerators_are_restored(initial, monkeypatch):
    """Inside a call the accelerators are none; after it, the user's again, also when the
    call raises; a user who chose none is left alone."""
    import gpusvd

    core = _Accelerators(initial)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(_core=core))
    seen = []
    inner = backend.simple_reductions(lambda: seen.append(list(core.current)))
    inner()
    assert seen == [[]] and core.current == initial
    assert core.settings == ([[], initial] if initial else [])
    a = np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(gpusvd.svdvals(a, device="cpu"),
                               np.linalg.svd(a, compute_uv=False), rtol=1e-13)
    assert core.current == initial
    with pytest.raises(ValueError):
        gpusvd.svd(np.ones(3), device="cpu")
    assert core.current == initial


@pytest.mark.gpu
def test_a_new_shape_compiles_no_cupy_kernel():
    """After one SVD of each path and dtype, another shape on the same path (other reduced
    lengths, another stack size; one matrix within ``fixed_schedule_graph_eigh_max_n``)
    compiles nothing: CuPy's kernels depend on dtypes and dimensions, not lengths."""
    import cupy
    from cupy.cuda import compiler

    import gpusvd

    hook = next(n for n in ("_compile_using_nvrtc_no_warning", "compile_using_nvrtc")
                if hasattr(compiler, n))
    rng = np.random.default_rng(0)
    cases = [((300, 300), "float64"), ((300, 300), "float32"), ((50, 128, 128), "float32"),
             ((20, 128, 128), "complex128"), ((3000, 256), "float32")]
    others = [((400, 400), "float64"), ((90, 90), "float32"), ((7, 200, 200), "float32"),
              ((9, 100, 100), "complex128"), ((20000, 64), "float32")]

    def run(shape, dtype):
        a = rng.standard_normal(shape)
        if dtype.startswith("complex"):
            a = a + 1j * rng.standard_normal(shape)
        gpusvd.svd(cupy.asarray(a.astype(dtype)), full_matrices=False)
        gpusvd.svdvals(cupy.asarray(a.astype(dtype)))

    for case in cases:
        run(*case)
    compiled = []
    original = getattr(compiler, hook)

    def counting(source, *args, **kwargs):
        compiled.append(source.split("__global__", 1)[-1][:80])
        return original(source, *args, **kwargs)

    setattr(compiler, hook, counting)
    try:
        for case in others:
            run(*case)
    finally:
        setattr(compiler, hook, original)
    assert compiled == [], compiled
