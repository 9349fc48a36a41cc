"""JAX's transformations of ``svd``, ``svdvals`` and ``polar``:
``jax.grad`` eagerly against finite differences, at random and at exactly repeated
singular values where JAX's own SVD gives NaN; a function that is not a JAX primitive
says in one line what to do with a traced array (``jax.jit`` and ``jax.vmap`` of the
primitives: test_jax_transforms.py).
Every test with JAX arrays on the CPU, and again on the GPU (marker ``gpu``)."""

import numpy as np
import pytest

import gpusvd
from .losses import DEGENERATE, LOSSES, finite_difference, rotated_cluster

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


@pytest.fixture(autouse=True, params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def platform(request):
    """Every test with JAX arrays on the CPU, and on the GPU where one is present."""
    with jax.default_device(jax.devices(request.param)[0]):
        yield request.param


@pytest.fixture(autouse=True)
def _float64(jax_float64):
    """Every test in float64 (tests/conftest.py)."""


def _grad(name, a, weights):
    ours, _ = LOSSES[name]

    def loss(x):
        u, s, vh = gpusvd.svd(x, full_matrices=False)
        w = gpusvd.polar(x)[0] if name == "polar_linear" else None
        return ours(u, s, vh, w, jnp.asarray(weights))
    return np.asarray(jax.grad(loss)(jnp.asarray(a)))


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("shape", [(5, 5), (6, 4)], ids=str)
def test_grad_against_finite_differences(shape, name):
    a = np.random.default_rng(1).standard_normal(shape)
    weights = np.arange(a.size, dtype=float).reshape(shape)
    expected = finite_difference(LOSSES[name][1], a, weights)
    assert np.abs(_grad(name, a, weights) - expected).max() <= 1e-6 * np.abs(expected).max()


@pytest.mark.parametrize("case", sorted(DEGENERATE))
def test_repeated_values(case):
    a, names = DEGENERATE[case]
    a = rotated_cluster() if a is None else a
    weights = np.arange(a.size, dtype=float).reshape(a.shape)
    for name in names:
        grad = _grad(name, a, weights)
        expected = finite_difference(LOSSES[name][1], a, weights)
        assert np.isfinite(grad).all()
        assert np.abs(grad - expected).max() <= 1e-6 * max(np.abs(expected).max(), 1.0)


def test_vjp_of_svdvals_and_a_stack():
    a = jnp.asarray(np.random.default_rng(2).standard_normal((3, 5, 4)))
    s, pullback = jax.vjp(gpusvd.svdvals, a)
    (grad,) = pullback(jnp.ones_like(s))
    u, _, vh = np.linalg.svd(np.asarray(a), full_matrices=False)
    np.testing.assert_allclose(np.asarray(grad), u @ vh, atol=1e-12)


@pytest.mark.parametrize("name, fn, twin", [
    ("jacobi_svd", gpusvd.jacobi_svd, "gpusvd.svd(x, method='jacobi') is the same SVD"),
    ("hsvd", lambda x: gpusvd.hsvd(x, np.array([1, -1, 1])), ""),
    ("eigh_factored", lambda x: gpusvd.eigh_factored(x, np.array([1, -1, 1])), ""),
    ("svd_lowrank", lambda x: gpusvd.svd_lowrank(x, eps=1e-6), "")])
def test_a_traced_array_elsewhere_says_what_to_do(name, fn, twin):
    """The refusal names the function, the primitives, and jacobi_svd's twin."""
    with pytest.raises(ValueError, match=f"^{name}: cannot take a traced JAX array.*svd, "
                       "gpusvd.svdvals, gpusvd.polar and gpusvd.takagi are JAX primitives"
                       ) as info:
        jax.jit(fn)(jnp.eye(3))
    assert twin in str(info.value)


@pytest.mark.parametrize("case", ["random", "diag_1123"])
def test_jvp_against_finite_differences(case):
    """Forward mode: the custom JVP rule, whose transpose the tests above use. At a
    repeated value the values one by one have no derivative (they cross), their sum has."""
    import scipy.linalg

    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 4)) if case == "random" else DEGENERATE[case][0]
    t = rng.standard_normal(a.shape)
    h = 1e-6
    for fn, ref in ((lambda x: gpusvd.svdvals(x).sum(),
                     lambda x: np.linalg.svd(x, compute_uv=False).sum()),
                    (lambda x: gpusvd.polar(x)[0], lambda x: scipy.linalg.polar(x)[0])):
        _, tangent = jax.jvp(fn, (jnp.asarray(a),), (jnp.asarray(t),))
        expected = (ref(a + h * t) - ref(a - h * t)) / (2 * h)
        assert np.abs(np.asarray(tangent) - expected).max() <= 1e-6 * np.abs(expected).max()


def test_full_matrices_is_differentiable_where_square_only():
    """Square: the full SVD is the economy one, and so are its derivatives (as
    jnp.linalg.svd's); non-square: refused, as jnp.linalg.svd refuses."""
    with pytest.raises(ValueError, match="full_matrices=True is not differentiable"):
        jax.grad(lambda x: gpusvd.svd(x)[1].sum())(jnp.ones((4, 3)))
    a = jnp.asarray(np.random.default_rng(4).standard_normal((4, 4)))
    t = jnp.asarray(np.random.default_rng(5).standard_normal((4, 4)))

    def loss(x, full):   # gauge-invariant: U·diag(s²)·Vᴴ weighed by t
        u, s, vh = gpusvd.svd(x, full_matrices=full)
        return jnp.sum(((u * s ** 2) @ vh) * t)

    full, economy = (jax.grad(loss)(a, f) for f in (True, False))
    np.testing.assert_allclose(np.asarray(full), np.asarray(economy), rtol=1e-10, atol=1e-12)
    h = 1e-6
    expected = (loss(a + h * t, True) - loss(a - h * t, True)) / (2 * h)
    assert abs(float(jnp.sum(full * t)) - float(expected)) <= 1e-6 * abs(float(expected))


def test_zero_values_beside_vectors_and_second_derivatives_are_nan():
    """Rules 2 and 6 in JAX: Σ W∘(U·S·Vᴴ) at diag(2, 1, 0) and the Hessian of Σs² at a
    rank-deficient matrix reach directions no cotangent of the SVD carries: NaN; at full
    rank the Hessian is 2I."""
    weights = jnp.arange(1.0, 10.0).reshape(3, 3)

    def reconstruction(x):
        u, s, vh = gpusvd.svd(x, full_matrices=False)
        return ((u * s) @ vh * weights).sum()
    assert np.isnan(np.asarray(jax.grad(reconstruction)(jnp.diag(jnp.array([2.0, 1.0, 0.0]))))).all()

    def squares(x):
        return (gpusvd.svdvals(x) ** 2).sum()
    rng = np.random.default_rng(5)
    v = jnp.asarray(rng.standard_normal((4, 4)))
    low = jnp.asarray(rng.standard_normal((4, 2)) @ rng.standard_normal((2, 4)))
    hv = jax.vjp(jax.grad(squares), low)[1](v)[0]
    assert np.isnan(np.asarray(hv)).all()
    full = jnp.asarray(rng.standard_normal((4, 4)))
    hv = jax.vjp(jax.grad(squares), full)[1](v)[0]
    assert np.abs(np.asarray(hv - 2 * v)).max() <= 1e-10
