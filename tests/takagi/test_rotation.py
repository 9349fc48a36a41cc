"""The 2×2 Takagi step on the shared table of cases (step_cases.py)."""

import cmath

import numpy as np
import pytest

from . import step_cases
from gpusvd.takagi.rotation import (_half_phase_offset, rotate, rotation_matrix,
                                    takagi_rotation)

DTYPES = (np.complex64, np.complex128)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reference_passes_table(dtype):
    for name, a, b, c in step_cases.cases(dtype):
        step_cases.check(name, a, b, c, takagi_rotation(a, b, c))


def test_random_steps():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((500, 3)) + 1j * rng.standard_normal((500, 3))
    z *= 10.0 ** rng.integers(-8, 8, (500, 3))
    for a, b, c in z:
        step_cases.check("random", a, b, c, takagi_rotation(a, b, c))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rotate_applies_the_matrix(dtype):
    rng = np.random.default_rng(2)
    eps = np.finfo(dtype).eps
    for name, a, b, c in step_cases.cases(np.complex128)[:8]:
        w1, w2, mu, sn = (dtype(x) for x in takagi_rotation(a, b, c))
        v = rotation_matrix(w1, w2, mu, sn)
        x, y = (rng.standard_normal(2) + 1j * rng.standard_normal(2)).astype(dtype)
        rows = rotate(x, y, w1.conjugate(), w2.conjugate(), mu, sn)  # Vᴴ [x; y]
        np.testing.assert_allclose(rows, v.conj().T @ [x, y], atol=8 * eps, err_msg=name)
        cols = rotate(x, y, w1, w2, mu, sn.conjugate())  # [x, y] V
        np.testing.assert_allclose(cols, np.array([x, y]) @ v, atol=8 * eps, err_msg=name)


def test_tiny_rotation_keeps_norms():
    """μ is carried, not cs = 1 − μ: for τ² < ε the column norms stay 1 to ε·τ²."""
    from fractions import Fraction
    for b in (1e-9, 3e-9j, 1e-12 + 1e-12j):
        _, _, mu, sn = takagi_rotation(1.0 + 0j, b, 3.0 + 0j)
        assert 0 < mu.real < 1e-16
        norm = (Fraction(1) - Fraction(mu.real)) ** 2 + Fraction(sn.real) ** 2 + \
            Fraction(sn.imag) ** 2
        assert abs(float(norm - 1)) < 1e-30


def test_half_phase_offset():
    """1 + ϖ = e^{i arg(z)/2}, and ϖ to full relative accuracy when it is small."""
    tiny = np.finfo(float).tiny
    special = [1, -1, complex(-1, -0.0), 1j, -1j, 1e-320 - 3e-321j, complex(-tiny, tiny / 3),
               3 - 4j, -2 + 1e-30j, 1 + 1e-9j, 1 - 3e-12j, 5 + 1e-200j]
    rng = np.random.default_rng(1)
    for z in special + list(rng.standard_normal(200) + 1j * rng.standard_normal(200)):
        w = _half_phase_offset(complex(z))
        half = cmath.phase(z) / 2
        exact = complex(-2 * np.sin(half / 2) ** 2, np.sin(half))  # e^{i·half} − 1
        assert abs(abs(1 + w) - 1) < 4e-16, z
        assert abs(w - exact) <= 4e-16 * abs(exact), z
    assert _half_phase_offset(0j) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_passes_table(dtype):
    """The CUDA twin, through the ``takagi_rotations`` kernel: each case is the 2×2 block
    (2k, 2k+1) of a block-diagonal matrix, all pairs in one step, with no floor."""
    import cupy

    from gpusvd.takagi.steps_cuda import _THREADS, _blocks, _kernel

    table = step_cases.cases(dtype)
    n = 2 * len(table)
    a = np.zeros((n, n), dtype)
    for k, (_, x, y, z) in enumerate(table):
        a[2 * k:2 * k + 2, 2 * k:2 * k + 2] = [[x, y], [y, z]]
    pairs = cupy.asarray(np.arange(n, dtype=np.int32).reshape(-1, 2))
    g = cupy.zeros((len(table), 4), dtype)
    _kernel("takagi_rotations", dtype)((_blocks(len(table)),), (_THREADS,),
                                       (cupy.asarray(a), np.int32(n), pairs,
                                        np.int32(len(table)), g,
                                        np.finfo(dtype).dtype.type(0)))
    g = g.get()
    eps = np.finfo(dtype).eps
    for k, (name, x, y, z) in enumerate(table):
        step_cases.check(name, x, y, z, g[k])
        if name in step_cases.NOT_UNIQUE:
            continue
        np.testing.assert_allclose(g[k], takagi_rotation(x, y, z), rtol=0, atol=16 * eps,
                                   err_msg=name)


def test_an_entry_at_the_floor_is_left_alone():
    """|b| ≤ floor: the identity (nothing moves); above it, the usual step."""
    a, c = 1.0 + 0j, 1j
    for b in (1e-17 + 0j, -1e-17j):
        assert takagi_rotation(a, b, c, 1e-16) == (0j, 0j, 0j, 0j)
        assert takagi_rotation(a, b, c, 0.0) != (0j, 0j, 0j, 0j)
    step_cases.check("above floor", a, 2e-16 + 0j, c, takagi_rotation(a, 2e-16 + 0j, c, 1e-16))
