"""The gather-free update of a blocked Takagi step: batched GEMMs on block offsets.

The blocked sweeps of :mod:`.driver` keep A in slot order s (A_s = P_s A P_sᵀ, pair p of
step s in slots 2b·p … 2b·p + 2b − 1) and must, per step, apply the congruence
A ← Gᴴ A Ḡ and U ← U G, G = diag(G_p), then move to the slot order of step s + 1 by a
block permutation: block slot m goes to slot ``dest_s[m]``. Gathers would do the
permutation in extra passes over A, one of them transposed; this update folds
it into the *output offsets* of batched GEMMs, so that each of the three updates is one
read and one write of its matrix (six passes per step instead of about twelve):

- rows, Y ← P Gᴴ A_s: for each block slot m = 2p + h (h = 0, 1), the b rows
  Y[dest_s[m]] = (G_pᴴ)[h] · A_s[pair p rows] (b × size, K = 2b);
- columns, A_{s+1} ← Y Ḡ Pᵀ: Y's columns are still in slot order s, so
  A_{s+1}[:, dest_s[m]] = Y[:, pair p columns] · Ḡ_p[:, h] (size × b, K = 2b);
- vectors (U kept as Uᵀ, rows in slot order): Uᵀ_{s+1}[dest_s[m]] = (G_pᵀ)[h] · Uᵀ_s[pair p].

Every operand is a sub-matrix of a row-major buffer at an element offset with leading
dimension n (A, Y, Uᵀ) or 2b (G, Ḡ), so each update is one cuBLAS ``gemmBatched`` over
2N = size/b batch entries whose pointer arrays are fixed for the run (:mod:`.block_update_cuda`).
cuBLAS is column-major: a row-major X with leading dimension L is the column-major Xᵀ,
so the calls below are the transposes of the products above, e.g. rows:
Y[dest]ᵀ = A_s[pair]ᵀ · conj(G_p[:, h]) = (op N of A's view) · (op C of G_p[:, h]'s view).

:class:`Plan` computes the offsets (host integers); :func:`gemm_batched` is a NumPy
emulation of ``cublas<t>gemmBatched`` on those offsets, used as the CPU path of the same
update and to test the indexing without a GPU.
"""

from typing import NamedTuple

import numpy as np

from .._core import profile
from .._core.threads import single_threaded_blas

# The three GEMM families of a block step and their operands, in the driver's order.
ROWS, COLUMNS, VECTORS = 0, 1, 2
# cuBLAS operation codes (cublasOperation_t).
OP_N, OP_T, OP_C = 0, 1, 2


class Gemm(NamedTuple):
    """One ``gemmBatched`` call: C_i = op_a(A_i) · op_b(B_i), column-major, α = 1, β = 0.

    ``a``, ``b``, ``c`` name buffers (see :class:`Plan`); ``a_off`` … ``c_off`` are
    int64 element offsets (one per batch entry) into them.
    """
    transa: int
    transb: int
    m: int
    n: int
    k: int
    a: str
    a_off: np.ndarray
    lda: int
    b: str
    b_off: np.ndarray
    ldb: int
    c: str
    c_off: np.ndarray
    ldc: int


def block_destinations(block_pairs):
    """dest[s, m]: the block slot at step s + 1 (cyclically) of the block in slot m at step s.

    ``block_pairs`` is ``chess_tournament(blocks)`` (steps, N, 2): at step s, block slot
    m = 2p + h holds block ``block_pairs[s, p, h]``.
    """
    held = block_pairs.reshape(len(block_pairs), -1)         # held[s, m]: block in slot m
    slot = np.argsort(held, axis=1)                          # slot[s, block]
    return np.stack([slot[(s + 1) % len(held)][held[s]] for s in range(len(held))])


class Plan:
    """Offsets of the three GEMMs of every step of a blocked sweep.

    Buffers, all row-major: ``a`` (size × size, A_s), ``y`` (size × size, scratch), ``g``
    (N × 2b × 2b, the step's G_p), ``gbar`` (conj(g)), ``u_in`` / ``u_out`` (size × size,
    Uᵀ before and after the step: callers alternate two buffers).

    Parameters
    ----------
    size : int
        Order of the padded matrix, a multiple of 2b.
    block : int
        b.
    block_pairs : (steps, N, 2) int ndarray
        ``chess_tournament(size // block)``.
    """

    def __init__(self, size, block, block_pairs):
        self.size, self.block = size, block
        width = 2 * block
        count = size // block                                   # 2N block slots
        q = np.arange(count, dtype=np.int64)
        p, h = q // 2, q % 2
        g_half = p * width * width + h * block                  # G_p[:, h] (row-major view)
        pair_rows = p * width * size                            # A[pair p rows]
        pair_cols = p * width                                   # Y[:, pair p columns]
        self.dest = block_destinations(block_pairs).astype(np.int64)
        self.steps = []
        for dest in self.dest:
            self.steps.append((
                Gemm(OP_N, OP_C, size, block, width, "a", pair_rows, size,
                     "g", g_half, width, "y", dest * block * size, size),
                Gemm(OP_N, OP_N, block, size, width, "gbar", g_half, width,
                     "y", pair_cols, size, "a", dest * block, size),
                Gemm(OP_N, OP_T, size, block, width, "u_in", pair_rows, size,
                     "g", g_half, width, "u_out", dest * block * size, size)))


def _view(buffer, offset, rows, cols, ld):
    """The column-major rows × cols matrix at ``offset`` of the flat ``buffer``, leading
    dimension ``ld`` (element (i, j) at offset + i + j·ld), as a NumPy view."""
    item = buffer.itemsize
    if offset + (rows - 1) + (cols - 1) * ld >= buffer.size:
        raise IndexError("gemm operand outside its buffer")
    return np.lib.stride_tricks.as_strided(buffer[offset:], (rows, cols), (item, ld * item))


def _op(x, trans):
    return x if trans == OP_N else (x.T if trans == OP_T else x.conj().T)


def _operand(buffers, conjugates, name, offset, rows, cols, ld, trans):
    """op(X) of one batch entry; op C of a buffer that ``conjugates`` holds the conjugate of
    is op T of that conjugate, a view (``x.conj()`` is a copy of the moment)."""
    if trans == OP_C and name in conjugates:
        return _view(conjugates[name], offset, rows, cols, ld).T
    return _op(_view(buffers[name], offset, rows, cols, ld), trans)


def _products(gemm, buffers, conjugates=None):
    """The batch entries of one :class:`Gemm` as NumPy operands: (first, second, out) with
    out = first · second the entry's C. Views of ``buffers`` (and of ``conjugates``, flat
    arrays holding the conjugates of some buffers), except op C of a buffer not in
    ``conjugates``, a copy."""
    conjugates = conjugates or {}
    a_rows, a_cols = (gemm.m, gemm.k) if gemm.transa == OP_N else (gemm.k, gemm.m)
    b_rows, b_cols = (gemm.k, gemm.n) if gemm.transb == OP_N else (gemm.n, gemm.k)
    c = buffers[gemm.c]
    products = []
    for a_off, b_off, c_off in zip(gemm.a_off, gemm.b_off, gemm.c_off):
        x = _operand(buffers, conjugates, gemm.a, a_off, a_rows, a_cols, gemm.lda, gemm.transa)
        y = _operand(buffers, conjugates, gemm.b, b_off, b_rows, b_cols, gemm.ldb, gemm.transb)
        # Cᵀ = yᵀ xᵀ into the transposed (row-major) view: a layout NumPy hands to BLAS.
        products.append((y.T, x.T, _view(c, c_off, gemm.m, gemm.n, gemm.ldc).T))
    return products


def gemm_batched(gemm, buffers):
    """NumPy emulation of ``cublas<t>gemmBatched`` for one :class:`Gemm`, α = 1, β = 0.

    ``buffers`` maps the names of ``gemm`` to flat (1-D, contiguous) NumPy arrays; the
    outputs are written into ``buffers[gemm.c]``, which must not overlap the inputs.
    """
    for first, second, out in _products(gemm, buffers):
        np.matmul(first, second, out=out)


class HostUpdate:
    """Runs the steps of a :class:`Plan` on NumPy arrays, the products of each step's
    :class:`Gemm` as :func:`gemm_batched` forms them (the CPU twin of
    :class:`gpusvd.takagi.block_update_cuda.DeviceUpdate`, same buffers and order).

    Parameters
    ----------
    plan : Plan
    a, ut : (size, size) C-contiguous ndarrays
        A and Uᵀ in step 0's slot order. ``a`` is updated in place; ``ut`` is copied.
    """

    def __init__(self, plan, a, ut):
        self._plan, self.a = plan, a
        width = 2 * plan.block
        self._y = np.empty_like(a)
        self._ut = [ut.copy(), np.empty_like(ut)]
        self._g = np.empty((plan.size // width, width, width), a.dtype)
        self._gbar = np.empty_like(self._g)
        self._parity = 0
        self._products = {}

    def _step_products(self, s):
        """The matmul operands of step s at the current parity, made once: building the
        strided views cost 0.2 s of a 5.7 s factorization at n = 500 (cProfile, 1 thread),
        their 24,000 ``as_strided`` calls a quarter of the update's Python time."""
        key = (s, self._parity)
        if key not in self._products:
            buffers = {"a": self.a.reshape(-1), "y": self._y.reshape(-1),
                       "g": self._g.reshape(-1), "gbar": self._gbar.reshape(-1),
                       "u_in": self._ut[self._parity].reshape(-1),
                       "u_out": self._ut[1 - self._parity].reshape(-1)}
            conjugates = {"g": buffers["gbar"]}
            self._products[key] = [product for gemm in self._plan.steps[s]  # rows, columns,
                                   for product in _products(gemm, buffers, conjugates)]
        return self._products[key]

    def step(self, s, solve):
        """Step s of the sweep: ``solve(a, out)`` writes the G_p into ``out``, then the
        three updates; A is left in step s + 1's order."""
        with profile.phase("takagi_solve", np):
            solve(self.a, self._g)
        np.conjugate(self._g, out=self._gbar)
        with profile.phase("takagi_update", np), single_threaded_blas():  # tiny GEMMs
            for first, second, out in self._step_products(s):
                np.matmul(first, second, out=out)
        self._parity ^= 1

    def vectors(self):
        """Uᵀ after the steps done, its rows in the slot order of the next step."""
        return self._ut[self._parity]
