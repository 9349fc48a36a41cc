"""PyTorch's own test definitions of ``torch.linalg.svd`` and ``torch.linalg.svdvals``
(the OpInfos of ``torch.testing._internal.common_methods_invocations``), run on
``gpusvd.svd`` and ``gpusvd.svdvals``.

For each of the OpInfo's sample inputs (stacks, tall, wide and square, full_matrices both
ways), as PyTorch's gradient tests take them (test_ops_gradients.py): the values against
torch.linalg's, then ``gradcheck``, ``gradgradcheck`` and ``gradcheck`` of forward mode on
the sample's ``output_process_fn_grad`` of the result, which keeps only what the SVD
determines (singular vectors up to a phase per column), in float64 and complex128.
"""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")   # torch.testing._internal needs it
opinfos = pytest.importorskip("torch.testing._internal.common_methods_invocations")

import gpusvd  # noqa: E402

OURS = {"linalg.svd": gpusvd.svd, "linalg.svdvals": gpusvd.svdvals}
OPS = {op.name: op for op in opinfos.op_db if op.name in OURS and not op.variant_test_name}
DTYPES = [torch.float64, torch.complex128]
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
# Values against torch.linalg's, in units of ε·max(m, n)·σ₁ (both backward stable).
VALUE_UNITS = 10


def samples(name, device, dtype):
    return list(OPS[name].sample_inputs(device, dtype, requires_grad=True))


def test_the_opinfos_are_there():
    """Without them every test below would pass by running nothing."""
    assert set(OPS) == set(OURS)
    assert all(len(samples(name, "cpu", torch.float64)) >= 10 for name in OURS)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(OURS))
def test_values_as_torch(name, dtype, device):
    reference = getattr(torch.linalg, name.split(".")[1])
    eps = torch.finfo(dtype).eps
    for sample in samples(name, device, dtype):
        a = sample.input.detach()
        got, want = OURS[name](a, **sample.kwargs), reference(a, **sample.kwargs)
        s, s_ref = (got, want) if name == "linalg.svdvals" else (got[1], want[1])
        assert s.dtype == s_ref.dtype and s.device == s_ref.device
        if s_ref.numel():
            scale = VALUE_UNITS * eps * max(a.shape[-2:]) * float(s_ref.max())
            assert float((s - s_ref).abs().max()) <= scale, sample


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(OURS))
def test_gradients_as_torch_checks_them(name, dtype, device):
    """First and second order in reverse mode and forward mode against finite
    differences, through the OpInfo's own processing of the output."""
    op = OPS[name]
    for sample in samples(name, device, dtype):
        args = (sample.input,) + tuple(sample.args)

        def f(*xs, sample=sample):
            out = op.gradcheck_wrapper(OURS[name], *xs, **sample.kwargs)
            return sample.output_process_fn_grad(out)

        assert torch.autograd.gradcheck(f, args), sample
        # Second order in fast mode (one random projection of the Jacobian, as PyTorch's
        # own tests run it for slow operators): the full check doubled this test's time.
        assert torch.autograd.gradgradcheck(f, args, fast_mode=True), sample
        assert torch.autograd.gradcheck(f, args, check_forward_ad=True,
                                        check_backward_ad=False), sample
