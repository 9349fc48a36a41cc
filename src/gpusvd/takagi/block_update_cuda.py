"""The gather-free block-step update on the GPU: cuBLAS ``gemmBatched`` on fixed pointers.

The device twin of :class:`gpusvd.takagi.block_update.HostUpdate`: the same
:class:`~gpusvd.takagi.block_update.Plan`, its element offsets turned once into device
pointer arrays over fixed buffers (A, Y, two G, Ḡ, two Uᵀ), so a step is the inner solve,
one conjugation of G and three ``cublas{C,Z}gemmBatched`` calls: six passes over the
n × n matrices, no gathers.

The U update needs only the step's G, nothing of A, so with ``overlap`` it runs on a
second stream, next to the row and column updates and the next step's inner solve (which
fills only N of the SMs): event ``ready`` (G written) orders it after the solve; the
solve two steps later, which overwrites the same G buffer, waits for its event ``done``,
and the current stream waits for the last one at the end of each sweep (so buffers freed
later to the current stream's memory pool are free on the device). The side stream has
its own cuBLAS handle, so that the two streams share no cuBLAS workspace.
"""

import numpy as np

from .._core import profile
from .block_update import ROWS, COLUMNS, VECTORS

_GEMM = {np.dtype(np.complex64): "cgemmBatched", np.dtype(np.complex128): "zgemmBatched"}
_SIDE_HANDLES = {}  # device id -> the cuBLAS handle of the side stream (kept for the process)


def _side_handle():
    import cupy
    from cupy.cuda import cublas

    device = cupy.cuda.Device().id
    if device not in _SIDE_HANDLES:
        _SIDE_HANDLES[device] = cublas.create()
    return _SIDE_HANDLES[device]


class DeviceUpdate:
    """Runs the steps of a :class:`~gpusvd.takagi.block_update.Plan` on CuPy arrays.

    Parameters
    ----------
    plan : Plan
    a, ut : (size, size) C-contiguous CuPy arrays
        A and Uᵀ in step 0's slot order. ``a`` is updated in place; ``ut`` is copied.
    overlap : bool
        Run the U update on a second stream.
    """

    def __init__(self, plan, a, ut, overlap):
        import cupy
        from cupy.cuda import cublas

        self._cublas, self._plan, self.a = cublas, plan, a
        size, width = plan.size, 2 * plan.block
        count = size // plan.block
        self._y = cupy.empty_like(a)
        self._ut = [ut.copy(), cupy.empty_like(ut)]
        self._g = [cupy.empty((count // 2, width, width), a.dtype) for _ in range(2)]
        self._gbar = cupy.empty_like(self._g[0])
        self._gemm = getattr(cublas, _GEMM[np.dtype(a.dtype)])
        self._scalars = np.array([1, 0], a.dtype)  # α, β on the host (pointer mode host)
        item = a.dtype.itemsize
        table = np.empty((2, len(plan.steps), 3, 3, count), np.int64)
        for parity in range(2):
            base = {"a": a, "y": self._y, "g": self._g[parity], "gbar": self._gbar,
                    "u_in": self._ut[parity], "u_out": self._ut[1 - parity]}
            for s, gemms in enumerate(plan.steps):
                for f, gemm in enumerate(gemms):
                    for o, (name, off) in enumerate(((gemm.a, gemm.a_off), (gemm.b, gemm.b_off),
                                                     (gemm.c, gemm.c_off))):
                        table[parity, s, f, o] = base[name].data.ptr + off * item
        self._table = cupy.asarray(table)
        row = count * 8                                     # bytes per pointer array
        self._pointers = self._table.data.ptr + row * np.arange(table.size // count).reshape(
            table.shape[:-1])
        self._main_handle = cupy.cuda.device.get_cublas_handle()
        self._side = cupy.cuda.Stream(non_blocking=True) if overlap else None
        self._ready = [cupy.cuda.Event(disable_timing=True) for _ in range(2)]
        self._done = [cupy.cuda.Event(disable_timing=True) for _ in range(2)]
        self._pending = [False, False]  # a U update reading G[parity] may still run
        self._parity = 0

    def _launch(self, s, family, stream, handle):
        gemm = self._plan.steps[s][family]
        a_ptr, b_ptr, c_ptr = (int(x) for x in self._pointers[self._parity, s, family])
        one, zero = self._scalars.ctypes.data, self._scalars.ctypes.data + self._scalars.itemsize
        with stream:  # CuPy's wrapper binds the handle to the current stream
            self._cublas.setStream(handle, stream.ptr)
            self._cublas.setPointerMode(handle, self._cublas.CUBLAS_POINTER_MODE_HOST)
            self._gemm(handle, gemm.transa, gemm.transb, gemm.m, gemm.n, gemm.k, one,
                       a_ptr, gemm.lda, b_ptr, gemm.ldb, zero, c_ptr, gemm.ldc, len(gemm.c_off))

    def step(self, s, solve):
        """Step s of the sweep: ``solve(a, out)`` writes the G_p into ``out``, then the
        three updates; A is left in step s + 1's order."""
        import cupy

        parity, main = self._parity, cupy.cuda.get_current_stream()
        if self._pending[parity]:
            main.wait_event(self._done[parity])       # G[parity] free again
        g = self._g[parity]
        with profile.phase("takagi_solve", cupy):
            solve(self.a, g)
        with profile.phase("takagi_update", cupy):
            cupy.conjugate(g, out=self._gbar)
            if self._side is None:
                self._launch(s, VECTORS, main, self._main_handle)
            else:
                main.record(self._ready[parity])
                self._side.wait_event(self._ready[parity])
                self._launch(s, VECTORS, self._side, _side_handle())
                self._side.record(self._done[parity])
                self._pending[parity] = True
            self._launch(s, ROWS, main, self._main_handle)
            self._launch(s, COLUMNS, main, self._main_handle)
        self._parity ^= 1
        if s == len(self._plan.steps) - 1:
            self._join(main)  # a sweep leaves no work behind on the side stream

    def _join(self, main):
        """Order ``main`` after every U update (a device-side wait: the host goes on)."""
        for parity in range(2):
            if self._pending[parity]:
                main.wait_event(self._done[parity])
                self._pending[parity] = False

    def vectors(self):
        """Uᵀ after the steps done, its rows in the slot order of the next step; the
        current stream is ordered after every U update."""
        import cupy

        self._join(cupy.cuda.get_current_stream())
        return self._ut[self._parity]
