"""``hsvd`` and ``eigh_factored``: G·V = U·S, J-unitarity, eigenvalues, bad input."""

import numpy as np
import pytest
import scipy.linalg

from gpusvd._core import tunables
from gpusvd.jacobi import eigh_factored, hsvd
from gpusvd.testing import haar_orthogonal, orthogonality, random_matrix
from .jacobi_backends import OnCPU, OnGPU
from .naive_jacobi import eigenvalues
from .test_jacobi_svd import check_above_floor, graded_below_floor, spectrum


def j_orthogonal(signs, rng, rotations=60):
    """A random J-orthogonal matrix: hyperbolic and trigonometric plane rotations."""
    n = len(signs)
    w = np.eye(n)
    for _ in range(rotations):
        p, q = rng.choice(n, 2, replace=False)
        x = rng.uniform(-0.8, 0.8)
        c, s = (np.cosh(x), np.sinh(x)) if signs[p] != signs[q] else (np.cos(x), np.sin(x))
        r = np.array([[c, s], [s, c]]) if signs[p] != signs[q] else np.array([[c, s], [-s, c]])
        w[:, [p, q]] = w[:, [p, q]] @ r
    return w


class TestHSVD(OnCPU):
    def run(self, fn, g, signs, **kw):
        return tuple(map(self.get, fn(self.put(g), signs, device=self.device, **kw)))

    @pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
    @pytest.mark.parametrize("shape", [(1, 1), (5, 3), (8, 8), (60, 44)])
    def test_properties(self, dtype, shape):
        m, n = shape
        rng = np.random.default_rng(m + n)
        signs = rng.choice([-1.0, 1.0], n)
        g = random_matrix(m, n, dtype=dtype, seed=m)
        u, s, v, j = self.run(hsvd, g, signs)
        eps = float(np.finfo(dtype).eps)
        assert u.shape == (m, n) and s.shape == (n,) and v.shape == (n, n) and j.shape == (n,)
        assert (np.diff(s) <= 0).all() and np.isin(j, (-1, 1)).all()
        assert sorted(j) == sorted(signs)
        vn = np.abs(v).max() ** 2
        assert np.abs(g @ v - u * s).max() < 10 * n * eps * s.max() * np.sqrt(vn)
        assert np.abs(v.conj().T @ np.diag(signs) @ v - np.diag(j)).max() < 10 * n * eps * vn
        assert np.abs(u.conj().T @ u - np.eye(n)).max() < 10 * n * eps

    @pytest.mark.parametrize("kind", [1, 3])
    def test_paper_spectra_error_19(self, kind):
        n = 64
        rng = np.random.default_rng(kind)
        lam = spectrum(kind, n, rng)
        signs = np.sign(lam)
        g = (haar_orthogonal(n, seed=kind) * np.sqrt(np.abs(lam))) @ j_orthogonal(signs, rng)
        _, s, _, j = self.run(hsvd, g, signs)
        got = np.sort(s ** 2 * j)
        error = np.max(np.abs(got - np.sort(lam)) / np.abs(np.sort(lam)))
        assert error < 100 * n * np.finfo(np.float64).eps

    def test_eigh_factored_against_scipy(self):
        g = random_matrix(30, 20, seed=2)
        signs = np.array([1.0] * 12 + [-1.0] * 8)
        w, v = self.run(eigh_factored, g, signs)
        h = g @ np.diag(signs) @ g.T
        w_ref = scipy.linalg.eigh(h, eigvals_only=True)
        assert w.shape == (30,) and v.shape == (30, 30) and (np.diff(w) >= 0).all()
        np.testing.assert_allclose(w, w_ref, atol=1e-13 * np.abs(w_ref).max())
        np.testing.assert_allclose(h @ v, v * w, atol=1e-13 * np.abs(w_ref).max())
        assert np.abs(v.T @ v - np.eye(30)).max() < 1e-13

    def test_eigh_factored_graded_indefinite_is_relatively_accurate(self):
        n = 8
        rng = np.random.default_rng(3)
        d = np.logspace(0, -10, n)[rng.permutation(n)]
        g = random_matrix(n, n, seed=5) * d          # column graded factor
        signs = np.array([1.0, -1.0] * (n // 2))
        w, _ = self.run(eigh_factored, g, signs)
        ref = eigenvalues(g, signs, dps=40)
        assert np.abs(ref).min() / np.abs(ref).max() < 1e-15
        assert np.max(np.abs(w - ref) / np.abs(ref)) < 1e-12

    @pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
    @pytest.mark.parametrize("mixed", [False, True], ids=["plus", "mixed"])
    def test_graded_far_below_the_floor(self, dtype, mixed):
        """D·G·D whose columns reach far below U_FLOOR, as in the SVD's test of the name,
        with J = I and with mixed signs, through the blocked path (b = 16): converges,
        U and the eigenvectors orthonormal, G·V = U·S, V J-unitary, and the σ = √|λ|
        above the floor relatively accurate with their signs."""
        n = 40
        g, kappa = graded_below_floor(n, dtype, "both", seed=n)
        signs = np.where(np.arange(n) % 3 == 2, -1.0, 1.0) if mixed else np.ones(n)
        with tunables.override(jacobi_block_width=16, jacobi_block_width_gpu=16):
            u, s, v, j = self.run(hsvd, g, signs)
            w, x = self.run(eigh_factored, g, signs)
        assert all(np.isfinite(y).all() for y in (u, s, v, w, x))
        assert orthogonality(u) < 30 and orthogonality(x) < 30
        eps = float(np.finfo(dtype).eps)
        gw, vw = g.astype(np.complex128), v.astype(np.complex128)
        vn = np.linalg.norm(vw, 2)
        assert np.abs(gw @ vw - u * s).max() < 30 * n * eps * np.abs(gw).max() * vn
        assert np.abs(vw.conj().T @ (signs[:, None] * vw) - np.diag(j)).max() \
            < 30 * n * eps * vn ** 2
        h = (gw * signs) @ gw.conj().T
        assert np.abs(h @ x - x * w).max() < 30 * n * eps * np.abs(w).max()
        ref = eigenvalues(g, signs, dps=150)
        ref = ref[np.argsort(-np.abs(ref), kind="stable")]
        above = check_above_floor(s, np.sqrt(np.abs(ref)), dtype, kappa)
        assert (j[above] == np.sign(ref[above])).all()

    @pytest.mark.parametrize("signs", [[1, 1], [1, 0, -1], [1, 2, 1], [[1, -1, 1]]])
    def test_bad_signs(self, signs):
        with pytest.raises(ValueError, match="signs"):
            self.run(hsvd, np.eye(3), signs)

    def test_bad_input(self):
        with pytest.raises(ValueError, match="rows"):
            self.run(hsvd, np.ones((2, 3)), [1, 1, -1])
        with pytest.raises(ValueError, match="NaN"):
            self.run(eigh_factored, np.full((2, 2), np.nan), [1, -1])
        with pytest.raises(ValueError, match="2-D"):
            self.run(hsvd, np.ones(3), [1, 1, 1])
        with pytest.raises(ValueError):
            self.run(hsvd, np.eye(2), [1, -1], variant="nope")

    @pytest.mark.parametrize("signs", [[1.0] * 6, [-1.0] * 6, [1.0, -1.0] * 3])
    @pytest.mark.parametrize("batch", [(), (3,)])
    def test_results_are_writable(self, signs, batch):
        """Every result is writable: J of definite signs was a read-only broadcast view
        of them (which JAX's from_dlpack refused)."""
        g = random_matrix(int(np.prod(batch)) * 8, 6, seed=2).reshape(*batch, 8, 6)
        for x in map(self.get, hsvd(self.put(g), signs, device=self.device)):
            assert x.flags.writeable

    def test_input_unchanged_and_deterministic(self):
        g = random_matrix(50, 40, seed=1)
        signs = np.where(np.arange(40) % 3 == 0, -1.0, 1.0)
        before = g.copy()
        first, second = self.run(hsvd, g, signs), self.run(hsvd, g, signs)
        assert np.array_equal(g, before)
        for x, y in zip(first, second):
            assert np.array_equal(x, y)


@pytest.mark.gpu
class TestHSVDGPU(OnGPU, TestHSVD):
    """Every test of :class:`TestHSVD` with CuPy input."""
