"""The Takagi factorization's derivatives (:func:`gpusvd.autodiff.formulas.takagi_jvp` and
``takagi_backward``) through its torch operator and its JAX primitive: against finite
differences of the eager factorization, ``gradcheck`` with forward mode and
``gradgradcheck``, ``opcheck``, ``torch.compile(fullgraph=True)``, every ``torch.func``
transform, ``jax.jit``, ``jax.vmap`` and ``check_grads`` to second order; the rule at
repeated and zero values (right or NaN). The matrices are B + Bᵀ: the factorization is of
symmetric matrices, and its derivative along any dA is the one along (dA + dAᵀ)/2."""

import numpy as np
import pytest

import gpusvd

torch = pytest.importorskip("torch")
library = pytest.importorskip("gpusvd.autodiff.torch_library")


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request):
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (scripts/gpu-tests)")
    return request.param


def _random(shape, dtype, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype).to(device)


def _weights(n, seed=1):
    return np.random.default_rng(seed).standard_normal((n, n))


def _loss_numpy(s, u, w):
    """A loss of both factors that no column's sign changes: Σ s³ + Σ w∘|U|² +
    Re Σ w∘(U·diag(s²)·Uᵀ)."""
    return ((s ** 3).sum() + (w * np.abs(u) ** 2).sum()
            + (w * ((u * s ** 2) @ u.T)).real.sum())


def _loss_torch(s, u, w):
    w = torch.as_tensor(w, device=u.device)
    return ((s ** 3).sum() + (w * u.abs() ** 2).sum()
            + (w * ((u * (s ** 2).to(u.dtype)[..., None, :]) @ u.mT)).real.sum())


def _finite_difference(b, w, h=1e-6):
    """Central differences of the loss of takagi(B + Bᵀ), entry by entry, over the real
    and, for complex B, imaginary parts (torch's convention: ∂/∂Re + i·∂/∂Im)."""
    def loss(x):
        s, u = gpusvd.takagi(x + x.T, device="cpu")
        return _loss_numpy(s, u, w)

    grad = np.zeros_like(b)
    for index in np.ndindex(b.shape):
        for unit in ((1.0, 1j) if np.iscomplexobj(b) else (1.0,)):
            step = np.zeros_like(b)
            step[index] = h * unit
            grad[index] += unit * (loss(b + step) - loss(b - step)) / (2 * h)
    return grad


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
def test_gradient_against_finite_differences(dtype):
    b = _random((5, 5), dtype, seed=2)
    w = _weights(5)
    x = b.clone().requires_grad_()
    s, u = gpusvd.takagi(x + x.T)
    (grad,) = torch.autograd.grad(_loss_torch(s, u, w), x)
    expected = _finite_difference(b.numpy(), w)
    assert grad.dtype == dtype
    assert np.abs(grad.numpy() - expected).max() <= 1e-6 * np.abs(expected).max()


def test_gradient_as_through_torchs_svd():
    """Against an independent route: U·diag(Uᴴ·conj(V))^½ from torch's SVD (as thewalrus
    computes the factorization) differentiated by torch, whose gradient's symmetric part
    is the derivative along symmetric directions."""
    b = _random((12, 12), torch.complex128, seed=17)
    a = b + b.mT
    w = torch.as_tensor(_weights(12, seed=18))

    def loss(s, u):
        return (s ** 2).sum() + (w * u.abs() ** 2).sum()

    x = a.clone().requires_grad_()
    (ours,) = torch.autograd.grad(loss(*gpusvd.takagi(x)), x)
    y = a.clone().requires_grad_()
    u, s, vh = torch.linalg.svd(y)
    phases = torch.diagonal(u.mH @ vh.mT).sqrt()
    (theirs,) = torch.autograd.grad(loss(s, u * phases), y)
    theirs = (theirs + theirs.mT) / 2
    assert (ours - theirs).abs().max() <= 1e-10 * ours.abs().max()


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)], ids=str)
def test_gradcheck_forward_mode_and_second_order(shape, dtype, device):
    w = _weights(shape[-1])
    b = _random(shape, dtype, device, seed=3).requires_grad_()

    def loss(x):
        s, u = gpusvd.takagi(x + x.mT)
        return _loss_torch(s, u, w)

    assert torch.autograd.gradcheck(loss, (b,), check_forward_ad=True,
                                    check_batched_grad=True)
    assert torch.autograd.gradgradcheck(loss, (b,))


def test_opcheck(device):
    """The operator and its derivative's operator (what compiled code calls for complex
    data). Random cotangents of U are fine here: U's gauge is a sign per column, which
    no derivative sees."""
    a = _random((4, 4), torch.complex128, device, seed=4)
    a = (a + a.mT).requires_grad_()
    torch.library.opcheck(torch.ops.gpusvd.takagi.default, (a, "{}"))
    r = _random((2, 3, 3), torch.float64, device, seed=5)
    torch.library.opcheck(torch.ops.gpusvd.takagi.default, ((r + r.mT).requires_grad_(), "{}"))
    s, u = gpusvd.takagi(a.detach())
    gs = _random((4,), torch.float64, device, seed=6)
    gu = _random((4, 4), torch.complex128, device, seed=7)
    torch.library.opcheck(library.takagi_backward_op, (s, u, gs, gu, False, 0.0))
    torch.library.opcheck(library.takagi_backward_op, (s, u, gs, None, False, 0.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128], ids=str)
def test_compile_fullgraph_equals_eager(dtype, device):
    torch._dynamo.reset()
    b = _random((3, 5, 5), dtype, device, seed=8)
    a = b + b.mT
    compiled = torch.compile(lambda y: tuple(gpusvd.takagi(y)), fullgraph=True,
                             backend="aot_eager")
    for got, expected in zip(compiled(a), gpusvd.takagi(a)):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_export_and_dynamic_shapes():
    x = _random((4, 4), torch.complex128, seed=16)
    x = x + x.mT

    class Values(torch.nn.Module):
        def forward(self, y):
            return gpusvd.takagi(y).S

    program = torch.export.export(Values(), (x,))
    assert "gpusvd.takagi" in str(program.graph)
    torch.testing.assert_close(program.module()(x), gpusvd.takagi(x).S, rtol=0, atol=0)
    torch._dynamo.reset()
    compiled = torch.compile(lambda y: gpusvd.takagi(y + y.mT).S, dynamic=True,
                             fullgraph=True, backend="aot_eager")
    for n in (3, 5):
        y = _random((n, n), torch.complex128, seed=n)
        torch.testing.assert_close(compiled(y), gpusvd.takagi(y + y.mT).S, rtol=0, atol=0)


@pytest.mark.filterwarnings("ignore:.*is deprecated:FutureWarning")  # inductor's own
@pytest.mark.filterwarnings("ignore:Torchinductor does not support code generation")
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
def test_compile_fullgraph_gradient_equals_eager(dtype, backend, device):
    if backend == "inductor" and device == "cuda":
        pytest.skip("inductor's Triton code has no complex dtype (U is complex)")
    torch._dynamo.reset()
    w = _weights(4)
    b = _random((4, 4), dtype, device, seed=9)

    def loss(x):
        s, u = gpusvd.takagi(x + x.mT)
        return _loss_torch(s, u, w)

    compiled = torch.compile(loss, fullgraph=True, backend=backend)
    y = b.clone().requires_grad_()
    (got,) = torch.autograd.grad(compiled(y), y)
    (expected,) = torch.autograd.grad(loss(y), y)
    assert (got - expected).abs().max() <= 100 * 4 * 2.3e-16 * expected.abs().max()


@pytest.mark.filterwarnings("ignore:There is a performance drop")  # vmap of conj_physical
def test_torch_func_transforms():
    """grad, jacrev and jacfwd agree with autograd; vmap with a loop; hessian with
    finite differences of the gradient."""
    func = torch.func
    w = _weights(3)
    b = _random((3, 3), torch.complex128, seed=10)

    def loss(x):
        s, u = gpusvd.takagi(x + x.mT)
        return _loss_torch(s, u, w)

    x = b.clone().requires_grad_()
    (expected,) = torch.autograd.grad(loss(x), x)
    torch.testing.assert_close(func.grad(loss)(b), expected, rtol=1e-12, atol=1e-12)
    r = _random((3, 3), torch.float64, seed=12)
    values = lambda x: gpusvd.takagi(x + x.mT)[0]   # noqa: E731  (jacrev: real input)
    jac = func.jacrev(values)(r)
    torch.testing.assert_close(func.jacfwd(values)(r), jac, rtol=1e-10, atol=1e-10)
    stack = _random((4, 3, 3), torch.complex128, seed=11)
    torch.testing.assert_close(func.vmap(loss)(stack), torch.stack([loss(m) for m in stack]))
    real_loss = lambda x: loss(x.to(torch.complex128))   # noqa: E731
    hessian = func.hessian(real_loss)(r)
    h = 1e-6
    for index in [(0, 0), (1, 2)]:
        step = torch.zeros_like(r)
        step[index] = h
        column = (func.grad(real_loss)(r + step) - func.grad(real_loss)(r - step)) / (2 * h)
        assert (hessian[(..., *index)] - column).abs().max() <= 1e-6 * column.abs().max()


def test_repeated_values_right_or_nan():
    """A = Q·diag(3, 1, 1)·Qᵀ (Q unitary): the values' gradient is finite and equals
    finite differences (a symmetric function of s); a loss that reads the repeated
    values' columns of U gets NaN; one that reads only the first column stays finite."""
    rng = np.random.default_rng(13)
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)))
    a = torch.tensor((q * [3.0, 1.0, 1.0]) @ q.T).requires_grad_()

    (grad,) = torch.autograd.grad((gpusvd.takagi(a)[0] ** 2).sum(), a)
    # Σ s² = ‖A‖²_F: its gradient is 2A, repeated values or not
    assert (grad - 2 * a.detach()).abs().max() <= 1e-12
    s, u = gpusvd.takagi(a)
    (grad,) = torch.autograd.grad((u[:, 1:].abs() ** 2 * torch.arange(2.0)).sum(), a)
    assert grad.isnan().any()
    s, u = gpusvd.takagi(a)
    (grad,) = torch.autograd.grad((u[:, 0].abs() ** 4).sum(), a)
    assert grad.isfinite().all()


def test_gauge_invariant_and_broadening_at_a_repeated_value():
    """The projector onto a repeated value's columns, U_c·U_cᴴ, does not depend on how
    they are chosen: NaN by default (it reads the cluster), finite with
    ``gauge_invariant=True`` and equal to finite differences of the eager projector;
    ``broadening`` makes it finite too."""
    rng = np.random.default_rng(19)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4)))
    a = (q * [4.0, 2.0, 2.0, 0.5]) @ q.T
    w = torch.as_tensor(rng.standard_normal((4, 4)))

    def loss(x, **rule):
        _, u = gpusvd.takagi(x + x.mT, **rule)
        return (w * (u[:, 1:3] @ u[:, 1:3].mH).real).sum()

    b = torch.tensor(a / 2)
    grads = {}
    for name, rule in (("default", {}), ("gauge_invariant", {"gauge_invariant": True}),
                       ("broadening", {"broadening": 1e-6})):
        x = b.clone().requires_grad_()
        (grads[name],) = torch.autograd.grad(loss(x, **rule), x)
    assert grads["default"].isnan().any()
    assert grads["broadening"].isfinite().all()
    h, expected = 1e-6, np.zeros((4, 4), complex)
    for index in np.ndindex(4, 4):
        for unit in (1.0, 1j):
            step = torch.zeros((4, 4), dtype=torch.complex128)
            step[index] = h * unit
            expected[index] += unit * float(loss(b + step) - loss(b - step)) / (2 * h)
    got = grads["gauge_invariant"].numpy()
    assert np.abs(got - expected).max() <= 1e-6 * np.abs(expected).max()


def test_options_and_refusals():
    a = _random((3, 3), torch.complex128, seed=14)
    a = (a + a.mT).requires_grad_()
    for method in ("jacobi", "eigh"):
        s, _ = gpusvd.takagi(a, method=method, device="cpu")
        s.sum().backward()
    with pytest.raises(ValueError, match="broadening"):
        gpusvd.takagi(a, broadening=-1.0)
    with pytest.raises(ValueError, match="gauge_invariant"):
        gpusvd.takagi(a, gauge_invariant="yes")
    with pytest.raises(ValueError, match="tol and max_sweeps"):
        gpusvd.takagi(a, method="eigh", tol=1e-8)


# --- JAX -------------------------------------------------------------------------------

def _jax():
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.buffer_callback")
    return jax


@pytest.mark.parametrize("platform", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_jax_jit_vmap_and_gradients(platform):
    jax = _jax()
    jnp = jax.numpy
    from jax.test_util import check_grads

    if platform == "gpu" and not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("needs JAX with a CUDA GPU (scripts/gpu-tests)")
    w = _weights(4)
    with jax.enable_x64(True), jax.default_device(jax.devices(platform)[0]):
        rng = np.random.default_rng(15)
        b = jnp.asarray(rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4)))

        def loss(x):
            s, u = gpusvd.takagi(x + x.T)
            return ((s ** 3).sum() + (w * jnp.abs(u) ** 2).sum()
                    + (w * ((u * s ** 2) @ u.T)).real.sum())

        eager = gpusvd.takagi(np.asarray(b + b.T), device="cpu")
        jitted = jax.jit(lambda x: gpusvd.takagi(x + x.T))(b)
        if platform == "cpu":   # the same eager call: the same bits
            for got, expected in zip(jitted, eager):
                np.testing.assert_array_equal(np.asarray(got), expected)
        s = np.asarray(jitted[0])
        assert np.abs(s - eager.S).max() <= 30 * 4 * np.finfo(float).eps * eager.S[0]
        stack = jnp.stack([b, 2 * b, b.T])
        np.testing.assert_allclose(np.asarray(jax.vmap(loss)(stack)),
                                   [float(loss(m)) for m in stack], rtol=1e-13)
        check_grads(loss, (b,), order=2, modes=("fwd", "rev"))
        check_grads(jax.jit(lambda r: loss(r.astype(jnp.complex128))), (b.real,), order=2,
                    modes=("fwd", "rev"))
        # JAX's gradient of a real loss of complex input is the conjugate of torch's
        expected = _finite_difference(np.asarray(b), w)
        got = np.conj(np.asarray(jax.jit(jax.grad(loss))(b)))
        assert np.abs(got - expected).max() <= 1e-6 * np.abs(expected).max()
