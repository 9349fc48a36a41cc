"""``gpusvd bench ALGORITHM --sizes 256 512 --dtype float64``: the command.

One seeded n×n matrix per size (:func:`.peers.matrix`), every method of
:func:`.peers.methods` on it, the table printed, the results written to a JSON file and,
when matplotlib is importable, to a PNG plot beside it.
"""

import os
import sys

import numpy as np

from .._cli_io import device_argument
from .machine import machine_info
from .peers import ALGORITHMS, COMPLEX, matrix, methods, run_case
from .records import write_json
from .report import plot, table


def add_arguments(p):
    """The options of ``gpusvd bench`` on the argparse parser ``p``."""
    p.add_argument("algorithm", choices=ALGORITHMS)
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024],
                   help="n of the n x n matrices (default 256 512 1024)")
    p.add_argument("--dtype", choices=("float32", "float64", "complex64", "complex128"),
                   default="float64")
    p.add_argument("--repeat", type=int, default=5, help="timed calls (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed calls first (default 1)")
    p.add_argument("--device", type=device_argument, default="auto",
                   help="where gpusvd computes: auto (default), cpu, gpu or a GPU index")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--out", default=None,
                   help="JSON file (default gpusvd-bench-ALGORITHM-DTYPE.json)")
    p.add_argument("--no-plot", dest="plot", action="store_false",
                   help="no PNG (by default one beside the JSON, if matplotlib is present)")


def run(args):
    """``gpusvd bench``: time every method at every size, write the JSON and the plot."""
    if min(args.sizes) < 1:
        raise ValueError(f"--sizes must be positive, got {args.sizes}")
    dtype = np.dtype(COMPLEX.get(args.dtype, args.dtype) if args.algorithm == "takagi"
                     else args.dtype)
    out = args.out or f"gpusvd-bench-{args.algorithm}-{args.dtype}.json"
    result = {"algorithm": args.algorithm, "dtype": str(dtype), "sizes": args.sizes,
              "warmup": args.warmup, "repeat": args.repeat, "device": str(args.device),
              "machine": machine_info(), "records": []}
    for n in args.sizes:
        a = matrix(args.algorithm, n, dtype, args.seed + n)
        wide = np.result_type(dtype, np.float64)
        s_ref = np.linalg.svd(a.astype(wide), compute_uv=False)
        for name, where, fn in methods(args.algorithm, n, args.device):
            print(f"n = {n}: {name} ...", file=sys.stderr, flush=True)
            result["records"].append(run_case(args.algorithm, name, where, fn, a, s_ref,
                                              args.warmup, args.repeat))
    table(result)
    write_json(out, result, nonfinite=lambda f: None)
    print(f"wrote {out}")
    if args.plot:
        png = os.path.splitext(out)[0] + ".png"
        if plot(result, png):
            print(f"wrote {png}")
        else:
            print("no plot: matplotlib is not installed (pip install gpusvd[bench])")
    return 0
