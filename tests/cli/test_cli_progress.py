"""``--progress`` of the Jacobi and Takagi subcommands: one redraw of the bar on stderr per
sweep (as many as the library reports to an observer), stdout unchanged, nothing without
the option, and nothing from the library called directly."""

import re

import numpy as np
import pytest

import gpusvd
from gpusvd import cli, testing
from gpusvd._core import progress
from gpusvd.jacobi.driver import MAX_SWEEPS
from gpusvd.takagi.driver import MAX_SWEEPS as TAKAGI_MAX_SWEEPS, default_tol


def run(capsys, *argv):
    """(exit status, stdout, stderr) of ``gpusvd ARGV`` run in this process."""
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def redraws(err):
    """The bar's states: each redraw starts with a carriage return."""
    assert err.endswith("\n")
    return err.rstrip("\n").split("\r")[1:]


def untimed(out):
    return re.sub(r"\d+\.\d+ s;", "T s;", out)


def sweeps_observed(call):
    """The (task, sweep, measures) that ``call()`` reports to an observer."""
    seen = []
    with progress.observing(lambda task, sweep, total, measures:
                            seen.append((task, sweep, measures))):
        call()
    return seen


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs")
    # 40 columns: more than 2b (b = 16 on the CPU), so the blocked method's sweep loop runs.
    arrays = {"a": testing.with_condition(60, 40, 1e4, seed=1),
              "small": testing.with_condition(30, 20, 1e4, seed=1),
              "c": testing.complex_symmetric(12, seed=3)}
    paths = {}
    for name, value in arrays.items():
        paths[name] = folder / f"{name}.npy"
        np.save(paths[name], value)
    return arrays, paths


def test_jacobi_one_redraw_per_block_sweep(files, capsys):
    arrays, paths = files
    seen = sweeps_observed(lambda: gpusvd.jacobi_svd(arrays["a"], device="cpu"))
    assert 1 <= len(seen) <= MAX_SWEEPS
    assert [s for _, s, _ in seen] == list(range(1, len(seen) + 1))
    assert seen[-1][2] == {"rotations": 0}  # converged: the last sweep rotated nothing
    rc, out, err = run(capsys, "jacobi", paths["a"], "--device", "cpu", "--progress")
    assert rc == 0
    states = redraws(err)
    assert len(states) == len(seen)
    for sweep, state in enumerate(states, 1):
        assert state.startswith("Jacobi sweep [")
        assert f" {sweep}/{MAX_SWEEPS} rotations " in state
    assert " rotations 0 " in states[-1]
    rc, quiet_out, quiet_err = run(capsys, "jacobi", paths["a"], "--device", "cpu")
    assert rc == 0 and quiet_err == "" and untimed(quiet_out) == untimed(out)


def test_takagi_one_redraw_per_sweep(files, capsys, tmp_path):
    arrays, paths = files
    seen = sweeps_observed(lambda: gpusvd.takagi(arrays["c"], method="jacobi", device="cpu"))
    assert 1 <= len(seen) <= TAKAGI_MAX_SWEEPS and {t for t, _, _ in seen} == {"takagi"}
    assert [s for _, s, _ in seen] == list(range(1, len(seen) + 1))
    (tmp_path / "quiet").mkdir()
    rc, out, err = run(capsys, "takagi", paths["c"], "--method", "jacobi", "--device", "cpu",
                       "--progress", "-o", tmp_path / "su.npz")
    assert rc == 0
    states = redraws(err)
    assert len(states) == len(seen)
    offs = [float(re.search(r" off (\S+) ", s).group(1)) for s in states]
    assert all(s.startswith("Takagi sweep [") for s in states)
    assert offs[-1] <= default_tol(12, np.complex128) < offs[0]  # stopped when converged
    rc, quiet_out, quiet_err = run(capsys, "takagi", paths["c"], "--method", "jacobi",
                                   "--device", "cpu", "--no-progress",
                                   "-o", tmp_path / "quiet" / "su.npz")
    assert rc == 0 and quiet_err == ""
    assert untimed(quiet_out).replace("quiet/", "") == untimed(out)
    with np.load(tmp_path / "su.npz") as z, np.load(tmp_path / "quiet" / "su.npz") as z2:
        assert np.array_equal(z["S"], z2["S"]) and np.array_equal(z["U"], z2["U"])


@pytest.mark.parametrize("argv", [("svd", "a", "--method", "jacobi"),
                                  ("hsvd", "a", "--signs", "30"), ("jacobi", "small"),
                                  ("svdvals", "small", "--method", "jacobi")])
def test_jacobi_commands_show_sweeps(files, capsys, argv):
    command, name, *options = argv
    rc, out, err = run(capsys, command, files[1][name], *options, "--device", "cpu",
                       "--progress")
    states = redraws(err)
    assert rc == 0 and out.startswith(f"{command}: ") and states
    for state in states:
        sweep = int(re.search(rf" (\d+)/{MAX_SWEEPS} ", state).group(1))
        assert state.startswith("Jacobi sweep [") and 1 <= sweep <= MAX_SWEEPS


def test_gr_shows_nothing(files, capsys):
    rc, _, err = run(capsys, "svd", files[1]["a"], "--method", "gr", "--device", "cpu",
                     "--progress")
    assert rc == 0 and err == ""


@pytest.mark.parametrize("command, name, options", [("jacobi", "a", ()), ("takagi", "c", ()),
                                                   ("hsvd", "a", ("--signs", "30"))])
def test_nothing_without_progress(files, capsys, command, name, options):
    for flag in ((), ("--no-progress",)):  # stderr is no terminal under pytest
        rc, out, err = run(capsys, command, files[1][name], *options, "--device", "cpu", *flag)
        assert rc == 0 and out and err == ""


def test_bar_ends_before_an_error(files, capsys):
    rc, out, err = run(capsys, "jacobi", files[1]["a"], "--device", "cpu", "--progress",
                       "--max-sweeps", "1")
    lines = err.split("\n")
    assert rc == 1 and out == ""
    assert lines[0].startswith("\rJacobi sweep [") and " 1/1 " in lines[0]
    assert lines[1].startswith("gpusvd: error: jacobi: no convergence")


def test_library_prints_nothing(files, capsys):
    arrays, _ = files
    gpusvd.jacobi_svd(arrays["a"], device="cpu")
    gpusvd.jacobi_svd(arrays["small"], compute_uv=False, device="cpu")
    gpusvd.hsvd(arrays["a"], np.r_[np.ones(30), -np.ones(10)], device="cpu")
    gpusvd.takagi(arrays["c"], device="cpu")
    assert capsys.readouterr() == ("", "")


def test_observer_is_scoped():
    seen = []
    with progress.observing(lambda *args: seen.append(args)):
        progress.report("jacobi", 1, 5, rotations=3)
        with progress.observing(lambda *args: None):
            progress.report("jacobi", 2, 5)
        progress.report("jacobi", 3, 5)
    progress.report("jacobi", 4, 5)
    assert seen == [("jacobi", 1, 5, {"rotations": 3}), ("jacobi", 3, 5, {})]
