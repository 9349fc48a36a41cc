"""``jacobi_svd``: relative accuracy against mpmath, the paper's spectra, properties, input.

``TestJacobiSVD`` feeds NumPy input; ``TestJacobiSVDGPU`` repeats every test with CuPy
input on the device (the CUDA inner kernel, cuBLAS/cuSOLVER shortening and QR).
"""

import numpy as np
import pytest

from gpusvd import svd
from gpusvd._core import tunables
from gpusvd._dispatch import _jacobi as jacobi_stack
from gpusvd.jacobi.inner import column_floor
from gpusvd.testing import (graded, haar_orthogonal, low_rank, random_matrix,
                            with_condition)
from gpusvd.testing.metrics import orthogonality, relative_sv_error, svd_residual
from .jacobi_backends import OnCPU, OnGPU
from .naive_jacobi import singular_values

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
OPTIONS = [dict(), dict(variant="block-oriented"), dict(shorten="qr"), dict(vectors="solve"),
           dict(strategy="brent-luk"), dict(strategy="modulus"), dict(strategy="column"),
           dict(strategy="row-cyclic"), dict(precondition=False)]


# The last entry of D of the graded inputs that reach below U_FLOOR, by side, for single
# and double precision: D·G·D and G·D whose smallest columns and singular values lie far
# below U_FLOOR·σ₁ (2^-102 ≈ 2e-31 and 2^-242 ≈ 1e-73); G·D in single precision holds
# subnormal entries.
BELOW_FLOOR = {"both": (1e-30, 1e-150), "right": (1e-44, 1e-150)}


def graded_below_floor(n, dtype, side, seed):
    """D·G·D (``side="both"``) or G·D (``"right"``) with G n×n Gaussian and D from 1 down
    to :data:`BELOW_FLOOR`, formed in float64 and rounded once to ``dtype``; with κ(G)."""
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        g = (g + 1j * rng.standard_normal((n, n))) / np.sqrt(2)
    last = BELOW_FLOOR[side][np.finfo(dtype).dtype == np.float64]
    d = np.logspace(0, np.log10(last), n)
    a = g * d if side == "right" else d[:, None] * g * d
    return a.astype(dtype), float(np.linalg.cond(g))


def check_above_floor(s, ref, dtype, kappa):
    """Every σ to 30·n·ε·σ₁, and those above U_FLOOR·σ₁/√ε to 30·n·ε·κ relatively;
    returns where they are.

    The columns at or below U_FLOOR are not rotated, so those just above it are not made
    orthogonal to them, which moves their σ by about (U_FLOOR·σ₁/σ)² relatively (measured
    at D·G·D and G·D of float64 n = 40, D to 1e-80: 1e5·n·ε at σ = 2^-240·σ₁, and 0.03 from
    2^-233·σ₁ on); the σ at or below U_FLOOR·σ₁ are those of unorthogonalized columns.
    """
    n, eps = len(ref), float(np.finfo(dtype).eps)
    assert np.abs(s - ref).max() <= 30 * n * eps * ref[0]
    above = ref > ref[0] * float(column_floor(dtype)) / np.sqrt(eps)
    assert ref[above][-1] < 1e-20 * ref[0]  # far beyond what ε·σ₁ accuracy resolves
    assert relative_sv_error(s[above], ref[above]) <= 30 * n * eps * kappa
    return above


def spectrum(kind, n, rng):
    """The paper's §6 spectra Λ(1)–Λ(4) for k = 1 (n values instead of 1024)."""
    lam1 = np.concatenate([np.full(16, 0.5), rng.normal(0, 0.1, n - 16)])
    lam34 = rng.uniform(1e-7, 10, n)
    return {1: lam1, 2: 1 + lam1, 3: lam34 * rng.choice([-1, 1], n), 4: lam34}[kind]


class TestJacobiSVD(OnCPU):
    @pytest.mark.parametrize("side, bound", [("left", 1e-13), ("right", 1e-13),
                                             ("both", 1e-11)])
    @pytest.mark.parametrize("shape", [(9, 7), (7, 7), (40, 36)])
    def test_graded_singular_values_are_relatively_accurate(self, side, bound, shape):
        a = graded(*shape, side=side, grading=1e-12, seed=sum(shape))
        s = self.svd(a, compute_uv=False)
        ref = singular_values(a, dps=30)
        assert ref.min() / ref.max() < 1e-9  # the grading reaches the singular values
        assert np.max(np.abs(s - ref) / ref) < bound

    @pytest.mark.parametrize("kind", [2, 4])
    def test_paper_spectra_error_19(self, kind):
        n = 64
        rng = np.random.default_rng(kind)
        lam = spectrum(kind, n, rng)
        g = (haar_orthogonal(n, seed=kind) * np.sqrt(lam)) @ haar_orthogonal(n, seed=kind + 9)
        s = self.svd(g, compute_uv=False)
        error = np.max(np.abs(s ** 2 - np.sort(lam)[::-1]) / np.sort(lam)[::-1])
        assert error < 100 * n * np.finfo(np.float64).eps

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("shape", [(1, 1), (1, 5), (6, 1), (8, 5), (5, 8), (50, 50),
                                       (90, 34), (34, 70)])
    def test_properties(self, dtype, shape):
        a = random_matrix(*shape, dtype=dtype, seed=shape[0] * 100 + shape[1])
        u, s, vh = self.svd(a)
        m, n = shape
        assert u.shape == (m, m) and vh.shape == (n, n) and s.shape == (min(m, n),)
        assert s.dtype == np.finfo(dtype).dtype and u.dtype == vh.dtype == dtype
        assert (np.diff(s) <= 0).all()
        assert svd_residual(a, u, s, vh) < 4
        assert orthogonality(u) < 4 and orthogonality(vh, rows=True) < 4
        assert relative_sv_error(s, np.linalg.svd(a.astype(np.complex128), compute_uv=False)
                                 ) < 20 * max(shape)

    @pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(map(str, o.values())))
    @pytest.mark.parametrize("n", [20, 70])
    def test_options(self, options, n):
        a = with_condition(n, n, 10.0, seed=n)
        u, s, vh = self.svd(a, full_matrices=False, **options)
        limit = 20 if options.get("vectors") == "solve" else 4  # (5) costs κ(G)
        assert svd_residual(a, u, s, vh) < limit
        assert orthogonality(u) < limit and orthogonality(vh, rows=True) < limit
        assert relative_sv_error(s, np.linalg.svd(a, compute_uv=False)) < 20 * n

    def test_rank_deficient_and_tall(self):
        a = random_matrix(300, 5, seed=1) @ random_matrix(5, 40, seed=2)
        u, s, vh = self.svd(a, full_matrices=False)
        assert svd_residual(a, u, s, vh) < 4
        assert orthogonality(u) < 4 and orthogonality(vh, rows=True) < 4
        assert s[5:].max() < 1e-13 * s[0]
        np.testing.assert_allclose(s[:5], np.linalg.svd(a, compute_uv=False)[:5], rtol=1e-12)

    def test_zero_and_empty(self):
        u, s, vh = self.svd(np.zeros((4, 3)))
        assert (s == 0).all() and orthogonality(u) < 1 and orthogonality(vh, rows=True) < 1
        u, s, vh = self.svd(np.zeros((0, 3)))
        assert u.shape == (0, 0) and s.shape == (0,) and vh.shape == (3, 3)

    def test_stack_of_small_matrices(self):
        a = np.stack([random_matrix(6, 6, seed=i) for i in range(300)]).reshape(10, 30, 6, 6)
        u, s, vh = self.svd(a)
        assert s.shape == (10, 30, 6)
        np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-13,
                                   atol=1e-15)
        np.testing.assert_allclose(u @ (s[..., None] * vh), a, atol=1e-13)

    def test_blocked_matches_pointwise(self):
        a = graded(48, 40, side="right", grading=1e-8, seed=4)
        with tunables.override(jacobi_block_width=16, jacobi_block_width_gpu=16):
            blocked = self.svd(a, compute_uv=False)
        with tunables.override(jacobi_block_width=32, jacobi_block_width_gpu=32):
            pointwise = self.svd(a, compute_uv=False)
        np.testing.assert_allclose(blocked, pointwise, rtol=1e-13)

    @pytest.mark.parametrize("kind", ["right", "both", "rank"])
    def test_blocked_single_precision_graded_and_rank_deficient(self, kind):
        # The contract tests' float32 cases through the blocked path (b = 16, n > 2b) on
        # every backend; the GPU's default b = 32 would take them pointwise.
        if kind == "rank":
            a = low_rank(50, 40, 7, dtype=np.float32, seed=5)
        else:
            a = graded(45, 33, side=kind, dtype=np.float32, seed=3)
        with tunables.override(jacobi_block_width=16, jacobi_block_width_gpu=16):
            u, s, vh = self.svd(a, full_matrices=False)
        n, eps = max(a.shape), float(np.finfo(np.float32).eps)
        assert svd_residual(a, u, s, vh) < 30
        assert orthogonality(u) < 30 and orthogonality(vh, rows=True) < 30
        ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
        assert np.abs(s - ref).max() < 30 * n * eps * ref[0]
        if kind == "rank":
            assert s[7] <= 100 * eps * s[0]

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("side", ["both", "right"])
    @pytest.mark.parametrize("n", [24, 40], ids=["pointwise", "blocked"])
    def test_graded_far_below_the_floor(self, n, side, dtype):
        """Columns far below U_FLOOR (inner.py) are neither rotated nor divided by their σ:
        the sweeps converge, U and V are orthonormal, and the σ above the floor stay
        relatively accurate. Without the floor single precision rotates subnormal columns
        at every sweep, double precision leaves such columns unorthogonalized (V 1e10 n·ε
        from orthogonal) and complex64's G/σ overflows. b = 16 on both devices: n = 24
        takes the pointwise path, n = 40 the blocked one."""
        a, kappa = graded_below_floor(n, dtype, side, seed=n)
        with tunables.override(jacobi_block_width=16, jacobi_block_width_gpu=16):
            out = svd(self.put(a), method="jacobi", full_matrices=False, device=self.device)
        u, s, vh = map(self.get, out)
        assert all(np.isfinite(x).all() for x in (u, s, vh))
        assert orthogonality(u) < 30 and orthogonality(vh, rows=True) < 30
        assert svd_residual(a, u, s, vh) < 30
        check_above_floor(s, singular_values(a, dps=100), dtype, kappa)

    def test_input_unchanged_and_deterministic(self):
        a = random_matrix(70, 40, seed=7)
        before = a.copy()
        first, second = self.svd(a), self.svd(a, overwrite_a=True)
        assert np.array_equal(a, before)
        for x, y in zip(first, second):
            assert np.array_equal(x, y)

    def test_no_convergence(self):
        with pytest.raises(np.linalg.LinAlgError, match="no convergence"):
            self.svd(random_matrix(80, 80, seed=0), max_sweeps=1, precondition=False)
        with pytest.raises(np.linalg.LinAlgError, match="no convergence"):
            self.svd(random_matrix(10, 10, seed=0), max_sweeps=1, precondition=False)

    @pytest.mark.parametrize("bad", [dict(strategy="nope"), dict(variant="x"),
                                     dict(shorten="lu"), dict(vectors="x"), dict(tol=2.0),
                                     dict(max_sweeps=0)])
    def test_bad_options(self, bad):
        with pytest.raises(ValueError):
            self.svd(np.eye(3), **bad)

    def test_bad_input(self):
        with pytest.raises(ValueError, match="2-D"):
            self.svd(np.ones(3))
        with pytest.raises(ValueError, match="NaN"):
            self.svd(np.array([[1.0, np.nan], [0.0, 1.0]]))
        with pytest.raises(ValueError):
            self.svd(np.array([["a", "b"], ["c", "d"]]))
        with pytest.raises(ValueError, match="square"):
            self.svd(random_matrix(6, 4, seed=0), vectors="solve", precondition=False)


def test_stack_entry_for_dispatch():
    a = random_matrix(7, 5, seed=0)
    u, s, vh = jacobi_stack(a[None], np, full_matrices=False, compute_uv=True,
                            overwrite_a=False)
    assert u.shape == (1, 7, 5) and svd_residual(a, u[0], s[0], vh[0]) < 4
    assert jacobi_stack(a[None], np, full_matrices=True, compute_uv=False,
                        overwrite_a=True)[0] is None


@pytest.mark.gpu
class TestJacobiSVDGPU(OnGPU, TestJacobiSVD):
    """Every test of :class:`TestJacobiSVD` with CuPy input."""
