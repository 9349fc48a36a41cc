"""The scripts in ``examples/``, each run at a small size on the CPU through its ``main``.

Each test checks what its example claims, against a reference the example does not use
where there is one (scikit-learn's PCA, the eigenvalues of the adjacency matrix).
"""

import importlib.util
import pathlib
import runpy
import sys

import numpy as np
import pytest

from gpusvd._core.backend import cupy_or_none

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
EPS = np.finfo(np.float64).eps


def run(name, *argv):
    """Import ``examples/NAME.py`` and call its ``main`` with ``argv``."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main([*argv, "--device", "cpu"])


def test_every_example_is_tested():
    tested = {"pca_digits", "gbs_squeezing", "indefinite_eigh", "out_of_core_lowrank"}
    assert {p.stem for p in EXAMPLES.glob("*.py")} == tested


SMALL = {"pca_digits": ["--size", "60"], "gbs_squeezing": ["--size", "6"],
         "indefinite_eigh": ["--size", "6"],
         "out_of_core_lowrank": ["--rows", "400", "--cols", "20"]}


@pytest.mark.skipif(cupy_or_none() is not None, reason="a GPU is usable here")
@pytest.mark.parametrize("name", sorted(SMALL))
def test_no_gpu_is_one_line(monkeypatch, name):
    """``python examples/NAME.py --device gpu`` without a GPU: one line, no traceback."""
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *SMALL[name], "--device", "gpu"])
    with pytest.raises(SystemExit) as stop:
        runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    assert stop.value.code == (f"{name}.py: error: device='gpu' was asked for but no GPU is "
                               "usable (CuPy missing, no CUDA driver or no device)")


def test_pca_digits(capsys):
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    r = run("pca_digits", "--size", "600", "--target", "0.9")
    assert r["shape"] == (600, 64)
    assert r["ratio_error"] < 100 * EPS
    sklearn_ratio = PCA(svd_solver="full").fit(load_digits().data[:600]).explained_variance_ratio_
    np.testing.assert_allclose(r["ratio"], sklearn_ratio, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r["score_variance"], r["variance"][:2], rtol=1e-12)
    # The guarantee: the low-rank components explain at least 90%, and no rank below the
    # exact PCA's can (Eckart–Young).
    assert r["lowrank_explained"] >= 0.9
    assert abs(r["lowrank_explained"] - r["lowrank_explained_true"]) < 1e-12
    assert r["needed"] <= r["lowrank_rank"] <= r["needed"] + 2
    assert "explained variance ratio" in capsys.readouterr().out


def test_gbs_squeezing(capsys):
    r = run("gbs_squeezing", "--size", "10", "--photons", "2.5")
    sigma, c, squeezing = r["sigma"], r["c"], r["r"]
    assert c * sigma[0] < 1
    assert abs(r["mean_photons"] - 2.5) < 1e-12
    assert abs(np.sum(np.sinh(squeezing) ** 2) - 2.5) < 1e-12
    assert abs(r["mean_photons_state"] - 2.5) < 1e-12
    assert np.all(squeezing >= 0) and np.all(np.diff(squeezing) <= 0)
    np.testing.assert_allclose(np.tanh(squeezing), c * sigma, rtol=1e-14, atol=0)
    assert r["takagi_residual"] < 1e-13 and r["eig_error"] < 1e-13
    assert np.abs(r["u"].conj().T @ r["u"] - np.eye(10)).max() < 1e-13
    assert r["b_error"] < 1e-13
    assert abs(r["vacuum"] - r["vacuum_state"]) < 1e-13
    assert "mean photon number 2.500000" in capsys.readouterr().out


def test_indefinite_eigh(capsys):
    r = run("indefinite_eigh", "--size", "8", "--grading", "1e-8")
    assert r["agree"] < 100 * r["n"] * EPS and r["residual"] < 100 * r["n"] * EPS
    ref = r["reference"]
    assert np.abs(ref).min() / np.abs(ref).max() < 1e-15   # graded: eigh cannot resolve it
    assert r["error"] < 100 * r["n"] * EPS                 # every eigenvalue, relatively
    assert r["error_eigh"] > 1e-3                          # the formed H loses the small ones
    assert np.array_equal(np.sign(r["w"]), np.sign(ref))
    assert "eigh_factored" in capsys.readouterr().out


def test_out_of_core_lowrank(capsys):
    r = run("out_of_core_lowrank", "--rows", "4000", "--cols", "100", "--eps", "1e-4")
    assert r["partitions"] == 4 and r["passes"] >= 2
    assert r["error_bound"] <= r["eps"]
    assert abs(r["true_error"] - r["error_bound"]) <= 1e-6 * r["eps"]
    # No rank-k approximation beats the truncated SVD; QUIC's rank is close to it.
    assert r["optimal_rank"] <= r["rank"] <= 1.25 * r["optimal_rank"]
    assert "true error" in capsys.readouterr().out


def test_out_of_core_lowrank_distributed(capsys):
    """The --distributed form in one process (one rank: one partition); mpiexec runs it
    over several (tests/distributed covers distributed.svd_lowrank on 2 to 4 ranks)."""
    r = run("out_of_core_lowrank", "--rows", "4000", "--cols", "100", "--eps", "1e-4",
            "--distributed")
    assert r["partitions"] == 1 and r["passes"] >= 2
    assert r["error_bound"] <= r["eps"]
    assert abs(r["true_error"] - r["error_bound"]) <= 1e-6 * r["eps"]
    assert r["optimal_rank"] <= r["rank"] <= 1.25 * r["optimal_rank"]
    assert "distributed.svd_lowrank" in capsys.readouterr().out
