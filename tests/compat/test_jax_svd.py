"""JAX's own SVD tests (``testSVD`` and ``testSVDGrad`` of JAX's tests/linalg_test.py),
rebuilt on ``gpusvd.svd``.

Their checks, in their tolerances: the backward error ‖A − U·S·Vh‖/‖A‖ below 2·100·ε, U
and V unitary to 3·100·ε, the values against NumPy's, the jitted call against the eager
one, the JVP of the values against finite differences, the JVP of U·S·Vh along D equal to
D; and ``check_grads`` of order 2 (forward and reverse) on the values and on the factors
with each column's phase fixed by U's first row (here jitted). JAX's grid is m, n ∈ {0, 2,
7, 29, 32, 53} by batch shape, dtype, ``full_matrices`` and ``compute_uv``, of which JAX's
own runs draw a sample; here a fixed sample: every shape of m, n ∈ {0, 2, 7, 32} with both
flags, the dtypes and batch shapes in turn, and the economy 400000 × 2 and 2 × 400000.
``hermitian=True`` runs on testSVD's square cases made Hermitian; JAX's ``algorithm=``
has no gpusvd counterpart. As in JAX,
``full_matrices=True`` of a non-square matrix has no derivative (gpusvd refuses it).
"""

import itertools
from functools import partial

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads, check_jvp  # noqa: E402

import gpusvd  # noqa: E402

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
BATCHES = [(), (3,), (2, 3)]
SIZES = [0, 2, 7, 32]
CASES = [(b, m, n, dtype, full, uv)
         for i, ((m, n), full, uv) in enumerate(itertools.product(
             itertools.product(SIZES, repeat=2), [False, True], [False, True]))
         for b, dtype in [(BATCHES[(i // 4) % 3], DTYPES[i % 4])]]
CASES += [((), 400000, 2, np.float32, False, True), ((), 2, 400000, np.float32, False, True),
          ((), 400000, 2, np.float64, False, False)]


@pytest.fixture(autouse=True)
def _float64(jax_float64):
    """JAX's tests run with float64 enabled (tests/conftest.py)."""


def _matrix(shape, dtype, seed):
    """Entries uniform in [-3, 3) (JAX's rand_default scale), real and imaginary parts."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-3, 3, shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.uniform(-3, 3, shape)
    return a.astype(dtype)


def _ct(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _case_id(case):
    b, m, n, dtype, full, uv = case
    return f"{b}{m}x{n}-{np.dtype(dtype).name}-full{int(full)}-uv{int(uv)}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_svd_as_jax_tests_it(case):
    b, m, n, dtype, full, uv = case
    eps = float(jnp.finfo(dtype).eps)
    tol = 100 * eps
    a = jnp.asarray(_matrix(b + (m, n), dtype, seed=m * 100 + n))
    fun = partial(gpusvd.svd, full_matrices=full, compute_uv=uv)
    out = fun(a)
    a_host = np.asarray(a).astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    if uv:
        u, s, vh = (np.asarray(x) for x in out)
        assert u.dtype == vh.dtype == dtype
        k = min(m, n)
        if m and n:
            back = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
            error = np.linalg.norm(a_host - back, axis=(-2, -1)) / np.linalg.norm(
                a_host, axis=(-2, -1))
            assert error.max() < 2 * tol
        _unitary((_ct(u) @ u, (vh @ _ct(vh)) if m < n or full else _ct(vh) @ vh), tol)
    _values_and_jit(a, a_host, out, fun, tol, uv)
    if not uv and a.size < 100000:
        loose = dict(rtol=1e-4, atol=1e-4, eps=1e-8) if dtype == np.complex128 else dict(
            rtol=5e-2, atol=2e-1)
        check_jvp(fun, partial(jax.jvp, fun), (a,), **loose)
    if uv and not full:
        d = jnp.asarray(_matrix(b + (m, n), dtype, seed=7))

        def product(x):
            u, s, vh = gpusvd.svd(a + x * d, full_matrices=False)
            return jnp.real((u * s[..., None, :].astype(u.dtype)) @ vh)

        _, tangent = jax.jvp(product, (1.0,), (1.0,))
        close = 2e-13 if dtype == np.complex128 else 6e-4
        np.testing.assert_allclose(np.asarray(tangent), np.real(np.asarray(d)), atol=close,
                                   rtol=close)


HERMITIAN_CASES = [(b, n, dtype, uv) for i, (n, uv) in enumerate(
    itertools.product(SIZES, [False, True])) for b, dtype in [(BATCHES[i % 3], DTYPES[i % 4])]]


@pytest.mark.parametrize("case", HERMITIAN_CASES, ids=lambda c: f"{c[0]}{c[1]}-"
                         f"{np.dtype(c[2]).name}-uv{int(c[3])}")
def test_svd_hermitian_as_jax_tests_it(case):
    """testSVD's ``hermitian=True`` cases (A + Aᴴ of its square matrices): the backward
    error, unitary factors, the values against NumPy's, the jitted call as the eager."""
    b, n, dtype, uv = case
    tol = 100 * float(jnp.finfo(dtype).eps)
    x = _matrix(b + (n, n), dtype, seed=n + 1)
    a = jnp.asarray(x + _ct(x))
    fun = partial(gpusvd.svd, compute_uv=uv, hermitian=True)
    out = fun(a)
    a_host = np.asarray(a).astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    if uv:
        u, s, vh = (np.asarray(y) for y in out)
        if n:
            error = np.linalg.norm(a_host - (u * s[..., None, :]) @ vh, axis=(-2, -1))
            assert (error / np.linalg.norm(a_host, axis=(-2, -1))).max() < 2 * tol
        _unitary((_ct(u) @ u, vh @ _ct(vh)), tol)
    _values_and_jit(a, a_host, out, fun, tol, uv)


def _unitary(grams, tol):
    """testSVD's check of U and V: each Gram matrix the identity to 3·tol."""
    for q in grams:
        eye = np.broadcast_to(np.eye(q.shape[-1]), q.shape)
        np.testing.assert_allclose(np.real(q), eye, rtol=3 * tol, atol=3 * tol)


def _values_and_jit(a, a_host, out, fun, tol, uv):
    """testSVD's values-only check against NumPy's, and the jitted call as the eager."""
    if not uv:
        np.testing.assert_allclose(np.asarray(out), np.linalg.svd(a_host, compute_uv=False),
                                   atol=1e-4, rtol=3e-4)
    jitted = jax.jit(fun)(a)
    for x, y in zip(jax.tree_util.tree_leaves(jitted), jax.tree_util.tree_leaves(out)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=50 * tol * (1 + k_of(a)))


def k_of(a):
    """The largest entry's size, the scale of the jitted call's rounding."""
    return float(jnp.max(jnp.abs(a))) if a.size else 0.0


def _phase_fixed_svd(a, full_matrices):
    """U, S, Vh with each column of U turned to make its first entry real and
    non-negative (Vh's rows the other way): the factors then change smoothly with A."""
    u, s, vh = gpusvd.svd(a, full_matrices=full_matrices)
    top = u[..., 0:1, :]
    if jnp.iscomplexobj(a):
        phase = jnp.exp(-1j * jnp.angle(top)).astype(u.dtype)
        return u * phase, s, vh * jnp.swapaxes(jnp.conj(phase), -1, -2)
    sign = jnp.sign(top)
    return u * sign, s, vh * jnp.swapaxes(sign, -1, -2)


# JAX's grid of testSVDGrad (shape × dtype × full_matrices × compute_uv), of which its runs
# draw a sample: every shape twice, values and factors, the dtypes in turn.
GRAD_SHAPES = [(1, 1), (4, 4), (2, 5), (5, 2), (5, 5), (2, 5, 5)]
GRAD_CASES = [(shape, DTYPES[(2 * i + uv) % 4], uv and shape[-1] == shape[-2], uv)
              for i, shape in enumerate(GRAD_SHAPES) for uv in (False, True)]


@pytest.mark.parametrize("shape, dtype, full, uv", GRAD_CASES,
                         ids=lambda x: np.dtype(x).name if isinstance(x, type) else str(x))
def test_svd_gradients_as_jax_tests_them(shape, dtype, full, uv):
    a = jnp.asarray(_matrix(shape, dtype, seed=sum(shape)))
    if uv:
        f = partial(_phase_fixed_svd, full_matrices=full)
    else:
        f = partial(gpusvd.svd, full_matrices=False, compute_uv=False)
    # Jitted: the derivatives as compiled code takes them, and a quarter of the eager time.
    check_grads(jax.jit(f), (a,), order=2, rtol=0.035, eps=1.0 / 512)


def test_full_matrices_of_a_non_square_matrix_has_no_derivative():
    """JAX's testSVDGrad skips it: jnp.linalg.svd refuses; so does gpusvd."""
    a = jnp.asarray(_matrix((5, 2), np.float64, seed=1))
    with pytest.raises(ValueError, match="full_matrices=True is not differentiable"):
        check_grads(partial(_phase_fixed_svd, full_matrices=True), (a,), order=1)
