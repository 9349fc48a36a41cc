"""The DLPack path of gpusvd's input and output, on the CPU, with a stand-in library.

``fake_dlpack`` has only ``__dlpack__``/``__dlpack_device__`` and a module-level
``from_dlpack``: results must come back as its arrays, equal to the NumPy path's; an
object whose library has no ``from_dlpack`` comes back as NumPy; read-only exports are
never used as workspace.
"""

import numpy as np
import pytest

import gpusvd
from gpusvd._core.arrays import place
from .fake_dlpack import FakeArray, ReadOnlyArray
from .interop_cases import CASES, IDS, as_numpy, results


class Anonymous:
    """DLPack from a module without ``from_dlpack`` (this test module)."""

    def __init__(self, data):
        self._data = data

    def __dlpack__(self, **kwargs):
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_same_type_out(case):
    a = case.make()
    out = case.call(FakeArray(a.copy()))
    assert all(type(x) is FakeArray for x in results(out))
    case.check(a, as_numpy(out, FakeArray.numpy))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_equals_numpy_path(case):
    a = case.make()
    via_dlpack = results(as_numpy(case.call(FakeArray(a.copy())), FakeArray.numpy))
    direct = results(case.call(a.copy()))
    for p, q in zip(via_dlpack, direct):
        assert np.array_equal(p, q)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_input_unchanged(case):
    a = case.make()
    x = FakeArray(a.copy())
    case.call(x)
    assert np.array_equal(x.numpy(), a)


def test_unknown_library_comes_back_as_numpy():
    a = np.array([[3.0, 0.0], [4.0, 5.0]])
    u, s, vh = gpusvd.svd(Anonymous(a))
    assert all(type(x) is np.ndarray for x in (u, s, vh))
    assert np.allclose((u * s) @ vh, a)


@pytest.mark.parametrize("method", ["gr", "jacobi"])
def test_read_only_export_is_not_workspace(method):
    # F order: what Golub–Reinsch takes as its workspace when overwrite_a is true.
    a = np.asfortranarray(np.random.default_rng(0).standard_normal((12, 9)))
    x = ReadOnlyArray(a)
    u, s, vh = gpusvd.svd(x, full_matrices=False, method=method, overwrite_a=True)
    assert np.array_equal(x.numpy(), a)
    assert np.allclose((u.numpy() * s.numpy()) @ vh.numpy(), a)


def test_placement_writable():
    a = np.ones((3, 3))
    assert place(a, "cpu")[1].writable
    assert not place(ReadOnlyArray(a), "cpu")[1].writable
    assert place(FakeArray(a), "cpu")[1].writable
    a.flags.writeable = False
    assert not place(a, "cpu")[1].writable
