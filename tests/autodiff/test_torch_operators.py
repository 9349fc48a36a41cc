"""gpusvd's torch operators in compiled and transformed code: ``torch.library.opcheck``
of each operator, ``gradcheck`` and ``gradgradcheck`` with forward mode and batched
gradients, ``torch.compile(fullgraph=True)`` equal to eager, every ``torch.func``
transform against torch's own SVD or finite differences, and the rule at repeated
singular values (right or NaN). On CPU tensors, and on CUDA tensors (marker ``gpu``)."""

import numpy as np
import pytest
import scipy.linalg

import gpusvd
from .losses import finite_difference

torch = pytest.importorskip("torch")
library = pytest.importorskip("gpusvd.autodiff.torch_library")
func = torch.func

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
SHAPES = [(5, 5), (6, 4), (4, 6), (3, 5, 4)]


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request):
    return request.param


def _random(shape, dtype, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype).to(device)


def _reference_svd(x):
    """torch's own economy SVD, in float64/complex128."""
    return torch.linalg.svd(x, full_matrices=False)


# --- the operators -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4)], ids=str)
def test_opcheck(shape, dtype, device):
    """With random cotangents for every output: a complex U's cotangent depends on the
    vectors' phases and a full U's extra columns are arbitrary, both NaN by the rule
    (and NaN ≠ NaN to opcheck), so those two are checked without a gradient."""
    x = _random(shape, dtype, device).requires_grad_()
    plain = x.detach()
    torch.library.opcheck(torch.ops.gpusvd.svd.default,
                          (plain if x.is_complex() else x, False, "{}"))
    torch.library.opcheck(torch.ops.gpusvd.svd.default, (plain, True, "{}"))
    torch.library.opcheck(torch.ops.gpusvd.svdvals.default, (x, "{}"))
    options = '{"polar": {}, "svd": {}}'
    for side in ("right", "left"):
        torch.library.opcheck(torch.ops.gpusvd.polar.default, (x, side, options))


def test_the_operators_pass_the_options_through():
    x = _random((6, 4), torch.float64, "cpu")
    s = torch.ops.gpusvd.svdvals(x, '{"method": "jacobi", "device": "cpu"}')
    ref = torch.linalg.svdvals(x)
    assert (s - ref).abs().max() <= 10 * 6 * torch.finfo(x.dtype).eps * ref[0]


def test_unsupported_options_are_refused():
    x = _random((3, 3), torch.float64, "cpu").requires_grad_()
    with pytest.raises(ValueError, match="options must be numbers, strings or booleans"):
        gpusvd.svd(x, method=object())


# --- gradcheck, gradgradcheck, forward mode, batched gradients -----------------------

def _losses(x):
    """Losses of every output: of s, of the top-2 projector across a gap, of the polar
    factors; each a real number."""
    u, s, vh = gpusvd.svd(x, full_matrices=False)
    top = u[..., :2] @ u[..., :2].conj().transpose(-1, -2)
    w, p = gpusvd.polar(x)
    wl, pl = gpusvd.polar(x, "left")
    parts = [s.pow(3).sum(), gpusvd.svdvals(x).sum(), top.sum(), w.sum(), p.sum(),
             (wl * wl.conj()).sum() + pl.sum()]
    if x.is_complex():  # (.real of a real tensor is a view forward mode refuses)
        parts = [t.real for t in parts] + [top.imag.sum() + w.imag.sum()]
    return torch.stack(parts)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_gradcheck_forward_and_batched(shape, dtype, device):
    """Batched forward mode of a complex loss is left out: a conjugate view under it
    trips an internal assert of torch (2.13), with torch.linalg.svd as with gpusvd."""
    x = _random(shape, dtype, device, seed=1).requires_grad_()
    assert torch.autograd.gradcheck(_losses, (x,), check_forward_ad=True,
                                    check_batched_grad=True,
                                    check_batched_forward_grad=not x.is_complex())


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (4, 6)], ids=str)
def test_gradgradcheck(shape, dtype, device):
    x = _random(shape, dtype, device, seed=2).requires_grad_()
    assert torch.autograd.gradgradcheck(_losses, (x,), check_fwd_over_rev=True,
                                        check_batched_grad=True)


def _operator_invariants(x):
    """Outputs of the operators called directly (``torch.ops.gpusvd.*``) that do not
    depend on the vectors' signs or phases, as one real tensor."""
    ops = torch.ops.gpusvd
    u, s, vh = ops.svd(x, False, "{}")
    top = u[..., :2] @ u[..., :2].conj().transpose(-1, -2)
    options = '{"polar": {}, "svd": {}}'
    parts = [s, ops.svdvals(x, "{}"), top, *ops.polar(x, "right", options),
             *ops.polar(x, "left", options)]
    flat = [torch.view_as_real(t) if t.is_complex() else t for t in parts]
    return torch.cat([t.flatten() for t in flat])


@pytest.mark.parametrize("shape, dtype", [((5, 5), torch.float64), ((6, 4), torch.float64),
                                          ((4, 6), torch.float64), ((6, 4), torch.complex128)],
                         ids=str)
def test_the_operators_have_every_derivative(shape, dtype, device):
    """Reverse, forward and second-order derivatives of the operators themselves, and
    ``torch.func.jvp`` of them against central differences: a ``custom_op`` gives a zero
    tangent there, silently. Nested derivative transforms are refused."""
    x = _random(shape, dtype, device, seed=11).requires_grad_()
    assert torch.autograd.gradcheck(_operator_invariants, (x,), check_forward_ad=True,
                                    check_batched_grad=True,
                                    check_batched_forward_grad=not x.is_complex())
    if shape == (5, 5) and not x.is_complex():  # (each check is hundreds of calls)
        assert torch.autograd.gradgradcheck(_operator_invariants, (x,),
                                            check_fwd_over_rev=True)
    x, t = x.detach(), _random(shape, dtype, device, seed=12)
    _, tangent = func.jvp(_operator_invariants, (x,), (t,))
    h = 1e-6
    expected = (_operator_invariants(x + h * t) - _operator_invariants(x - h * t)) / (2 * h)
    assert (tangent - expected).abs().max() <= 1e-6 * expected.abs().max()
    assert expected.abs().max() > 0.1
    if not x.is_complex():
        forward = func.jacfwd(_operator_invariants)(x)
        reverse = func.jacrev(_operator_invariants)(x)
        assert (forward - reverse).abs().max() <= 1e-10 * reverse.abs().max()
        batched = func.vmap(lambda d: func.jvp(_operator_invariants, (x,), (d,))[1])(
            torch.stack([t, 2 * t]))
        assert (batched[1] - 2 * tangent).abs().max() <= 1e-10 * tangent.abs().max()
        mapped = func.vmap(func.jacrev(_operator_invariants))(torch.stack([x, x]))
        assert (mapped[1] - reverse).abs().max() <= 1e-10 * reverse.abs().max()
        for nested in (func.jacrev(func.jacrev(_operator_invariants)),
                       func.jacfwd(func.jacrev(_operator_invariants))):
            with pytest.raises(NotImplementedError, match="nested torch.func derivatives"):
                nested(x)  # (the outer derivative would be lost: zero or wrong)


def test_full_matrices_derivative_of_the_first_columns(device):
    x = _random((6, 4), torch.float64, device, seed=3).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda y: (lambda r: (r[0][:, :4] @ r[2]).sum())(gpusvd.svd(y)), (x,),
        check_forward_ad=False)


def test_full_matrices_extra_columns_have_no_derivative(device):
    """The last m − k columns of a full U are any basis of the complement: a loss that
    reads them gets NaN, in reverse and forward mode."""
    x = _random((6, 4), torch.float64, device, seed=3).requires_grad_()
    u, s, vh = gpusvd.svd(x)
    (grad,) = torch.autograd.grad(u[:, 5].sum(), x)
    assert torch.isnan(grad).all()
    _, tangent = func.jvp(lambda y: gpusvd.svd(y)[0], (x.detach(),),
                          (torch.ones_like(x),))
    assert torch.isnan(tangent[:, 4:]).all() and torch.isfinite(tangent[:, :4]).all()


# --- torch.compile --------------------------------------------------------------------

def _training_loss(x):
    """A penalty a training step uses: spectral norm, orthogonality of the polar factor."""
    u, s, vh = gpusvd.svd(x, full_matrices=False)
    w, _ = gpusvd.polar(x)
    return s[..., 0].sum() + (s ** 2).sum() + ((x - w) ** 2).sum() + (u @ vh).sum()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(6, 4), (3, 5, 5)], ids=str)
def test_compile_fullgraph_equals_eager(shape, dtype, device):
    torch._dynamo.reset()
    x = _random(shape, dtype, device, seed=4)
    compiled = torch.compile(lambda y: tuple(gpusvd.svd(y, full_matrices=False))
                             + (gpusvd.svdvals(y),) + tuple(gpusvd.polar(y)),
                             fullgraph=True, backend="aot_eager")
    eager = tuple(gpusvd.svd(x, full_matrices=False)) + (gpusvd.svdvals(x),) + tuple(
        gpusvd.polar(x))
    for got, expected in zip(compiled(x), eager):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        torch.testing.assert_close(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_compile_fullgraph_gradient_equals_eager(dtype, device):
    torch._dynamo.reset()
    x = _random((3, 6, 5), dtype, device, seed=5)
    compiled = torch.compile(_training_loss, fullgraph=True, backend="aot_eager")
    y = x.clone().requires_grad_()
    (got,) = torch.autograd.grad(compiled(y).real, y)
    (expected,) = torch.autograd.grad(_training_loss(y).real, y)
    eps = torch.finfo(dtype).eps
    assert (got - expected).abs().max() <= 100 * 6 * eps * expected.abs().max()


@pytest.mark.parametrize("shape", [(4, 4), (6, 4), (4, 6)], ids=str)
def test_opcheck_of_the_derivative_operators(shape, device):
    """The complex derivatives compiled code calls (torch_library's svd_backward and
    polar_backward): opcheck with the cotangents of Re⟨W, U·S·Vᴴ⟩, whose phases agree (a
    random complex cotangent of U would be NaN by rule 5, and NaN ≠ NaN to opcheck)."""
    from gpusvd.autodiff import torch_library as library

    x = _random(shape, torch.complex128, device, seed=8).detach()
    u, s, vh = torch.linalg.svd(x, full_matrices=False)
    w = _random(shape, torch.complex128, device, seed=9).detach()
    gu, gvh = w @ vh.mH * s, s[:, None] * (u.mH @ w)
    gs = torch.diagonal(u.mH @ w @ vh.mH).real.contiguous()
    torch.library.opcheck(library.svd_backward_op, (u, s, vh, gu, gs, gvh, False, 0.0))
    torch.library.opcheck(library.svd_backward_op, (u, s, vh, None, gs, None, False, 0.0))
    gp = _random((shape[1], shape[1]), torch.complex128, device, seed=10).detach()
    torch.library.opcheck(library.polar_backward_op, (u, s, vh, w, None))
    torch.library.opcheck(library.polar_backward_op, (u, s, vh, w, gp + gp.mH))


def _triton_lacks_complex(error):
    """Whether inductor failed for want of a complex dtype in its Triton code generation
    (``KeyError: 'complex128'`` from its kernel signatures): a limit of inductor on CUDA
    that any complex loss of this form meets, torch's own SVD's included."""
    text = f"{error!r} {error.__cause__!r}"
    return "KeyError" in text and "complex" in text


@pytest.mark.filterwarnings("ignore:.*is deprecated:FutureWarning")  # inductor's own
@pytest.mark.filterwarnings("ignore:Torchinductor does not support code generation")
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
def test_compile_default_backend_gradient_equals_eager(dtype, device):
    """Inductor, the default backend, on the derivative's formulas: the trace of P is ‖A‖
    for one entry (gradient a/|a|) and Re tr(U·S·Vᴴ) = Re tr A (gradient I), complex
    included (the derivatives' operators of torch_library)."""
    losses = [lambda y: torch.diagonal(gpusvd.polar(y)[1], dim1=-2, dim2=-1).real.sum(),
              lambda y: (lambda u, s, vh: torch.diagonal((u * s.to(u.dtype)) @ vh, dim1=-2,
                                                         dim2=-1).real.sum())(
                  *gpusvd.svd(y, full_matrices=False))]
    x = _random((4, 4), dtype, device, seed=6)
    uncompiled = []
    for loss in losses:
        torch._dynamo.reset()
        compiled = torch.compile(loss, fullgraph=True)
        y = x.clone().requires_grad_()
        try:
            (got,) = torch.autograd.grad(compiled(y), y)
        except Exception as error:  # inductor's own error class
            if not (dtype.is_complex and _triton_lacks_complex(error)):
                raise
            uncompiled.append(loss)
            continue
        (expected,) = torch.autograd.grad(loss(y), y)
        assert (got - expected).abs().max() <= 100 * 4 * 2.3e-16 * expected.abs().max()
    y = x.clone().requires_grad_()
    (got,) = torch.autograd.grad(losses[1](y), y)
    assert (got - torch.eye(4, dtype=dtype, device=device)).abs().max() <= 100 * 4 * 2.3e-16
    if uncompiled:
        pytest.skip(f"inductor's Triton code has no {dtype} ({len(uncompiled)} of "
                    f"{len(losses)} losses not compiled)")


@pytest.mark.filterwarnings("ignore::UserWarning")  # inductor's skipped CUDA graphs
def test_compile_reduce_overhead_computes_each_call(device):
    """``mode="reduce-overhead"`` records CUDA graphs and replays them; gpusvd's operators
    decide on the host (routing, convergence) and are tagged ``cudagraph_unsafe``, so each
    call decomposes its own data, forward and backward."""
    torch._dynamo.reset()
    loss = torch.compile(lambda y: (gpusvd.svdvals(y) ** 2).sum() + gpusvd.polar(y)[1].sum(),
                         mode="reduce-overhead")
    for seed in (7, 8, 9, 7, 8, 9):
        x = _random((6, 4), torch.float64, device, seed=seed).requires_grad_()
        got = loss(x)
        (grad,) = torch.autograd.grad(got, x)
        y = x.detach().requires_grad_()
        expected = (torch.linalg.svdvals(y) ** 2).sum() + (lambda u, s, vh: (
            vh.mT * s[None, :]) @ vh)(*torch.linalg.svd(y, full_matrices=False)).sum()
        (grad_expected,) = torch.autograd.grad(expected, y)
        assert abs(float(got) - float(expected)) <= 1e-12 * abs(float(expected))
        assert (grad - grad_expected).abs().max() <= 1e-10 * grad_expected.abs().max()


def test_export_captures_the_operators():
    x = _random((6, 4), torch.float64, "cpu")

    class Values(torch.nn.Module):
        def forward(self, y):
            return gpusvd.svdvals(y)

    program = torch.export.export(Values(), (x,))
    assert "gpusvd.svdvals" in str(program.graph)
    torch.testing.assert_close(program.module()(x), gpusvd.svdvals(x), rtol=0, atol=0)


# --- torch.func -----------------------------------------------------------------------

def _cubes(svdvals):
    return lambda x: svdvals(x).pow(3).sum()


def test_func_grad_vjp_hessian_against_torch(device):
    x = _random((5, 4), torch.float64, device, seed=6)
    ours, theirs = _cubes(gpusvd.svdvals), _cubes(torch.linalg.svdvals)
    tol = 100 * 5 * torch.finfo(x.dtype).eps
    assert (func.grad(ours)(x) - func.grad(theirs)(x)).abs().max() <= tol * 100
    hess, ref = func.hessian(ours)(x), func.hessian(theirs)(x)
    assert (hess - ref).abs().max() <= tol * ref.abs().max()
    (vjp_ours,) = func.vjp(gpusvd.svdvals, x)[1](torch.ones(4, dtype=x.dtype, device=device))
    (vjp_ref,) = func.vjp(torch.linalg.svdvals, x)[1](torch.ones(4, dtype=x.dtype,
                                                                  device=device))
    assert (vjp_ours - vjp_ref).abs().max() <= tol


def test_func_jacfwd_jacrev_against_torch(device):
    """Of the projector onto the top two singular vectors and of the values: torch's
    own SVD is finite at this random matrix."""
    x = _random((5, 4), torch.float64, device, seed=7)

    def top(svd):
        return lambda y: (lambda u: u[:, :2] @ u[:, :2].T)(svd(y, full_matrices=False)[0])
    for f, g in ((top(gpusvd.svd), top(torch.linalg.svd)),
                 (gpusvd.svdvals, torch.linalg.svdvals)):
        ref = func.jacrev(g)(x)
        for jac in (func.jacfwd(f)(x), func.jacrev(f)(x)):
            assert (jac - ref).abs().max() <= 1e-12 * max(ref.abs().max(), 1)


def test_func_jvp_of_polar_against_finite_differences(device):
    x = _random((5, 4), torch.float64, device, seed=8)
    t = _random((5, 4), torch.float64, device, seed=9)
    _, (dw, dp) = func.jvp(gpusvd.polar, (x,), (t,))
    a, h = x.cpu().numpy(), 1e-6
    d = t.cpu().numpy()
    for got, k in ((dw, 0), (dp, 1)):
        expected = (scipy.linalg.polar(a + h * d)[k] - scipy.linalg.polar(a - h * d)[k]) / (2 * h)
        assert np.abs(got.cpu().numpy() - expected).max() <= 1e-7 * np.abs(expected).max()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_func_vmap_maps_onto_the_stack(dtype, device, monkeypatch):
    """One call of the operator for the whole batch, not one per matrix."""
    x = _random((7, 5, 4), dtype, device, seed=10)
    calls = []
    eager = library.EAGER["svd"]
    monkeypatch.setitem(library.EAGER, "svd", lambda a, **kw: calls.append(a.shape)
                        or eager(a, **kw))
    got = func.vmap(gpusvd.svdvals)(x)
    assert calls == [(7, 5, 4)]
    ref = torch.linalg.svdvals(x.to(torch.complex128 if x.is_complex() else torch.float64))
    eps = torch.finfo(x.dtype).eps
    assert (got - ref.to(got.dtype)).abs().max() <= 10 * 5 * eps * ref.max()
    u, s, vh = func.vmap(lambda y: tuple(gpusvd.svd(y, full_matrices=False)))(x)
    assert ((u * s[..., None, :].to(u.dtype)) @ vh - x).abs().max() <= 10 * 5 * eps * ref.max()


def test_func_vmap_of_grad(device):
    x = _random((4, 5, 4), torch.float64, device, seed=11)
    ours = func.vmap(func.grad(_cubes(gpusvd.svdvals)))(x)
    ref = func.vmap(func.grad(_cubes(torch.linalg.svdvals)))(x)
    assert (ours - ref).abs().max() <= 1e-12 * ref.abs().max()


def test_forward_mode_dual_tensor(device):
    """The case that gave a None tangent: svdvals of a dual tensor."""
    import torch.autograd.forward_ad as fwAD

    x = _random((5, 4), torch.float64, device, seed=12)
    t = _random((5, 4), torch.float64, device, seed=13)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(gpusvd.svdvals(fwAD.make_dual(x, t))).tangent
    u, _, vh = _reference_svd(x)
    expected = torch.diagonal(u.T @ t @ vh.T)
    assert tangent is not None and (tangent - expected).abs().max() <= 1e-13


_TRANSFORMED_LOSSES = {
    "svdvals": lambda y: gpusvd.svdvals(y).pow(3).sum(),
    "svd": lambda y: (lambda u, s, vh: (u[0] * vh[:, 0]).sum() * s.sum())(
        *gpusvd.svd(y, full_matrices=False)),
    "polar": lambda y: torch.diagonal(gpusvd.polar(y)[1]).sum() + gpusvd.polar(y)[0][0, 0],
}


def _dual_tangent(loss):
    import torch.autograd.forward_ad as fwAD

    def tangent(y, t):
        with fwAD.dual_level():
            return fwAD.unpack_dual(loss(fwAD.make_dual(y, t))).tangent
    return tangent


# Each transform's derivative of a loss along t, and whether it is of second order
# (t·H·t, against the central difference of the gradient along t).
_TRANSFORMS = {
    "jvp": (lambda loss: lambda y, t: func.jvp(loss, (y,), (t,))[1], False),
    "jacfwd": (lambda loss: lambda y, t: (func.jacfwd(loss)(y) * t).sum(), False),
    "dual": (_dual_tangent, False),
    "vmap-jvp": (lambda loss: lambda y, t: func.vmap(
        lambda a, b: func.jvp(loss, (a,), (b,))[1])(torch.stack([y, -y]),
                                                    torch.stack([t, t]))[0], False),
    "grad": (lambda loss: lambda y, t: (func.grad(loss)(y) * t).sum(), False),
    "jacrev": (lambda loss: lambda y, t: (func.jacrev(loss)(y) * t).sum(), False),
    "vmap-grad": (lambda loss: lambda y, t: (func.vmap(func.grad(loss))(
        torch.stack([y, -y]))[0] * t).sum(), False),
    "hessian": (lambda loss: lambda y, t: torch.tensordot(
        torch.tensordot(func.hessian(loss)(y), t, dims=2), t, dims=2), True),
    "grad-vmap": (lambda loss: lambda y, t: (func.grad(lambda z: func.vmap(loss)(
        torch.stack([z, z])).sum() / 2)(y) * t).sum(), False),
    "jacfwd-vmap": (lambda loss: lambda y, t: (func.jacfwd(lambda z: func.vmap(loss)(
        torch.stack([z, z])).sum() / 2)(y) * t).sum(), False),
    "grad-grad": (lambda loss: lambda y, t: func.grad(func.grad(
        lambda r: loss(y + r * t)))(torch.zeros((), dtype=y.dtype, device=y.device)), True),
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # Dynamo's graph-break warnings
@pytest.mark.parametrize("fullgraph", [False, True], ids=["graph-break", "fullgraph"])
@pytest.mark.parametrize("mode", list(_TRANSFORMS))
@pytest.mark.parametrize("loss", list(_TRANSFORMED_LOSSES))
def test_compiled_transforms_are_right_or_refused(loss, mode, fullgraph, device):
    """torch.func's derivatives under torch.compile: each equals the central
    difference, or the call raises; never a wrong finite value (forward mode gave 0: the
    operators' outputs counted as constants). Those of :func:`_compiled_right` must come
    out right, not refused. The eager transforms are checked against finite differences
    too."""
    f = _TRANSFORMED_LOSSES[loss]
    x = _random((5, 4), torch.float64, device, seed=30)
    t = _random((5, 4), torch.float64, device, seed=31)
    h = 1e-6
    make, second = _TRANSFORMS[mode]
    if second:
        expected = float(((func.grad(f)(x + h * t) - func.grad(f)(x - h * t)) * t).sum()
                         / (2 * h))
    else:
        expected = float((f(x + h * t) - f(x - h * t)) / (2 * h))
    transform = make(f)
    tol = 1e-6 * max(abs(expected), 1)
    assert abs(float(transform(x, t)) - expected) <= tol
    torch._dynamo.reset()
    try:
        got = torch.compile(transform, fullgraph=fullgraph, backend="aot_eager")(x, t)
    except Exception:  # Dynamo's or torch's own error: refused, loudly
        assert mode not in _compiled_right(fullgraph), "refused, expected right"
        return
    assert got is not None and abs(float(got) - expected) <= tol


def _compiled_right(fullgraph):
    """The transforms that come out right compiled: one derivative transform in the graph
    (with ``vmap``: before PyTorch 2.13 ``vmap`` of ``grad`` too); forward mode behind the
    graph break (dual tensors excepted: torch.compile hands the operator's implementation
    the dual tensor, refused), and from 2.13 nested transforms too
    (torch_ops._resumes_reverse_transforms)."""
    right = {"grad", "jacrev", "grad-vmap"}
    if torch.__version__ < "2.13":
        right.add("vmap-grad")
    if not fullgraph:
        right |= {"jvp", "jacfwd", "vmap-jvp"}
        if torch.__version__ >= "2.13":
            right |= {"vmap-grad", "hessian", "grad-grad"}
    return right


# --- the rule at repeated values ------------------------------------------------------

def _grad_at(a, loss, device, **options):
    x = torch.tensor(a, dtype=torch.float64, device=device, requires_grad=True)
    (grad,) = torch.autograd.grad(loss(x, **options), x)
    return grad.cpu().numpy()


ORTHOGONAL = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))[0]
WEIGHTS = np.arange(16.0).reshape(4, 4) / 16


def _reconstruction(x, **options):
    u, s, vh = gpusvd.svd(x, full_matrices=False, **options)
    return ((u * s) @ vh * torch.tensor(WEIGHTS, device=x.device)).sum()


def _spectral_function(x, **options):
    """U·g(S)·Vᴴ with g = exp."""
    u, s, vh = gpusvd.svd(x, full_matrices=False, **options)
    return ((u * s.exp()) @ vh * torch.tensor(WEIGHTS, device=x.device)).sum()


def _polar_factor(x, **options):
    return (gpusvd.polar(x)[0] * torch.tensor(WEIGHTS, device=x.device)).sum()


def _values(x, **options):
    return gpusvd.svdvals(x).pow(3).sum() + gpusvd.svdvals(x).sum()


def _top_projector(x, **options):
    u = gpusvd.svd(x, full_matrices=False, **options)[0]
    return (u[:, :2] @ u[:, :2].T * torch.tensor(WEIGHTS, device=x.device)).sum()


def _reference(loss):
    """The same loss of a NumPy matrix, for finite differences."""
    def values(a):
        return np.linalg.svd(a, compute_uv=False)
    return {_reconstruction: lambda a, w: (a * w).sum(),
            _spectral_function: lambda a, w: ((lambda u, s, vh: (u * np.exp(s)) @ vh)(
                *np.linalg.svd(a)) * w).sum(),
            _polar_factor: lambda a, w: (scipy.linalg.polar(a)[0] * w).sum(),
            _values: lambda a, w: (values(a) ** 3).sum() + values(a).sum(),
            _top_projector: lambda a, w: ((lambda u: u[:, :2] @ u[:, :2].T)(
                np.linalg.svd(a)[0]) * w).sum()}[loss]


REPEATED = {"identity": np.eye(4), "orthogonal": ORTHOGONAL,
            "diag_3211": np.diag([3.0, 2.0, 1.0, 1.0])}


@pytest.mark.parametrize("case", sorted(REPEATED))
@pytest.mark.parametrize("loss", [_values, _polar_factor], ids=lambda f: f.__name__)
def test_repeated_values_right(case, loss, device):
    """Functions of s and of the polar factor: finite differences' value."""
    a = REPEATED[case]
    expected = finite_difference(_reference(loss), a, WEIGHTS)
    grad = _grad_at(a, loss, device)
    assert np.abs(grad - expected).max() <= 1e-7 * max(np.abs(expected).max(), 1)


def test_projector_across_a_gap_right_where_the_cluster_is_not_read(device):
    a = np.diag([3.0, 2.0, 1.0, 1.0])
    expected = finite_difference(_reference(_top_projector), a, WEIGHTS)
    grad = _grad_at(a, _top_projector, device)
    assert np.abs(grad - expected).max() <= 1e-7 * max(np.abs(expected).max(), 1)


@pytest.mark.parametrize("case", sorted(REPEATED))
@pytest.mark.parametrize("loss", [_reconstruction, _spectral_function],
                         ids=lambda f: f.__name__)
def test_repeated_values_nan_where_the_svd_cannot_know(case, loss, device):
    """U·g(S)·Vᴴ at repeated values needs g's divided differences, which the SVD's
    cotangents do not carry: NaN, not the wrong finite number the 0 limit gives."""
    a = REPEATED[case]
    assert np.isnan(_grad_at(a, loss, device)).all()
    expected = finite_difference(_reference(loss), a, WEIGHTS)
    wrong = _grad_at(a, loss, device, gauge_invariant=True)
    assert np.abs(wrong - expected).max() > 1e-3  # why it is not the default


def test_gauge_invariant_takes_the_limit_of_invariant_losses(device):
    """The top-2 projector of diag(2, 1, 1, 1): its cluster {1, 1, 1} straddles the
    cut, no gap, the loss is not differentiable; with diag(3, 3, 1, 1) the projector
    spans a whole cluster and gauge_invariant gives finite differences' value where the
    default is NaN (column 0 and 1 are read, and repeated)."""
    a = np.diag([3.0, 3.0, 1.0, 1.0])
    assert np.isnan(_grad_at(a, _top_projector, device)).all()
    expected = finite_difference(_reference(_top_projector), a, WEIGHTS)
    grad = _grad_at(a, _top_projector, device, gauge_invariant=True)
    assert np.abs(grad - expected).max() <= 1e-7 * max(np.abs(expected).max(), 1)


def test_nuclear_norm_at_rank_deficiency_is_the_minimal_norm_subgradient(device):
    rng = np.random.default_rng(14)
    a = rng.standard_normal((5, 2)) @ rng.standard_normal((2, 4))
    grad = _grad_at(a, lambda x: gpusvd.svdvals(x).sum(), device)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    minimal = u[:, :2] @ vh[:2]
    expected = finite_difference(lambda b, w: np.linalg.svd(b, compute_uv=False).sum(), a,
                                 None)
    assert np.abs(grad - minimal).max() <= 1e-12
    assert np.abs(grad - expected).max() <= 1e-6


@pytest.mark.filterwarnings("ignore::UserWarning")  # Dynamo's graph-break warnings
@pytest.mark.parametrize("backend", [None, "eager", "aot_eager"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("shape", [(5, 5), (6, 4), (4, 6)])
def test_values_only_at_rank_deficiency_compiled_as_eager(shape, dtype, backend, device):
    """The nuclear norm at a rank-2 matrix: the minimal-norm subgradient U_r·V_rᴴ (rule
    1), eager and compiled alike. Compiled code hands the SVD's Function zero cotangents
    of U and V where eager code hands None; zeros read no vector, so rule 2 (NaN at a
    zero value beside U or V) must not fire (it did: NaN under torch.compile)."""
    rng = np.random.default_rng(17)
    left, right = rng.standard_normal((shape[0], 2)), rng.standard_normal((2, shape[1]))
    if dtype == torch.complex128:
        left = left + 1j * rng.standard_normal(left.shape)
        right = right + 1j * rng.standard_normal(right.shape)
    a = left @ right
    x = torch.tensor(a, dtype=dtype, device=device, requires_grad=True)

    def gradient(y):
        return torch.autograd.grad(gpusvd.svdvals(y).sum(), y)[0]

    if backend is not None:
        torch._dynamo.reset()
        gradient = torch.compile(gradient, backend=backend)
    grad = gradient(x).cpu().numpy()
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    assert np.abs(grad - u[:, :2] @ vh[:2]).max() <= 1e-12


def test_spectral_norm_at_a_repeated_top_value_is_the_minimal_norm_subgradient(device):
    """max s at diag(2, 2, 1): the subdifferential is {U_c·Z·V_cᴴ, Z ⪰ 0, tr Z = 1}, its
    minimal-norm element Z = I/2."""
    grad = _grad_at(np.diag([2.0, 2.0, 1.0]), lambda x: gpusvd.svdvals(x)[0], device)
    np.testing.assert_allclose(grad, np.diag([0.5, 0.5, 0.0]), atol=1e-15)


def test_second_derivative_at_random_input_against_torch(device):
    """The Hessian-vector product that was 95% off."""
    x = _random((5, 4), torch.float64, device, seed=15)
    v = _random((5, 4), torch.float64, device, seed=16)
    ours = torch.autograd.functional.hvp(_cubes(gpusvd.svdvals), x, v)[1]
    ref = torch.autograd.functional.hvp(_cubes(torch.linalg.svdvals), x, v)[1]
    assert (ours - ref).abs().max() <= 1e-12 * ref.abs().max()


def test_complex_loss_that_depends_on_the_phases_is_nan(device):
    x = _random((4, 3), torch.complex128, device).requires_grad_()
    u, s, vh = gpusvd.svd(x, full_matrices=False)
    (grad,) = torch.autograd.grad(u[0, 0].real, x)
    assert torch.isnan(grad).any()


def test_phase_dependence_is_judged_matrix_by_matrix(device):
    """A stack whose first matrix's loss is phase-invariant and large, the second's
    phase-dependent and small: the second gets NaN, the first stays finite."""
    x = _random((2, 4, 3), torch.complex128, device, seed=17).requires_grad_()
    u, s, vh = gpusvd.svd(x, full_matrices=False)
    top = u[0, :, :1] @ u[0, :, :1].conj().T
    loss = 1e8 * top.real.sum() + u[1, 0, 0].real
    (grad,) = torch.autograd.grad(loss, x)
    assert torch.isfinite(grad[0]).all() and torch.isnan(grad[1]).any()
