"""``svd``, ``svdvals`` and ``polar`` as JAX primitives
(:mod:`gpusvd.autodiff.jax_primitives`): ``jax.jit`` against the eager call, ``jax.vmap``
against a loop and ``jnp.linalg.svd``, their compositions, derivatives to second order
against finite differences and JAX's own SVD, and the rule at exactly repeated singular
values. Every test with JAX arrays on the CPU, and again on the GPU (marker ``gpu``:
XLA's buffers and stream, no host copy).

Tolerances: values within VALUE_TOL units of n·ε·max(1, max|A|) in the dtype's ε,
derivatives against central differences (h = 1e-6, float64) within a relative 1e-6 of
their largest entry, ``check_grads`` at its float64 defaults (eps 1e-4, tolerance 1e-5).
"""

import numpy as np
import pytest
import scipy.linalg

import gpusvd
from .losses import finite_difference

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
from jax.test_util import check_grads  # noqa: E402
# The same autouse fixtures: every test on the CPU and the GPU (``platform``), in float64.
from .test_jax_autodiff import _float64, platform  # noqa: E402,F401

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
# Values of two computations of the same quantity agree within this many n·ε.
VALUE_TOL = 20
# Derivatives against central differences: relative to their largest entry.
FD_TOL = 1e-6

FUNCTIONS = {
    "svd": lambda x: tuple(gpusvd.svd(x, full_matrices=False)),
    "svd_full": lambda x: tuple(gpusvd.svd(x)),
    "svdvals": lambda x: (gpusvd.svdvals(x),),
    "polar": lambda x: tuple(gpusvd.polar(x)),
    "polar_left": lambda x: tuple(gpusvd.polar(x, side="left")),
}


def _random(shape, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return jnp.asarray(a.astype(dtype))


def _unit(x):
    """n·ε of the matrices of ``x`` (times max(1, max|x|)): the unit of value errors."""
    eps = np.finfo(np.asarray(x).dtype).eps
    return max(x.shape[-2:]) * eps * max(1.0, float(jnp.abs(x).max()))


def _close(got, expected, unit):
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert float(jnp.abs(got - expected).max(initial=0)) <= VALUE_TOL * unit


@pytest.mark.parametrize("shape", [(5, 4), (4, 6), (3, 5, 4)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jit_equals_eager(name, dtype, shape, platform):
    """The compiled call runs the eager one: the same bits on the CPU, the same values
    within VALUE_TOL·n·ε on the GPU; every dtype (s real), one matrix and a stack."""
    x = _random(shape, dtype)
    eager = FUNCTIONS[name](x)
    jitted = jax.jit(FUNCTIONS[name])(x)
    for got, expected in zip(jitted, eager):
        if platform == "cpu":
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
        else:
            _close(got, expected, _unit(x))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_vmap_against_a_loop_and_jax(dtype):
    x = _random((4, 6, 5), dtype, seed=1)
    unit = _unit(x)
    values = jax.vmap(gpusvd.svdvals)(x)
    _close(values, jnp.stack([gpusvd.svdvals(m) for m in x]), unit)
    _close(values, jnp.linalg.svd(x, compute_uv=False), unit)
    # the mapped axis anywhere, the result's axis anywhere
    moved = jax.vmap(gpusvd.svdvals, in_axes=2, out_axes=1)(jnp.moveaxis(x, 0, 2))
    _close(moved, values.T, unit)
    u, s, vh = jax.vmap(lambda m: gpusvd.svd(m, full_matrices=False))(x)
    # the product at full precision (JAX's float32 default on a GPU is TF32)
    _close(jnp.matmul(u * s[..., None, :].astype(dtype), vh, precision="highest"), x, unit)
    w, p = jax.vmap(gpusvd.polar)(x)
    for got, expected in zip((w, p), zip(*[gpusvd.polar(m) for m in x])):
        _close(got, jnp.stack(expected), unit)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jit_of_vmap(name):
    """Compiled and mapped: the same as the eager call on the stack, which gpusvd takes
    natively; two mapped axes too."""
    x = _random((2, 3, 5, 4), np.complex128, seed=2)
    eager = FUNCTIONS[name](x)
    for got, expected in zip(jax.jit(jax.vmap(FUNCTIONS[name]))(x[0]), eager):
        _close(got, expected[0], _unit(x))
    for got, expected in zip(jax.jit(jax.vmap(jax.vmap(FUNCTIONS[name])))(x), eager):
        _close(got, expected, _unit(x))


def test_a_stack_is_one_call():
    """vmap binds the primitive once on the stack, never once per matrix."""
    x = _random((7, 5, 4))
    for fn, name in ((gpusvd.svdvals, "gpusvd_svdvals"), (gpusvd.polar, "gpusvd_polar"),
                     (jax.grad(lambda m: gpusvd.svdvals(m).sum()), "gpusvd_svd")):
        eqns = [e for e in jax.make_jaxpr(jax.vmap(fn))(x).eqns if e.primitive.name == name]
        assert len(eqns) == 1 and eqns[0].invars[0].aval.shape == x.shape


def test_the_lowering_keeps_xla_buffers(platform):
    """The compiled call is a buffer callback on XLA's own buffers (no host callback), and
    is not recorded into a command buffer."""
    text = jax.jit(gpusvd.svdvals).lower(_random((5, 4))).as_text()
    target = "xla_buffer_python_cpu_callback" if platform == "cpu" else \
        "xla_buffer_python_gpu_callback"
    assert target in text and "cmd_buffer" not in text
    assert "xla_python_cpu_callback" not in text and "xla_python_gpu_callback" not in text


def test_full_matrices_compiles_and_maps_but_is_not_differentiable():
    x = _random((3, 5, 3))
    u, s, vh = jax.jit(jax.vmap(lambda m: gpusvd.svd(m)))(x)
    assert u.shape == (3, 5, 5) and vh.shape == (3, 3, 3)
    _close(jnp.swapaxes(u, -1, -2) @ u, jnp.broadcast_to(jnp.eye(5), (3, 5, 5)), _unit(x))
    with pytest.raises(ValueError, match="full_matrices=True is not differentiable"):
        jax.jit(jax.grad(lambda m: gpusvd.svd(m)[1].sum()))(x[0])


def test_the_input_is_unchanged_and_half_precision_comes_back():
    x = _random((5, 4))
    before = np.array(x)
    values, same = jax.jit(lambda m: (gpusvd.svdvals(m), m + 0))(x)
    np.testing.assert_array_equal(np.asarray(same), before)
    half = jax.jit(gpusvd.svdvals)(x.astype(jnp.float16))
    assert half.dtype == jnp.float16
    assert float(jnp.abs(half - values).max()) <= 4 * np.finfo(np.float16).eps * values[0]


def _projector(x, k=2):
    u = gpusvd.svd(x, full_matrices=False)[0][..., :, :k]
    return u @ jnp.conj(u).swapaxes(-1, -2)


# Losses whose derivatives exist at a random matrix, to second order.
SMOOTH = {
    "values": gpusvd.svdvals,
    "projector_top2": _projector,
    "polar": gpusvd.polar,
    "polar_left": lambda x: gpusvd.polar(x, side="left"),
}


@pytest.mark.parametrize("name, dtype, shape", [
    pytest.param(name, dtype, shape, id=f"{name}-{np.dtype(dtype).name}-{shape}")
    for name in sorted(SMOOTH)
    for dtype, shape in ((np.float64, (5, 4)), (np.complex128, (4, 6)))
    if name != "polar_left" or dtype == np.complex128])  # the left side: Aᴴ's right one
def test_check_grads_to_second_order(name, dtype, shape):
    """Compiled (each derivative one XLA program; eagerly, JAX compiles every operation of
    the rules one by one, seconds per test)."""
    check_grads(jax.jit(SMOOTH[name]), (_random(shape, dtype, seed=3),), order=2,
                modes=("fwd", "rev"))


def test_check_grads_of_a_stack_under_jit():
    x = _random((2, 4, 3), np.complex128, seed=4)
    check_grads(jax.jit(lambda m: (gpusvd.svdvals(m), gpusvd.polar(m)[0])), (x,), order=2,
                modes=("fwd", "rev"))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64],
                         ids=lambda d: np.dtype(d).name)
def test_single_precision_gradient(dtype):
    """float32 and complex64 gradients within n·ε (of float32) of the double ones."""
    x = _random((5, 4), dtype, seed=5)
    double = x.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)

    def loss(m):
        return (gpusvd.svdvals(m) ** 2).sum() + jnp.real(gpusvd.polar(m)[0]).sum()
    grad = jax.jit(jax.grad(loss))
    got = grad(x)
    assert got.dtype == dtype
    _close(got.astype(double.dtype), grad(double), 10 * _unit(x))


def test_hessian_against_jax():
    """Second derivatives through the tangent primitive's own JVP."""
    x = _random((4, 3), seed=6)
    ours = jax.jit(jax.hessian(lambda m: (gpusvd.svdvals(m) ** 3).sum()))(x)
    theirs = jax.hessian(lambda m: (jnp.linalg.svd(m, compute_uv=False) ** 3).sum())(x)
    assert np.isfinite(np.asarray(ours)).all()
    assert float(jnp.abs(ours - theirs).max()) <= 1e-10 * float(jnp.abs(theirs).max())


def _jacobian_fd(reference, a, h=1e-6):
    """Central differences of ``reference`` (NumPy in, NumPy out), one column per entry."""
    columns = []
    for index in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[index] = h
        columns.append((reference(a + step) - reference(a - step)) / (2 * h))
    return np.stack(columns, axis=-1).reshape(*columns[0].shape, *a.shape)


@pytest.mark.parametrize("jacobian", [jax.jacfwd, jax.jacrev])
def test_jacobians_against_finite_differences(jacobian):
    a = np.asarray(_random((4, 3), seed=7))
    for fn, reference in (
            (gpusvd.svdvals, lambda m: np.linalg.svd(m, compute_uv=False)),
            (lambda m: gpusvd.polar(m)[0], lambda m: scipy.linalg.polar(m)[0])):
        got = np.asarray(jax.jit(jacobian(fn))(jnp.asarray(a)))
        expected = _jacobian_fd(reference, a)
        assert np.abs(got - expected).max() <= FD_TOL * np.abs(expected).max()


# Exactly repeated singular values: the identity, and a repeated smallest pair.
REPEATED = {"identity": np.eye(4), "diag_3211": np.diag([3.0, 2.0, 1.0, 1.0])}
_WEIGHTS = np.arange(16.0).reshape(4, 4) / 16


def _values_loss(x):
    s = gpusvd.svdvals(x)
    return s.sum() + (s ** 2).sum()


def _values_reference(a, _):
    s = np.linalg.svd(a, compute_uv=False)
    return s.sum() + (s ** 2).sum()


def _polar_loss(x):
    w, p = gpusvd.polar(x)
    return (w * _WEIGHTS).sum() + (p * _WEIGHTS.T).sum()


def _polar_reference(a, _):
    w, p = scipy.linalg.polar(a)
    return (w * _WEIGHTS).sum() + (p * _WEIGHTS.T).sum()


@pytest.mark.parametrize("case", sorted(REPEATED))
@pytest.mark.parametrize("loss, reference", [(_values_loss, _values_reference),
                                             (_polar_loss, _polar_reference)],
                         ids=["values", "polar"])
def test_repeated_values(case, loss, reference):
    """A loss of s or of the polar factors has its finite-difference gradient at exactly
    repeated values, in reverse and forward mode (eagerly: test_jax_autodiff.py)."""
    a = REPEATED[case]
    expected = finite_difference(reference, a, None)
    for grad in (jax.jit(jax.grad(loss)), jax.jit(jax.jacfwd(loss))):
        got = np.asarray(grad(jnp.asarray(a)))
        assert np.isfinite(got).all()
        assert np.abs(got - expected).max() <= FD_TOL * max(np.abs(expected).max(), 1.0)


@pytest.mark.parametrize("diagonal", [[3.0, 2.0, 1.0, 1.0], [3.0, 2.0, 0.0, 0.0]],
                         ids=["diag_3211", "diag_3200"])
def test_projector_across_a_gap(diagonal):
    """The top-2 projector never reads the repeated (or zero) pair's columns: the reverse
    rule leaves their undetermined terms out, and the gradient is finite and right."""
    a = np.diag(diagonal)
    weights = np.arange(16.0).reshape(4, 4)

    def reference(m, _):
        u = np.linalg.svd(m)[0][:, :2]
        return ((u @ u.T) * weights).sum()
    expected = finite_difference(reference, a, None)
    got = np.asarray(jax.jit(jax.grad(lambda m: (_projector(m) * weights).sum()))(
        jnp.asarray(a)))
    assert np.isfinite(got).all()
    assert np.abs(got - expected).max() <= FD_TOL * max(np.abs(expected).max(), 1.0)


def test_reading_a_repeated_cluster_is_nan():
    """The top-3 projector at diag(3, 2, 1, 1) splits the repeated pair: its gradient is
    not determined by the SVD, and is NaN rather than finite and wrong."""
    got = jax.jit(jax.grad(lambda m: _projector(m, 3).sum()))(
        jnp.asarray(REPEATED["diag_3211"]))
    assert np.isnan(np.asarray(got)).any()


def test_jit_follows_xla_work_on_the_stream(platform):
    """The callback's input comes from an XLA product and its output feeds XLA work in
    the same compiled function: on the GPU, ordered on XLA's stream."""
    a = _random((300, 200), seed=8)

    def fn(m):
        return gpusvd.svdvals(m @ m.T + 1.0)[:10] * 2.0
    got = jax.jit(fn)(a)
    expected = 2.0 * jnp.linalg.svd(a @ a.T + 1.0, compute_uv=False)[:10]
    unit = a.shape[0] * np.finfo(np.float64).eps * float(expected[0])
    assert float(jnp.abs(got - expected).max()) <= VALUE_TOL * unit
    if platform == "gpu":
        assert got.devices() == {jax.devices("gpu")[0]}
