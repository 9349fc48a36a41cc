"""gpusvd.svd_lowrank (QUIC-SVD): the error guarantee, rank, inputs, bad input.

``TestLowRank_GPU`` reruns every test of the CPU class with CuPy input (marker ``gpu``);
``TestOutOfCore_GPU`` streams host input through the pinned double-buffered pipeline.
"""

import numpy as np
import pytest
from .naive_quic import optimal_rank, paper_low_rank, relative_error

from gpusvd import testing
from gpusvd.quic.lowrank import svd_lowrank

DTYPES = (np.float32, np.float64)
SEEDS = range(12)
# |error_bound − true error| allowed, relative to eps: the bound is computed from a
# residual formed in the working precision; the true error here in float64.
BOUND_AGREEMENT = 1e-3


def _host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def decaying(m, n, ratio, *, dtype, seed):
    """Singular values ratio^j, Haar singular vectors."""
    k = min(m, n)
    return testing.with_singular_values(ratio ** np.arange(k), m, n, dtype=dtype, seed=seed)


class TestLowRank_CPU:
    device = "cpu"

    def put(self, a):
        return a

    def run(self, a, **kw):
        kw.setdefault("seed", 0)
        r = svd_lowrank(self.put(a), device=self.device, **kw)
        return r, _host(r.U), _host(r.S), _host(r.Vh)

    def check(self, a, eps, **kw):
        """Shapes, order, orthogonality, the error ≤ eps and the reported bound."""
        r, u, s, vh = self.run(a, eps=eps, **kw)
        m, n = a.shape
        assert u.shape == (m, r.rank) and s.shape == (r.rank,) and vh.shape == (r.rank, n)
        assert u.dtype == a.dtype and vh.dtype == a.dtype
        assert np.all(s[:-1] >= s[1:]) and np.all(s >= 0)
        if r.rank:
            assert testing.orthogonality(u) < 30 * max(r.rank, 1)
            assert testing.orthogonality(vh, rows=True) < 30 * max(r.rank, 1)
        err = relative_error(a, u, s, vh)
        assert err <= eps
        assert abs(r.error_bound - err) <= BOUND_AGREEMENT * eps
        return r, err

    @pytest.mark.parametrize("dtype", DTYPES)
    def test_paper_generator_many_seeds(self, dtype):
        """Paper 001's random rank-k matrices: the bound holds and the rank is exact."""
        failures = 0
        for seed in SEEDS:
            a = paper_low_rank(240, 160, 9, dtype=dtype, seed=seed)
            r, u, s, vh = self.run(a, eps=1e-8, seed=seed)
            failures += relative_error(a, u, s, vh) > 1e-8
            assert r.rank == 9
        assert failures == 0

    @pytest.mark.parametrize("low", [-1.0, 0.0])
    def test_growth_steps_are_few(self, low):
        """A rank-100 matrix takes O(log rank) growth steps, not one per basis vector:
        the leaves double per step (≈ log2(100) + 1 = 8), plus at most a few steps near
        the target. ``low = 0``: entries in [0, 1], rows dominated by their common mean,
        so each split adds one new direction, not two."""
        rng = np.random.default_rng(17)
        a = rng.uniform(low, 1.0, (900, 100)) @ rng.uniform(low, 1.0, (100, 600))
        r, _ = self.check(a, 1e-10)
        assert r.rank == 100
        assert r.growth_steps <= 12

    @pytest.mark.parametrize("dtype", DTYPES)
    def test_decaying_spectra_many_seeds(self, dtype):
        """Geometric spectra: error ≤ eps on every seed, rank ≤ 2× the optimal rank, and
        the Monte Carlo stopping rule wrong no more often than binomially plausible."""
        eps = 1e-5 if dtype == np.float32 else 1e-8
        mc_wrong = 0
        for seed in SEEDS:
            a = decaying(200, 150, 0.85, dtype=dtype, seed=seed)
            r, err = self.check(a, eps)
            assert r.rank <= 2 * optimal_rank(a, eps)
            mc_wrong += r.passes > 2
        # delta = 1e-6 per stop: more than 2 resumed runs in 12 is implausible unless the
        # normal approximation is badly off.
        assert mc_wrong <= 2

    @pytest.mark.parametrize("dtype", DTYPES)
    def test_extract_svd(self, dtype):
        """The extraction's small SVD (each dtype's way) meets eps with an error_bound
        that agrees with the true error, and finds the exact rank."""
        eps = 1e-5 if dtype == np.float32 else 1e-9
        for seed in range(3):
            a = decaying(200, 150, 0.85, dtype=dtype, seed=seed)
            r, _ = self.check(a, eps)
            assert r.rank <= 2 * optimal_rank(a, eps)
        r, _ = self.check(paper_low_rank(240, 160, 9, dtype=dtype, seed=0), 1e-8)
        assert r.rank == 9

    @pytest.mark.parametrize("dtype", DTYPES)
    @pytest.mark.parametrize("shape", [(300, 40), (40, 300), (1, 30), (30, 1), (64, 64)])
    def test_shapes(self, shape, dtype):
        a = decaying(*shape, 0.7, dtype=dtype, seed=3)
        r, _ = self.check(a, 1e-4)
        assert r.rank <= 2 * optimal_rank(a, 1e-4)

    def test_full_rank_small_eps(self):
        """A well-conditioned square matrix needs its full rank."""
        a = testing.random_matrix(40, 40, seed=5)
        r, _ = self.check(a, 1e-12)
        assert r.rank == 40

    def test_max_rank(self):
        a = decaying(120, 90, 0.9, dtype=np.float64, seed=6)
        r, u, s, vh = self.run(a, eps=1e-10, max_rank=5)
        assert r.rank == 5 and r.error_bound > 1e-10
        assert abs(relative_error(a, u, s, vh) - r.error_bound) <= 1e-8

    def test_zero_matrix(self):
        r, u, s, vh = self.run(np.zeros((20, 10)), eps=1e-6)
        assert r.rank == 0 and r.error_bound == 0.0 and u.shape == (20, 0)

    def test_integer_input_promoted(self):
        a = np.arange(60).reshape(12, 5) % 7
        r, u, s, vh = self.run(a, eps=1e-10)
        assert s.dtype == np.float64 and relative_error(a, u, s, vh) <= 1e-10

    def test_deterministic_and_input_unchanged(self):
        a = decaying(150, 100, 0.8, dtype=np.float64, seed=7)
        keep = a.copy()
        r1, u1, s1, vh1 = self.run(a, eps=1e-7, seed=42)
        r2, u2, s2, vh2 = self.run(a, eps=1e-7, seed=42)
        assert np.array_equal(_host(self.put(a)), keep)
        assert np.array_equal(u1, u2) and np.array_equal(s1, s2) and np.array_equal(vh1, vh2)

    @pytest.mark.parametrize("parts", [2, 5])
    def test_partitions(self, parts):
        """Several row partitions sharing one basis give the same guarantee (§2.3)."""
        a = paper_low_rank(300, 120, 7, seed=8)
        r, _ = self.check(a, 1e-9, partitions=parts)
        assert r.rank == 7
        assert r.partitions == (1 if self.device != "cpu" else parts)

    @pytest.mark.parametrize("kw, message", [
        ({"eps": 0.0}, "eps"), ({"eps": 1.0}, "eps"), ({"eps": float("nan")}, "eps"),
        ({"delta": 0.0}, "delta"), ({"delta": 2.0}, "delta"), ({"eps": "1e-6"}, "eps"),
        ({"max_rank": 0}, "max_rank"), ({"max_rank": 2.5}, "max_rank"),
        ({"max_rank": True}, "max_rank"), ({"partitions": 0}, "partitions"),
        ({"partitions": 1000}, "partitions")])
    def test_bad_arguments(self, kw, message):
        with pytest.raises(ValueError, match=message):
            svd_lowrank(self.put(np.ones((5, 4))), device=self.device, **kw)

    @pytest.mark.parametrize("kw, message", [
        ({"q": 6, "niter": 2}, r"takes no 'q' \(a rank.*max_rank=6"),
        ({"n_components": 3}, "max_rank=3"), ({"niter": 4}, "power iterations"),
        ({"n_iter": 4}, "power iterations"), ({"M": 0.0}, "a − M"),
        ({"random_state": 3}, "pass seed=3"),
        ({"bogus": 1}, "unexpected keyword argument 'bogus'")])
    def test_the_peers_options_say_what_takes_their_place(self, kw, message):
        """torch.svd_lowrank's and scikit-learn's keywords: a TypeError naming gpusvd's
        way (max_rank for a rank; none for power iterations)."""
        with pytest.raises(TypeError, match=message):
            svd_lowrank(self.put(np.ones((5, 4))), device=self.device, **kw)

    @pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
    def test_non_finite(self, bad):
        a = np.ones((6, 5))
        a[2, 3] = bad
        with pytest.raises(ValueError, match="NaN or infinity"):
            svd_lowrank(self.put(a), device=self.device)

    @pytest.mark.parametrize("shape", [(0, 4), (4, 0), (3,), (2, 3, 4)])
    def test_bad_shapes(self, shape):
        with pytest.raises(ValueError):
            svd_lowrank(self.put(np.ones(shape)), device=self.device)


class TestOutOfCoreSources:
    """Memmap, .npy path, h5py and generic row-sliceable sources (CPU)."""

    device = "cpu"

    def check(self, source, a, eps, **kw):
        r = svd_lowrank(source, eps=eps, seed=1, device=self.device, **kw)
        u, s, vh = _host(r.U), _host(r.S), _host(r.Vh)
        assert isinstance(u, np.ndarray)
        err = relative_error(a, u, s, vh)
        assert err <= eps and abs(r.error_bound - err) <= BOUND_AGREEMENT * eps
        assert r.rank <= 2 * optimal_rank(a, eps)
        return r

    def test_memmap_partitions(self, tmp_path):
        a = decaying(400, 90, 0.8, dtype=np.float32, seed=10)
        mm = np.lib.format.open_memmap(tmp_path / "a.npy", mode="w+", dtype=a.dtype,
                                       shape=a.shape)
        mm[...] = a
        mm.flush()
        r = self.check(np.load(tmp_path / "a.npy", mmap_mode="r"), a, 1e-5, partitions=4)
        assert r.partitions == 4 and r.passes >= 2

    def test_npy_path(self, tmp_path):
        a = paper_low_rank(200, 80, 6, seed=11)
        np.save(tmp_path / "a.npy", a)
        r = self.check(str(tmp_path / "a.npy"), a, 1e-9, partitions=3)
        assert r.rank == 6

    def test_h5py_partitions(self, tmp_path):
        h5py = pytest.importorskip("h5py")
        a = decaying(360, 70, 0.75, dtype=np.float64, seed=12)
        with h5py.File(tmp_path / "a.h5", "w") as f:
            f["a"] = a
        with h5py.File(tmp_path / "a.h5", "r") as f:
            r = self.check(f["a"], a, 1e-8, partitions=5)
        assert r.partitions == 5

    def test_generic_sliceable(self):
        """The protocol: shape, dtype and row slices returning array-likes."""

        class Rows:
            def __init__(self, a):
                self._a, self.shape, self.dtype = a, a.shape, a.dtype

            def __getitem__(self, key):
                return self._a[key].tolist()

        a = paper_low_rank(150, 60, 5, seed=13)
        assert self.check(Rows(a), a, 1e-9, partitions=3).rank == 5

    def test_zarr_and_dask(self):
        zarr = pytest.importorskip("zarr")
        da = pytest.importorskip("dask.array")
        a = paper_low_rank(150, 60, 5, seed=14)
        z = zarr.zeros(a.shape, dtype=a.dtype, chunks=(40, 60))
        z[...] = a
        assert self.check(z, a, 1e-9, partitions=3).rank == 5
        assert self.check(da.from_array(a, chunks=(50, 60)), a, 1e-9, partitions=2).rank == 5

    def test_not_npy_path(self, tmp_path):
        with pytest.raises(ValueError, match=".npy"):
            svd_lowrank(str(tmp_path / "a.txt"))

    def test_progress_bar(self, capsys):
        a = paper_low_rank(100, 40, 4, seed=15)
        svd_lowrank(a, eps=1e-9, seed=0, device=self.device, partitions=2, progress=True)
        err = capsys.readouterr().err
        assert "QUIC-SVD grow" in err and "QUIC-SVD project" in err and "2/2" in err


@pytest.mark.gpu
class TestLowRank_GPU(TestLowRank_CPU):
    device = "gpu"

    def put(self, a):
        import cupy
        return cupy.asarray(a)


@pytest.mark.gpu
class TestOutOfCore_GPU(TestOutOfCoreSources):
    """Host sources streamed through pinned memory with partitions > 1."""

    device = "gpu"

    def test_host_array_streamed(self):
        a = decaying(2000, 300, 0.9, dtype=np.float32, seed=16)
        r = self.check(a, a, 1e-5, partitions=7)
        assert r.partitions == 7 and r.passes >= 2
