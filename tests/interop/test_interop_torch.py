"""PyTorch tensors in, PyTorch tensors out, on the input's device.

CPU tensors go through NumPy (``numpy.from_dlpack``) and come back as CPU tensors; CUDA
tensors cross to CuPy and back with no host round trip: viewed in place where torch and
CuPy work on one stream, by DLPack's exchange otherwise. Tensors that require
grad, carry a lazy conjugate, or are not contiguous are taken as they are.
"""

import contextlib
import subprocess
import sys

import numpy as np
import pytest

import gpusvd
from gpusvd._core import arrays
from .interop_cases import CASES, IDS, as_numpy, results

torch = pytest.importorskip("torch", reason="PyTorch is not installed here")


def _numpy(t):
    return t.detach().resolve_conj().cpu().numpy()


def _forbid_host_round_trip(monkeypatch):
    """Make every way from a tensor or a CuPy array to host memory that gpusvd's array
    layer could take raise (the drivers' own small host copies stay allowed)."""
    def boom(*args, **kwargs):
        raise AssertionError("host round trip")
    for name in ("cpu", "numpy", "__array__", "tolist"):
        monkeypatch.setattr(torch.Tensor, name, boom)
    monkeypatch.setattr(arrays, "to_host", boom)
    monkeypatch.setattr(np, "from_dlpack", boom)


class _CudaStream:
    """A stream by its handle, in the CUDA stream protocol (``__cuda_stream__``)."""

    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return 0, self.handle


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cpu_tensor(case):
    a = case.make()
    out = case.call(torch.from_numpy(a.copy()))
    assert all(isinstance(x, torch.Tensor) and x.device.type == "cpu" for x in results(out))
    case.check(a, as_numpy(out, _numpy))


def test_cpu_requires_grad_and_non_contiguous():
    a = np.random.default_rng(0).standard_normal((20, 12))
    x = torch.from_numpy(a.T.copy()).T.requires_grad_()  # a transposed view
    assert not x.is_contiguous()
    u, s, vh = gpusvd.svd(x, full_matrices=False)
    assert all(t.requires_grad for t in (u, s, vh))  # the backward is recorded
    assert np.allclose(_numpy(u) * _numpy(s) @ _numpy(vh), a)


def test_cpu_conjugate_view():
    rng = np.random.default_rng(1)
    z = rng.standard_normal((9, 7)) + 1j * rng.standard_normal((9, 7))
    x = torch.from_numpy(z).conj()  # lazy: the conjugate bit is set
    assert x.is_conj()
    u, s, vh = gpusvd.svd(x, full_matrices=False)
    assert np.allclose(_numpy(u) * _numpy(s) @ _numpy(vh), z.conj())


@pytest.mark.gpu
class TestCUDA:
    device = "cuda:0"

    def put(self, a):
        return torch.from_numpy(a.copy()).to(self.device)

    @pytest.mark.parametrize("case", CASES, ids=IDS)
    def test_same_type_and_device_no_host(self, case, monkeypatch):
        a = case.make()
        x = self.put(a)
        _forbid_host_round_trip(monkeypatch)
        out = case.call(x)
        torch.cuda.synchronize(self.device)
        monkeypatch.undo()
        for r in results(out):
            assert isinstance(r, torch.Tensor) and r.device == x.device
            assert r.is_contiguous()
        case.check(a, as_numpy(out, _numpy))

    def test_requires_grad_non_contiguous_conjugate(self):
        rng = np.random.default_rng(2)
        a = rng.standard_normal((40, 24))
        x = self.put(a.T.copy()).T.requires_grad_()
        u, s, vh = gpusvd.svd(x, full_matrices=False)
        assert u.device == x.device and u.requires_grad  # the backward recorded
        assert np.allclose(_numpy(u) * _numpy(s) @ _numpy(vh), a)
        z = a + 1j * rng.standard_normal(a.shape)
        u, s, vh = gpusvd.svd(self.put(z).conj(), full_matrices=False)
        assert np.allclose(_numpy(u) * _numpy(s) @ _numpy(vh), z.conj())

    def test_stream_order(self):
        # Input produced and results consumed on a side stream: the DLPack exchange must
        # order CuPy's work after the producer's and the consumer's after CuPy's.
        side = torch.cuda.Stream(device=self.device)
        rng = np.random.default_rng(3)
        base = self.put(rng.standard_normal((512, 512)))
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            a = base
            for _ in range(20):  # keep the side stream busy when gpusvd starts
                a = a @ base / 64.0
            u, s, vh = gpusvd.svd(a, full_matrices=False)
            back = (u * s) @ vh
        torch.cuda.synchronize(self.device)
        assert torch.allclose(back, a, atol=1e-10 * float(a.abs().max()))

    @pytest.mark.parametrize("shared_stream", [False, True])
    def test_one_stream_is_viewed_without_exchange(self, shared_stream):
        # Where torch and CuPy work on one stream (the default one, or one the caller
        # gave both), the tensor is viewed in place and the results are the CuPy call's
        # bit for bit; on a stream of torch's alone DLPack's exchange orders the work
        # (test_stream_order).
        import cupy

        rng = np.random.default_rng(4)
        a = rng.standard_normal((30, 6, 5)) + 1j * rng.standard_normal((30, 6, 5))
        expected = gpusvd.svd(cupy.asarray(a), full_matrices=False)
        side = torch.cuda.Stream(device=self.device)
        x = self.put(a)
        with torch.cuda.device(self.device):
            cupy_stream = (cupy.cuda.Stream.from_external(_CudaStream(side.cuda_stream))
                           if shared_stream else contextlib.nullcontext())
            with torch.cuda.stream(side if shared_stream else
                                   torch.cuda.current_stream(self.device)), cupy_stream:
                view = arrays._torch_cuda_view(x, cupy)
                assert view is not None and view[0].data.ptr == x.data_ptr()
                got = gpusvd.svd(x, full_matrices=False)
            torch.cuda.synchronize(self.device)
        for r, e in zip(got, expected):
            assert r.device == x.device and np.array_equal(_numpy(r), cupy.asnumpy(e))
        with torch.cuda.stream(side):
            assert arrays._torch_cuda_view(x, cupy) is None


@pytest.mark.gpu
class TestSecondGPU(TestCUDA):
    """A tensor on ``cuda:1`` is computed there and comes back there."""

    device = "cuda:1"

    @pytest.fixture(autouse=True)
    def _needs_two(self):
        if torch.cuda.device_count() < 2:
            pytest.skip("needs two GPUs")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_round_trips_its_dtype(dtype):
    """float16 and bfloat16: computed in float32, returned in the input's dtype."""
    dt = getattr(torch, dtype)
    x = torch.randn(12, 7, generator=torch.Generator().manual_seed(0)).to(dt)
    u, s, vh = gpusvd.svd(x, full_matrices=False)
    assert u.dtype == s.dtype == vh.dtype == dt
    assert gpusvd.svdvals(x).dtype == dt and gpusvd.polar(x)[1].dtype == dt
    eps = torch.finfo(dt).eps
    back = u.float() * s.float() @ vh.float()
    assert float((back - x.float()).abs().max()) <= 30 * 12 * eps * float(s.float().max())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_autocast_takes_half_precision_to_float32_as_torch_linalg(dtype):
    """Inside torch.autocast, half-precision input comes back in float32, as autocast
    runs torch.linalg.svdvals: eager, differentiated and compiled; the gradient reaches
    the input in its own dtype, as torch's does."""
    dt = getattr(torch, dtype)
    x = torch.randn(12, 7, generator=torch.Generator().manual_seed(1)).to(dt)
    eps = torch.finfo(torch.float32).eps
    with torch.autocast("cpu", dtype=dt):
        want = torch.linalg.svdvals(x)
        u, s, vh = gpusvd.svd(x, full_matrices=False)
        assert want.dtype == u.dtype == s.dtype == vh.dtype == torch.float32
        assert float((s - want).abs().max()) <= 30 * 12 * eps * float(want[0])
        assert gpusvd.svdvals(x).dtype == gpusvd.polar(x)[0].dtype == torch.float32
        ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
        gpusvd.svdvals(ours).sum().backward()
        torch.linalg.svdvals(theirs).sum().backward()
        assert ours.grad.dtype == theirs.grad.dtype == dt
        torch.testing.assert_close(ours.grad, theirs.grad)
        compiled = torch.compile(lambda y: gpusvd.svdvals(y @ y.T), fullgraph=True)(x)
        assert compiled.dtype == torch.float32
    assert gpusvd.svdvals(x).dtype == dt   # outside autocast: the input's own dtype again


def _without_derivative():
    """A call of each public function that has no derivative, on a fitting tensor."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 4))
    return [(gpusvd.jacobi_svd, torch.from_numpy(a)),
            (lambda x: gpusvd.svd_lowrank(x, 0.1).S, torch.from_numpy(a)),
            (lambda x: gpusvd.hsvd(x, np.array([1, -1, 1, -1])).S,
             torch.from_numpy(a))]


@pytest.mark.parametrize("index", range(3))
def test_no_derivative_refuses_a_tensor_that_requires_grad(index):
    # Its results would count as constants in a gradient, silently: refused, with the
    # way out in the message; detached or under no_grad the call works.
    call, x = _without_derivative()[index]
    with pytest.raises(ValueError, match="no derivative.*detach"):
        call(x.clone().requires_grad_())
    with torch.autograd.forward_ad.dual_level():  # forward mode: a tangent dropped
        dual = torch.autograd.forward_ad.make_dual(x, torch.ones_like(x))
        with pytest.raises(ValueError, match="no derivative.*detach"):
            call(dual)
    expected = call(x)
    with torch.no_grad():
        got = call(x.clone().requires_grad_())
    # svd_lowrank's sketch is random: the two calls agree within its ε = 0.1
    assert torch.allclose(got[0], expected[0], rtol=0.1, atol=0)


def test_jacobi_svd_names_its_differentiable_twin():
    x = torch.from_numpy(np.random.default_rng(6).standard_normal((5, 3))).requires_grad_()
    with pytest.raises(ValueError, match=r"gpusvd.svd\(x, method='jacobi'\) is the same"):
        gpusvd.jacobi_svd(x)
    u, s, vh = gpusvd.svd(x, full_matrices=False, method="jacobi")
    s.sum().backward()
    torch.testing.assert_close(x.grad, (u @ vh).detach(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("index", range(3))
def test_no_operator_runs_eagerly_under_torch_compile(index):
    """Not a torch operator: inside torch.compile a graph break, the call run eagerly on
    each call's own tensors (never a value traced once and replayed); fullgraph=True
    refuses it, naming it."""
    call, x = _without_derivative()[index]
    torch._dynamo.reset()

    def model(y):
        return call(y * 2)

    compiled = torch.compile(model, backend="eager")
    for scale in (1.0, 3.0):
        got, want = compiled(x * scale), model(x * scale)
        got, want = (got, want) if torch.is_tensor(want) else (got[0], want[0])
        # svd_lowrank's sketch is random: the two calls agree within its ε = 0.1
        assert torch.allclose(got, want, rtol=0.1 if index == 1 else 1e-12, atol=0)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="disable"):
        torch.compile(model, backend="eager", fullgraph=True)(x)


def test_a_sparse_tensor_is_refused_with_the_way_out():
    x = torch.eye(4).to_sparse()
    with pytest.raises(ValueError, match="sparse_coo tensor.*to_dense"):
        gpusvd.svd(x)
    with pytest.raises(ValueError, match="sparse_coo tensor.*to_dense"):
        gpusvd.jacobi_svd(x)


def test_a_first_differentiated_call_loads_no_compiler():
    """Eager autograd and forward mode through every operator in a fresh process leave
    torch's compiler (Dynamo) unloaded: importing it cost the first differentiated call
    about a second, where torch's own SVD costs a first call 0.1 s."""
    code = """
import sys, torch, gpusvd
x = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
u, s, vh = gpusvd.svd(x, full_matrices=False)
(s.sum() + (u @ vh).sum() + gpusvd.svdvals(x).sum() + gpusvd.polar(x)[0].sum()).backward()
z = torch.randn(4, 4, dtype=torch.complex128, requires_grad=True)
gpusvd.takagi(z + z.mT).S.sum().backward()
torch.func.jvp(lambda y: gpusvd.svdvals(y), (x.detach(),), (x.detach(),))
print("torch._dynamo" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
