"""PyTorch autograd of ``svd``, ``svdvals`` and ``polar``: gradcheck on random, tall,
wide, stacked, complex and rank-deficient input, and finite,
right gradients at exactly repeated singular values where torch's own are NaN; every
test on CPU tensors and again on CUDA tensors (marker ``gpu``: gpusvd's forward on their
GPU, the backward in torch operations there)."""

import sys

import numpy as np
import pytest

import gpusvd
from .losses import DEGENERATE, LOSSES, finite_difference, rotated_cluster

torch = pytest.importorskip("torch")

SHAPES = [(5, 5), (7, 4), (4, 7), (2, 6, 3)]


def _device():
    return "cpu"


@pytest.fixture(autouse=True, params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def device(request, monkeypatch):
    """Every test on CPU tensors, and on CUDA tensors where a GPU is present."""
    monkeypatch.setattr(sys.modules[__name__], "_device", lambda: request.param)
    return request.param


def _tensor(a, dtype=torch.float64):
    return torch.tensor(a, dtype=dtype, device=_device(), requires_grad=True)


def _random(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=dtype)
    return x.to(_device()).requires_grad_()


def _invariant(x):
    """A loss of every output that is invariant to the SVD's gauge: sum of s, a linear
    function of U·Vᴴ, of the top-2 projector and of the polar factors."""
    u, s, vh = gpusvd.svd(x, full_matrices=False)
    w, p = gpusvd.polar(x)
    top = u[..., :2] @ u[..., :2].conj().swapaxes(-1, -2)
    weights = torch.arange(w.numel(), dtype=torch.float64, device=x.device).reshape(w.shape)
    top_sum = top.real.sum() + (top.imag.sum() if top.is_complex() else 0)
    return (s.sum() + ((u @ vh).real * weights).sum() + top_sum
            + (w.real * weights).sum() + p.real.sum() + gpusvd.svdvals(x).sum())


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_gradcheck(shape, dtype):
    assert torch.autograd.gradcheck(_invariant, (_random(shape, dtype),))


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("shape", [(5, 5), (6, 3), (3, 6)], ids=str)
def test_gradcheck_polar_sides(shape, side):
    x = _random(shape, torch.float64, seed=1)
    assert torch.autograd.gradcheck(lambda y: sum(t.sum() for t in gpusvd.polar(y, side)),
                                    (x,))


def test_gradcheck_full_matrices_uses_the_first_k_columns():
    x = _random((6, 4), torch.float64, seed=2)
    assert torch.autograd.gradcheck(
        lambda y: (lambda r: (r[0][:, :4] @ r[2]).sum())(gpusvd.svd(y, full_matrices=True)),
        (x,))


def test_gradcheck_rank_deficient():
    """Rank 2 of 4: the top values and their subspace are smooth there."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))
    x = _tensor(a)

    def loss(y):
        u, s, vh = gpusvd.svd(y, full_matrices=False)
        return s[:2].sum() + (u[:, :2] @ u[:, :2].T).sum() + (vh[:2].T @ vh[:2]).sum()
    assert torch.autograd.gradcheck(loss, (x,))


ZERO_VALUE = {"diag_210": np.diag([2.0, 1.0, 0.0]), "zero_1x1": np.zeros((1, 1)),
              "tall_zero_column": np.array([[1.0, 0.0], [2.0, 0.0], [0.5, 0.0]])}


@pytest.mark.parametrize("case", sorted(ZERO_VALUE))
def test_reconstruction_at_a_zero_value_is_nan(case):
    """Σ W∘(U·S·Vᴴ) = Σ W∘A has gradient W, but at a zero singular value its parts that
    pair a null vector of A with one of Aᴴ reach no cotangent of the SVD (rule 2): NaN,
    not a finite gradient missing them. A loss of the top vectors and values there is
    finite and right (finite differences)."""
    a = ZERO_VALUE[case]
    weights = np.arange(1.0, a.size + 1).reshape(a.shape)
    x = _tensor(a)
    u, s, vh = gpusvd.svd(x, full_matrices=False)
    (((u * s) @ vh) * torch.tensor(weights, device=x.device)).sum().backward()
    assert torch.isnan(x.grad).all()
    if min(a.shape) > 1:
        m = a.shape[0]
        square = np.arange(1.0, m * m + 1).reshape(m, m)
        x = _tensor(a)
        u, s, vh = gpusvd.svd(x, full_matrices=False)
        (s[0] + (u[:, :1] @ u[:, :1].T * torch.tensor(square, device=x.device)).sum()).backward()
        grad = x.grad.cpu().numpy()

        def reference(b, _):
            left, values, _ = np.linalg.svd(b)
            return values[0] + (left[:, :1] @ left[:, :1].T * square).sum()
        expected = finite_difference(reference, a, None)
        assert np.abs(grad - expected).max() <= 1e-6 * max(np.abs(expected).max(), 1.0)


def test_second_derivative_through_a_zero_value_is_nan():
    """The Hessian of Σs² = ‖A‖²_F is 2I everywhere, but through a zero value of a
    rank-deficient A its gradient's derivative runs where no cotangent reaches (rule 6):
    NaN there, right at full rank."""
    rng = np.random.default_rng(4)
    v = torch.tensor(rng.standard_normal((4, 4)), device=_device())
    loss = lambda y: gpusvd.svdvals(y).pow(2).sum()  # noqa: E731
    broadened = lambda y: gpusvd.svdvals(y, broadening=1e-3).pow(2).sum()  # noqa: E731
    for rank in (2, 3):
        a = rng.standard_normal((4, rank)) @ rng.standard_normal((rank, 4))
        _, hv = torch.autograd.functional.hvp(loss, _tensor(a).detach(), v)
        assert torch.isnan(hv).all()
        _, hv = torch.autograd.functional.hvp(broadened, _tensor(a).detach(), v)
        assert torch.isfinite(hv).all()  # broadening overrides the rule
    _, hv = torch.autograd.functional.hvp(loss, _tensor(rng.standard_normal((4, 4))).detach(), v)
    assert (hv - 2 * v).abs().max() <= 1e-10


@pytest.mark.parametrize("case", sorted(DEGENERATE))
def test_repeated_values_against_finite_differences(case):
    a, names = DEGENERATE[case]
    a = rotated_cluster() if a is None else a
    weights = np.arange(a.size, dtype=float).reshape(a.shape)
    for name in names:
        ours, reference = LOSSES[name]
        x = _tensor(a)
        u, s, vh = gpusvd.svd(x, full_matrices=False)
        w = gpusvd.polar(x)[0] if name == "polar_linear" else None
        ours(u, s, vh, w, torch.tensor(weights, device=x.device)).backward()
        grad = x.grad.cpu().numpy()
        expected = finite_difference(reference, a, weights)
        assert np.isfinite(grad).all(), (case, name)
        scale = max(np.abs(expected).max(), 1.0)
        assert np.abs(grad - expected).max() <= 1e-6 * scale, (case, name)


def test_torch_itself_gives_nan_there():
    """The baseline the previous test improves on (torch.linalg.svd at diag(1, 1, 2, 3))."""
    x = _tensor(np.diag([1.0, 1.0, 2.0, 3.0]))
    u, s, vh = torch.linalg.svd(x)
    (u @ vh).sum().backward()
    assert not torch.isfinite(x.grad).all()


def test_broadening_is_biased_but_finite():
    x = _tensor(np.diag([1.0, 1.0 + 1e-9, 2.0]))
    u, s, vh = gpusvd.svd(x, broadening=1e-6)
    u[:, 0].sum().backward()        # not gauge invariant: only broadening makes it finite
    assert torch.isfinite(x.grad).all()
    with pytest.raises(ValueError, match="broadening"):
        gpusvd.svd(np.eye(2), broadening=-1.0)


def test_no_grad_leaves_no_graph():
    x = _random((4, 3), torch.float64)
    with torch.no_grad():
        u, s, vh = gpusvd.svd(x)
    assert not u.requires_grad and not s.requires_grad
