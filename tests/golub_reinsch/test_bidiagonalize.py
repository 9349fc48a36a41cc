"""Blocked Householder bidiagonalization (paper 000, Algorithm 2) on the NumPy backend.

Invariants in units of n·ε: A = Q·B·Pᴴ, Q and P orthogonal (unitary), B real, the
singular values of B are A's; plus an obviously-correct unblocked reference (explicit
reflectors, the paper's eqs. (6)–(8), for complex data LAPACK zlarfg's real β) that
fixes signs and τ's, and the input contract.
"""

import doctest
import importlib

import numpy as np
import pytest
import scipy.linalg

from gpusvd.golub_reinsch.bidiagonalize import apply_p, apply_q, bidiagonalize

bidiagonalize_module = importlib.import_module("gpusvd.golub_reinsch.bidiagonalize")

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SHAPES = [(1, 1), (5, 5), (7, 3), (50, 50), (64, 17), (100, 37), (33, 32)]
BLOCK_SIZES = [1, 3, 8, 32]
# Slack on the n·ε bounds: Householder reductions are backward stable with a
# constant of order one per column; 30 leaves room without hiding an O(n) bug.
SLACK = 30


def _random(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _double(a):
    """``a`` in float64 or complex128, for the references."""
    return a.astype(np.result_type(a.dtype, np.float64))


def _b_matrix(bd):
    return np.diag(bd.d) + np.diag(bd.e, 1)


def _reconstruct(bd, m, n, block_size):
    """Q·[B; 0]·Pᴴ through apply_q and apply_p."""
    dtype = bd.factors.dtype
    b = np.zeros((m, n), dtype=dtype)
    b[:n] = _b_matrix(bd)
    qb = apply_q(bd, b, block_size=block_size)
    p = apply_p(bd, np.eye(n, dtype=dtype), block_size=block_size)
    return qb @ p.conj().T


def _naive_house(x):
    """(beta, tau, H): H = I − tau·v·vᴴ, Hᴴ·x = beta·e_1, beta real (dlarfg, zlarfg)."""
    alpha, xnorm = x[0], np.linalg.norm(x[1:])
    if xnorm == 0 and alpha.imag == 0:
        return alpha.real, 0.0, np.eye(len(x))
    beta = -np.copysign(np.hypot(abs(alpha), xnorm), alpha.real)
    v = np.concatenate([[1.0], x[1:] / (alpha - beta)])
    tau = (beta - alpha) / beta
    return beta, tau, np.eye(len(x)) - tau * np.outer(v, v.conj())


def _naive_bidiagonalize(a):
    """Unblocked reduction with explicit m×m and n×n reflectors, in float64 (complex128):
    A ← H_iᴴ·A, then A ← A·G_i with G_i made from the conjugated row."""
    a = _double(a)
    m, n = a.shape
    d, e = np.zeros(n), np.zeros(max(n - 1, 0))
    tauq, taup = np.zeros(n, a.dtype), np.zeros(n, a.dtype)
    for i in range(n):
        d[i], tauq[i], h = _naive_house(a[i:, i])
        a[i:, i:] = h.conj().T @ a[i:, i:]
        if i < n - 1:
            e[i], taup[i], g = _naive_house(a[i, i + 1:].conj())
            a[i:, i + 1:] = a[i:, i + 1:] @ g
    return d, e, tauq, taup


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("block_size", BLOCK_SIZES)
class TestBidiagonalize:
    def test_reconstructs_a(self, dtype, shape, block_size):
        m, n = shape
        a = _random(shape, dtype)
        bd = bidiagonalize(a.copy(), block_size=block_size)
        assert bd.factors.shape == (m, n) and bd.d.shape == (n,) and bd.e.shape == (n - 1,)
        assert bd.tauq.shape == (n,) and bd.taup.shape == (n,) and bd.taup[-1] == 0
        assert bd.factors.dtype == bd.tauq.dtype == bd.taup.dtype == dtype
        assert bd.d.dtype == bd.e.dtype == np.finfo(dtype).dtype
        eps = np.finfo(dtype).eps
        err = np.linalg.norm(_reconstruct(bd, m, n, block_size) - a)
        assert err <= SLACK * max(m, n) * eps * np.linalg.norm(a)

    def test_q_and_p_orthogonal(self, dtype, shape, block_size):
        m, n = shape
        bd = bidiagonalize(_random(shape, dtype), block_size=block_size)
        eps = np.finfo(dtype).eps
        q = apply_q(bd, np.eye(m, dtype=dtype), block_size=block_size)
        p = apply_p(bd, np.eye(n, dtype=dtype), block_size=block_size)
        assert q.dtype == dtype and p.dtype == dtype
        assert np.linalg.norm(q.conj().T @ q - np.eye(m)) <= SLACK * n * eps
        assert np.linalg.norm(p.conj().T @ p - np.eye(n)) <= SLACK * n * eps
        # P = G_0 … G_{n−2} leaves the first coordinate alone (Golub–Kahan).
        np.testing.assert_array_equal(p[:, 0], np.eye(n)[:, 0])

    def test_singular_values(self, dtype, shape, block_size):
        n = shape[1]
        a = _random(shape, dtype)
        bd = bidiagonalize(a.copy(), block_size=block_size)
        eps = np.finfo(dtype).eps
        expected = scipy.linalg.svdvals(_double(a))
        got = scipy.linalg.svdvals(_b_matrix(bd).astype(np.float64))
        assert np.max(np.abs(got - expected)) <= SLACK * n * eps * expected[0]

    def test_matches_naive_reference(self, dtype, shape, block_size):
        a = _random(shape, dtype)
        bd = bidiagonalize(a.copy(), block_size=block_size)
        d, e, tauq, taup = _naive_bidiagonalize(a)
        tol = 100 * shape[1] * np.finfo(dtype).eps
        scale = np.linalg.norm(a, 2)
        np.testing.assert_allclose(bd.d, d, rtol=0, atol=tol * scale)
        np.testing.assert_allclose(bd.e, e, rtol=0, atol=tol * scale)
        np.testing.assert_allclose(bd.tauq, tauq, rtol=0, atol=tol)
        np.testing.assert_allclose(bd.taup, taup, rtol=0, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_block_sizes_agree(dtype, shape):
    a = _random(shape, dtype, seed=1)
    runs = [bidiagonalize(a.copy(), block_size=nb) for nb in BLOCK_SIZES]
    tol = 100 * shape[1] * np.finfo(dtype).eps * np.linalg.norm(a, 2)
    for bd in runs[1:]:
        np.testing.assert_allclose(np.abs(bd.d), np.abs(runs[0].d), rtol=0, atol=tol)
        np.testing.assert_allclose(np.abs(bd.e), np.abs(runs[0].e), rtol=0, atol=tol)


def _special_matrices(dtype):
    rng = np.random.default_rng(2)
    zero_column = rng.standard_normal((40, 20))
    zero_column[:, 7] = 0
    rank_one = np.outer(rng.standard_normal(40), rng.standard_normal(20))
    return {
        "zero": np.zeros((40, 20)),
        "zero-column": zero_column,
        "rank-one": rank_one,
        "zero-first-column": np.hstack([np.zeros((40, 1)), rng.standard_normal((40, 19))]),
        # Near the top of the safe range the driver scales into: no norm overflows.
        "huge-entries": ((1e150 if np.finfo(dtype).dtype == np.float64 else 1e17)
                         * rng.standard_normal((40, 20))),
    }


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(_special_matrices(np.float64)))
@pytest.mark.parametrize("block_size", [1, 8])
def test_special_matrices(name, dtype, block_size):
    a = _special_matrices(dtype)[name].astype(dtype)
    m, n = a.shape
    bd = bidiagonalize(a.copy(), block_size=block_size)
    for x in bd:
        assert np.all(np.isfinite(x)), name
    eps = np.finfo(dtype).eps
    norm_a = np.linalg.norm(a)
    expected = scipy.linalg.svdvals(_double(a))
    got = scipy.linalg.svdvals(_b_matrix(bd).astype(np.float64))
    assert np.max(np.abs(got - expected)) <= SLACK * n * eps * norm_a
    err = np.linalg.norm(_reconstruct(bd, m, n, block_size) - a)
    assert err <= SLACK * max(m, n) * eps * norm_a
    if name == "zero":
        assert not np.any(bd.d) and not np.any(bd.e)
        assert not np.any(bd.tauq) and not np.any(bd.taup)


@pytest.mark.parametrize("order", ["C", "F"])
def test_overwrites_input_and_copy_is_safe(order):
    original = np.asarray(_random((30, 20), np.float64), order=order)
    keep = original.copy()
    work = original.copy(order=order)
    bd = bidiagonalize(work, block_size=8)
    assert bd.factors is work  # the contract: the argument is the output
    assert not np.array_equal(work, keep)
    np.testing.assert_array_equal(original, keep)
    np.testing.assert_array_equal(np.diag(work), bd.d)
    np.testing.assert_array_equal(np.diag(work, 1), bd.e)


def test_memory_orders_agree():
    a = _random((70, 45), np.float64)
    c = bidiagonalize(np.array(a, order="C"), block_size=8)
    f = bidiagonalize(np.array(a, order="F"), block_size=8)
    tol = SLACK * 45 * np.finfo(np.float64).eps * np.linalg.norm(a, 2)
    np.testing.assert_allclose(c.d, f.d, rtol=0, atol=tol)
    np.testing.assert_allclose(c.e, f.e, rtol=0, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bitwise_deterministic(dtype):
    a = _random((90, 60), dtype)
    first = bidiagonalize(a.copy(), block_size=8)
    second = bidiagonalize(a.copy(), block_size=8)
    for x, y in zip(first, second):
        assert x.tobytes() == y.tobytes()
    q1 = apply_q(first, np.eye(90, dtype=dtype), block_size=8)
    q2 = apply_q(second, np.eye(90, dtype=dtype), block_size=8)
    assert q1.tobytes() == q2.tobytes()


def test_apply_returns_its_argument_and_default_block_size():
    a = _random((12, 9), np.float64)
    bd = bidiagonalize(a.copy(), block_size=4)
    c = np.eye(12)
    assert apply_q(bd, c) is c
    c = np.eye(9)
    assert apply_p(bd, c) is c
    np.testing.assert_allclose(c, apply_p(bd, np.eye(9), block_size=2), atol=1e-14)


@pytest.mark.parametrize("dtype", DTYPES)
def test_back_transformation_block_sizes_agree(dtype):
    """Any grouping of the reflectors into WY blocks gives Q·c and P·c to rounding,
    whatever panel width the factorization used (here 8), including blocks wider
    than the factorization and than n, and widths that do not divide n."""
    m, n = 230, 210
    bd = bidiagonalize(_random((m, n), dtype), block_size=8)
    cq, cp = _random((m, 40), dtype, seed=3), _random((n, 40), dtype, seed=4)
    eps = np.finfo(dtype).eps
    q_ref = apply_q(bd, cq.copy(), block_size=1)
    p_ref = apply_p(bd, cp.copy(), block_size=1)
    for nb in [7, 64, 200, 512, None]:
        q = apply_q(bd, cq.copy(), block_size=nb)
        p = apply_p(bd, cp.copy(), block_size=nb)
        assert np.linalg.norm(q - q_ref) <= SLACK * m * eps * np.linalg.norm(cq), nb
        assert np.linalg.norm(p - p_ref) <= SLACK * n * eps * np.linalg.norm(cp), nb


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("k", [1, 5, 16, 17, 40, 101])
def test_wy_factor_matches_explicit_product(k, dtype):
    """I − V·T·Vᴴ = H_0 … H_{k−1} with explicit reflectors, some of them τ = 0."""
    rng = np.random.default_rng(k)
    rows = k + 9
    v = np.tril(_random((rows, k), dtype, seed=k), -1) + np.eye(rows, k)
    # Orthogonal (unitary) reflectors: 2·Re τ = |τ|²·‖v‖², as τ = (1 − e^{iθ})/‖v‖²,
    # e^{iθ} = −1 for real data.
    phase = np.exp(2j * np.pi * rng.random(k)) if v.dtype.kind == "c" else -1.0
    tau = ((1 - phase) / np.sum(abs(v) ** 2, axis=0)).astype(dtype)
    tau[::4] = 0
    product = np.eye(rows)
    for i in range(k):
        product = product @ (np.eye(rows) - tau[i] * np.outer(v[:, i], v[:, i].conj()))
    t = bidiagonalize_module._wy_factors((v.conj().T @ v)[None], tau[None])[0]
    np.testing.assert_allclose(np.eye(rows) - v @ t @ v.conj().T, product, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(t, np.triu(t))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("count", [1, 2, 7, 16, 17, 40, 64, 65, 100])
def test_narrowed_block_keeps_the_bits(count, dtype):
    """The T of ``count`` reflectors built at the narrowed width equals, bit for bit, the
    leading count×count block of the T built at the full padded width (128): apply_q and
    apply_p of small matrices give the same bits as with the padded block."""
    rng = np.random.default_rng(count)
    rows = count + 5
    v = np.tril(_random((rows, count), dtype, seed=count), -1) + np.eye(rows, count)
    tau = (2 / np.sum(abs(v) ** 2, axis=0)).astype(dtype)
    tau[rng.random(count) < 0.2] = 0
    nb = bidiagonalize_module._narrowed(128, count)
    assert count <= nb <= 128 and (nb == 128 or nb < 2 * max(count, 16))

    def t_at(width):
        s = np.zeros((1, width, width), dtype)
        s[0, :count, :count] = v.conj().T @ v
        taus = np.zeros((1, width), dtype)
        taus[0, :count] = tau
        return bidiagonalize_module._wy_factors(s, taus)[0, :count, :count]

    np.testing.assert_array_equal(t_at(nb), t_at(128))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("x", [[1 + 2j, 3 - 1j, 0.5j], [2 - 3j], [-1j, 0, 0], [-4.0, 0],
                               [0j, 0, 0], [1e-3j, 1e-3]])
def test_complex_householder(x, dtype):
    """Hᴴ·x = β·e_1 with β real and H unitary; a complex x_0 alone still takes one."""
    x = np.array(x, dtype)
    work = x.copy()
    beta, tau = bidiagonalize_module._householder(work)
    assert beta.dtype == np.finfo(dtype).dtype and tau.dtype == dtype
    v = np.concatenate([[1], work[1:]])
    h = np.eye(len(x)) - tau * np.outer(v, v.conj())
    eps = np.finfo(dtype).eps
    norm_x = np.linalg.norm(x)
    assert np.linalg.norm(h.conj().T @ x - beta * np.eye(len(x))[0]) <= SLACK * eps * norm_x
    assert np.linalg.norm(h.conj().T @ h - np.eye(len(x))) <= SLACK * eps
    assert abs(abs(beta) - norm_x) <= SLACK * eps * norm_x


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("block_size", [1, 8])
def test_real_valued_complex_input_matches_real(dtype, block_size):
    """zlarfg on real data is dlarfg: the same B as the real reduction."""
    a = _random((40, 30), np.finfo(dtype).dtype, seed=1)
    z = bidiagonalize(a.astype(dtype), block_size=block_size)
    r = bidiagonalize(a.copy(), block_size=block_size)
    tol = SLACK * 30 * np.finfo(dtype).eps * np.linalg.norm(a, 2)
    np.testing.assert_allclose(z.d, r.d, rtol=0, atol=tol)
    np.testing.assert_allclose(z.e, r.e, rtol=0, atol=tol)


@pytest.mark.parametrize("shape, block_size", [((3, 4), 2), ((4, 3), 0)])
def test_bad_arguments(shape, block_size):
    with pytest.raises(ValueError):
        bidiagonalize(np.ones(shape), block_size=block_size)


def test_docstring_examples():
    failures, tried = doctest.testmod(bidiagonalize_module)
    assert tried > 0 and failures == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("grading", ["columns", "both"])
def test_graded_matrices_keep_unitary_reflectors(dtype, grading):
    """Columns graded down to 1e-30 (float32) or 1e-150 (float64) of the largest: their
    entries' squares underflow, and complex64 moduli of tiny entries are rounded to the
    subnormal grid. The reflectors stay unitary: the one-stage SVD's U and V orthonormal
    to n·ε (they were up to 6e5 n·ε off in float32, NaN in complex64), A rebuilt."""
    from gpusvd import svd

    a = _graded(120, dtype, grading)
    _check_unitary(a, *svd(a, method="gr", reduction="one-stage", device="cpu"))


def _graded(n, dtype, grading):
    """G·D (``grading="columns"``) or D·G·D (``"both"``), D from 1 down to 1e-30 (single
    precision) or 1e-150 (double)."""
    low = -30 if np.finfo(dtype).eps > 1e-10 else -150
    d = np.logspace(0, low, n)
    a = _random((n, n), dtype, seed=5) * d[None, :]
    return d[:, None] * a if grading == "both" else a


def _check_unitary(a, u, s, vh):
    """U and V finite and orthonormal to n·ε, A rebuilt to n·ε·‖A‖."""
    from gpusvd import testing

    assert np.isfinite(u).all() and np.isfinite(vh).all()
    assert testing.orthogonality(u) < SLACK and testing.orthogonality(vh, rows=True) < SLACK
    eps = np.finfo(a.dtype).eps
    assert np.linalg.norm((u * s) @ vh - a) <= SLACK * len(s) * eps * np.linalg.norm(a)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("grading", ["columns", "both"])
def test_graded_matrices_keep_unitary_reflectors_on_the_gpu(dtype, grading):
    """The panel kernel's reflectors on graded matrices (its sums of squares and scalars
    in double): U and V orthonormal to n·ε, A rebuilt, as on the host."""
    import cupy
    from gpusvd import svd

    a = _graded(300, dtype, grading)  # panels of the kernel, then the host's tail
    _check_unitary(a, *(x.get() for x in svd(cupy.asarray(a), method="gr",
                                              reduction="one-stage")))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_zero_and_tiny_columns_on_the_gpu(dtype):
    """The panel kernel's norms where a column's plain sum of squares is zero (triangular
    input, zero rows and columns: no second pass) or loses the squares of tiny entries
    beside normal ones (1e-170 in double data, below ε of the sum): U and V orthonormal,
    A rebuilt, the values as LAPACK's. The second pass itself is the graded test's."""
    import cupy
    from gpusvd import svd

    n = 300
    a = np.triu(_random((n, n), dtype, seed=7))
    a[:, 5] = 0
    a[9, :] = 0
    a[40:, 60] *= 1e-170 if np.finfo(dtype).eps < 1e-10 else 1e-25
    u, s, vh = (x.get() for x in svd(cupy.asarray(a), method="gr", reduction="one-stage"))
    _check_unitary(a, u, s, vh)
    ref = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    assert np.abs(s - ref).max() <= SLACK * n * np.finfo(dtype).eps * ref[0]

