"""What every public function's front end guarantees: unusual input gets the
right answer or a clear error, the same way through every entry point.

Tolerances are in units of n·ε of the working precision (STYLE.md).
"""

import pickle
import threading
import warnings

import numpy as np
import pytest

import gpusvd
from gpusvd import testing
from gpusvd.testing import low_rank


class TestLowRankUnpacks:
    """``U, S, Vh = svd_lowrank(A)`` as with torch and scikit-learn (defect 5)."""

    def test_three_items_and_attributes(self):
        a = low_rank(40, 30, 3, seed=0)
        r = gpusvd.svd_lowrank(a, eps=1e-10, seed=0, device="cpu")
        U, S, Vh = r
        assert len(r) == 3
        assert U is r.U and S is r.S and Vh is r.Vh
        assert r.rank == 3 == S.shape[0] and r.error_bound <= 1e-10
        assert r.basis_size >= 3 and r.partitions == 1 and r.passes >= 2
        assert r.growth_steps >= 1 and r.mc_bound >= 0

    def test_pickles(self):
        r = gpusvd.svd_lowrank(low_rank(40, 30, 3, seed=0), eps=1e-10, seed=0, device="cpu")
        back = pickle.loads(pickle.dumps(r))
        assert type(back) is type(r) and back.rank == r.rank
        assert np.array_equal(back.S, r.S) and back.error_bound == r.error_bound


# ----------------------------------------------------------------- the entry points
#
# Each entry: (name, call(a, **kw)) where ``a`` is a real m×n matrix (m >= n) and the call
# returns the singular values (Takagi: of a symmetrized complex matrix of ``a``'s
# values, see _takagi_input). ``kw`` are check_finite and other front-end options.

M, N = 50, 30
METHODS = ("gr", "jacobi", "polar", "auto")


def _host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _takagi_input(a):
    """A complex symmetric matrix from ``a``'s leading square: same scale, same dtype kind."""
    n = a.shape[1]
    z = a[:n] + 1j * a[n:2 * n] if a.shape[0] >= 2 * n else a[:n] + 0j
    with np.errstate(invalid="ignore"):  # the non-finite cases make NaN here on purpose
        return (z + z.T) / 2


class Calls:
    """Every public function that takes a dense matrix, each called the same way."""

    device = "cpu"

    def put(self, a):
        return a

    def svd(self, a, method, **kw):
        return [_host(x) for x in gpusvd.svd(self.put(a), method=method, device=self.device,
                                             **kw)]

    def values(self, name, a, **kw):
        """The values the entry point ``name`` computes for ``a`` (host arrays)."""
        put, dev = self.put, self.device
        signs = np.ones(a.shape[1])
        calls = {
            **{f"svd-{m}": (lambda m=m: gpusvd.svd(put(a), compute_uv=False, method=m,
                                                  device=dev, **kw)) for m in METHODS},
            "svdvals": lambda: gpusvd.svdvals(put(a), device=dev, **kw),
            "svdvals-gr-two-stage": lambda: gpusvd.svdvals(put(a), method="gr",
                                                           reduction="two-stage",
                                                           device=dev, **kw),
            "jacobi_svd": lambda: gpusvd.jacobi_svd(put(a), device=dev, **kw).S,
            "hsvd": lambda: gpusvd.hsvd(put(a), signs, device=dev, **kw).S,
            "eigh_factored": lambda: gpusvd.eigh_factored(put(a), signs, device=dev, **kw)[0],
            "takagi": lambda: gpusvd.takagi(put(_takagi_input(a)), device=dev, **kw).S,
        }
        return _host(calls[name]())


VALUE_CALLS = [*(f"svd-{m}" for m in METHODS), "svdvals", "svdvals-gr-two-stage",
               "jacobi_svd", "hsvd", "eigh_factored", "takagi"]


def _reference(name, a):
    """LAPACK's values for what ``name`` computes, in float64 (complex128)."""
    wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    if name == "takagi":
        return np.linalg.svd(_takagi_input(wide), compute_uv=False)
    s = np.linalg.svd(wide, compute_uv=False)
    if name == "eigh_factored":   # H = G·Gᵀ, all signs +1: σ², ascending, M − N zeros
        return np.sort(np.concatenate([s * s, np.zeros(a.shape[0] - a.shape[1])]))
    return s


# (dtype, k): the test matrix times 2^k. Subnormal entries (k = -1030 in float64, -135 in
# float32), entries below dgesvd's smlnum = √tiny/ε but normal, and near overflow.
SCALES = {"subnormal-f64": (np.float64, -1030), "subnormal-f32": (np.float32, -135),
          "below-smlnum-f64": (np.float64, -480), "below-smlnum-f32": (np.float32, -50),
          "near-overflow-f64": (np.float64, 1000), "near-overflow-f32": (np.float32, 120)}
# Values within this many n·ε (of the working precision) of LAPACK's on the same entries
# (the front end's guarantees).
SCALED_UNITS = 30


def _scaled_matrix(dtype, k, m=M, n=N, seed=0):
    return np.ldexp(testing.random_matrix(m, n, seed=seed), k).astype(dtype)


class TestScaledInput_CPU(Calls):
    """Subnormal, near-underflow and near-overflow input through every entry point
    (defect 1): scaled by a power of two into the safe range and back."""

    @pytest.mark.parametrize("scale", SCALES)
    @pytest.mark.parametrize("name", VALUE_CALLS)
    def test_values_match_lapack(self, name, scale):
        dtype, k = SCALES[scale]
        if name == "eigh_factored" and k > 0:
            pytest.skip("σ² overflows: the eigenvalues are not representable")
        a = _scaled_matrix(dtype, k)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            s = self.values(name, a)
        assert np.isfinite(s).all()
        ref = _reference(name, a).astype(s.dtype)
        assert testing.sv_error(s, ref) < SCALED_UNITS * N

    @pytest.mark.parametrize("scale", SCALES)
    @pytest.mark.parametrize("method", ["gr", "jacobi", "polar"])
    def test_svd_vectors(self, method, scale):
        dtype, k = SCALES[scale]
        a = _scaled_matrix(dtype, k)
        u, s, vh = self.svd(a, method)
        assert testing.svd_residual(a, u, s, vh) < SCALED_UNITS
        assert testing.orthogonality(u) < SCALED_UNITS
        assert testing.orthogonality(vh, rows=True) < SCALED_UNITS

    @pytest.mark.parametrize("k", [-1030, -480])
    def test_hsvd_indefinite_scales_exactly(self, k):
        """Mixed signs: the values of 2^k·G are 2^k times those of G."""
        g = testing.random_matrix(M, N, seed=1)
        signs = np.where(np.arange(N) % 3 == 0, -1.0, 1.0)
        tiny = np.ldexp(g, k)
        got = gpusvd.hsvd(self.put(tiny), signs, device=self.device)
        ref = gpusvd.hsvd(self.put(np.ldexp(tiny, -k)), signs, device=self.device)
        assert np.array_equal(_host(got.J), _host(ref.J))
        s_ref = np.ldexp(_host(ref.S), k)
        assert testing.sv_error(_host(got.S), s_ref) < SCALED_UNITS * N
        w, v = gpusvd.eigh_factored(self.put(tiny), signs, device=self.device)
        w_ref, _ = gpusvd.eigh_factored(self.put(np.ldexp(tiny, -k)), signs,
                                        device=self.device)
        assert np.isfinite(_host(w)).all()
        assert testing.sv_error(_host(w), np.ldexp(_host(w_ref), 2 * k)) < SCALED_UNITS * N
        assert testing.orthogonality(_host(v)) < SCALED_UNITS

    def test_a_stack_scales_matrix_by_matrix(self):
        mats = np.stack([_scaled_matrix(np.float64, k, 8, 6, seed=k % 7)
                         for k in (-1030, 0, 900, -480)])
        for method in METHODS:
            s = _host(gpusvd.svd(self.put(mats), compute_uv=False, method=method,
                                 device=self.device))
            for got, mat in zip(s, mats):
                assert testing.sv_error(got, np.linalg.svd(mat, compute_uv=False)) \
                    < SCALED_UNITS * 6

    @pytest.mark.parametrize("scale", ["subnormal-f64", "below-smlnum-f64",
                                       "near-overflow-f64", "subnormal-f32"])
    def test_svd_lowrank(self, scale):
        dtype, k = SCALES[scale]
        a = np.ldexp(low_rank(M, N, 5, seed=2), k).astype(dtype)
        eps = 1e-4 if dtype == np.float32 else 1e-10
        u, s, vh = gpusvd.svd_lowrank(self.put(a), eps=eps, seed=0, device=self.device)
        r = gpusvd.svd_lowrank(self.put(a), eps=eps, seed=0, device=self.device)
        assert r.rank == 5 and 0 <= r.error_bound <= eps
        ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)[:5].astype(dtype)
        assert testing.sv_error(_host(s), ref) < SCALED_UNITS * N


class _OnGPU:
    """CuPy input computed on the GPU (run on the device by scripts/gpu-tests)."""

    device = "gpu"

    def put(self, a):
        import cupy
        return cupy.asarray(a)


@pytest.mark.gpu
class TestScaledInput_GPU(_OnGPU, TestScaledInput_CPU):
    pass


# ------------------------------------------------------------------ NaN, byte order

# Seconds a call with NaN input may take before it counts as a hang; a 50×30 matrix
# takes milliseconds once compiled.
HANG_SECONDS = 120


def _bounded(call):
    """``call()``'s result, or its exception, failing the test if it does not return."""
    out = {}

    def run():
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            out["error"] = exc
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_SECONDS)
    assert not worker.is_alive(), f"no return within {HANG_SECONDS} s (a hang)"
    if "error" in out:
        raise out["error"]
    return out["value"]


class TestNotFinite_CPU(Calls):
    """NaN or infinity with ``check_finite=False`` (defect 2): NaN out, within bounded
    time, for every method; with ``check_finite=True`` a ValueError."""

    @pytest.mark.parametrize("bad", [np.nan, np.inf])
    @pytest.mark.parametrize("name", VALUE_CALLS)
    def test_nan_out(self, name, bad):
        a = testing.random_matrix(M, N, seed=3)
        a[7, 4] = bad
        s = _bounded(lambda: self.values(name, a, check_finite=False))
        assert np.isnan(s).all()
        with pytest.raises(ValueError, match="NaN or infinity"):
            self.values(name, a)

    @pytest.mark.parametrize("method", ["gr", "jacobi", "polar"])
    def test_vectors_nan_and_the_rest_of_a_stack_exact(self, method):
        mats = testing.random_matrix(3 * 8, 6, seed=4).reshape(3, 8, 6)
        mats[1, 2, 3] = np.nan
        u, s, vh = _bounded(lambda: self.svd(mats, method, check_finite=False))
        assert np.isnan(u[1]).all() and np.isnan(s[1]).all() and np.isnan(vh[1]).all()
        for i in (0, 2):
            assert testing.svd_residual(mats[i], u[i], s[i], vh[i]) < 30

    def test_hsvd_all_fields_nan(self):
        g = testing.random_matrix(M, N, seed=5)
        g[0, 0] = np.nan
        signs = np.where(np.arange(N) % 2 == 0, 1.0, -1.0)
        out = _bounded(lambda: gpusvd.hsvd(self.put(g), signs, device=self.device,
                                          check_finite=False))
        assert all(np.isnan(_host(x)).all() for x in out)

    def test_svd_lowrank_rejects(self):
        a = low_rank(M, N, 3, seed=6)
        a[2, 2] = np.nan
        with pytest.raises(ValueError, match="NaN or infinity"):
            _bounded(lambda: gpusvd.svd_lowrank(self.put(a), device=self.device))


@pytest.mark.gpu
class TestNotFinite_GPU(_OnGPU, TestNotFinite_CPU):
    """On the GPU the Jacobi SVD once hung here (a Cholesky retry loop on NaN)."""


def test_bidiagonal_solvers_say_the_input_was_not_finite():
    from gpusvd.bidiagonal.qr import bidiagonal_svd
    from gpusvd.bidiagonal.dqds import bidiagonal_singular_values
    d, e = np.array([1.0, np.nan, 2.0]), np.array([0.5, 0.25])
    for solve in (bidiagonal_svd, bidiagonal_singular_values):
        with pytest.raises(gpusvd.LinAlgError, match="not finite"):
            solve(d, e)


def test_host_cholesky_retries_end(monkeypatch):
    """The host's Cholesky retry loop with a growing shift is bounded, whatever the
    matrix (on the GPU it once ran forever on NaN input)."""
    from gpusvd.jacobi import blocked
    x = testing.random_matrix(4, 8, seed=7).reshape(1, 4, 8)
    calls = []

    def never(h):
        calls.append(1)
        raise np.linalg.LinAlgError("not positive definite")
    monkeypatch.setattr(np.linalg, "cholesky", never)
    with pytest.raises(gpusvd.LinAlgError, match="not finite"):
        _bounded(lambda: blocked.factor_gram(np, blocked.gram(np, x), 1e-15, x.dtype))
    assert len(calls) < 64


class TestByteOrder_CPU(Calls):
    """Big-endian input is accepted and gives the native result bit for bit (defect 4)."""

    @pytest.mark.parametrize("name", VALUE_CALLS)
    def test_big_endian(self, name):
        a = testing.random_matrix(12, 7, seed=8)
        assert np.array_equal(self.values(name, a.astype(">f8")), self.values(name, a))

    def test_big_endian_ones_and_complex(self):
        assert np.allclose(_host(gpusvd.svd(self.put(np.ones((3, 3), ">f8")),
                                            compute_uv=False, device=self.device)),
                           [3, 0, 0], atol=1e-15 * 3 * 3)
        z = testing.complex_symmetric(5, seed=9)
        assert np.array_equal(_host(gpusvd.takagi(self.put(z.astype(">c16")),
                                                  device=self.device).S),
                              _host(gpusvd.takagi(self.put(z), device=self.device).S))

    def test_svd_lowrank_big_endian(self):
        a = low_rank(40, 20, 3, seed=10)
        got = gpusvd.svd_lowrank(self.put(a.astype(">f8")), eps=1e-10, seed=0,
                                 device=self.device)
        ref = gpusvd.svd_lowrank(self.put(a), eps=1e-10, seed=0, device=self.device)
        assert np.array_equal(_host(got.S), _host(ref.S))


class TestHalfPrecision_CPU(Calls):
    """A NumPy or CuPy float16 matrix is promoted to float32, as SciPy does: the values of
    its float32 copy, bit for bit (torch and JAX half precision come back in their own
    dtype: tests/interop)."""

    @pytest.mark.parametrize("name", VALUE_CALLS)
    def test_float16_is_float32(self, name):
        a = testing.random_matrix(12, 7, seed=8).astype(np.float16)
        got = self.values(name, a)
        assert got.dtype == np.float32
        assert np.array_equal(got, self.values(name, a.astype(np.float32)))


@pytest.mark.gpu
class TestHalfPrecision_GPU(_OnGPU, TestHalfPrecision_CPU):
    """CuPy float16 input."""


@pytest.mark.gpu
class TestByteOrder_GPU(TestByteOrder_CPU):
    """Big-endian NumPy input computed on the GPU (CuPy takes native order only)."""

    device = "gpu"


# ----------------------------------------------------------------------- options

# Values every tol and every sweep limit rejects, with the same ValueError (defect 6).
BAD_TOL = [0, 0.0, -1e-3, 1.0, 2.0, np.nan, True, "1e-8"]
BAD_SWEEPS = [0, -1, 2.5, True, "3", None]
SQUARE = testing.random_matrix(6, 6, seed=11)
SYMMETRIC = testing.complex_symmetric(6, seed=11)
SIGNS = [1, -1, 1, -1, 1, -1]
WITH_SWEEPS = {
    "jacobi_svd": lambda **kw: gpusvd.jacobi_svd(SQUARE, device="cpu", **kw),
    "hsvd": lambda **kw: gpusvd.hsvd(SQUARE, SIGNS, device="cpu", **kw),
    "eigh_factored": lambda **kw: gpusvd.eigh_factored(SQUARE, SIGNS, device="cpu", **kw),
    "takagi": lambda **kw: gpusvd.takagi(SYMMETRIC, device="cpu", **kw),
}


@pytest.mark.parametrize("tol", BAD_TOL, ids=repr)
@pytest.mark.parametrize("name", WITH_SWEEPS)
def test_tol_checked_alike(name, tol):
    with pytest.raises(ValueError, match=r"tol must be a number in the open interval \(0, 1\)"):
        WITH_SWEEPS[name](tol=tol)


@pytest.mark.parametrize("sweeps", BAD_SWEEPS, ids=repr)
@pytest.mark.parametrize("name", WITH_SWEEPS)
def test_max_sweeps_checked_alike(name, sweeps):
    with pytest.raises(ValueError, match="max_sweeps must be an integer >= 1"):
        WITH_SWEEPS[name](max_sweeps=sweeps)


@pytest.mark.parametrize("name", WITH_SWEEPS)
def test_good_options_accepted(name):
    WITH_SWEEPS[name](tol=1e-10, max_sweeps=60)


@pytest.mark.parametrize("value", [0, 1, -0.5, 1.5, np.nan, True], ids=repr)
@pytest.mark.parametrize("name", ["eps", "delta"])
def test_lowrank_eps_delta_in_open_interval(name, value):
    with pytest.raises(ValueError, match=f"{name} must be a number in the open interval"):
        gpusvd.svd_lowrank(SQUARE, device="cpu", **{name: value})


@pytest.mark.parametrize("rank", [1, 6, 10.0, np.int64(20)], ids=repr)
def test_lowrank_rank_for_eps_names_max_rank(rank):
    """A rank passed where the error bound goes (torch.svd_lowrank(a, q) habit) is
    refused with the option that caps the rank."""
    with pytest.raises(ValueError, match=f"looks like a rank.*max_rank={int(rank)}"):
        gpusvd.svd_lowrank(SQUARE, rank, device="cpu")


# ------------------------------------------------------- the distributed entry points

class TestDistributedOneRank:
    """The distributed functions take the same front end (one rank, in this process)."""

    @pytest.fixture(autouse=True)
    def _mpi(self):
        pytest.importorskip("mpi4py")

    def test_options(self):
        from gpusvd import distributed
        for kw in ({"tol": 0.0}, {"tol": -1.0}, {"max_sweeps": 0}, {"pair_sweeps": 0}):
            with pytest.raises(ValueError, match=next(iter(kw))):
                distributed.jacobi_svd(SQUARE, device="cpu", **kw)
            with pytest.raises(ValueError, match=next(iter(kw))):
                distributed.hsvd(SQUARE, SIGNS, device="cpu", **kw)
        with pytest.raises(ValueError, match="eps must be a number in the open interval"):
            distributed.svd_lowrank(SQUARE, 0.0, device="cpu")

    def test_subnormal_big_endian_and_nan(self):
        from gpusvd import distributed
        a = _scaled_matrix(np.float64, -1030, 20, 12)
        ref = np.linalg.svd(a, compute_uv=False)
        s = _host(distributed.jacobi_svd(a.astype(">f8"), compute_uv=False, device="cpu"))
        assert testing.sv_error(s, ref) < SCALED_UNITS * 12
        h = distributed.hsvd(a, np.ones(12), device="cpu")
        assert testing.sv_error(_host(h.S), ref) < SCALED_UNITS * 12
        r = distributed.svd_lowrank(np.ldexp(low_rank(20, 12, 3, seed=1), -1030), 1e-10,
                                    device="cpu", seed=0)
        assert r.rank == 3
        bad = a.copy()
        bad[0, 0] = np.nan
        s = _bounded(lambda: distributed.jacobi_svd(bad, compute_uv=False, device="cpu",
                                                    check_finite=False))
        assert np.isnan(_host(s)).all()


@pytest.mark.parametrize("call", [gpusvd.svd, gpusvd.svdvals])
def test_an_unknown_keyword_is_a_type_error_that_lists_only_what_is_taken(call):
    # As Python's own for a signature: TypeError, naming the keyword; the list of what
    # the function takes does not hold it (svdvals takes no compute_uv).
    for name in ("compute_uv", "flavour") if call is gpusvd.svdvals else ("flavour",):
        with pytest.raises(TypeError, match=f"unexpected keyword argument.*'{name}'") as e:
            call(np.eye(3), **{name: True})
        assert name not in str(e.value).partition("it takes")[2]
