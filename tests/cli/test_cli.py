"""The ``gpusvd`` command: each subcommand on small files, its outputs reloaded and checked
against the decomposition's properties (in units of n·ε), ``--check``, ``info``, ``demo``,
the routing to ``gpusvd.distributed``, and every error as one line and a non-zero exit."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg

import gpusvd
from gpusvd import cli, testing
from gpusvd._core.backend import cupy_or_none

try:
    import h5py
except ImportError:  # the .h5 tests skip; CI installs h5py with the test extras
    h5py = None
needs_h5py = pytest.mark.skipif(h5py is None, reason="needs h5py")

TOL = 20  # residuals and orthogonality, in units of n·ε


def run(capsys, *argv):
    """(exit status, stdout, stderr) of ``gpusvd ARGV`` run in this process."""
    try:
        rc = cli.main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's own exit (bad command line, --help)
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs")
    a = testing.with_condition(30, 20, 1e4, seed=1)
    paths = {"a": a, "dir": folder}
    for name, value in {"a.npy": a, "stack.npy": testing.random_matrix(3, 6, seed=2)[None]
                        .repeat(2, 0), "signs.npy": np.r_[np.ones(15), -np.ones(5)],
                        "vector.npy": np.ones(4),
                        "c.npy": testing.complex_symmetric(12, seed=3)}.items():
        np.save(folder / name, value)
        paths[name] = folder / name
    np.savez(folder / "a.npz", first=a, second=a[:8, :5])
    paths["a.npz"] = folder / "a.npz"
    np.save(folder / "objects.npy", np.array([None, 1.0], dtype=object), allow_pickle=True)
    paths["objects.npy"] = folder / "objects.npy"
    (folder / "folder.npy").mkdir()
    paths["folder.npy"] = folder / "folder.npy"
    if h5py is not None:
        with h5py.File(folder / "a.h5", "w") as f:
            f["group/data"] = a
            f["other"] = np.ones(3)
        with h5py.File(folder / "one.hdf5", "w") as f:
            f["only"] = a
    paths["a.h5"], paths["one.hdf5"] = folder / "a.h5", folder / "one.hdf5"
    for name, content in {"a.txt": b"1 2\n3 4\n", "text.npy": b"1 2\n3 4\n", "empty.npy": b"",
                          "bad.npz": b"PK junk", "bad.h5": b"junk"}.items():
        (folder / name).write_bytes(content)
        paths[name] = folder / name
    return paths


def check_lines(out):
    """{name: value} of the lines ``--check`` printed."""
    lines = out[out.index("check"):].splitlines()[1:]
    return {line[:16].strip(): float(line[16:].split()[0]) for line in lines
            if line.startswith("  ")}


@pytest.mark.parametrize("extra, ku, kv", [((), 20, 20), (("--full-matrices",), 30, 20),
                                           (("--method", "jacobi"), 20, 20),
                                           (("--method", "polar"), 20, 20),
                                           (("--method", "lapack"), 20, 20)])
def test_svd_writes_u_s_vh(files, tmp_path, capsys, extra, ku, kv):
    out = tmp_path / "usv.npz"
    rc, text, err = run(capsys, "svd", files["a.npy"], "-o", out, "--device", "cpu", *extra)
    assert rc == 0 and err == "" and "wrote" in text
    with np.load(out) as z:
        assert sorted(z.files) == ["S", "U", "Vh"]
        u, s, vh = z["U"], z["S"], z["Vh"]
    assert u.shape == (30, ku) and s.shape == (20,) and vh.shape == (kv, 20)
    assert testing.svd_residual(files["a"], u, s, vh) < TOL
    assert testing.orthogonality(u) < TOL and testing.orthogonality(vh, rows=True) < TOL


def test_svd_hermitian(tmp_path, capsys):
    """--hermitian: the eigendecomposition's SVD of a symmetric matrix, checked; a matrix
    that is not symmetric is refused as the library refuses it."""
    b = testing.random_matrix(12, 12, seed=4)
    np.save(tmp_path / "h.npy", b + b.T)
    np.save(tmp_path / "b.npy", b)
    rc, text, _ = run(capsys, "svd", tmp_path / "h.npy", "--hermitian", "--check",
                      "--device", "cpu")
    values = check_lines(text)
    assert rc == 0 and all(0 <= v < TOL for v in values.values())
    rc, text, _ = run(capsys, "svdvals", tmp_path / "h.npy", "--hermitian", "--check",
                      "--device", "cpu")
    assert rc == 0
    rc, _, err = run(capsys, "svd", tmp_path / "b.npy", "--hermitian", "--device", "cpu")
    assert rc == 1 and "not Hermitian" in err


def test_svd_check_prints_residual_and_orthogonality(files, capsys):
    rc, text, _ = run(capsys, "svd", files["a.npy"], "--check")
    values = check_lines(text)
    assert rc == 0 and set(values) == {"residual", "orthogonal U", "orthogonal V"}
    assert all(0 <= v < TOL for v in values.values())


def test_svd_of_a_stack_checks_every_matrix(files, tmp_path, capsys):
    out = tmp_path / "stack.npz"
    rc, text, _ = run(capsys, "svd", files["stack.npy"], "--check", "-o", out)
    assert rc == 0 and "largest over the stack" in text
    with np.load(out) as z:
        assert z["U"].shape == (2, 3, 3) and z["S"].shape == (2, 3) and z["Vh"].shape == (2, 3, 6)


@pytest.mark.parametrize("source", ["first", "key"])
def test_svdvals_from_npz(files, tmp_path, capsys, source):
    out = tmp_path / "s.npz"
    key = () if source == "first" else ("--key", "second")
    rc, text, _ = run(capsys, "svdvals", files["a.npz"], *key, "-o", out, "--check")
    ref = files["a"] if source == "first" else files["a"][:8, :5]
    with np.load(out) as z:
        assert z.files == ["S"]
        assert testing.sv_error(z["S"], np.linalg.svd(ref, compute_uv=False)) < TOL
    assert rc == 0 and 0 <= check_lines(text)["sv error"] < TOL


@needs_h5py
@pytest.mark.parametrize("where", [("{h5}:/group/data",), ("{h5}", "--dataset", "/group/data"),
                                   ("{one}",)])
def test_jacobi_reads_hdf5_datasets(files, tmp_path, capsys, where):
    spec = [w.replace("{h5}", str(files["a.h5"])).replace("{one}", str(files["one.hdf5"]))
            for w in where]
    out = tmp_path / "j.npz"
    rc, _, _ = run(capsys, "jacobi", *spec, "-o", out, "--strategy", "brent-luk",
                   "--variant", "block-oriented", "--tol", "1e-15", "--max-sweeps", "40",
                   "--shorten", "qr")
    assert rc == 0
    with np.load(out) as z:
        assert testing.svd_residual(files["a"], z["U"], z["S"], z["Vh"]) < TOL


def test_jacobi_values_only(files, tmp_path, capsys):
    out = tmp_path / "s.npz"
    rc, text, _ = run(capsys, "jacobi", files["a.npy"], "--values-only", "--check", "-o", out,
                      "--no-precondition")
    assert rc == 0 and "sv error" in text
    with np.load(out) as z:
        np.testing.assert_allclose(z["S"], np.linalg.svd(files["a"], compute_uv=False),
                                   rtol=1e-12)


@pytest.mark.parametrize("signs", ["15", "signs.npy"])
def test_hsvd(files, tmp_path, capsys, signs):
    out = tmp_path / "h.npz"
    arg = files["signs.npy"] if signs.endswith(".npy") else signs
    rc, text, _ = run(capsys, "hsvd", files["a.npy"], "--signs", arg, "-o", out, "--check")
    assert rc == 0
    with np.load(out) as z:
        assert sorted(z.files) == ["J", "S", "U", "V"]
        u, s, v, j = z["U"], z["S"], z["V"], z["J"]
    g, sig = files["a"], np.r_[np.ones(15), -np.ones(5)]
    eps = np.finfo(np.float64).eps
    scale = np.linalg.norm(v, 2) ** 2
    assert np.linalg.norm(g @ v - u * s) < TOL * 20 * eps * np.linalg.norm(g) * scale
    assert np.linalg.norm(v.T * sig @ v - np.diag(j)) < TOL * 20 * eps * scale
    values = check_lines(text)
    assert set(values) == {"residual", "orthogonal U", "J-unitary V"}
    assert all(0 <= x < TOL for x in values.values())


@pytest.mark.parametrize("options", [("--tol", "1e-15"), ("--method", "eigh"), ()])
def test_takagi(files, tmp_path, capsys, options):
    out = tmp_path / "t.npz"
    rc, text, _ = run(capsys, "takagi", files["c.npy"], "-o", out, "--check", *options)
    assert rc == 0
    with np.load(out) as z:
        assert z.files == ["S", "U"]
        s, u = z["S"], z["U"]
    assert testing.svd_residual(np.load(files["c.npy"]), u, s, u.T) < TOL
    assert testing.orthogonality(u) < TOL
    assert all(0 <= x < TOL for x in check_lines(text).values())


@pytest.mark.parametrize("method", ["auto", "qdwh", "svd"])
@pytest.mark.parametrize("shape", [(30, 20), (12, 12), (8, 13)])
@pytest.mark.parametrize("side", ["right", "left"])
def test_polar_writes_u_p(tmp_path, capsys, side, shape, method):
    m, n = shape
    a = testing.random_matrix(m, n, seed=6)
    np.save(tmp_path / "a.npy", a)
    out = tmp_path / "up.npz"
    rc, text, err = run(capsys, "polar", tmp_path / "a.npy", "--side", side, "--method",
                        method, "-o", out, "--device", "cpu")
    assert rc == 0 and err == "" and f"wrote {out} (U, P)" in text
    assert text.startswith(f"polar: {m}x{n} float64 on CPU, ")
    with np.load(out) as z:
        assert sorted(z.files) == ["P", "U"]
        u, p = z["U"], z["P"]
    k = n if side == "right" else m
    assert u.shape == (m, n) and p.shape == (k, k)
    eps = np.finfo(np.float64).eps
    product = u @ p if side == "right" else p @ u
    assert np.linalg.norm(a - product) < TOL * max(m, n) * eps * np.linalg.norm(a)
    assert testing.orthogonality(u, rows=m < n) < TOL
    assert np.array_equal(p, p.T)
    assert np.linalg.eigvalsh(p).min() >= -TOL * k * eps * np.linalg.norm(p, 2)
    u_ref, p_ref = scipy.linalg.polar(a, side=side)
    np.testing.assert_allclose(u, u_ref, rtol=0, atol=TOL * max(m, n) * eps)
    np.testing.assert_allclose(p, p_ref, rtol=0,
                               atol=TOL * max(m, n) * eps * np.linalg.norm(a, 2))


@pytest.mark.parametrize("side", ["right", "left"])
def test_polar_check_of_a_stack(files, tmp_path, capsys, side):
    out = tmp_path / "up.npz"
    rc, text, _ = run(capsys, "polar", files["stack.npy"], "--side", side, "--check", "-o",
                      out)
    assert rc == 0 and "largest over the stack" in text
    assert f"; A = {'U P' if side == 'right' else 'P U'} (side {side})" in text
    values = check_lines(text)
    assert set(values) == {"residual", "orthogonal U", "P semidefinite"}
    assert all(0 <= v < TOL for v in values.values())
    with np.load(out) as z:  # two 3x6 matrices: U has orthonormal rows
        assert z["U"].shape == (2, 3, 6)
        assert z["P"].shape == ((2, 6, 6) if side == "right" else (2, 3, 3))


def test_lowrank_writes_bound_and_rank(files, tmp_path, capsys):
    a = testing.low_rank(40, 30, 4, seed=4)
    np.save(tmp_path / "low.npy", a)
    out = tmp_path / "lr.npz"
    rc, text, _ = run(capsys, "lowrank", tmp_path / "low.npy", "--eps", "1e-10", "--seed", "0",
                      "--max-rank", "10", "-o", out, "--check", "--no-progress")
    assert rc == 0 and "rank 4" in text
    with np.load(out) as z:
        assert sorted(z.files) == ["S", "U", "Vh", "error_bound", "rank"]
        assert z["rank"].shape == () and int(z["rank"]) == 4 and z["error_bound"] <= 1e-10
        error = np.linalg.norm(a - (z["U"] * z["S"]) @ z["Vh"]) ** 2 / np.linalg.norm(a) ** 2
    assert error <= 1e-10
    assert check_lines(text)["error"] <= 1e-10


@pytest.mark.parametrize("name", ["a.npy", pytest.param("a.h5", marks=needs_h5py)])
def test_lowrank_reads_out_of_core(files, capsys, monkeypatch, name):
    seen = []
    real = gpusvd.svd_lowrank

    def spy(a, **kw):
        seen.append(type(a))
        return real(a, **kw)

    monkeypatch.setattr(gpusvd, "svd_lowrank", spy)
    spec = f"{files[name]}:/group/data" if name == "a.h5" else files[name]
    rc, _, err = run(capsys, "lowrank", spec, "--eps", "0.01", "--progress", "--seed", "1")
    assert rc == 0 and issubclass(seen[0], np.memmap if name == "a.npy" else h5py.Dataset)
    assert "QUIC-SVD" in err  # the progress bar


def test_info(capsys):
    rc, text, _ = run(capsys, "info")
    assert rc == 0 and f"gpusvd {gpusvd.__version__}" in text and "numpy" in text
    assert "host:" in text and "Numba cache" in text and "CUDA kernel cache" in text
    if cupy_or_none() is None:
        assert "no GPU" in text
    rc, text, _ = run(capsys, "info", "--json")
    facts = json.loads(text)
    assert rc == 0 and facts["versions"]["numpy"] == np.__version__
    assert facts["host_memory"]["total_bytes"] > 0 and facts["kernels"]["cuda_files"] > 0


@pytest.mark.parametrize("argv", [["demo"], []])
def test_demo_is_the_default(capsys, argv):
    rc, text, _ = run(capsys, *argv, "--m", 12, "--n", 8, "--repeat", 1, "--device", "cpu")
    assert rc == 0 and "12x8 float64 on CPU" in text and "residual" in text


def test_distributed_is_routed(monkeypatch):
    import gpusvd.distributed.__main__ as distributed_main

    seen = []
    monkeypatch.setattr(distributed_main, "main", lambda argv: seen.append(argv) or 0)
    assert cli.main(["distributed", "--n", "40", "--values-only"]) == 0
    assert seen == [["--n", "40", "--values-only"]]


ERRORS = [
    (["svd", "{dir}/missing.npy"], 1, "missing.npy: no such file"),
    (["svd", "{vector.npy}"], 1, "2-D array"),
    (["svd", "{a.txt}"], 1, "unknown format '.txt'"),
    (["svd", "{empty.npy}"], 1, "empty.npy: not a NumPy .npy file"),
    (["svd", "{bad.npz}"], 1, "bad.npz: cannot be read"),
    pytest.param(["svd", "{bad.h5}"], 1, "bad.h5: cannot be read", marks=needs_h5py),
    (["svd", "{a.npz}", "--key", "nope"], 1, "has no array 'nope'; it holds first, second"),
    (["svd", "{a.npy}", "--key", "x"], 1, "--key names an array of a .npz file"),
    pytest.param(["svd", "{a.h5}"], 1, "holds 2 datasets (/group/data, /other)",
                 marks=needs_h5py),
    pytest.param(["svd", "{a.h5}:/nope"], 1, "has no dataset '/nope'", marks=needs_h5py),
    pytest.param(["svd", "{a.h5}:/group"], 1, "has no dataset '/group'", marks=needs_h5py),
    pytest.param(["svd", "{a.h5}", "--dataset", "/x", "--key", "k"], 1,
                 "--key names an array of a .npz file", marks=needs_h5py),
    (["svd", "{a.npy}", "--dataset", "/x"], 1, "a dataset path applies to .h5/.hdf5 files"),
    (["takagi", "{a.npy}"], 1, "square"),
    (["hsvd", "{a.npy}", "--signs", "30"], 1, "more +1 signs than the 20 columns"),
    (["hsvd", "{a.npy}", "--signs", "{vector.npy}"], 1, "signs"),
    (["lowrank", "{a.npy}", "--eps", "2"], 1, "eps"),
    (["jacobi", "{a.npy}", "--max-sweeps", "0"], 1, "max_sweeps"),
    (["takagi", "{c.npy}", "--max-sweeps", "1"], 1, "did not converge"),
    (["takagi", "{c.npy}", "--method", "eigh", "--tol", "1e-9"], 1,
     "method='eigh' takes neither"),
    (["svd", "{a.npy}", "-o", "{dir}/nowhere/x.npz"], 1, "no such directory"),
    (["svd", "{a.npy}", "-o", "{dir}/x.txt"], 1, "the output is a .npz file"),
    (["svd", "{a.npy}", "--method", "qr"], 2, "invalid choice: 'qr'"),
    (["polar", "{a.npy}", "--side", "up"], 2, "argument --side: invalid choice: 'up'"),
    (["polar", "{a.npy}", "--method", "gr"], 2, "invalid choice: 'gr'"),
    (["svd", "{a.npy}", "--device", "tpu"], 2, "expected auto, cpu, gpu or a GPU index"),
    (["svd"], 2, "required: input"),
    (["frobnicate"], 2, "invalid choice: 'frobnicate'"),
    (["bench", "svd", "--sizes", "0"], 1, "--sizes must be positive"),
]
if cupy_or_none() is None:
    ERRORS.append((["svd", "{a.npy}", "--device", "gpu"], 1, "no GPU is usable"))


@pytest.mark.parametrize("argv, status, message", ERRORS, ids=lambda x: str(x)[:40])
def test_errors_are_one_line(files, capsys, argv, status, message):
    for name, path in files.items():
        argv = [a.replace("{" + name + "}", str(path)) for a in argv]
    rc, out, err = run(capsys, *argv)
    assert rc == status
    assert err.startswith("gpusvd: error: ") and err.count("\n") == 1, err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["svd", "svdvals", "jacobi", "hsvd", "takagi", "polar",
                                     "lowrank"])
@pytest.mark.parametrize("problem", ["1-D", "NaN"])
def test_errors_name_the_command_typed(files, tmp_path, capsys, command, problem):
    """``gpusvd svd`` without -o calls svdvals, ``jacobi`` jacobi_svd, ``lowrank``
    svd_lowrank: the message names the command the user typed, not the function."""
    if problem == "1-D":
        path = files["vector.npy"]
        expected = f"gpusvd: error: {command} expects a 2-D "
    else:
        x = np.load(files["c.npy" if command == "takagi" else "a.npy"])
        x[1, 1] = np.nan
        path = tmp_path / "nan.npy"
        np.save(path, x)
        expected = f"gpusvd: error: {command}: the input contains NaN or infinity; "
    extra = ("--signs", "1") if command == "hsvd" else ()
    rc, _, err = run(capsys, command, path, "--device", "cpu", *extra)
    assert rc == 1 and err.startswith(expected), err
    others = {"svdvals", "jacobi_svd", "svd_lowrank"} - {command}
    assert not any(name in err for name in others), err


@pytest.mark.parametrize("name, text", [
    ("dir", "{path}: is a directory; expected a .npy, .npz, .h5 or .hdf5 file"),
    ("folder.npy", "{path}: is a directory; expected a .npy, .npz, .h5 or .hdf5 file"),
    ("text.npy", "{path}: not a NumPy .npy file (no NumPy header); expected an array "
                 "written by numpy.save"),
    ("objects.npy", "{path}: cannot be read (it holds Python objects, not numbers; expected "
                    "an array of numbers)")])
@pytest.mark.parametrize("command", ["svd", "polar", "lowrank"])
def test_unreadable_input_says_what_it_is(files, capsys, name, text, command):
    """A directory is not "no such file"; a file named .npy that is not one (text, or an
    object array) gets no advice to pass allow_pickle, which the command line has not."""
    rc, _, err = run(capsys, command, files[name])
    assert rc == 1 and err == f"gpusvd: error: {text.format(path=files[name])}\n"
    assert "allow_pickle" not in err and "pickle" not in err


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (2, 0, 3)])
@pytest.mark.parametrize("command", ["svd", "svdvals", "jacobi"])
def test_empty_input_checks(tmp_path, capsys, command, shape):
    np.save(tmp_path / "empty.npy", np.zeros(shape))
    out = tmp_path / "out.npz"
    rc, text, err = run(capsys, command, tmp_path / "empty.npy", "--check", "--device", "cpu",
                        "-o", out)
    assert rc == 0 and err == ""
    assert check_lines(text) and all(v == 0 for v in check_lines(text).values())
    with np.load(out) as z:
        assert z["S"].shape == (*shape[:-2], 0)


@pytest.mark.parametrize("command", ["svd", "svdvals", "jacobi", "hsvd", "takagi", "polar"])
def test_nan_error_names_the_flag_that_skips_the_check(files, tmp_path, capsys, monkeypatch,
                                                       command):
    a = files["c.npy"] if command == "takagi" else files["a.npy"]
    x = np.load(a)
    x[1, 1] = np.nan
    np.save(tmp_path / "nan.npy", x)
    extra = ("--signs", "15") if command == "hsvd" else ()
    rc, _, err = run(capsys, command, tmp_path / "nan.npy", "--device", "cpu", *extra)
    assert rc == 1 and "NaN" in err
    assert "--no-check-finite" in err and "check_finite=False" not in err
    # The flag reaches the library call: it is given check_finite=False.
    # Without -o or --check, svd computes values only (the note of the summary line says so).
    name = {"jacobi": "jacobi_svd", "svd": "svdvals"}.get(command, command)
    seen = []
    real = getattr(gpusvd, name)
    monkeypatch.setattr(gpusvd, name, lambda *a, **kw: seen.append(kw) or real(*a, **kw))
    run(capsys, command, a, "--device", "cpu", "--no-check-finite", *extra)
    assert seen and seen[0]["check_finite"] is False


@pytest.mark.skipif(cupy_or_none() is not None, reason="a GPU is usable here")
@pytest.mark.parametrize("argv", [["svd", "{a.npy}"], ["lowrank", "{a.npy}"],
                                  ["demo", "--m", "4"], ["bench", "svd", "--sizes", "4"]])
@pytest.mark.parametrize("device", ["3", "gpu"])
def test_device_error_echoes_the_option(files, capsys, argv, device):
    argv = [a.replace("{a.npy}", str(files["a.npy"])) for a in argv]
    rc, _, err = run(capsys, *argv, "--device", device)
    assert rc == 1 and err == (f"gpusvd: error: --device {device}: no GPU is usable (CuPy "
                               "missing, no CUDA driver or no device)\n")


def test_lowrank_says_when_max_rank_misses_eps(tmp_path, capsys):
    np.save(tmp_path / "big.npy", testing.random_matrix(60, 40, seed=5))
    out = tmp_path / "lr.npz"
    rc, text, err = run(capsys, "lowrank", tmp_path / "big.npy", "--max-rank", "5", "--seed",
                        "0", "--no-progress", "-o", out)
    with np.load(out) as z:  # the result is still written: it is the best of rank 5
        bound = float(z["error_bound"])
        assert int(z["rank"]) == 5 and bound > 1e-6
    assert rc == cli.EXIT_EPS_MISSED and rc not in (0, 1, 2)
    assert err == (f"gpusvd: warning: the error bound {bound:.3g} misses --eps 1e-06: "
                   "--max-rank 5 stopped the rank first; raise --max-rank or --eps\n")
    rc, _, err = run(capsys, "lowrank", tmp_path / "big.npy", "--max-rank", "40", "--seed",
                     "0", "--no-progress")
    assert rc == 0 and err == ""


@pytest.mark.parametrize("stop, line", [(KeyboardInterrupt, "gpusvd: interrupted"),
                                        (ValueError("bad"), "gpusvd: error: bad")])
def test_interrupt_and_error_start_a_fresh_line(files, capsys, monkeypatch, stop, line):
    from gpusvd._core.progress import ProgressBar

    def stopped(*args, **kwargs):  # the QUIC-SVD bar is drawn and never closed
        ProgressBar("QUIC-SVD grow", 3).update(1, "basis 4")
        raise stop

    monkeypatch.setattr(gpusvd, "svd_lowrank", stopped)
    rc, _, err = run(capsys, "lowrank", files["a.npy"], "--progress")
    assert rc == (130 if stop is KeyboardInterrupt else 1)
    bar, rest = err.split("\n", 1)
    assert bar.startswith("\rQUIC-SVD grow [") and rest == line + "\n"
    # Where the bar has ended its line already, no empty line is added.
    rc, _, err = run(capsys, "jacobi", files["a.npy"], "--progress", "--max-sweeps", "1")
    assert "\n\n" not in err


@needs_h5py
def test_hdf5_without_h5py(files, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)  # import h5py now fails
    rc, _, err = run(capsys, "svd", files["a.h5"])
    assert rc == 1 and err == "gpusvd: error: reading .h5 files needs h5py (pip install h5py)\n"


def test_debug_reraises(files, capsys):
    with pytest.raises(ValueError, match="square"):
        cli.main(["takagi", str(files["a.npy"]), "--debug"])


def test_python_dash_m(files, tmp_path):
    out = tmp_path / "s.npz"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(gpusvd.__file__)), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "gpusvd", "svdvals", str(files["a.npy"]),
                           "-o", str(out)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("svdvals: 30x20 float64")
    with np.load(out) as z:
        np.testing.assert_allclose(z["S"], np.linalg.svd(files["a"], compute_uv=False),
                                   rtol=1e-12)


def test_svd_without_out_computes_values_only_and_says_so(files, capsys, monkeypatch):
    """``gpusvd svd A.npy`` without -o: no vectors computed to be dropped, and the summary
    says how to get them."""
    calls = []
    real = gpusvd.svd
    monkeypatch.setattr(gpusvd, "svd", lambda *a, **kw: calls.append(kw) or real(*a, **kw))
    rc, out, _ = run(capsys, "svd", files["a.npy"], "--device", "cpu")
    assert rc == 0 and calls == [] and "pass -o FILE.npz to write U, S and Vh" in out


def test_what_the_commands_say_agrees_with_the_docs(capsys):
    """The README, ``gpusvd info``, ``gpusvd demo`` and ``--check``'s
    help no longer contradict each other or the numbers they print."""
    import pathlib

    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "gpusvd --m" not in readme and "gpusvd demo --m 2000" in readme
    assert cli.main(["info"]) == 0
    info = capsys.readouterr().out
    assert "compiled at first use on each GPU" not in info and "shipped compiled" in info
    assert cli.main(["demo", "--m", "40", "--device", "cpu", "--repeat", "3"]) == 0
    demo = capsys.readouterr().out
    assert "compilation included" not in demo and "median of the calls after the first" in demo
    assert "max(m,n) eps" in demo and "(k eps)" in demo
    with pytest.raises(SystemExit):
        cli.main(["svd", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "units of n*eps" not in text and "max(m,n)*eps" in text and "k*eps" in text
