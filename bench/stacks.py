"""Small matrices and stacks: gpusvd against torch, CuPy and JAX at every n and batch.

The question a user asks: "I decompose one small matrix in a loop, or a stack of them:
which library is fastest, and is it accurate?" For each n and batch size (batch 1 is one
matrix), every library's economy SVD of the same stack, input already on the GPU: the
median time after warm-up, and the worst residual and orthogonality (units of n·ε, from
:mod:`gpusvd.testing.metrics`) over a sample of the stack's matrices.

Peers that loop over a stack (torch, CuPy and JAX above 32 columns) are timed once on
one matrix first; a case whose estimate passes ``--peer-cap`` seconds is recorded as
skipped with that estimate instead of run. Where every library's call is fast (under
``--fast`` seconds), the libraries are timed in interleaved rounds, so that the host's
drift from minute to minute reaches all of them alike.

    python bench/stacks.py --sizes 16 64 128 --batches 1 100 2000 --out stacks.json
    python bench/stacks.py --sizes 2 16 64 --batches 1 --libraries gpusvd gpusvd_torch torch

``gpusvd_torch`` is gpusvd called on a torch tensor (the small torch call's question).
"""

import argparse
import hashlib
import time

import numpy as np

import common

import gpusvd
from gpusvd import testing

SAMPLE = 8  # matrices of a stack whose accuracy is measured


def _torch(a):
    import torch

    t = torch.from_dlpack(a)
    # resolve_conj: torch's complex Vh carries the conjugate bit, which DLPack (the
    # accuracy measurement's way to CuPy) refuses to export (H100 run, 2026-11-27).
    return lambda: tuple(x.resolve_conj() for x in torch.linalg.svd(t, full_matrices=False))


def _cupy(a):
    import cupy

    return lambda: cupy.linalg.svd(a, full_matrices=False)


def _jax(a):
    import jax

    jax.config.update("jax_enable_x64", True)  # else float64 input is computed in float32
    import jax.numpy as jnp

    x = jnp.from_dlpack(a)
    fn = jax.jit(lambda z: jnp.linalg.svd(z, full_matrices=False))
    return lambda: jax.block_until_ready(fn(x))


def _gpusvd_torch(a):
    """gpusvd on the stack as a torch tensor: what a PyTorch user calls (the tensor on
    torch's default stream, which CuPy shares: viewed in place)."""
    import torch

    t = torch.from_dlpack(a)
    return lambda: gpusvd.svd(t, full_matrices=False)


def _gpusvd(method):
    def make(a):
        return lambda: gpusvd.svd(a, full_matrices=False, method=method)
    return make


LIBRARIES = {"gpusvd": _gpusvd("auto"), "gpusvd_polar": _gpusvd("polar"),
             "gpusvd_jacobi": _gpusvd("jacobi"), "gpusvd_torch": _gpusvd_torch,
             "torch": _torch, "cupy": _cupy, "jax": _jax}
LOOPING = {"torch", "cupy", "jax"}  # loop over a stack above 32 columns


def _stack(n, batch, dtype, seed=0):
    import cupy

    rng = np.random.default_rng(seed)
    one = [testing.random_matrix(n, n, dtype=dtype, seed=rng) for _ in range(min(batch, 64))]
    host = np.stack([one[i % len(one)] for i in range(batch)])
    return cupy.asarray(host)


_REFERENCES = {}  # float64 singular values by the matrix's bytes: a matrix recurs by batch


def _reference(mat):
    host = mat.get()
    key = (host.dtype.name, host.shape, hashlib.sha1(host.tobytes()).hexdigest())
    if key not in _REFERENCES:
        wide = np.complex128 if host.dtype.kind == "c" else np.float64
        _REFERENCES[key] = np.linalg.svd(host.astype(wide), compute_uv=False)
    return _REFERENCES[key]


def _accuracy(a, out, dtype):
    """Worst residual, orthogonality and value error over the first SAMPLE matrices."""
    u, s, vh = (common.to_cupy(x) for x in out)
    u, s, vh = (x.reshape(-1, *x.shape[-2:]) if x.ndim > 1 else x for x in (u, s, vh))
    s = s.reshape(len(u), -1)
    worst = {}
    for i in range(min(SAMPLE, len(a))):
        acc = common.svd_accuracy(a[i], u[i], s[i], vh[i], _reference(a[i]), dtype)
        for key in ("residual", "orthogonality", "sv_error"):
            worst[key] = max(worst.get(key, 0.0), acc[key] or 0.0)
    return worst


def run_point(n, batch, dtype, args):
    """One record per library for one stack (batch 1: one (n, n) matrix). Where every
    library's call takes under ``args.fast`` seconds, the libraries are timed in
    interleaved rounds (:func:`common.time_interleaved`), else one after another."""
    a = _stack(n, batch, dtype)
    x = a[0] if batch == 1 else a
    records = {name: {"library": name, "n": n, "batch": batch, "dtype": np.dtype(dtype).name}
               for name in args.libraries}
    fns, first = {}, {}
    for name in args.libraries:
        try:
            if name in LOOPING and batch > 1 and n > 32:
                one = common.time_gpu(LIBRARIES[name](a[0]), warmup=1, repeat=1).median
                if one * batch > args.peer_cap:
                    records[name]["skipped"] = (f"estimated {one * batch:.1f} s (loops: "
                                                f"{one:.4f} s a matrix)")
                    continue
            fns[name] = LIBRARIES[name](x)
            # After a warm-up call: a first call compiles (JAX's jit) or makes handles.
            first[name] = common.time_gpu(fns[name], warmup=1, repeat=1).median
        except Exception as exc:  # a peer that fails is a result, not the end of the run
            records[name]["error"] = common.short_error(exc)
            fns.pop(name, None)
    interleaved = bool(fns) and max(first.values()) < args.fast
    if interleaved:
        timings = common.time_interleaved(fns, warmup=args.warmup, rounds=args.rounds)
    else:
        timings = {}
        for name, fn in fns.items():
            try:  # the two calls of ``first`` count towards the warm-up
                timings[name] = common.time_gpu(fn, warmup=max(0, args.warmup - 2),
                                                repeat=args.repeat, max_seconds=args.budget)
            except Exception as exc:
                timings[name] = exc
    for name, timing in timings.items():
        record = records[name]
        if isinstance(timing, Exception):
            record["error"] = common.short_error(timing)
            continue
        out = timing.result
        if batch == 1:
            out = tuple(t[None] for t in out)
        try:
            record.update(seconds=timing.median, samples=timing.times,
                          interleaved=interleaved,
                          **_accuracy(a[:1] if batch == 1 else a, out, dtype))
        except Exception as exc:
            record["error"] = common.short_error(exc)
    del timings, fns
    common.free_gpu_memory()
    return list(records.values())


def plot(path, png):
    """Time against n, one line per library, one panel per batch size (float64 solid,
    float32 dashed); a skipped or failed case is left out."""
    import json

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [r for r in json.load(open(path))["records"] if "seconds" in r]
    batches = sorted({r["batch"] for r in records})
    fig, axes = plt.subplots(1, len(batches), figsize=(4 * len(batches), 4), sharey=True)
    for ax, batch in zip(np.atleast_1d(axes), batches):
        for i, name in enumerate(sorted({r["library"] for r in records})):
            for dtype, style in (("float64", "-"), ("float32", "--")):
                pts = sorted((r["n"], r["seconds"]) for r in records if r["batch"] == batch
                             and r["library"] == name and r["dtype"] == dtype)
                if pts:
                    ax.plot(*zip(*pts), style, marker="o", color=f"C{i}",
                            label=f"{name} {dtype}")
        ax.set(xscale="log", yscale="log", xlabel="n", title=f"batch {batch}")
        ax.grid(True, which="both", alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("seconds (economy U, S, Vh)")
    np.atleast_1d(axes)[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64, 128, 256,
                                                                  512, 1024])
    p.add_argument("--batches", type=int, nargs="+", default=[1, 10, 100, 1000, 10000])
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    p.add_argument("--libraries", nargs="+", default=["gpusvd", "torch", "cupy", "jax"],
                   choices=sorted(LIBRARIES))
    p.add_argument("--max-entries", type=float, default=2.5e8,
                   help="skip stacks with more entries than this (memory)")
    p.add_argument("--peer-cap", type=float, default=20.0)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--budget", type=float, default=10.0, help="seconds of repeats a case")
    p.add_argument("--fast", type=float, default=0.005,
                   help="time the libraries in interleaved rounds where each call takes "
                        "less than this many seconds")
    p.add_argument("--rounds", type=int, default=30, help="rounds of interleaved timing")
    p.add_argument("--out", default="stacks.json")
    p.add_argument("--plot", metavar="PNG", help="plot the JSON of --out and stop")
    args = p.parse_args()
    if args.plot:
        plot(args.out, args.plot)
        return
    records = []
    started = time.time()
    device = common.device_info()
    for dtype in args.dtypes:
        for n in args.sizes:
            for batch in args.batches:
                if batch * n * n > args.max_entries:
                    continue
                for rec in run_point(n, batch, np.dtype(dtype), args):
                    records.append(rec)
                    name = rec["library"]
                    shown = (f"{rec['seconds']:.5f} s  res {rec['residual']:.2f}  "
                             f"orth {rec['orthogonality']:.2f}" if "seconds" in rec
                             else rec.get("skipped") or rec.get("error"))
                    print(f"{dtype:8s} n={n:5d} batch={batch:6d} {name:14s} {shown}",
                          flush=True)
                    common.write_json(args.out, {"device": device,
                                                 "records": records,
                                                 "elapsed": time.time() - started})


if __name__ == "__main__":
    main()
