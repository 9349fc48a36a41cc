"""Compile ahead of time every Numba specialization the public functions use.

The CPU kernels are Numba functions with ``cache=True``: the first call of a process
loads them from Numba's cache in about 0.2 s, but with an empty cache it compiles them:
4–8.6 s for the first ``svd``, ``svdvals``, ``jacobi_svd``, ``hsvd`` or ``eigh_factored``
of a process and 1.8 s for ``takagi`` (2 cores; BENCHMARKS.md, "The first call").
Numba's machine code is specific to the CPU and the Numba version, so it cannot ship in
the package; :func:`precompile` builds it on the machine, once (``gpusvd
precompile``, run at install), by running every
public function on small inputs of every dtype through every CPU code path that reaches a
Numba kernel, and on a GPU machine through the GPU paths too, which fills CuPy's own
kernel cache (its elementwise and reduction kernels are compiled by NVRTC on first use;
gpusvd's kernels ship compiled, ``_core/kernels.py``).
:func:`jit_compilations` records what a block of code compiles, so a test can check that
nothing is left for a user's first call.
"""

import contextlib
import time

import numpy as np

from . import tunables

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
# Tunables under which the bidiagonal divide and conquer of a matrix of a few dozen
# columns merges in both forms, dense and split by support (bidiagonal/dc_svd.py), as it
# does with the defaults only from 4096 rows on, where a user's first SVD would otherwise
# compile the latter's Numba loop and CuPy kernels.
DIVIDE_AND_CONQUER_MERGES = {"divide_conquer_leaf_size": 8,
                             "divide_conquer_dense_merge_rows": 16}


def _with_tunables(call, values):
    """``call`` run with the tunables ``values`` in force."""
    def run():
        with tunables.override(**values):
            return call()
    return run


@contextlib.contextmanager
def jit_compilations():
    """Collect the gpusvd Numba functions compiled inside the block, as a list of
    ``"module.function(signature)"`` strings."""
    from numba.core import event

    compiled = []

    class Listener(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            function = ev.data["dispatcher"].py_func
            if function.__module__.startswith("gpusvd"):
                compiled.append(f"{function.__module__}.{function.__qualname__}"
                                f"{ev.data['args']}")

    with event.install_listener("numba:compile", Listener()):
        yield compiled


def _symmetric(rng, n, dtype):
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return (a + a.T).astype(np.result_type(dtype, np.complex64))


def calls(dtype, device="cpu"):
    """(name, thunk) of the public calls that reach every Numba kernel for ``dtype``: a
    tall matrix past one Jacobi block (blocked path) and a stack of small ones (batched
    path), for each method. ``device="gpu"``: the same calls with CuPy input, which also
    compile CuPy's own elementwise and reduction kernels into CuPy's disk cache."""
    import gpusvd

    rng = np.random.default_rng(0)
    dtype = np.dtype(dtype)
    put = np.asarray
    if device == "gpu":
        import cupy
        put = cupy.asarray
    # Past two Jacobi blocks on either device (b = 16 on the CPU, 32 on the GPU), so the
    # blocked path runs, not only the pointwise kernel: the H100's first svd(method=
    # "jacobi") of a 1500×1000 matrix still took 7.1 s after a step that used 40×36.
    tuned = tunables.get()
    cols = 2 * max(tuned.jacobi_block_width, tuned.jacobi_block_width_gpu) + 4
    tall = put(rng.standard_normal((cols + 10, cols)).astype(dtype))
    stack = put(rng.standard_normal((3, 6, 4)).astype(dtype))
    # Past the small-matrix kernel (2b columns on the GPU): "auto" takes the polar
    # method's stack engine, whose CuPy kernels (float64 iteration, the input's dtype for
    # H and U) compile on its first call.
    wide_stack = put(rng.standard_normal((2, cols + 2, cols)).astype(dtype))
    signs = put(np.where(np.arange(cols) % 3, 1.0, -1.0).astype(np.finfo(dtype).dtype))
    # QUIC-SVD's growth, merge and extraction steps need a rank above its first sample.
    low = put((rng.standard_normal((300, 25)) @ rng.standard_normal((25, 200))).astype(dtype))
    cpu = {"device": device}
    out = [(f"svd gr {dtype}", lambda: gpusvd.svd(tall, method="gr", **cpu)),
           (f"svd gr stack {dtype}", lambda: gpusvd.svd(stack, method="gr", **cpu)),
           (f"svd jacobi {dtype}", lambda: gpusvd.svd(tall, method="jacobi", **cpu)),
           (f"svd jacobi stack {dtype}", lambda: gpusvd.svd(stack, method="jacobi", **cpu)),
           (f"svd polar {dtype}", lambda: gpusvd.svd(tall, method="polar", **cpu)),
           (f"svd polar stack {dtype}",
            lambda: gpusvd.svd(wide_stack, method="polar", **cpu)),
           (f"svdvals {dtype}", lambda: gpusvd.svdvals(tall, **cpu)),
           (f"svdvals gr {dtype}", lambda: gpusvd.svdvals(tall, method="gr", **cpu)),
           (f"jacobi_svd {dtype}", lambda: gpusvd.jacobi_svd(tall, **cpu)),
           (f"hsvd {dtype}", lambda: gpusvd.hsvd(tall, signs, **cpu)),
           (f"eigh_factored {dtype}", lambda: gpusvd.eigh_factored(tall, signs, **cpu))]
    if device == "cpu":  # C wider than one slab of stage 2's back-transformation: its
        # threads (condensed/chase_back.py), from n = 16 in the two-stage range of gr
        wide = rng.standard_normal((tuned.chase_back_panel_columns_cpu + 1,) * 2)
        out.append((f"svd gr slabs {dtype}",
                    lambda: gpusvd.svd(wide.astype(dtype), method="gr", **cpu)))
    if device == "gpu":  # auto takes it from n = 4096 there: the bidiagonal divide and
        # conquer's host loops (deflation, the supports of a merge's columns) are reached
        # only through it, each form of merge only past a size (DIVIDE_AND_CONQUER_MERGES)
        out.append((f"svd gr two-stage {dtype}", _with_tunables(
            lambda: gpusvd.svd(tall, method="gr", reduction="two-stage", **cpu),
            DIVIDE_AND_CONQUER_MERGES)))
    if device == "gpu":
        # A 3:2 matrix between the polar method's bounds and a tall one past the QR-first
        # ratio, a user's typical first calls: their branches (the Jacobi method's QR
        # preconditioning and column padding, the polar method's QR first, CholeskyQR
        # in float64) have CuPy kernels of their own, which a first call would compile
        # otherwise (bench/first_call.py, 0.1-0.3 s each).
        rect = put(rng.standard_normal((900, 600)).astype(dtype))
        thin = put(rng.standard_normal((4000, 100)).astype(dtype))
        for method in ("gr", "jacobi", "polar"):
            out.append((f"svd {method} 900x600 {dtype}",
                        lambda method=method: gpusvd.svd(rect, method=method, **cpu)))
        out.append((f"svd tall {dtype}",
                    lambda: gpusvd.svd(thin, full_matrices=False, **cpu)))
    if device == "gpu" and dtype.kind == "f":
        # One real matrix's polar paths past the fixed sequence's graph of the
        # eigendecomposition, and past the fixed sequence (the eager one-matrix QDWH):
        # each has CuPy kernels of its own.
        for n in (tuned.fixed_schedule_graph_eigh_max_n + 1, tuned.fixed_schedule_max_n + 1):
            one = put(rng.standard_normal((n, n)).astype(dtype))
            out.append((f"svd polar {n}² {dtype}",
                        lambda one=one: gpusvd.svd(one, method="polar", **cpu)))
    if dtype.kind == "f":  # QUIC-SVD is real; Takagi's input is complex symmetric
        out.append((f"svd_lowrank {dtype}", lambda: gpusvd.svd_lowrank(low, **cpu)))
    else:
        # The Jacobi sweeps: "auto" takes the eigensolver on the CPU, which has no loops
        # to compile, and the sweeps only where asked for (or given tol, max_sweeps). On
        # the GPU each of its three forms has CuPy kernels of its own: one launch (n ≤
        # 2b), the pointwise sweeps (up to takagi_blocked_min_n) and the blocked ones.
        sizes = [40]
        if device == "gpu":
            sizes += [2 * tuned.takagi_block_size + 6, tuned.takagi_blocked_min_n + 2]
        for n in sizes:
            sym = put(_symmetric(rng, n, dtype))
            out.append((f"takagi {n} {dtype}",
                        lambda sym=sym: gpusvd.takagi(sym, method="jacobi", **cpu)))
    return out


def _devices():
    """The CPU, and the GPU where CuPy finds one."""
    from .backend import cupy_or_none

    return ("cpu", "gpu") if cupy_or_none() is not None else ("cpu",)


def precompile(dtypes=DTYPES, log=None, devices=None):
    """Run :func:`calls` for ``dtypes`` on ``devices`` (default: the CPU, and the GPU where
    there is one), filling Numba's and CuPy's caches; returns the Numba functions
    compiled (empty when the cache was already complete)."""
    compiled_all = []
    for device, dtype in ((d, t) for d in (devices or _devices()) for t in dtypes):
        for name, call in calls(dtype, device):
            name = f"{name} ({device})"
            start = time.perf_counter()
            with jit_compilations() as compiled:
                call()
            compiled_all += compiled
            if log is not None:
                print(f"{name:32s} {time.perf_counter() - start:6.2f} s  "
                      f"{len(compiled)} compiled", file=log)
    return compiled_all

