"""Every script in ``bench/`` runs the one way: ``python bench/NAME.py``
with its options, ``--help`` answering on a machine without a GPU (CuPy, PyTorch and JAX
are imported after the options are parsed, never at module level)."""

import pathlib
import subprocess
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name != "common.py")


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_answers_help_without_a_gpu(name):
    done = subprocess.run([sys.executable, name, "--help"], cwd=BENCH, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
