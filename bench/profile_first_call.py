"""Where the first call of a public function spends its time, in a fresh process.

Runs bench/cold_start.py's child once to fill the caches (Numba's, CuPy's), then a second
fresh process under cProfile, and prints the functions with the most cumulative time. The
first call's overhead over the second (issue 20) is what this looks for.

    python bench/profile_first_call.py svd_jacobi svd_lowrank --device gpu
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from cold_start import CHILD  # noqa: E402

# The child with only its first call profiled.
PROFILED = r"""
import cProfile, pstats, sys
child = sys.argv.pop(1)
rows = int(sys.argv.pop())
first = "call(); sync(); first ="
assert first in child
child = child.replace(first, "profiler.enable(); call(); sync(); profiler.disable(); first =")
profiler = cProfile.Profile()
exec(compile(child, "<child>", "exec"), {"__name__": "__child__", "profiler": profiler})
pstats.Stats(profiler).sort_stats("cumulative").print_stats(rows)
pstats.Stats(profiler).sort_stats("tottime").print_stats(rows // 2)
"""

PRECOMPILE = r"""
import sys
from gpusvd._core.precompile import precompile
precompile(dtypes=("float64",), log=sys.stdout, devices=(sys.argv[1],))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("functions", nargs="+")
    parser.add_argument("--device", default="gpu", choices=("cpu", "gpu"))
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--rows", type=int, default=45, help="profile lines to print")
    parser.add_argument("--fill", choices=("same", "precompile"), default="same",
                        help="fill the caches by the same call first, or by gpusvd's "
                             "precompile step (float64, this device only)")
    args = parser.parse_args()
    n = args.n or (1000 if args.device == "gpu" else 200)
    with tempfile.TemporaryDirectory() as root:
        env = {**os.environ, "NUMBA_CACHE_DIR": f"{root}/numba", "CUPY_CACHE_DIR": f"{root}/cupy"}
        if args.fill == "precompile":
            subprocess.run([sys.executable, "-c", PRECOMPILE, args.device], check=True, env=env)
        for function in args.functions:
            if args.fill == "same":
                warm = subprocess.run([sys.executable, "-c", CHILD, function, args.device,
                                       str(n)], capture_output=True, text=True, env=env)
                print(f"== {function}: caches filled ({warm.stdout.strip().splitlines()[-1:]})")
            prof = subprocess.run([sys.executable, "-c", PROFILED, CHILD, function, args.device,
                                   str(n), str(args.rows)],
                                  capture_output=True, text=True, env=env)
            lines = prof.stdout.splitlines()
            print("\n".join(lines))
            if prof.returncode:
                print(prof.stderr[-2000:])


if __name__ == "__main__":
    main()
