"""The multi-GPU level on CPU ranks: ``mpiexec -n 2`` and ``-n 4`` on ``worker.py``.

Each launch runs every case once and writes what each rank saw; the tests below check
it: results on root only, equal to the single-process ``gpusvd.jacobi_svd``/``hsvd``
to rounding with the same accuracy, and every rank raising when one rank fails. A
launch that does not finish within :data:`TIMEOUT` fails the tests (nothing hangs).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .worker import (CASES, GR_CASES, HSVD_CASES, LOWRANK_CASES, POLAR_CASES, POLAR_ROWS_CASES,
                     SHORT)

pytestmark = pytest.mark.mpi

HERE = Path(__file__).parent
# Seconds a launch may take: about 30 s on CI's two cores with a fresh Numba cache. On a
# fresh GPU machine each rank also compiles every CUDA kernel, and the two-GPU launch did
# not finish in 150 s there: GPUSVD_MPI_TEST_TIMEOUT raises the limit.
TIMEOUT = float(os.environ.get("GPUSVD_MPI_TEST_TIMEOUT", 150))
# (ranks, cases): four ranks oversubscribe two cores, so they run the short list.
RUNS = {2: "all", 4: "short"}
# Relative error of the singular values against the single-process driver, in units
# of n·ε: both are relatively accurate, so they differ by a few n·ε at most.
SV_UNITS = 2
# Residual and orthogonality (units of n·ε): no worse than the single process's by more
# than this factor, plus one unit.
WORSE = 2


def mpiexec():
    found = Path(sys.executable).with_name("mpiexec")
    path = str(found) if found.exists() else shutil.which("mpiexec")
    if path is None:
        pytest.skip("no mpiexec (pip install mpich mpi4py)")
    return path


def launch(ranks, tmp, device="cpu", which="all"):
    """Run the worker on ``ranks`` ranks; the list of what each rank wrote."""
    pytest.importorskip("mpi4py")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(HERE), str(HERE.parents[1] / "src"),
                                           os.environ.get("PYTHONPATH", "")]))
    out = tmp / f"run{ranks}{device}"
    cmd = [mpiexec(), "-n", str(ranks), sys.executable, "-m", "mpi4py",
           str(HERE / "worker.py"), str(out), device, which]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        seen = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
        pytest.fail(f"mpiexec -n {ranks} did not finish in {TIMEOUT:g} s (a hang?); "
                    f"the ranks' trace:\n{seen[-3000:]}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [json.loads(Path(f"{out}.{r}.json").read_text()) for r in range(ranks)]


@pytest.fixture(scope="module", params=sorted(RUNS), ids=lambda r: f"{r}ranks")
def run(request, tmp_path_factory):
    ranks = request.param
    return ranks, launch(ranks, tmp_path_factory.mktemp("mpi"), which=RUNS[ranks])


def cases(run, names):
    ranks, seen = run
    names = [n for n in names if RUNS[ranks] == "all" or n in SHORT]
    return ranks, seen, names


SVD_NAMES = [c[0] for c in CASES]
HSVD_NAMES = [c[0] for c in HSVD_CASES]
LOWRANK_NAMES = [c[0] for c in LOWRANK_CASES]
SIZES = {c[0]: min(c[1], c[2]) for c in CASES} | {c[0]: c[2] for c in HSVD_CASES}


def test_result_on_root_only(run):
    ranks, seen, names = cases(run, SVD_NAMES + HSVD_NAMES)
    assert [seen[r]["transport"] for r in range(ranks)] == ["mpi"] * ranks
    assert all(seen[r][name]["none"] is True for r in range(1, ranks) for name in names)
    assert all("none" not in seen[0][name] for name in names)


def test_singular_values_equal_single_process(run):
    _, seen, names = cases(run, SVD_NAMES + HSVD_NAMES)
    for name in names:
        got = seen[0][name]["sv_vs_single"]
        assert got <= SV_UNITS * SIZES[name], (name, got)


def test_same_accuracy_as_single_process(run):
    _, seen, names = cases(run, SVD_NAMES)
    for name in names:
        rec = seen[0][name]
        if "residual" not in rec:
            continue
        assert rec["shapes"] == rec["ref_shapes"], name
        assert rec["residual"] <= WORSE * rec["residual_single"] + 1, (name, rec)
        assert rec["orth"] <= WORSE * rec["orth_single"] + 1, (name, rec)
        assert rec["type"] == "numpy"


def test_graded_keeps_relative_accuracy(run):
    _, seen, names = cases(run, ["graded"])
    for name in names:
        # LAPACK's bidiagonal SVD loses the small values of this matrix; Jacobi does not.
        assert seen[0][name]["sv_single_vs_lapack"] > 1e6
        assert seen[0][name]["sv_vs_single"] < SV_UNITS * SIZES[name]


def test_hsvd_properties(run):
    _, seen, names = cases(run, HSVD_NAMES)
    for name in names:
        rec = seen[0][name]
        assert rec["signs_equal"], name
        assert rec["hsvd_residual"] < 5 and rec["j_unitary"] < 5 and rec["orth"] < 5, rec


POLAR_NAMES = [c[0] for c in POLAR_CASES]
POLAR_SIZES = {c[0]: max(c[1], c[2]) for c in POLAR_CASES}
# The polar method's bound on its values against the one-process method's, in units of
# n·ε·σ₁ (both backward stable, along different paths: estimates and steps from the
# ranks' summed Gram matrix, one-matrix QDWH alone), and on residual and orthogonality.
POLAR_SV_UNITS = 10
POLAR_BOUND = 30


def check_on_root_only(seen, ranks, names, kind):
    assert all(seen[r][name]["none"] is True for r in range(1, ranks) for name in names)
    assert all(seen[0][name]["type"] == kind for name in names)


def check_agrees(seen, names, sizes, sv_units, floor):
    """Root's values within ``sv_units``·n·ε·σ₁ of the one-process method's, its
    residual and orthogonality (n·ε) no worse than ``floor`` or than the one process's
    by more than :data:`WORSE` times and one unit."""
    for name in names:
        rec = seen[0][name]
        assert rec["sv_vs_single"] <= sv_units * sizes[name], (name, rec)
        if "residual" not in rec:
            continue
        assert rec["shapes"] == rec["ref_shapes"], name
        assert rec["residual"] <= max(floor, WORSE * rec["residual_single"] + 1), rec
        assert rec["orth"] <= max(floor, WORSE * rec["orth_single"] + 1), rec


def check_polar_agrees(seen, names):
    check_agrees(seen, names, POLAR_SIZES, POLAR_SV_UNITS, POLAR_BOUND)


GR_NAMES = [c[0] for c in GR_CASES]
GR_SIZES = {c[0]: max(c[1], c[2]) for c in GR_CASES}


def check_gr_agrees(seen, names):
    """The Golub–Reinsch SVD with its back-transformations shared out by columns: the
    one-device two-stage SVD's values to rounding (the same reduction), its residual
    and orthogonality."""
    check_agrees(seen, names, GR_SIZES, SV_UNITS, 0)


# distributed.svd's methods: their cases and the check against the one-process method.
EXACT = {"polar": (POLAR_NAMES, check_polar_agrees), "gr": (GR_NAMES, check_gr_agrees)}


@pytest.mark.parametrize("method", EXACT)
def test_exact_result_on_root_only(run, method):
    ranks, seen, names = cases(run, EXACT[method][0])
    check_on_root_only(seen, ranks, names, "numpy")


@pytest.mark.parametrize("method", EXACT)
def test_exact_agrees_with_one_process(run, method):
    names, check = EXACT[method]
    _, seen, names = cases(run, names)
    check(seen, names)


ROWS_NAMES = [c[0] for c in POLAR_ROWS_CASES]
ROWS_SIZES = {c[0]: max(c[1], c[2]) for c in POLAR_ROWS_CASES}
ROWS_COLUMNS = {c[0]: c[2] for c in POLAR_ROWS_CASES}


def check_rows_everywhere(seen, ranks, names, kind):
    for name in names:
        for r in range(ranks):
            rec = seen[r][name]
            assert rec["s_as_root"] and rec.get("vh_as_root", True), (name, r)
            assert rec["type"] == kind
            if "u_shape" in rec:
                r0, r1 = rec["rows"]
                assert rec["u_shape"] == [r1 - r0, ROWS_COLUMNS[name]], name


def test_rows_give_every_rank_its_rows_of_u_and_the_same_s_and_vh(run):
    ranks, seen, names = cases(run, ROWS_NAMES)
    check_rows_everywhere(seen, ranks, names, "numpy")


def check_rows_agree(seen, names):
    """Rows as root would send them: the same bits as A on root. Any split: the polar
    method's accuracy, against the one-process method as for A on root."""
    split = {c[0]: c[3].get("split", "uneven") for c in POLAR_ROWS_CASES}
    for name in names:
        rec = seen[0][name]
        if split[name] == "even":
            assert rec["same_bits_as_root"], name
        assert rec["sv_vs_single"] <= POLAR_SV_UNITS * ROWS_SIZES[name], (name, rec)
        if "residual" not in rec:
            continue
        assert rec["residual"] <= max(POLAR_BOUND, WORSE * rec["residual_single"] + 1), rec
        assert rec["orth"] <= max(POLAR_BOUND, WORSE * rec["orth_single"] + 1), rec



def test_rows_agree_with_one_process_and_with_a_on_root(run):
    _, seen, names = cases(run, ROWS_NAMES)
    check_rows_agree(seen, names)

def infos(seen, ranks, name):
    return [seen[r][name]["info"] for r in range(ranks)]


def test_the_last_sweep_mostly_tests_the_pairs(run):
    """Default: steps whose pair is already orthogonal end after the Gram matrix (most
    of the last sweep's: measured 7 of 6 steps with 2 ranks, 24 of 28 with 4); without,
    every step runs in full."""
    ranks, seen, names = cases(run, ["101", "no-skip"])
    for name in names:
        info = infos(seen, ranks, name)
        assert len({i["sweeps"] for i in info}) == 1
        steps_per_sweep = 2 * ranks * info[0]["pairs_per_rank"] - 1
        assert all(i["steps"] == info[0]["sweeps"] * steps_per_sweep for i in info)
        skipped = sum(i["skipped"] for i in info)
        if name == "no-skip":
            assert skipped == 0
        else:
            assert skipped >= ranks * steps_per_sweep / 2, info


def test_an_orthogonal_matrix_takes_one_sweep_of_tests(run):
    ranks, seen, names = cases(run, ["orthogonal"])
    for name in names:
        assert all(i["sweeps"] == 1 and i["skipped"] == i["steps"]
                   for i in infos(seen, ranks, name))


def test_two_pair_sweeps_take_fewer_outer_sweeps(run):
    ranks, seen, names = cases(run, ["101", "pair-sweeps"])
    if len(names) == 2:
        assert infos(seen, ranks, "pair-sweeps")[0]["sweeps"] < \
            infos(seen, ranks, "101")[0]["sweeps"]


def test_two_pairs_per_rank(run):
    """Twice the block-columns (and both moved between slots on one rank and across
    ranks); the results are checked with the other cases'."""
    ranks, seen, names = cases(run, ["pairs"])
    for name in names:
        info = infos(seen, ranks, name)
        assert all(i["pairs_per_rank"] == 2 for i in info)
        assert all(i["steps"] == i["sweeps"] * (4 * ranks - 1) * 2 for i in info)


@pytest.mark.parametrize("case, error", [
    ("nan", "ValueError"), ("option", "ValueError"), ("stack", "ValueError"),
    ("outer-option", "ValueError"),
    ("signs", "ValueError"), ("injected", "RuntimeError"), ("sweeps", "LinAlgError"),
    ("after", "ok"), ("polar-nan", "ValueError"), ("polar-stack", "ValueError"),
    ("rows-columns", "ValueError"), ("rows-wide", "ValueError"), ("rows-nan", "ValueError"),
    ("gr-rows", "ValueError"), ("gr-nan", "ValueError"), ("gr-method", "ValueError"),
    ("auto-nan", "ValueError"), ("auto-stack", "ValueError")])
def test_an_error_on_one_rank_raises_on_every_rank(run, case, error):
    ranks, seen = run
    assert [seen[r]["errors"][case] for r in range(ranks)] == [error] * ranks


@pytest.mark.parametrize("method", [None, "gr", "polar", "jacobi"])
def test_command_line(tmp_path, method):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(HERE.parents[1] / "src"))
    cmd = [mpiexec(), "-n", "2", sys.executable, "-m", "gpusvd.distributed", "--n", "40",
           "--m", "53", "--device", "cpu"] + ([] if method is None else ["--method", method])
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    line = done.stdout.strip()
    assert line.startswith(f"2 rank(s), {method or 'auto'}, 53x40 float64")
    assert len(line.splitlines()) == 1 and ("outer sweeps" in line) == (method == "jacobi")
    error = float(line.split("relative sv error ")[1].split(",")[0])
    assert error < 1e-8   # cond 1e6: the rounding of the generated matrix, times 1e6
    residual = float(line.split("residual ")[1].split(",")[0])
    assert residual < 30


@pytest.mark.gpu
def test_two_gpus():
    import tempfile

    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs (NCCL takes one rank per GPU): device kind nvidia-h200-x2")

    with tempfile.TemporaryDirectory() as tmp:
        seen = launch(2, Path(tmp), device="gpu", which="short")
    for name in [n for n in SHORT if n in SIZES]:   # the Jacobi SVD and the HSVD
        rec = seen[0][name]
        assert seen[1][name]["none"] is True
        # Other rounding than the CPU's: the two differ by the error each has, of the
        # order of the single process's own distance from LAPACK (κ·ε for Jacobi; 1526 ε
        # against 828 ε from LAPACK for "pairs", 260 columns, on two H200s).
        bound = SV_UNITS * SIZES[name] + 4 * rec.get("sv_single_vs_lapack", 0.0)
        assert rec["sv_vs_single"] <= bound, (name, rec)
        if "residual" in rec:
            assert rec["type"] == "cupy"
            assert rec["residual"] <= WORSE * rec["residual_single"] + 1, (name, rec)
            assert rec["orth"] <= WORSE * rec["orth_single"] + 1, (name, rec)
    # 260 columns, 32-column blocks: two pairs per rank, each on its own stream
    assert [seen[r]["pairs"]["info"]["pairs_per_rank"] for r in range(2)] == [2, 2]
    assert [seen[r]["transport"] for r in range(2)] == ["nccl"] * 2
    assert [seen[r]["errors"]["injected"] for r in range(2)] == ["RuntimeError"] * 2
    assert np.all([seen[r]["errors"]["after"] == "ok" for r in range(2)])
    # The polar method, A on root and rows on every rank: against the one-process method
    polar = [n for n in POLAR_NAMES if n in SHORT]
    check_on_root_only(seen, 2, polar, "cupy")
    check_polar_agrees(seen, polar)
    rows = [n for n in ROWS_NAMES if n in SHORT]
    check_rows_everywhere(seen, 2, rows, "cupy")
    check_rows_agree(seen, rows)
    gr = [n for n in GR_NAMES if n in SHORT]   # the Golub–Reinsch SVD, A on root
    check_on_root_only(seen, 2, gr, "cupy")
    check_gr_agrees(seen, gr)
    for name in LOWRANK_NAMES:  # QUIC-SVD over the two GPUs
        rec = seen[0]["lowrank"][name]
        assert seen[1]["lowrank"][name]["none"] is True, name
        assert rec["type"] == "cupy" and rec["repeatable"], (name, rec)
        assert rec["error_bound"] <= rec["eps"], (name, rec)
        assert rec["true_error"] <= rec["eps"] * (1 + 1e-6) + 1e-14, (name, rec)



def test_lowrank_meets_eps_on_root_only(run):
    """distributed.svd_lowrank: the guarantee of the single-process QUIC-SVD, the result
    on root only, repeatable for a seed, as many partitions as ranks with rows."""
    ranks, seen = run
    for name in LOWRANK_NAMES:
        rec = seen[0]["lowrank"][name]
        assert all(seen[r]["lowrank"][name]["none"] for r in range(1, ranks)), name
        assert rec["type"] == "numpy", name
        assert rec["error_bound"] <= rec["eps"], (name, rec)
        # computed, not only bounded: the bound is the true error to rounding
        assert rec["true_error"] <= rec["eps"] * (1 + 1e-6) + 1e-14, (name, rec)
        assert abs(rec["true_error"] - rec["error_bound"]) <= 1e-6 * rec["eps"] + 1e-13, rec
        assert rec["orth"] < 50 and rec["orth_v"] < 50, (name, rec)
        assert rec["repeatable"], name
        m = next(c[1] for c in LOWRANK_CASES if c[0] == name)
        assert rec["partitions"] == min(ranks, m), (name, rec)


def test_lowrank_rank_as_single_process(run):
    """The same smallest rank as one process where the spectrum has a clear gap, and the
    same leading singular values: both approximations are within √eps·‖A‖_F of A, and
    singular values move by at most the 2-norm of a perturbation (Weyl)."""
    _, seen = run
    for name in LOWRANK_NAMES:
        rec = seen[0]["lowrank"][name]
        true_rank = next(c[3] for c in LOWRANK_CASES if c[0] == name)
        assert rec["rank"] == rec["single_rank"] == true_rank, (name, rec)
        assert rec["sv_vs_single"] <= 2 * np.sqrt(rec["eps"]) * rec["fro_over_s1"], (name, rec)


def test_lowrank_merged_basis_stays_small(run):
    """Bases merged every quic_merge_chunk vectors stay within a chunk of one process's
    basis; merged only at the end, each rank finds its own copy of the same directions."""
    ranks, seen = run
    rec = seen[0]["lowrank_merge"]
    assert rec["chunked_rank"] == rec["end_only_rank"] == 30, rec
    assert rec["chunked"] <= rec["single"] + rec["chunk"], rec
    assert rec["end_only"] > rec["chunked"] + rec["chunk"] // 2, rec


def test_lowrank_reads_a_path_on_every_rank(run):
    ranks, seen = run
    rec = seen[0]["lowrank_path"]
    assert all(seen[r]["lowrank_path"]["none"] for r in range(1, ranks))
    assert rec["type"] == "numpy" and rec["rank"] == 5, rec
    assert rec["error_bound"] <= 1e-8 and abs(rec["true_error"] - rec["error_bound"]) < 1e-14


def test_lowrank_bad_input_raises_on_every_rank(run):
    ranks, seen = run
    for r in range(ranks):
        assert seen[r]["lowrank_errors"] == {"eps": "ValueError", "nan": "ValueError"}, r
