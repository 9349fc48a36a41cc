#!/usr/bin/env python3
"""Golub–Reinsch SVD of gpusvd against its peers, side by side, on the same inputs.

Run on the GPU machine from the repository root::

    PYTHONPATH=src python3 bench/gr_paper.py --sizes 1024 2048 4096 8192 \
        --dtypes float64 float32 --out "$OUT/gr_h100.json" --budget 480

Methods (each as a full economy SVD ``U, S, Vh`` and as singular values only):

==============  ============================================================================
gpusvd          ``gpusvd.svd(a, full_matrices=False, method="gr")`` / ``gpusvd.svdvals``
cupy_gesvd      ``cupy.linalg.svd(a, full_matrices=False[, compute_uv=False])`` (cuSOLVER gesvd)
torch_gesvd     ``torch.linalg.svd(t, full_matrices=False, driver="gesvd")`` / ``svdvals``
torch_gesvdj    same with ``driver="gesvdj"``
jax_polar       ``jax.lax.linalg.svd(x, full_matrices=False, algorithm=SvdAlgorithm.POLAR)``
                jitted, ``block_until_ready`` (cuSOLVER gesvdp)
==============  ============================================================================

Inputs. For each shape one Gaussian matrix is drawn on the GPU with a fixed seed, in
float32, and upcast exactly to float64; the float32 and float64 runs therefore decompose
the very same matrix, and one float64 reference (``cupy.linalg.svd(compute_uv=False)``,
cuSOLVER gesvd in float64) serves both dtypes. ``--matrix geometric:1e6`` instead gives
singular values spaced geometrically from 1 to 1e-6 (A = Q1 diag(s) Q2ᵀ with Haar Q's,
rounded to float32); the reference still comes from gesvd on the rounded matrix.

Budget. Shapes run in order of cost (m·n², tall shapes interleaved with square ones). A
method (per mode, dtype, and square/tall family) is skipped at a shape when a smaller
shape took longer than ``--max-call`` seconds per call, when its time predicted from the
last smaller shape by m·n² scaling is over ``--max-call``, or when warm-up plus one timed
call would not fit in what is left of ``--budget``. Each case repeats up to ``--repeat``
times but stops once it has spent ``--case-seconds``. A method that already ran at a
smaller shape or in the untimed ``--prewarm`` pass (same dtype and mode) skips its
warm-up call where one call is predicted to take more than ``--cold-above`` seconds. ``--prior`` seeds the predictions from an
earlier JSON (for a run of the largest size alone). The JSON is rewritten after every
case, so a run killed at its time limit still leaves its results.

Importable without a GPU: CuPy, PyTorch, JAX and gpusvd are imported inside functions.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
import time

# Before any JAX import: don't grab 75 % of the GPU (CuPy and PyTorch share it), and
# allow float64.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("JAX_ENABLE_X64", "1")

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402  (bench/common.py)

METHODS = ("gpusvd", "cupy_gesvd", "torch_gesvd", "torch_gesvdj", "jax_polar")
MODES = ("full", "values")
PAPER_TALL = ["8192x32", "8192x64", "8192x128", "8192x256", "8192x512", "8192x1024",
              "8192x2048"]
# Measured ceilings on the H100 (docs/design.md, "Ceilings and targets"): used only for the
# nominal floor.
GEMM_CEILING = {"float64": 60e12, "float32": 51e12}
SCHEMA = "gpusvd-bench-gr/1"


# --------------------------------------------------------------------------- helpers

def parse_shape(text: str) -> tuple[int, int]:
    t = text.lower().replace("×", "x")
    if "x" in t:
        m, n = t.split("x", 1)
        return int(m), int(n)
    return int(t), int(t)


def cost(m: int, n: int) -> float:
    """m·n² for m ≥ n: the leading order of every SVD here."""
    big, small = max(m, n), min(m, n)
    return float(big) * small * small


def nominal_flops(m: int, n: int, mode: str) -> float:
    """Golub & Van Loan's counts for Golub–Reinsch (m ≥ n): values only 4mn² − 4n³/3;
    thin U₁, Σ, V 14mn² + 8n³. A nominal yardstick, not a tight bound."""
    big, k = max(m, n), min(m, n)
    if mode == "values":
        return 4.0 * big * k * k - 4.0 * k ** 3 / 3.0
    return 14.0 * big * k * k + 8.0 * k ** 3


def family(m: int, n: int) -> str:
    return "square" if m == n else "tall"


def _import_gpusvd():
    try:
        import gpusvd
    except ImportError:
        src = os.path.join(os.path.dirname(_HERE), "src")
        if src not in sys.path:
            sys.path.insert(0, src)
        import gpusvd
    return gpusvd


@functools.cache
def _jax():
    import jax
    for name, value in (("jax_enable_x64", True),
                        # Full float32 for any dot XLA emits (no TF32); gesvdp itself is
                        # a cuSOLVER call.
                        ("jax_default_matmul_precision", "highest")):
        try:
            jax.config.update(name, value)
        except Exception as exc:  # renamed option: the dtype check in build_runner guards
            print(f"# jax.config.update({name!r}): {common.short_error(exc)}", flush=True)
    import jax.numpy as jnp
    return jax, jnp


@functools.cache
def _jax_svd(mode: str):
    jax, _ = _jax()
    alg = jax.lax.linalg.SvdAlgorithm.POLAR
    f = functools.partial(jax.lax.linalg.svd, full_matrices=False,
                          compute_uv=(mode == "full"), algorithm=alg)
    return jax.jit(f)


def make_matrix(m: int, n: int, seed: int, kind: str):
    """float64 CuPy matrix whose entries are exactly representable in float32."""
    import cupy as cp
    rs = cp.random.RandomState(seed)
    if kind == "gaussian":
        a32 = rs.standard_normal((m, n), dtype=cp.float32)
        return a32.astype(cp.float64)
    if kind.startswith("geometric"):
        cond = float(kind.split(":", 1)[1]) if ":" in kind else 1e6
        k = min(m, n)
        q1, _ = cp.linalg.qr(rs.standard_normal((m, k), dtype=cp.float64))
        q2, _ = cp.linalg.qr(rs.standard_normal((n, k), dtype=cp.float64))
        s = cp.logspace(0.0, -math.log10(cond), k, dtype=cp.float64)
        a = (q1 * s[None, :]) @ q2.T
        return a.astype(cp.float32).astype(cp.float64)
    raise ValueError(f"unknown --matrix {kind!r}; expected gaussian or geometric:COND")


# --------------------------------------------------------------------------- runners

def build_runner(method: str, mode: str, a):
    """``(fn, extract)``: ``fn()`` runs one decomposition of ``a`` (CuPy array, already on
    the GPU) and returns the method's own output; ``extract(out)`` gives ``(U, S, Vh)``
    (full) or ``S`` (values) as arrays with DLPack. Conversion of the input to the
    method's array type happens here, outside the timed region."""
    full = mode == "full"
    if method == "gpusvd":
        gpusvd = _import_gpusvd()
        if full:
            fn = lambda: gpusvd.svd(a, full_matrices=False, method="gr")  # noqa: E731
            return fn, lambda r: (r[0], r[1], r[2])
        fn = lambda: gpusvd.svdvals(a, method="gr")  # noqa: E731
        return fn, lambda r: r

    if method == "cupy_gesvd":
        import cupy as cp
        if full:
            return (lambda: cp.linalg.svd(a, full_matrices=False)), (lambda r: tuple(r))
        return (lambda: cp.linalg.svd(a, full_matrices=False, compute_uv=False)), (lambda r: r)

    if method in ("torch_gesvd", "torch_gesvdj"):
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        driver = method.split("_", 1)[1]
        t = torch.from_dlpack(a)
        if not t.is_cuda:
            raise RuntimeError(f"torch.from_dlpack gave a tensor on {t.device}")
        if full:
            fn = lambda: torch.linalg.svd(t, full_matrices=False, driver=driver)  # noqa: E731
            return fn, lambda r: (r[0], r[1], r[2])
        fn = lambda: torch.linalg.svdvals(t, driver=driver)  # noqa: E731
        return fn, lambda r: r

    if method == "jax_polar":
        jax, jnp = _jax()
        try:
            x = jax.dlpack.from_dlpack(a, copy=True)
        except Exception:
            import cupy
            x = jnp.asarray(cupy.asnumpy(a))
            x = jax.device_put(x, jax.devices("gpu")[0])
        x = jax.block_until_ready(x)
        plat = {d.platform for d in x.devices()}
        if plat != {"gpu"}:
            raise RuntimeError(f"JAX array landed on {plat}, not the GPU")
        if str(x.dtype) != str(a.dtype):
            raise RuntimeError(f"JAX turned {a.dtype} into {x.dtype} (x64 off?)")
        # Compile ahead of time for this shape and dtype, outside the timed region, so a
        # case that skips its warm-up call (see --cold-above) still times no compilation.
        f = _jax_svd(mode).lower(x).compile()
        fn = lambda: jax.block_until_ready(f(x))  # noqa: E731
        if full:
            return fn, lambda r: (r[0], r[1], r[2])
        return fn, lambda r: r

    raise ValueError(f"unknown method {method!r}")


# --------------------------------------------------------------------------- reporting

def format_table(records: list[dict], methods: list[str]) -> str:
    """One row per shape/dtype/mode, one column per method: 'time(s) acc'.

    acc is the residual (full) or the singular value error (values), in units of ε·k
    and ε·σ₁ respectively. 'skip' = skipped for budget, 'ERR' = failed (see JSON)."""
    rows: dict[tuple, dict[str, str]] = {}
    order: list[tuple] = []
    for r in records:
        key = (r["m"], r["n"], r["dtype"], r["mode"])
        if key not in rows:
            rows[key] = {}
            order.append(key)
        if r.get("skipped"):
            cell = "skip"
        elif r.get("median_s") is None:
            cell = "ERR"
        else:
            acc = r.get("residual") if r["mode"] == "full" else r.get("sv_error")
            acc_s = f"{acc:.2g}" if isinstance(acc, (int, float)) else "?"
            t = r["median_s"]
            t_s = f"{t * 1e3:.3g}ms" if t < 1 else f"{t:.3g}s"
            cell = f"{t_s} {acc_s}"
            if r.get("error"):
                cell += "!"
        rows[key][r["method"]] = cell
    w0, w = 22, 17
    head = "shape/dtype/mode".ljust(w0) + "".join(m[:w - 1].rjust(w) for m in methods)
    lines = [head, "-" * len(head)]
    for key in order:
        m, n, dt, mode = key
        label = f"{m}x{n} {dt[-2:]} {mode}"
        lines.append(label.ljust(w0) + "".join(rows[key].get(meth, "").rjust(w)
                                               for meth in methods))
    lines.append("cells: median time, then residual (full) or sv error (values) in "
                 "units of k·eps / sigma1·eps; '!' = see error; skip = budget")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", nargs="*", type=int, default=[1024, 2048, 4096, 8192],
                   help="square sizes n (n x n)")
    p.add_argument("--tall", nargs="*", default=PAPER_TALL,
                   help="tall shapes MxN (default: the paper's 8192 x 32..2048); "
                        "give --tall with nothing to run none")
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"],
                   choices=["float64", "float32"])
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    p.add_argument("--skip-peers", nargs="*", default=[], choices=list(METHODS),
                   metavar="NAME", help="methods not to run at all")
    default_out = os.path.join(os.environ["OUT"], "gr.json") if os.environ.get("OUT") \
        else os.path.join(_HERE, "results", "gr.json")
    p.add_argument("--out", default=default_out, help="JSON output path")
    p.add_argument("--budget", type=float, default=480.0,
                   help="seconds for the whole run, counted from argument parsing; no case is "
                        "started that is predicted not to fit")
    p.add_argument("--max-call", type=float, default=30.0,
                   help="skip a method at a shape whose single call is (predicted) longer")
    p.add_argument("--case-seconds", type=float, default=25.0,
                   help="stop repeating a case after this many seconds (>= 1 timed call)")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed calls before timing (see --cold-above)")
    p.add_argument("--cold-above", type=float, default=3.0,
                   help="skip the warm-up call when the method already ran (same dtype and "
                        "mode) earlier in this process (smaller shape or --prewarm) and its "
                        "call is predicted "
                        "longer than this many seconds: libraries, handles and kernels are "
                        "loaded, JAX is compiled ahead of time, and allocation is a "
                        "negligible part of such a call")
    p.add_argument("--prior", nargs="*", default=[], metavar="JSON",
                   help="earlier bench_gr JSON files whose timings seed the m*n^2 "
                        "predictions (e.g. a run of the smaller sizes, for a run of 8192 "
                        "alone)")
    p.add_argument("--prewarm", type=int, default=256,
                   help="before the first shape, call every method (each dtype and mode) "
                        "once on a random N x N matrix, untimed, so libraries, handles and "
                        "kernels are loaded and --cold-above can apply; 0: don't")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=20261122)
    p.add_argument("--matrix", default="gaussian", help="gaussian | geometric:COND")
    args = p.parse_args(argv)

    t_start = time.perf_counter()
    deadline = t_start + args.budget
    methods = [m for m in args.methods if m not in set(args.skip_peers)]
    shapes = {(n, n) for n in args.sizes} | {parse_shape(s) for s in args.tall}
    shapes = sorted(shapes, key=lambda s: (cost(*s), s[0], s[1]))

    import cupy as cp  # the GPU side starts here

    payload = {
        "schema": SCHEMA,
        "benchmark": "golub_reinsch",
        "device_info": common.device_info(),
        "args": vars(args),
        "config": {
            "methods": methods,
            "units": {
                "residual": "||A - U diag(S) Vh||_F / (||A||_F * k * eps_dtype), k = min(m,n)",
                "orthogonality": "max(||U^T U - I||_F, ||Vh Vh^T - I||_F) / (k * eps_dtype)",
                "sv_error": "max|S - S_ref| / (S_ref[0] * eps_dtype), S_ref float64 gesvd",
                "times": "seconds, wall clock after device synchronization",
                "gemm_floor_s": "nominal GvL flop count / measured GEMM ceiling "
                                "(H100, docs/design.md); a yardstick, not a tight bound",
            },
            "gemm_ceiling_flops": GEMM_CEILING,
            "input": "float32-representable matrix (float32 draw, exact float64 upcast); "
                     "same matrix for every dtype and method of a shape",
            "env": {k: os.environ.get(k) for k in ("XLA_PYTHON_CLIENT_PREALLOCATE",
                                                    "JAX_ENABLE_X64", "CUPY_TF32",
                                                    "NVIDIA_TF32_OVERRIDE")},
        },
        "inputs": [],
        "records": [],
        "complete": False,
    }
    print(f"# {payload['device_info'].get('gpu')}  driver {payload['device_info'].get('cuda_driver')}"
          f"  runtime {payload['device_info'].get('cuda_runtime')}  -> {args.out}", flush=True)

    def save():
        payload["elapsed_s"] = time.perf_counter() - t_start
        common.write_json(args.out, payload)

    # (method, mode, dtype, family) -> dict(cost, median, max_call, shape)
    seen: dict[tuple, dict] = {}
    warmed: set[tuple] = set()   # (method, mode, dtype) that already ran in this process
    for path in args.prior:
        try:
            import json
            with open(path) as fh:
                old = json.load(fh)
            for r in old.get("records", []):
                t = r.get("median_s")
                if not isinstance(t, (int, float)) or r.get("skipped"):
                    continue
                m0, n0 = int(r["m"]), int(r["n"])
                k0 = (r["method"], r["mode"], r["dtype"], family(m0, n0))
                if k0 not in seen or cost(m0, n0) > seen[k0]["cost"]:
                    seen[k0] = {"cost": cost(m0, n0), "median": float(t),
                                "max_call": max(r.get("times_s") or [t]),
                                "shape": (m0, n0), "prior": path}
        except Exception as exc:
            print(f"# --prior {path}: {common.short_error(exc)}", flush=True)

    def record(rec: dict):
        payload["records"].append(rec)
        if rec.get("skipped"):
            msg = f"skip  ({rec['skipped']})"
        elif rec.get("median_s") is None:
            msg = f"ERROR {rec.get('error')}"
        else:
            def f(x):
                return f"{x:.3g}" if isinstance(x, (int, float)) else "-"
            msg = (f"{rec['median_s']:.4g}s  res {f(rec.get('residual'))}  "
                   f"orth {f(rec.get('orthogonality'))}  sverr {f(rec.get('sv_error'))}"
                   f"  n={len(rec.get('times_s') or [])}")
            if rec.get("error"):
                msg += f"  [{rec['error']}]"
        print(f"{rec['m']:>6}x{rec['n']:<6}{rec['dtype']:<8}{rec['mode']:<7}"
              f"{rec['method']:<14}{msg}", flush=True)
        save()

    if args.prewarm > 0:
        t0 = time.perf_counter()
        notes = {}
        w64 = make_matrix(args.prewarm, args.prewarm, args.seed, "gaussian")
        for dt in args.dtypes:
            w = w64.astype(dt)
            for meth in methods:
                for mode in args.modes:
                    try:
                        fn, _ = build_runner(meth, mode, w)
                        fn()
                        common.synchronize()
                        warmed.add((meth, mode, dt))
                    except Exception as exc:
                        notes[f"{meth}/{mode}/{dt}"] = common.short_error(exc)
                    fn = None
        del w, w64
        common.free_gpu_memory()
        payload["prewarm"] = {"n": args.prewarm, "seconds": time.perf_counter() - t0,
                              "errors": notes}
        print(f"# prewarm {args.prewarm}x{args.prewarm}: "
              f"{time.perf_counter() - t0:.1f} s, {len(notes)} errors", flush=True)

    for (m, n) in shapes:
        fam = family(m, n)
        base = {"m": m, "n": n}
        if time.perf_counter() >= deadline:
            for dt in args.dtypes:
                for meth in methods:
                    for mode in args.modes:
                        record({**base, "dtype": dt, "mode": mode, "method": meth,
                                "median_s": None, "skipped": "budget exhausted"})
            continue
        seed = args.seed + 7919 * m + n
        inp = {"m": m, "n": n, "seed": seed, "matrix": args.matrix}
        try:
            a64 = make_matrix(m, n, seed, args.matrix)
            common.synchronize()
            t0 = time.perf_counter()
            s_ref = cp.linalg.svd(a64, full_matrices=False, compute_uv=False)
            common.synchronize()
            inp["ref_seconds"] = time.perf_counter() - t0
            inp["ref_method"] = "cupy.linalg.svd float64 (cuSOLVER gesvd), values only"
            inp["s_ref_max"] = float(s_ref[0])
            inp["s_ref_min"] = float(s_ref[-1])
        except Exception as exc:
            inp["error"] = common.short_error(exc)
            payload["inputs"].append(inp)
            print(f"{m}x{n}: input/reference failed: {inp['error']}", flush=True)
            common.free_gpu_memory()
            continue
        payload["inputs"].append(inp)

        for dt in args.dtypes:
            a = a64.astype(dt)            # exact for both dtypes
            a_pristine = a.copy()
            for meth in methods:
                for mode in args.modes:
                    rec = {**base, "dtype": dt, "mode": mode, "method": meth,
                           "median_s": None, "times_s": [], "warmup_s": [],
                           "residual": None, "orthogonality": None, "sv_error": None,
                           "error": None, "skipped": None,
                           "eps": common.eps_of(dt), "seed": seed, "matrix": args.matrix,
                           "flops_nominal": nominal_flops(m, n, mode),
                           "gemm_floor_s": nominal_flops(m, n, mode) / GEMM_CEILING[dt]}
                    key = (meth, mode, dt, fam)
                    left = deadline - time.perf_counter()
                    prev = seen.get(key)
                    reason = None
                    n_warm = args.warmup
                    pred = None
                    if left <= 0:
                        reason = "budget exhausted"
                    elif prev is not None:
                        pred = prev["median"] * cost(m, n) / prev["cost"]
                        rec["predicted_s"] = pred
                        pm, pn = prev["shape"]
                        if (meth, mode, dt) in warmed and pred > args.cold_above:
                            n_warm = 0
                        if prev["max_call"] > args.max_call:
                            reason = (f"took {prev['max_call']:.3g} s per call at {pm}x{pn} "
                                      f"(> --max-call {args.max_call:g})")
                        elif pred > args.max_call:
                            reason = (f"predicted {pred:.3g} s per call from {pm}x{pn} by "
                                      f"m*n^2 scaling (> --max-call {args.max_call:g})")
                        elif (n_warm + 1) * pred > left:
                            reason = (f"predicted {(n_warm + 1) * pred:.3g} s for "
                                      f"{n_warm} warm-up + 1 timed call, {left:.3g} s of "
                                      "budget left")
                    if reason:
                        rec["skipped"] = reason
                        record(rec)
                        continue

                    t_case = time.perf_counter()
                    timing = None
                    try:
                        fn, extract = build_runner(meth, mode, a)
                        rec["warmup_calls"] = n_warm
                        timing = common.time_gpu(
                            fn, warmup=n_warm, repeat=args.repeat,
                            max_seconds=min(args.case_seconds, max(left, 0.0)))
                        warmed.add((meth, mode, dt))
                        rec["median_s"] = timing.median
                        rec["times_s"] = timing.times
                        rec["warmup_s"] = timing.warmup_times
                        rec["stopped_early"] = timing.stopped_early
                        seen[key] = {"cost": cost(m, n), "median": timing.median,
                                     "max_call": max(timing.times), "shape": (m, n)}
                    except Exception as exc:
                        rec["error"] = common.short_error(exc)
                    if timing is not None:
                        try:
                            out = extract(timing.result)
                            if mode == "full":
                                u, s, vh = out
                                rec.update(common.svd_accuracy(a, u, s, vh, s_ref, dt))
                            else:
                                rec.update(common.values_accuracy(out, s_ref, dt))
                        except Exception as exc:
                            rec["error"] = "accuracy: " + common.short_error(exc)
                        timing.result = None
                        out = u = s = vh = None  # noqa: F841
                    fn = extract = timing = None
                    try:
                        unchanged = bool(cp.array_equal(a, a_pristine))
                    except Exception:
                        unchanged = None
                    rec["input_unchanged"] = unchanged
                    if unchanged is False:
                        rec["error"] = ((rec["error"] + "; ") if rec["error"] else "") + \
                            "input was modified"
                        a[...] = a_pristine
                    rec["case_wall_s"] = time.perf_counter() - t_case
                    common.free_gpu_memory()
                    record(rec)
            del a, a_pristine
        del a64, s_ref
        common.free_gpu_memory()

    payload["complete"] = True
    save()
    print()
    print(format_table(payload["records"], methods))
    print(f"# {len(payload['records'])} records in {time.perf_counter() - t_start:.1f} s "
          f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
