"""A training step with an SVD penalty, eager and compiled: gpusvd against the
framework's own SVD.

The question a PyTorch or JAX user asks: "if my step takes the gradient of a spectral
penalty, how fast is it with gpusvd inside ``torch.compile`` or ``jax.jit``, and is the
gradient right?" The loss is sum((s − 1)²) + s_max, an orthogonality and spectral-norm
penalty on a weight matrix or a stack of them; a step is its value and gradient. float32
input on the GPU; median time after warm-up (compilation and tracing stay out); the
gradient's relative error against torch's float64 gradient of the same matrix.

    python bench/training_step.py --out training_step.json
    python bench/training_step.py --plot training_step.json   # its PNG beside it

``torch.compile`` runs with its default backend, Inductor (``--backend aot_eager``: Dynamo
and AOTAutograd capture the step and run it op by op); the SVD runs as the operator it
is, its derivative's formulas are compiled with the rest of the step. JAX's step is
``jax.jit(jax.grad)``.
"""

import argparse

import numpy as np

import common

CASES = [(1, 64), (1, 256), (1, 1024), (1, 4096), (1000, 64), (200, 256)]


def _loss(s):
    return ((s - 1) ** 2).sum() + s[..., 0].sum()


def _torch_steps(w, backend):
    import torch

    import gpusvd

    def ours(x):
        return _loss(gpusvd.svdvals(x))

    def theirs(x):
        return _loss(torch.linalg.svdvals(x))

    def step(f):
        def run():
            x = w.clone().requires_grad_()
            return torch.autograd.grad(f(x), x)[0]
        return run

    compiled = {name: torch.compile(f, fullgraph=True, backend=backend)
                for name, f in (("gpusvd", ours), ("torch", theirs))}
    return {"gpusvd eager": step(ours), "torch eager": step(theirs),
            "gpusvd compiled": step(compiled["gpusvd"]),
            "torch compiled": step(compiled["torch"])}


def _jax_steps(w):
    import jax
    import jax.numpy as jnp

    import gpusvd

    x = jnp.asarray(w.cpu().numpy())
    steps = {"gpusvd jit": jax.jit(jax.grad(lambda y: _loss(gpusvd.svdvals(y)))),
             "jax jit": jax.jit(jax.grad(lambda y: _loss(jnp.linalg.svd(
                 y, compute_uv=False))))}
    return {name: (lambda f=f: f(x).block_until_ready()) for name, f in steps.items()}


def _reference(w):
    import torch

    x = w.double().requires_grad_()
    return torch.autograd.grad(_loss(torch.linalg.svdvals(x)), x)[0]


def _error(grad, reference):
    import torch

    if not isinstance(grad, torch.Tensor):  # a JAX array
        grad = torch.as_tensor(np.asarray(grad), device=reference.device)
    return float((grad.double() - reference).norm() / reference.norm())


def plot(path):
    """Time a step against the case, one bar per method (log scale), to ``path``'s PNG."""
    import json

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in json.load(open(path))["rows"] if "seconds" in r]
    cases = list(dict.fromkeys(tuple(r["shape"]) for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        seconds = {tuple(r["shape"]): r["seconds"] for r in rows if r["method"] == method}
        ax.bar([c + i * width for c in range(len(cases))],
               [seconds.get(case, float("nan")) * 1e3 for case in cases], width,
               label=method)
    ax.set_xticks([c + 0.4 - width / 2 for c in range(len(cases))],
                  [" × ".join(map(str, case)) for case in cases])
    ax.set_yscale("log")
    ax.set_ylabel("ms per step (value and gradient)")
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    fig.savefig(path.removesuffix(".json") + ".png", dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="training_step.json")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--backend", default="inductor", help="torch.compile's backend")
    parser.add_argument("--plot", metavar="JSON", help="only draw the PNG of a run's JSON")
    args = parser.parse_args()
    if args.plot:
        return plot(args.plot)
    import torch

    rows = []
    for batch, n in CASES:
        shape = (n, n) if batch == 1 else (batch, n, n)
        g = torch.Generator(device="cuda").manual_seed(0)
        w = torch.randn(*shape, generator=g, device="cuda") / n ** 0.5
        reference = _reference(w)
        fns = _torch_steps(w, args.backend)
        try:
            fns.update(_jax_steps(w))
        except Exception as exc:  # JAX absent or failing: a result, not the end
            rows.append({"shape": shape, "method": "jax", "error": common.short_error(exc)})
        slow = n >= 4096 or batch * n * n > 5e6
        timed = common.time_interleaved(fns, warmup=2, rounds=3 if slow else args.rounds)
        for name, t in timed.items():
            if isinstance(t, Exception):
                rows.append({"shape": shape, "method": name, "error": common.short_error(t)})
                continue
            rows.append({"shape": shape, "method": name, "seconds": t.median,
                         "gradient_error": _error(t.result, reference)})
            print(f"{str(shape):>18} {name:>16} {t.median * 1e3:10.2f} ms "
                  f"grad err {rows[-1]['gradient_error']:.1e}", flush=True)
        common.write_json(args.out, {"device": common.device_info(),
                                     "torch_compile_backend": args.backend, "rows": rows})
    plot(args.out)


if __name__ == "__main__":
    main()
