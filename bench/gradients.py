"""Gradients and the polar decomposition: gpusvd against torch, JAX and Newton–Schulz.

The questions a PyTorch or JAX user asks: "how much does the SVD's forward and
backward cost against torch's, and is its gradient finite where values repeat?" and "how
fast and how orthogonal is gpusvd.polar against JAX's QDWH polar, an SVD-based polar in
torch and 5 quintic Newton–Schulz steps (the Muon family's)?". Input on the GPU, median
time after a warm-up (``gpusvd._bench``), accuracy beside it.

    python bench/gradients.py --parts svd polar degenerate --out gradients.json

The parts run in the order degenerate, polar, svd, and the JSON is written again after
every case, so a run stopped by a time limit keeps what it measured. A case's timed calls
stop once ``--max-seconds`` would be passed (at least one after the warm-up): the default
run took 202 s on an H100 (2026-11-27), about 70 s of it JAX's start and compilations.

- ``degenerate``: the gradient of sum(U·Vh) at diag(1, 1, 2, 3) by each library: finite
  or not.
- ``polar``: the unitary factor at ``--polar-sizes`` and a stack of 64 × 1024² float32;
  orthogonality ‖UᴴU − I‖_F/(n·ε) beside each time, in units of n·ε of the input's
  dtype (ε = 2⁻²³ for float32, 2⁻⁵² for float64), and the dtype of each library's result
  (JAX runs with ``jax_enable_x64``, so a float64 input stays float64).
- ``svd``: forward + backward of the loss sum(s) + sum(U·Vh) through ``gpusvd.svd`` and
  ``torch.linalg.svd``, and of sum(s) through the values only, at ``--sizes`` and a stack
  of ``--stack`` matrices, float32 and float64.
- ``takagi``: forward + backward of sum(s) + sum(W∘|U|²) through ``gpusvd.takagi`` and
  through the SVD-based factorization in torch (U·diag(Uᴴ·conj(V))^½, as thewalrus
  computes it, differentiated by torch's SVD), the forward of ``gpusvd.takagi`` alone
  beside them, at ``--takagi-sizes``, complex64 and complex128; the distance of the torch
  gradient's symmetric part from gpusvd's gradient, relative to its size.
"""

import argparse
import time

import numpy as np

import common

NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)  # the quintic Newton–Schulz of Muon (Jordan 2024)
NS_STEPS = 5
# torch's SVD-based polar took 6–11 s a call at 8192² on the H200 (a first run,
# stopped at 280 s inside the polar part): on inputs of more entries than this it is
# timed once without a warm-up (its handles and workspaces were made at smaller sizes).
SVD_POLAR_WARM_UP_ENTRIES = 4096 ** 2


def _jax():
    """JAX with float64 enabled: set before any JAX array is made, or float64 input is
    silently computed in float32."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def _torch_matrix(shape, dtype, seed=0):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, generator=g, device="cuda", dtype=getattr(torch, dtype))


def _svd_cases():
    """name: (forward + backward of a loss) for a tensor x that requires grad."""
    import torch

    import gpusvd

    def ours(x):
        u, s, vh = gpusvd.svd(x, full_matrices=False)
        (s.sum() + (u @ vh).sum()).backward()

    def theirs(x):
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        (s.sum() + (u @ vh).sum()).backward()

    return {"gpusvd_svd": ours, "torch_svd": theirs,
            "gpusvd_svdvals": lambda x: gpusvd.svdvals(x).sum().backward(),
            "torch_svdvals": lambda x: torch.linalg.svdvals(x).sum().backward()}


def _takagi_cases(weights):
    """name: (the loss of a Takagi factorization, forward + backward) for a tensor x of
    complex symmetric matrices that requires grad."""
    import torch

    import gpusvd

    def loss(s, u):
        return s.sum() + (weights * u.abs() ** 2).sum()

    def ours(x):
        loss(*gpusvd.takagi(x)).backward()

    def through_torch_svd(x):
        u, s, vh = torch.linalg.svd(x)
        phases = torch.diagonal(u.mH @ vh.mT, dim1=-2, dim2=-1)
        loss(s, u * phases.sqrt()[..., None, :]).backward()

    return {"gpusvd_takagi": ours, "torch_svd_takagi": through_torch_svd}


def run_takagi(args, records, save):
    import gpusvd

    for dtype in ("complex64", "complex128"):
        for n in args.takagi_sizes:
            b = _torch_matrix((n, n), dtype, seed=3)
            a = (b + b.mT).detach()
            weights = _torch_matrix((n, n), {"complex64": "float32",
                                             "complex128": "float64"}[dtype], seed=4)
            grads = {}
            cases = {"gpusvd_takagi_forward": lambda x: gpusvd.takagi(x.detach()),
                     **_takagi_cases(weights)}
            for name, fn in cases.items():
                x = a.clone().requires_grad_()
                try:
                    timing = common.time_gpu(lambda: fn(x), warmup=1, repeat=args.repeat,
                                             max_seconds=args.max_seconds)
                    rec = {"seconds": timing.median}
                    if x.grad is not None:      # one call's gradient, not the sum of all
                        x.grad = None
                        fn(x)
                        grads[name] = x.grad
                        rec["grad_finite"] = bool(x.grad.isfinite().all())
                except Exception as exc:  # a peer that fails is recorded, not fatal
                    rec = {"error": common.short_error(exc)}
                records.append({"part": "takagi", "case": name, "shape": [n, n],
                                "dtype": dtype, **rec})
                print(f"{save():4.0f} s  takagi {name:22s} {n:6d} {dtype:10s} "
                      f"{rec.get('seconds', float('nan')):9.4f} s "
                      f"{rec.get('error', '')}", flush=True)
                common.free_gpu_memory()
            if len(grads) == 2:
                # the factorization is of symmetric matrices: gpusvd's gradient is that of
                # takagi((A + Aᵀ)/2), symmetric; the SVD route's is compared by its
                # symmetric part, its derivative along symmetric directions
                ours, theirs = grads["gpusvd_takagi"], grads["torch_svd_takagi"]
                theirs = (theirs + theirs.mT) / 2
                records[-1]["grad_distance"] = float((theirs - ours).abs().max()
                                                     / ours.abs().max())


def _newton_schulz(x):
    a, b, c = NS_COEFFICIENTS
    y = x / (x.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(NS_STEPS):
        g = y.mT @ y
        y = a * y + y @ (b * g + c * g @ g)
    return y


def _polar_cases():
    jax = _jax()
    import jax.scipy.linalg as jsl
    import torch

    import gpusvd

    jax_polar = jax.jit(lambda z: jsl.polar(z, method="qdwh")[0])

    def torch_svd_polar(x):
        u, _, vh = torch.linalg.svd(x, full_matrices=False)
        return u @ vh

    return {"gpusvd_polar": lambda x: gpusvd.polar(x)[0],
            "jax_qdwh": lambda x: jax.block_until_ready(jax_polar(jax.dlpack.from_dlpack(x))),
            "torch_svd_polar": torch_svd_polar, "newton_schulz_5": _newton_schulz}


def _dtype_name(x):
    """'float32', 'float64'... of a torch tensor or a JAX array."""
    return str(x.dtype).removeprefix("torch.")


def _orthogonality(u, dtype):
    """max ‖UᴴU − I‖_F/(k·ε) over the stack, computed in float64, ε that of ``dtype``
    (the input's: a result in a lower precision than asked for scores as such)."""
    import torch

    u = torch.from_dlpack(u) if not isinstance(u, torch.Tensor) else u
    u = u.double().reshape(-1, *u.shape[-2:])
    k = u.shape[-1]
    eye = torch.eye(k, dtype=u.dtype, device=u.device)
    defect = torch.linalg.matrix_norm(u.mT @ u - eye).max().item()
    return defect / (k * common.eps_of(dtype))


def run_svd(args, records, save):
    for dtype in args.dtypes:
        shapes = [(n, n) for n in args.sizes] + [(args.stack, 64, 64)]
        for shape in shapes:
            for name, fn in _svd_cases().items():
                x = _torch_matrix(shape, dtype).requires_grad_()
                timing = common.time_gpu(lambda: fn(x), warmup=1, repeat=args.repeat,
                                         max_seconds=args.max_seconds)
                finite = bool(x.grad is not None and x.grad.isfinite().all())
                records.append({"part": "svd", "case": name, "shape": list(shape),
                                "dtype": dtype, "seconds": timing.median,
                                "grad_finite": finite})
                print(f"{save():4.0f} s  svd {name:16s} {str(shape):18s} {dtype:8s} "
                      f"{timing.median:9.4f} s", flush=True)
                common.free_gpu_memory()


def run_polar(args, records, save):
    cases = [((n, n), dtype) for n in args.polar_sizes for dtype in args.dtypes]
    cases.append(((64, 1024, 1024), "float32"))
    for shape, dtype in cases:
        x = _torch_matrix(shape, dtype)
        for name, fn in _polar_cases().items():
            once = name == "torch_svd_polar" and x.numel() > SVD_POLAR_WARM_UP_ENTRIES
            try:
                timing = common.time_gpu(lambda: fn(x), warmup=0 if once else 1,
                                         repeat=1 if once else args.repeat,
                                         max_seconds=args.max_seconds)
                rec = {"seconds": timing.median, "calls": len(timing.times),
                       "result_dtype": _dtype_name(timing.result),
                       "orthogonality": _orthogonality(timing.result, dtype)}
            except Exception as exc:  # a peer that fails is recorded, not fatal
                rec = {"error": common.short_error(exc)}
            records.append({"part": "polar", "case": name, "shape": list(shape),
                            "dtype": dtype, **rec})
            print(f"{save():4.0f} s  polar {name:16s} {str(shape):18s} {dtype:8s} "
                  f"{rec.get('seconds', float('nan')):9.4f} s "
                  f"orth {rec.get('orthogonality', float('nan')):.3g} n·ε "
                  f"(result {rec.get('result_dtype', rec.get('error'))})", flush=True)
            common.free_gpu_memory()


def run_degenerate(records, save):
    jax = _jax()
    import jax.numpy as jnp
    import torch

    import gpusvd

    a = np.diag([1.0, 1.0, 2.0, 3.0])
    for name, svd in (("gpusvd", gpusvd.svd), ("torch", torch.linalg.svd)):
        x = torch.tensor(a, device="cuda", requires_grad=True)
        u, s, vh = svd(x, full_matrices=False)
        (u @ vh).sum().backward()
        records.append({"part": "degenerate", "case": name,
                        "grad_finite": bool(x.grad.isfinite().all())})
    grad = jax.grad(lambda z: (lambda r: (r[0] @ r[2]).sum())(
        jnp.linalg.svd(z, full_matrices=False)))(jnp.asarray(a))
    records.append({"part": "degenerate", "case": "jax",
                    "grad_finite": bool(np.isfinite(np.asarray(grad)).all())})
    for r in records[-3:]:
        print(f"{save():4.0f} s  degenerate {r['case']:8s} gradient finite: "
              f"{r['grad_finite']}", flush=True)


def plot(path, png):
    """Two panels: forward + backward time against n (gpusvd and torch, svd and svdvals;
    float64 solid, float32 dashed), and the polar factor's time against n per method."""
    import json

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [r for r in json.load(open(path))["records"] if "seconds" in r]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, part in zip(axes, ("svd", "polar")):
        mine = [r for r in records if r["part"] == part and len(r["shape"]) == 2]
        for i, case in enumerate(sorted({r["case"] for r in mine})):
            for dtype, style in (("float64", "-"), ("float32", "--")):
                pts = sorted((r["shape"][0], r["seconds"]) for r in mine
                             if r["case"] == case and r["dtype"] == dtype)
                if pts:
                    ax.plot(*zip(*pts), style, marker="o", color=f"C{i}",
                            label=f"{case} {dtype}")
        ax.set(xscale="log", yscale="log", xlabel="n (one n×n matrix)", ylabel="seconds",
               title="forward + backward" if part == "svd" else "unitary polar factor")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parts", nargs="+", default=["svd", "polar", "degenerate"],
                   choices=["svd", "polar", "degenerate", "takagi"])
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 4096])
    p.add_argument("--stack", type=int, default=1000, help="matrices of 64² in the stack")
    p.add_argument("--polar-sizes", type=int, nargs="+", default=[1024, 4096, 8192])
    p.add_argument("--takagi-sizes", type=int, nargs="+", default=[256, 1024, 2048])
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--max-seconds", type=float, default=1.0,
                   help="a case's timed calls stop before passing this (at least one)")
    p.add_argument("--out", default="gradients.json")
    p.add_argument("--plot", metavar="PNG", help="plot the JSON of --out and stop")
    args = p.parse_args(argv)
    if args.plot:
        plot(args.out, args.plot)
        return
    records, started, device = [], time.time(), common.device_info()

    def save():
        """Write what was measured so far; returns the seconds since the start."""
        elapsed = time.time() - started
        common.write_json(args.out, {"device": device, "records": records,
                                     "elapsed": elapsed})
        return elapsed

    if "degenerate" in args.parts:
        run_degenerate(records, save)
    if "polar" in args.parts:
        run_polar(args, records, save)
    if "svd" in args.parts:
        run_svd(args, records, save)
    if "takagi" in args.parts:
        run_takagi(args, records, save)


if __name__ == "__main__":
    main()
