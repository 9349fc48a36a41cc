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
