"""Without mpi4py the distributed tests are skipped, not errors at collection."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
# Run in a fresh interpreter in which ``import mpi4py`` fails as it does where the
# package is not installed, then collect this folder as CI does (doctests included).
COLLECT = """
import sys

class NoMPI:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "mpi4py":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoMPI())
import pytest
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--collect-only", "--doctest-modules",
                      sys.argv[1]]))
"""


def test_collection_without_mpi4py_has_no_errors():
    done = subprocess.run([sys.executable, "-c", COLLECT, str(HERE)], capture_output=True,
                          text=True, timeout=120, cwd=HERE.parents[1])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "error" not in done.stdout.lower().splitlines()[-1]
