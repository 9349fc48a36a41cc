"""The ``gpusvd`` command (also ``python -m gpusvd``): decompose a matrix stored in a file.

Subcommands::

    gpusvd svd      A.npy -o usv.npz [--method auto|gr|jacobi|polar|lapack] [--check]
    gpusvd svdvals  A.npz --key A [--check]                  # values only, no vectors
    gpusvd jacobi   A.h5:/group/data -o usv.npz [--strategy ... --variant ... --tol ...]
    gpusvd hsvd     G.npy --signs 3 -o usvj.npz              # J = diag(+1, +1, +1, -1, ...)
    gpusvd hsvd     G.npy --signs signs.npy --check
    gpusvd takagi   A.npy -o su.npz [--tol 1e-14]
    gpusvd polar    A.npy -o up.npz [--side right|left] [--method auto|qdwh|svd] [--check]
    gpusvd lowrank  big.npy --eps 1e-6 --max-rank 500 -o lr.npz   # .npy read as a memmap
    gpusvd info [--json]                 # versions, GPUs, host memory, kernel caches
    gpusvd bench svd --sizes 256 512 --dtype float64      # gpusvd against LAPACK/cuSOLVER
    gpusvd demo --m 2000 [--values-only]  # a generated matrix, time and accuracy printed
    mpiexec -n 2 gpusvd distributed --n 512   # = python -m gpusvd.distributed --n 512

Input: ``.npy``; ``.npz`` (``--key NAME``, default the first array); ``.h5``/``.hdf5``
with the dataset as ``FILE.h5:/group/data`` or ``--dataset /group/data`` (default: the
file's only dataset; needs h5py). ``--dtype`` converts the input (in memory) first. Output
(``-o/--out``, a ``.npz``): ``U``, ``S``, ``Vh`` (``svd``, ``jacobi``), ``S``
(``svdvals``, ``jacobi --values-only``), ``S``, ``U`` (``takagi``), ``U``, ``S``, ``V``,
``J`` (``hsvd``), ``U``, ``P`` (``polar``: A = U·P, or P·U with ``--side left``),
``U``, ``S``, ``Vh`` and the 0-d arrays ``error_bound`` and ``rank`` (``lowrank``).
``--check`` prints the accuracy in units of n·ε (:mod:`gpusvd.testing`).
``--progress`` (default when stderr is a terminal; ``--no-progress``) draws a bar on
stderr: one step per Jacobi or Takagi sweep, or per QUIC-SVD partition (``lowrank``).

The time printed is of one call, first-use compilation (Numba, NVRTC) included; ``gpusvd
bench`` measures medians after a warm-up. With no subcommand, or options only (``gpusvd --m 2000``), ``gpusvd`` runs ``demo``.
Errors (missing file, bad shape, bad option, no convergence) print one line
``gpusvd: error: ...`` on stderr and exit with status 1 (2 for a bad command line, 130
when interrupted), on a line of its own after a progress bar; ``--debug`` shows the
traceback instead. Where the library's message names the function called, the line names
the command typed instead (``svd``, not ``svdvals``; ``lowrank``, not ``svd_lowrank``).
``lowrank`` exits with status 3 (``EXIT_EPS_MISSED``), after writing its result and a
warning, when ``--max-rank`` stopped the rank before the error bound met ``--eps``: the
factors are valid, but not the approximation that was asked for.
Non-finite input is an error unless ``--no-check-finite`` is given (``check_finite=False``
of the library: NaN in gives NaN out or a convergence error).
"""

import argparse
import contextlib
import math
import re
import sys
import time
import zipfile

import numpy as np

import gpusvd
from gpusvd import testing
from gpusvd._core import progress
from gpusvd._core.backend import cupy_or_none, to_host
from gpusvd.jacobi.driver import DEFAULTS, MAX_SWEEPS, SHORTENINGS, VARIANTS, VECTORS
from gpusvd.jacobi.strategies import NAMES as STRATEGIES
from gpusvd.polar.decomposition import METHODS as POLAR_METHODS, SIDES
from gpusvd.takagi.driver import MAX_SWEEPS as TAKAGI_MAX_SWEEPS
from gpusvd.takagi.factorization import METHODS as TAKAGI_METHODS
from gpusvd._cli_io import check_out, device_argument, message, read_matrix, write
from gpusvd._dispatch import METHODS

DTYPES = ("float32", "float64", "complex64", "complex128")
# Rows of an out-of-core matrix read at once by the lowrank --check (about 32 MB of float64).
CHECK_BLOCK_ENTRIES = 1 << 22
PREVIEW = 6  # singular values shown in the summary line
# Exit status of ``lowrank`` when --max-rank kept the error bound above --eps. 1 and 2 are
# errors (argparse's convention); 3 is the next free status and says: a result, not the one
# asked for.
EXIT_EPS_MISSED = 3
NO_GPU = "no GPU is usable (CuPy missing, no CUDA driver or no device)"


class _Parser(argparse.ArgumentParser):
    """argparse with errors as one line ``gpusvd: error: ...`` and exit status 2."""

    def error(self, message):
        self.exit(2, f"gpusvd: error: {message} (see '{self.prog} -h')\n")


class _LineTracker:
    """stderr that remembers whether its last write ended a line, so that a message after
    a progress bar (which redraws one line with carriage returns) starts a line of its
    own."""

    def __init__(self, stream):
        self.stream = stream
        self.fresh = True

    def write(self, text):
        if text:
            self.fresh = text.endswith("\n")
        return self.stream.write(text)

    def end_line(self):
        if not self.fresh:
            self.write("\n")

    def __getattr__(self, name):  # flush, isatty, fileno ... of the stream
        return getattr(self.stream, name)


# ---------------------------------------------------------------------------- input, output

def _matrices(*arrays):
    """Matching matrices (or vectors) of stacked arrays, one tuple per matrix."""
    batch = arrays[0].shape[:-2]
    # The count is spelled out: reshape cannot infer -1 from an array with no entries.
    flat = [x.reshape(math.prod(batch), *x.shape[len(batch):]) for x in arrays]
    return zip(*flat)


def _report(name, values, unit="n*eps"):
    print(f"  {name:<14} {max(values, default=0.0):9.3g}  ({unit})")


# ---------------------------------------------------------------------------- subcommands

def _check_svd(a, u, s, vh):
    if u is None:
        wide = np.result_type(a.dtype, np.float64)
        _report("sv error", [testing.sv_error(x, np.linalg.svd(y.astype(wide), compute_uv=False))
                             for y, x in _matrices(a, s)],
                "|s - s_lapack| / (s_max eps), LAPACK in float64")
        return
    _report("residual", [testing.svd_residual(*t) for t in _matrices(a, u, s, vh)],
            "||A - U S Vh||_F / (||A||_F max(m,n) eps)")
    _report("orthogonal U", [testing.orthogonality(x) for (x,) in _matrices(u)],
            "||U'U - I||_F / (k eps)")
    _report("orthogonal V", [testing.orthogonality(x, rows=True) for (x,) in _matrices(vh)],
            "||Vh Vh' - I||_F / (k eps)")


# Each runner returns (arrays to write, a function that prints the --check lines, a note
# for the summary line).

# The summary's note where ``svd`` or ``jacobi`` ran without -o or --check: vectors
# nobody would see are not computed.
NO_VECTORS_NOTE = "; values only: pass -o FILE.npz to write U, S and Vh (or --check)"


def _svd(args, a):
    asked = args.command != "svdvals" and not getattr(args, "values_only", False)
    compute_uv = asked and bool(args.out or args.check)
    note = NO_VECTORS_NOTE if asked and not compute_uv else ""
    if args.command == "jacobi":
        out = gpusvd.jacobi_svd(a, full_matrices=args.full_matrices, compute_uv=compute_uv,
                                strategy=args.strategy, variant=args.variant,
                                shorten=args.shorten, vectors=args.vectors, tol=args.tol,
                                max_sweeps=args.max_sweeps, precondition=args.precondition,
                                check_finite=args.check_finite, device=args.device)
    elif compute_uv:
        out = gpusvd.svd(a, full_matrices=args.full_matrices, method=args.method,
                         check_finite=args.check_finite, device=args.device,
                         hermitian=args.hermitian)
    else:
        out = gpusvd.svdvals(a, method=args.method, check_finite=args.check_finite,
                             device=args.device, hermitian=args.hermitian)
    if compute_uv:
        u, s, vh = map(to_host, out)
        return {"U": u, "S": s, "Vh": vh}, lambda: _check_svd(np.asarray(a), u, s, vh), ""
    s = to_host(out)
    return {"S": s}, lambda: _check_svd(np.asarray(a), None, s, None), note


def _hsvd_signs(text, n):
    if text.lstrip("+").isdigit():
        plus = int(text)
        if plus > n:
            raise ValueError(f"--signs {plus}: more +1 signs than the {n} columns")
        return np.r_[np.ones(plus), -np.ones(n - plus)]
    if not text.endswith(".npy"):
        raise ValueError(f"--signs takes a count of +1 signs or a .npy file, got {text!r}")
    with contextlib.ExitStack() as stack:
        return np.asarray(read_matrix(text, stack=stack))


def _check_hsvd(g, signs, u, s, v, j):
    eps = np.finfo(u.dtype).eps
    n = max(g.shape[-1], 1)
    # V⁻¹ = diag(J)·Vᴴ·diag(signs), since Vᴴ·diag(signs)·V = diag(J) and J² = I.
    v_inverse = j[..., :, None] * np.swapaxes(v, -1, -2).conj() * signs
    _report("residual", [testing.svd_residual(*t) for t in _matrices(g, u, s, v_inverse)],
            "||G - U S V^-1||_F / (||G||_F m eps)")
    _report("orthogonal U", [testing.orthogonality(x) for (x,) in _matrices(u)],
            "||U'U - I||_F / (n eps)")
    _report("J-unitary V", [np.linalg.norm(x.conj().T * signs @ x - np.diag(jj))
                            / (max(np.linalg.norm(x, 2) ** 2, 1.0) * n * eps)
                            for x, jj in _matrices(v, j)],
            "||V' diag(signs) V - diag(J)||_F / (||V||_2^2 n eps)")


def _hsvd(args, g):
    signs = _hsvd_signs(args.signs, g.shape[-1])
    out = gpusvd.hsvd(g, signs, strategy=args.strategy, variant=args.variant,
                      shorten=args.shorten, tol=args.tol, max_sweeps=args.max_sweeps,
                      check_finite=args.check_finite, device=args.device)
    u, s, v, j = map(to_host, out)
    return ({"U": u, "S": s, "V": v, "J": j},
            lambda: _check_hsvd(np.asarray(g), signs, u, s, v, j), "")


def _check_takagi(a, s, u):
    _report("residual", [testing.svd_residual(x, uu, ss, uu.T) for x, ss, uu in
                         _matrices(a, s, u)],
            "||A - U S U^T||_F / (||A||_F n eps)")
    _report("orthogonal U", [testing.orthogonality(x) for (x,) in _matrices(u)],
            "||U'U - I||_F / (n eps)")


def _takagi(args, a):
    out = gpusvd.takagi(a, method=args.method, tol=args.tol, max_sweeps=args.max_sweeps,
                        check_finite=args.check_finite, device=args.device)
    s, u = map(to_host, out)
    return {"S": s, "U": u}, lambda: _check_takagi(np.asarray(a), s, u), ""


def _semidefinite(p):
    """How far the Hermitian ``p`` is from semidefinite: max(0, −λ_min) / (‖P‖₂·k·ε)."""
    w = np.linalg.eigvalsh(p)
    if w.size == 0:
        return 0.0
    scale = max(float(np.abs(w).max()), float(np.finfo(p.dtype).tiny))
    return max(0.0, -float(w[0])) / (scale * w.size * float(np.finfo(p.dtype).eps))


def _check_polar(a, u, p, side):
    first, second = (u, p) if side == "right" else (p, u)
    # U·P is U·diag(1)·P: the SVD's residual, with S = 1 in U's real precision.
    ones = np.ones(first.shape[-1], np.finfo(u.dtype).dtype)
    product = "U P" if side == "right" else "P U"
    _report("residual", [testing.svd_residual(x, f, ones, g)
                         for x, f, g in _matrices(a, first, second)],
            f"||A - {product}||_F / (||A||_F max(m,n) eps)")
    _report("orthogonal U", [testing.orthogonality(x, rows=x.shape[0] < x.shape[1])
                             for (x,) in _matrices(u)],
            "||U'U - I||_F / (k eps), rows if A is wide")
    _report("P semidefinite", [_semidefinite(x) for (x,) in _matrices(p)],
            "max(0, -min eig P) / (||P||_2 k eps)")


def _polar(args, a):
    out = gpusvd.polar(a, args.side, method=args.method, check_finite=args.check_finite,
                       device=args.device)
    u, p = map(to_host, out)
    product = "U P" if args.side == "right" else "P U"
    return ({"U": u, "P": p}, lambda: _check_polar(np.asarray(a), u, p, args.side),
            f"; A = {product} (side {args.side})")


def _lowrank_error(a, u, s, vh):
    """‖A − U·diag(S)·Vh‖²_F / ‖A‖²_F, reading ``a`` by row blocks (it may be on disk)."""
    m, n = a.shape
    rows = max(1, CHECK_BLOCK_ENTRIES // max(n, 1))
    wide = np.result_type(a.dtype, np.float64)
    num = den = 0.0
    for r0 in range(0, m, rows):
        block = np.asarray(a[r0:r0 + rows], dtype=wide)
        num += np.linalg.norm(block - (u[r0:r0 + rows] * s) @ vh) ** 2
        den += np.linalg.norm(block) ** 2
    return num / den if den else 0.0


def _check_lowrank(a, u, s, vh):
    _report("error", [_lowrank_error(a, u, s, vh)], "||A - U S Vh||_F^2 / ||A||_F^2")
    _report("orthogonal U", [testing.orthogonality(u)], "||U'U - I||_F / (rank eps)")
    _report("orthogonal V", [testing.orthogonality(vh, rows=True)],
            "||Vh Vh' - I||_F / (rank eps)")


def _progress_wanted(args):
    return sys.stderr.isatty() if args.progress is None else args.progress


def _lowrank(args, a):
    out = gpusvd.svd_lowrank(a, eps=args.eps, delta=args.delta, max_rank=args.max_rank,
                             partitions=args.partitions, seed=args.seed, device=args.device,
                             progress=_progress_wanted(args))
    u, s, vh = map(to_host, out[:3])
    arrays = {"U": u, "S": s, "Vh": vh, "error_bound": np.asarray(out.error_bound),
              "rank": np.asarray(out.rank)}
    note = (f"; rank {out.rank}, error bound {out.error_bound:.3g} (eps {args.eps:g}), "
            f"{out.partitions} partition(s), {out.passes} pass(es) over the data")
    return arrays, lambda: _check_lowrank(a, u, s, vh), note


def _eps_missed(args, arrays):
    """The warning when ``lowrank``'s bound misses --eps (only --max-rank can cause it)."""
    if args.command != "lowrank" or float(arrays["error_bound"]) <= args.eps:
        return None
    bound = float(arrays["error_bound"])
    return (f"gpusvd: warning: the error bound {bound:.3g} misses --eps {args.eps:g}: "
            f"--max-rank {args.max_rank} stopped the rank first; raise --max-rank or --eps")


_RUN = {"svd": _svd, "svdvals": _svd, "jacobi": _svd, "hsvd": _hsvd, "takagi": _takagi,
        "polar": _polar, "lowrank": _lowrank}
# The library functions each command calls. Their errors begin with the function's name;
# the command line names the command typed instead (``gpusvd svd`` without -o calls
# svdvals).
_CALLS = {"svd": ("svdvals", "svd"), "svdvals": ("svdvals",), "jacobi": ("jacobi_svd",),
          "hsvd": ("hsvd",), "takagi": ("takagi",), "polar": ("polar",),
          "lowrank": ("svd_lowrank",)}


def _as_typed(text, command):
    """A library error as the command line says it: the command the user typed in place
    of the function's name, the flag in place of the keyword ``check_finite=False``."""
    text = text.replace("check_finite=False", "--no-check-finite")
    names = _CALLS.get(command)
    return re.sub(rf"^({'|'.join(names)})\b", command, text) if names else text


def _preview(s):
    """The leading singular values of the first matrix, as the summary line shows them."""
    first = s.reshape(math.prod(s.shape[:-1]), s.shape[-1])[:1].ravel()
    shown = ", ".join(f"{x:.6g}" for x in first[:PREVIEW])
    return f"; S = {shown}{', ...' if first.size > PREVIEW else ''}"


def _decompose(args):
    if args.out:
        check_out(args.out)
    with contextlib.ExitStack() as stack:
        a = read_matrix(args.input, key=args.key, dataset=args.dataset,
                        lazy=args.command == "lowrank", stack=stack)
        if args.dtype is not None:
            a = np.asarray(a, dtype=args.dtype)
        # The sweep bars end before the summary goes to stdout; lowrank draws its own.
        sweeps = args.command != "lowrank" and _progress_wanted(args)
        start = time.perf_counter()
        with progress.sweep_bars() if sweeps else contextlib.nullcontext():
            arrays, check, note = _RUN[args.command](args, a)
        seconds = time.perf_counter() - start
        values = _preview(arrays["S"]) if "S" in arrays else ""
        where = "CPU" if cupy_or_none() is None else f"device={args.device}"
        print(f"{args.command}: {'x'.join(map(str, a.shape))} {np.dtype(a.dtype)} on {where}, "
              f"{seconds:.3f} s{values}{note}")
        if args.check:
            print("check (largest over the stack):" if a.ndim > 2 else "check:")
            check()
        if args.out:
            write(args.out, arrays)
    warning = _eps_missed(args, arrays)
    if warning:
        print(warning, file=sys.stderr)
        return EXIT_EPS_MISSED
    return 0


def _info(args):
    from gpusvd import _bench
    facts = _bench.machine_info()
    if args.json:
        import json
        print(json.dumps(facts, indent=1))
        return 0
    print(_bench.format_machine_info(facts))
    return 0


def _demo(args):
    """The original ``gpusvd``: an SVD of a generated matrix, timed, its accuracy shown."""
    from gpusvd._core.arrays import place

    m, n = args.m, args.n or args.m
    a_host = testing.with_condition(m, n, args.cond, dtype=np.dtype(args.dtype),
                                    seed=args.seed)
    a, placement = place(a_host, args.device)
    where = f"GPU {placement.device_id}" if placement.on_gpu else "CPU"
    times = []
    for _ in range(max(args.repeat, 1)):
        if placement.on_gpu:
            placement.xp.cuda.Device(placement.device_id).synchronize()
        t0 = time.perf_counter()
        if args.values_only:
            s = gpusvd.svdvals(a, method=args.method, device=args.device)
        else:
            u, s, vh = gpusvd.svd(a, full_matrices=False, method=args.method,
                                  device=args.device)
        if placement.on_gpu:
            placement.xp.cuda.Device(placement.device_id).synchronize()
        times.append(time.perf_counter() - t0)
    print(f"gpusvd {gpusvd.__version__}: {m}x{n} {args.dtype} on {where}, "
          f"method={args.method}, {'values only' if args.values_only else 'U, S, Vh'}")
    steady = float(np.median(times[1:])) if len(times) > 1 else times[0]
    print(f"time: {steady:.3f} s (median of the calls after the first, which took "
          f"{times[0]:.3f} s with loading)")
    s_ref = np.linalg.svd(a_host.astype(np.float64), compute_uv=False)
    print(f"singular values: max |s - s_ref| / (s_max eps) = {testing.sv_error(s, s_ref):.2f}")
    if not args.values_only:
        print(f"residual ||A - U S Vh||_F / (||A||_F max(m,n) eps) = "
              f"{testing.svd_residual(a, u, s, vh):.2f}")
        print(f"orthogonality ||U'U - I||_F / (k eps) = {testing.orthogonality(u):.2f}, "
              f"||V'V - I||_F / (k eps) = {testing.orthogonality(vh, rows=True):.2f}")
    return 0


# ---------------------------------------------------------------------------- the parser

def _jacobi_options(p, *, vectors):
    p.add_argument("--strategy", choices=STRATEGIES, default=DEFAULTS.strategy,
                   help="pivot strategy (default %(default)s)")
    p.add_argument("--variant", choices=VARIANTS, default=DEFAULTS.variant,
                   help="inner Jacobi to convergence or one sweep (default %(default)s)")
    p.add_argument("--shorten", choices=SHORTENINGS, default=DEFAULTS.shorten,
                   help="block-pair shortening (default %(default)s)")
    if vectors:
        p.add_argument("--vectors", choices=VECTORS, default=DEFAULTS.vectors,
                       help="V from the rotations, or from X V = G: no accumulation, but "
                            "the residual grows with cond(A) (default %(default)s)")
        p.add_argument("--no-precondition", dest="precondition", action="store_false",
                       help="skip the QR preconditioning (DGEJSV)")
    p.add_argument("--tol", type=float, default=None,
                   help="relative orthogonality threshold (default u sqrt(2b))")
    p.add_argument("--max-sweeps", type=int, default=MAX_SWEEPS,
                   help="block sweeps before giving up (default %(default)s)")


def _parser():
    from gpusvd import _bench

    top = _Parser(prog="gpusvd", description="Singular value decompositions of matrices "
                  "stored in .npy, .npz and .h5 files, on a GPU if present, else the CPU.",
                  epilog="With no subcommand gpusvd runs 'demo'. 'gpusvd CMD -h' for the "
                         "options of each.")
    top.add_argument("--version", action="version", version=f"gpusvd {gpusvd.__version__}")
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true",
                        help="show the traceback of an error instead of one line")
    files = _Parser(add_help=False, parents=[common])
    files.add_argument("input", help="FILE.npy, FILE.npz or FILE.h5[:/dataset]")
    files.add_argument("--key", help="array of a .npz file (default: the first)")
    files.add_argument("--dataset", help="dataset path in an .h5 file, e.g. /group/data")
    files.add_argument("-o", "--out", help="write the result to this .npz file")
    files.add_argument("--dtype", choices=DTYPES, help="convert the input first")
    files.add_argument("--device", type=device_argument, default="auto",
                       help="auto (default), cpu, gpu or a GPU index")
    files.add_argument("--check", action="store_true",
                       help="print the accuracy: residual in units of max(m,n)*eps, "
                            "orthogonality of U and V in k*eps (polar: of U, and P's "
                            "negative eigenvalues), values only their error against LAPACK "
                            "in s_max*eps; lowrank the squared relative error")
    files.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="progress bar on stderr per sweep (lowrank: per partition; "
                            "default: when stderr is a terminal)")
    # Every command but lowrank: svd_lowrank checks finiteness block by block as it reads.
    checked = _Parser(add_help=False, parents=[files])
    checked.add_argument("--no-check-finite", dest="check_finite", action="store_false",
                         help="skip the check for NaN and infinity (then NaN in gives NaN "
                              "out or a convergence error)")
    sub = top.add_subparsers(dest="command", metavar="COMMAND")

    def command(name, help, parents=(checked,)):
        return sub.add_parser(name, help=help, description=help, parents=list(parents))

    p = command("svd", "singular value decomposition A = U diag(S) Vh")
    p.add_argument("--method", choices=METHODS, default="auto",
                   help="Golub-Reinsch, Jacobi, polar, LAPACK's gesdd (CPU), or the "
                        "documented automatic rule")
    p.add_argument("--full-matrices", action="store_true", help="square U and Vh")
    p.add_argument("--hermitian", action="store_true",
                   help="A is Hermitian: its eigendecomposition (method auto)")
    p = command("svdvals", "singular values only, descending")
    p.add_argument("--method", choices=METHODS, default="auto")
    p.add_argument("--hermitian", action="store_true",
                   help="A is Hermitian: |eigenvalues| (method auto)")
    p = command("jacobi", "blocked one-sided Jacobi SVD (high relative accuracy)")
    p.add_argument("--full-matrices", action="store_true", help="square U and Vh")
    p.add_argument("--values-only", action="store_true", help="singular values only")
    _jacobi_options(p, vectors=True)
    p = command("hsvd", "hyperbolic SVD G V = U diag(S), V J-unitary")
    p.add_argument("--signs", required=True,
                   help="a .npy file of +1/-1 per column, or P: P times +1 then -1")
    _jacobi_options(p, vectors=False)
    p = command("takagi", "Takagi factorization A = U diag(S) U^T of a complex symmetric A")
    p.add_argument("--method", choices=TAKAGI_METHODS, default="auto",
                   help="eigh: a real symmetric eigenproblem twice the size; jacobi: the "
                        "paper's sweeps; auto: eigh on the CPU, jacobi on a GPU or with "
                        "--tol or a --max-sweeps other than the default")
    p.add_argument("--tol", type=float, default=None, help="jacobi: off-diagonal stopping "
                   "threshold relative to ||A||_F (default 4 n eps)")
    p.add_argument("--max-sweeps", type=int, default=TAKAGI_MAX_SWEEPS,
                   help="jacobi: sweeps before giving up (default %(default)s)")
    p = command("polar", "polar decomposition A = U P (or P U): U orthonormal, P Hermitian "
                "semidefinite")
    p.add_argument("--side", choices=SIDES, default="right",
                   help="right: A = U P, P n x n; left: A = P U, P m x m (default %(default)s)")
    p.add_argument("--method", choices=POLAR_METHODS, default="auto",
                   help="qdwh: the QDWH iteration; svd: U = W Vh from the SVD A = W S Vh "
                        "(LAPACK's gesdd on the CPU); auto: svd on the CPU, qdwh on a GPU")
    p = command("lowrank", "low-rank SVD with a guaranteed error (QUIC-SVD), out of core",
                parents=(files,))
    p.add_argument("--eps", type=float, default=1e-6,
                   help="bound on ||A - U S Vh||_F^2 / ||A||_F^2 (default %(default)g)")
    p.add_argument("--delta", type=float, default=1e-6,
                   help="the bound holds with probability 1 - delta (default %(default)g)")
    p.add_argument("--max-rank", type=int, default=None, help="largest rank returned")
    p.add_argument("--partitions", type=int, default=None,
                   help="row blocks processed in turn (default: as memory requires)")
    p.add_argument("--seed", type=int, default=None, help="seed of the sampling")
    p = command("info", "versions, devices, memory and kernel caches", parents=(common,))
    p.add_argument("--json", action="store_true", help="as JSON")
    _bench.add_arguments(command("bench", "gpusvd against NumPy/SciPy LAPACK and CuPy, "
                                 "side by side", parents=(common,)))
    p = command("demo", "decompose a generated matrix and report time and accuracy",
                parents=(common,))
    p.add_argument("--m", type=int, default=2000, help="rows (default 2000)")
    p.add_argument("--n", type=int, default=None, help="columns (default: m)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float64")
    p.add_argument("--device", type=device_argument, default="auto", help="auto, cpu, gpu or index")
    p.add_argument("--method", choices=METHODS, default="auto")
    p.add_argument("--values-only", action="store_true", help="singular values only")
    p.add_argument("--cond", type=float, default=1e6, help="condition number of the matrix")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=2, help="runs; the first warms up")
    command("precompile", "compile every kernel a first call needs (Numba's CPU loops; on a "
            "GPU machine CuPy's own kernels too) into their caches: run once after install",
            parents=(common,))
    command("distributed", "the multi-GPU Jacobi SVD under mpiexec (python -m "
            "gpusvd.distributed; its options follow)", parents=())
    return top


def main(argv=None):
    """Run the ``gpusvd`` command with the arguments ``argv`` (default ``sys.argv[1:]``).

    Returns the exit status: 0 on success, 1 for an error (one line on stderr), 2 for a
    bad command line (argparse exits).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from gpusvd.cli import main
    >>> folder = tempfile.mkdtemp()
    >>> np.save(os.path.join(folder, "a.npy"), np.diag([1.0, 3.0, 2.0]))
    >>> main(["svdvals", os.path.join(folder, "a.npy"), "--device", "cpu"])  # doctest: +ELLIPSIS
    svdvals: 3x3 float64 on ... s; S = 3, 2, 1
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["distributed"]:
        from gpusvd.distributed.__main__ import main as distributed_main
        return distributed_main(argv[1:])
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, "demo")
    args = _parser().parse_args(argv)
    stderr = _LineTracker(sys.stderr)
    try:
        with contextlib.redirect_stderr(stderr):
            return _command(args)
    except (ValueError, TypeError, OSError, EOFError, KeyError, MemoryError, zipfile.BadZipFile,
            np.linalg.LinAlgError) as exc:
        if args.debug:
            raise
        stderr.end_line()
        print(f"gpusvd: error: {_as_typed(message(exc), args.command)}", file=stderr)
        return 1
    except KeyboardInterrupt:
        if args.debug:
            raise
        stderr.end_line()
        print("gpusvd: interrupted", file=stderr)
        return 130


def _command(args):
    device = getattr(args, "device", "auto")
    if device not in ("auto", "cpu") and cupy_or_none() is None:
        # Named as the user wrote it: the library's own message says device='gpu' for 3.
        raise ValueError(f"--device {device}: {NO_GPU}")
    if args.command == "info":
        return _info(args)
    if args.command == "bench":
        from gpusvd import _bench
        return _bench.run(args)
    if args.command == "demo":
        return _demo(args)
    if args.command == "precompile":
        from gpusvd._core.precompile import precompile
        start = time.perf_counter()
        done = precompile(log=sys.stdout)
        print(f"gpusvd precompile: {len(done)} Numba specializations compiled in "
              f"{time.perf_counter() - start:.1f} s")
        return 0
    return _decompose(args)
