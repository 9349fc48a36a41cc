"""Runs under ``mpiexec -n P python -m mpi4py worker.py OUT [cpu|gpu] [all|short]``.

Every rank computes the distributed SVD/HSVD cases of :data:`CASES`, the polar SVD's of
:data:`POLAR_CASES`, the Golub–Reinsch SVD's of :data:`GR_CASES` and the error cases;
root compares each result with the single-process driver's. Each rank writes what it saw
to ``OUT.<rank>.json`` for ``test_distributed.py`` to check.
"""

import json
import sys
import time

import numpy as np

try:
    from mpi4py import MPI
except ModuleNotFoundError:  # imported for its case tables, or collected for doctests:
    MPI = None               # the launches themselves skip without mpi4py

import gpusvd
from gpusvd import distributed
from gpusvd._core.results import SVDResult
from gpusvd.distributed import local
from gpusvd.distributed.comm import Comm
from gpusvd.testing import graded, haar_orthogonal, low_rank, random_matrix
from gpusvd.testing.metrics import orthogonality, relative_sv_error, svd_residual

# (name, m, n, options): odd and even orders, tall and wide, values only and full.
CASES = [("37", 37, 37, {}), ("64", 64, 64, {}), ("101", 101, 101, {}),
         ("tall", 120, 45, {}), ("wide", 45, 70, {}),
         ("values", 101, 101, {"compute_uv": False}),
         ("economy", 90, 41, {"full_matrices": False}),
         ("complex", 40, 33, {"dtype": np.complex128}),
         ("full-block", 64, 64, {"variant": "full-block"}),
         ("graded", 50, 50, {"graded": True}),
         ("qr", 50, 50, {"shorten": "qr"}), ("float32", 40, 40, {"dtype": np.float32}),
         ("tiny", 3, 2, {}),
         # The outer level's options; "pair-sweeps" and "no-skip" take the matrix of "101".
         ("pair-sweeps", 101, 101, {"pair_sweeps": 2}),
         ("no-skip", 101, 101, {"skip_orthogonal": False}),
         ("pairs", 260, 260, {"pairs_per_rank": 2}),
         ("orthogonal", 60, 60, {"orthogonal": True})]
HSVD_CASES = [("hsvd", 50, 40), ("hsvd-square", 37, 37)]
# (name, m, n, options) of distributed.svd, the polar method: square, tall and wide, values
# only, economy, complex, float32, numerically rank deficient (U completed; tall: QDWH
# where CholeskyQR fails) and fewer rows than ranks (some ranks hold none).
POLAR_CASES = [("polar", 60, 60, {}), ("polar-tall", 130, 41, {}), ("polar-wide", 35, 70, {}),
               ("polar-values", 50, 50, {"compute_uv": False}),
               ("polar-economy", 90, 41, {"full_matrices": False}),
               ("polar-complex", 40, 33, {"dtype": np.complex128}),
               ("polar-float32", 40, 40, {"dtype": np.float32}),
               ("polar-rank", 48, 48, {"rank": 12}), ("polar-tiny", 3, 2, {}),
               ("polar-tall-rank", 120, 40, {"rank": 10})]
# (name, m, n, options) of distributed.svd(rows=True), each rank passing its own rows:
# split "even" as root would send them (the same bits as A on root), "uneven" (rank r
# holds a share growing with r; the last of "rows-tiny" holds them all).
POLAR_ROWS_CASES = [("rows", 60, 60, {"split": "even"}), ("rows-uneven", 60, 60, {}),
                    ("rows-tall", 130, 41, {"full_matrices": False}),
                    ("rows-complex", 40, 33, {"dtype": np.complex128,
                                              "full_matrices": False}),
                    ("rows-float32", 40, 40, {"dtype": np.float32, "split": "even"}),
                    ("rows-values", 50, 50, {"compute_uv": False}),
                    ("rows-rank", 48, 48, {"rank": 12}),
                    ("rows-tall-rank", 120, 40, {"rank": 10, "full_matrices": False}),
                    ("rows-tiny", 3, 2, {"full_matrices": False})]
# (name, m, n, options) of distributed.svd(method="gr"): square, tall (its QR first),
# tall with the complete U (columns past n shared out too), wide, values only, complex,
# float32, rank deficient, and fewer columns than ranks.
GR_CASES = [("gr", 60, 60, {}), ("gr-tall", 130, 41, {}), ("gr-full", 60, 45, {}),
            ("gr-wide", 35, 70, {}), ("gr-values", 50, 50, {"compute_uv": False}),
            ("gr-economy", 60, 45, {"full_matrices": False}),
            ("gr-complex", 40, 33, {"dtype": np.complex128}),
            ("gr-float32", 40, 40, {"dtype": np.float32}),
            ("gr-rank", 48, 48, {"rank": 12}), ("gr-tiny", 3, 2, {})]
# The cases of a short run (many ranks oversubscribe CI's two cores and wait in MPI).
SHORT = ("37", "101", "tall", "values", "complex", "tiny", "pairs", "orthogonal", "hsvd",
         "polar", "polar-complex", "polar-tiny", "rows", "rows-uneven", "rows-rank", "gr",
         "gr-full", "gr-complex", "gr-tiny")
# Options of the distributed driver only (the single-process reference does without).
OUTER_ONLY = ("variant", "pair_sweeps", "skip_orthogonal", "pairs_per_rank")


def host(x):
    return np.asarray(x.get() if hasattr(x, "get") else x)


def matrix(m, n, opts):
    dtype = opts.pop("dtype", np.float64)
    if opts.pop("graded", False):
        return graded(m, n, side="both", grading=1e-12, seed=m)
    if opts.pop("orthogonal", False):   # orthogonal columns of distinct norms
        return haar_orthogonal(m, seed=m)[:, :n] * np.geomspace(1, 1e-3, n)
    return random_matrix(m, n, dtype=dtype, seed=m + n)


def vectors_record(a, out, s, ref):
    """Shapes, residual and orthogonality of ``out`` and of the single process's ``ref``."""
    u, vh = host(out.U), host(out.Vh)
    return {"shapes": [list(u.shape), list(vh.shape)],
            "ref_shapes": [list(ref.U.shape), list(ref.Vh.shape)],
            "residual": svd_residual(a, u, s, vh), "residual_single": svd_residual(a, *ref),
            "orth": max(orthogonality(u), orthogonality(vh.conj().T)),
            "orth_single": max(orthogonality(ref.U), orthogonality(ref.Vh.conj().T))}


def svd_case(rank, m, n, opts, comm):
    a = matrix(m, n, opts)
    gpu = comm.transport != "mpi"
    put = (lambda x: __import__("cupy").asarray(x)) if gpu else (lambda x: x)
    out = distributed.jacobi_svd(put(a) if rank == 0 else None, comm=comm, **opts)
    info = comm.last_run._asdict()
    if rank != 0:
        return {"none": out is None, "info": info}
    single = {k: v for k, v in opts.items() if k not in OUTER_ONLY}
    ref = gpusvd.jacobi_svd(a, device="cpu", **single)
    s, s_ref = (host(out), ref) if opts.get("compute_uv") is False else (host(out.S), ref.S)
    rec = {"info": info,
           "type": type(out.S if hasattr(out, "S") else out).__module__.split(".")[0],
           "sv_vs_single": relative_sv_error(s, s_ref) / float(np.finfo(s.dtype).eps),
           "sv_single_vs_lapack": relative_sv_error(
               s_ref, np.linalg.svd(a, compute_uv=False)) / float(np.finfo(s.dtype).eps)}
    if opts.get("compute_uv") is not False:
        rec.update(vectors_record(a, out, s, ref))
    return rec


def exact_case(rank, m, n, opts, comm, method):
    """distributed.svd by ``method`` against the one-process method on the same matrix:
    the polar method, or for "gr" the two-stage SVD (the same reduction, its
    back-transformations on one device)."""
    from gpusvd.condensed.driver import two_stage_svd
    from gpusvd.golub_reinsch.driver import svd as one_device

    deficient = opts.pop("rank", None)
    a = matrix(m, n, opts) if deficient is None else low_rank(m, n, deficient, seed=m)
    gpu = comm.transport != "mpi"
    put = (lambda x: __import__("cupy").asarray(x)) if gpu else (lambda x: x)
    out = distributed.svd(put(a) if rank == 0 else None, comm=comm, method=method, **opts)
    if rank != 0:
        return {"none": out is None}
    values = opts.get("compute_uv") is False
    full = opts.get("full_matrices", True)
    if method == "polar":
        ref = gpusvd.svd(a, method="polar", device="cpu", **opts)
    elif values:
        ref = one_device(a, np, full_matrices=full, compute_uv=False, overwrite_a=False)[1]
    else:
        ref = SVDResult(*two_stage_svd(a, np, full_matrices=full))
    s, s_ref = (host(out), ref) if values else (host(out.S), ref.S)
    eps = float(np.finfo(s.dtype).eps)
    rec = {"sv_vs_single": float(np.abs(s - s_ref).max() / (s_ref[0] * eps)),
           "type": type(out if values else out.S).__module__.split(".")[0]}
    if not values:
        rec.update(vectors_record(a, out, s, ref))
    return rec


def row_bounds(m, ranks, split):
    """Each rank's rows: as root sends them (``"even"``), or shares growing with the rank
    (``"uneven"``: rank r holds about (r + 1)/Σ of them, rank 0 possibly none)."""
    if split == "even":
        return [(m * r // ranks, m * (r + 1) // ranks) for r in range(ranks)]
    edges = [m * (r * (r + 1) // 2) // (ranks * (ranks + 1) // 2) for r in range(ranks + 1)]
    return list(zip(edges[:-1], edges[1:]))


def polar_rows_case(rank, m, n, opts, comm):
    """distributed.svd(rows=True) against A on root (the same call otherwise) and the
    one-process polar method; root assembles U from the ranks' rows."""
    deficient = opts.pop("rank", None)
    split = opts.pop("split", "uneven")
    a = matrix(m, n, opts) if deficient is None else low_rank(m, n, deficient, seed=m)
    gpu = comm.transport != "mpi"
    put = (lambda x: __import__("cupy").asarray(x)) if gpu else (lambda x: x)
    r0, r1 = row_bounds(m, comm.size, split)[rank]
    out = distributed.svd(put(a[r0:r1]), comm=comm, rows=True, **opts)
    rooted = distributed.svd(put(a) if rank == 0 else None, comm=comm, **opts)
    values = opts.get("compute_uv") is False
    s = host(out if values else out.S)
    world = MPI.COMM_WORLD
    s0 = world.bcast(s if rank == 0 else None, root=0)
    rec = {"rows": [r0, r1], "s_as_root": bool(np.array_equal(s, s0)),
           "type": type(out if values else out.S).__module__.split(".")[0]}
    if not values:
        vh = host(out.Vh)
        vh0 = world.bcast(vh if rank == 0 else None, root=0)
        rec["vh_as_root"] = bool(np.array_equal(vh, vh0))
        rec["u_shape"] = list(out.U.shape)
    blocks = world.gather(None if values else host(out.U), root=0)
    if rank != 0:
        return rec
    ref = gpusvd.svd(a, method="polar", device="cpu", **opts)
    s_ref = ref if values else ref.S
    eps = float(np.finfo(s.dtype).eps)
    rec["sv_vs_single"] = float(np.abs(s - s_ref).max() / (s_ref[0] * eps))
    rec["same_bits_as_root"] = bool(np.array_equal(s, host(rooted if values else rooted.S)))
    if not values:
        u = np.concatenate(blocks)
        rec.update(vectors_record(a, type(out)(u, s, vh), s, ref))
        rec["same_bits_as_root"] &= bool(np.array_equal(u, host(rooted.U))
                                         and np.array_equal(vh, host(rooted.Vh)))
    return rec


def hsvd_case(rank, m, n, comm):
    g = random_matrix(m, n, seed=m * n)
    signs = np.where(np.arange(n) % 3 == 0, -1.0, 1.0)
    out = distributed.hsvd(g if rank == 0 else None, signs if rank == 0 else None,
                           comm=comm)
    if rank != 0:
        return {"none": out is None}
    ref = gpusvd.hsvd(g, signs, device="cpu")
    u, s, v, j = map(host, out)
    eps = np.finfo(g.dtype).eps
    return {"sv_vs_single": relative_sv_error(s, ref.S) / eps,
            "signs_equal": bool((j == ref.J).all()),
            "hsvd_residual": float(np.linalg.norm(g @ v - u * s) / (np.linalg.norm(g) * n * eps)),
            "j_unitary": float(np.abs(v.T @ np.diag(signs) @ v - np.diag(j)).max()
                               / (np.abs(v).max() ** 2 * n * eps)),
            "orth": orthogonality(u)}


def outcome(call, name=None):
    """The exception type this rank saw (or 'ok'), and that the next call still works;
    traced on stderr under ``name`` when given."""
    def seen():
        try:
            call()
            return "ok"
        except Exception as exc:
            return type(exc).__name__
    return seen() if name is None else traced(MPI.COMM_WORLD.rank, f"errors {name}", seen)


def error_cases(rank, device):
    a = random_matrix(20, 20, seed=3)
    bad = a.copy()
    bad[4, 5] = np.nan
    seen = {"nan": outcome(lambda: distributed.jacobi_svd(
                bad if rank == 0 else None, device=device), "nan"),
            "option": outcome(lambda: distributed.jacobi_svd(
                a if rank == 0 else None, device=device, variant="bogus"), "option"),
            "stack": outcome(lambda: distributed.jacobi_svd(
                np.stack([a, a]) if rank == 0 else None, device=device), "stack"),
            "signs": outcome(lambda: distributed.hsvd(
                a if rank == 0 else None, np.zeros(20) if rank == 0 else None,
                device=device), "signs"),
            "outer-option": outcome(lambda: distributed.jacobi_svd(
                a if rank == 0 else None, device=device, pair_sweeps=0), "outer-option"),
            "polar-nan": outcome(lambda: distributed.svd(
                bad if rank == 0 else None, device=device, method="polar"), "polar-nan"),
            "polar-stack": outcome(lambda: distributed.svd(
                np.stack([a, a]) if rank == 0 else None, device=device, method="polar"),
                "polar-stack"),
            # rows=True: one rank's block of other columns, a wide A, NaN on the last rank
            "rows-columns": outcome(lambda: distributed.svd(
                a[:4, :(19 if rank == 1 else 20)], device=device, rows=True), "rows-columns"),
            "rows-wide": outcome(lambda: distributed.svd(
                a[:3], device=device, rows=True), "rows-wide"),
            # method="gr": A spread over the ranks, NaN on root, an unknown method
            "gr-rows": outcome(lambda: distributed.svd(
                a[:4], device=device, rows=True, method="gr"), "gr-rows"),
            "gr-nan": outcome(lambda: distributed.svd(
                bad if rank == 0 else None, device=device, method="gr"), "gr-nan"),
            "gr-method": outcome(lambda: distributed.svd(
                a if rank == 0 else None, device=device, method="jacobi"), "gr-method"),
            # method="auto" (the default) receives A on root to choose: NaN, a stack there
            "auto-nan": outcome(lambda: distributed.svd(
                bad if rank == 0 else None, device=device, method="auto"), "auto-nan"),
            "auto-stack": outcome(lambda: distributed.svd(
                np.stack([a, a]) if rank == 0 else None, device=device, method="auto"),
                "auto-stack"),
            "rows-nan": outcome(lambda: distributed.svd(
                np.where(rank == MPI.COMM_WORLD.size - 1, np.nan, a[5 * rank:5 * rank + 5, :5]),
                device=device, rows=True), "rows-nan")}
    step = local.outer_block_step
    calls = [0]

    def failing(*args, **kw):
        calls[0] += 1
        if rank == MPI.COMM_WORLD.size - 1 and calls[0] == 2:
            raise RuntimeError("injected failure")
        return step(*args, **kw)

    local.outer_block_step = failing
    import gpusvd.distributed.outer as outer
    outer.outer_block_step = failing
    seen["injected"] = outcome(lambda: distributed.jacobi_svd(
        random_matrix(64, 64, seed=1) if rank == 0 else None, device=device), "injected")
    outer.outer_block_step = local.outer_block_step = step
    seen["sweeps"] = outcome(lambda: distributed.jacobi_svd(
        random_matrix(64, 64, seed=1) if rank == 0 else None, device=device, max_sweeps=1),
        "sweeps")
    seen["after"] = outcome(lambda: distributed.jacobi_svd(a if rank == 0 else None,
                                                            device=device), "after")
    return seen


# (name, m, n, rank, noise, eps) of distributed.svd_lowrank: exact low rank, noise at
# the tolerance, a wide matrix, and fewer rows than ranks (some ranks get none).
LOWRANK_CASES = [("exact", 300, 80, 6, 0.0, 1e-10), ("noisy", 240, 120, 10, 1e-3, 1e-4),
                 ("wide", 60, 150, 8, 1e-4, 1e-6), ("few-rows", 3, 20, 3, 0.0, 1e-8)]


def lowrank_case(rank, m, n, r, noise, eps, comm):
    a = low_rank(m, n, r, noise=noise, seed=m + n)
    gpu = comm.transport != "mpi"
    put = (lambda x: __import__("cupy").asarray(x)) if gpu else (lambda x: x)
    out = distributed.svd_lowrank(put(a) if rank == 0 else None, eps, comm=comm, seed=7)
    again = distributed.svd_lowrank(put(a) if rank == 0 else None, eps, comm=comm, seed=7)
    if rank != 0:
        return {"none": out is None and again is None}
    u, s, vh = (host(x) for x in (out.U, out.S, out.Vh))
    true = float(np.linalg.norm(a - (u * s) @ vh) ** 2 / np.linalg.norm(a) ** 2)
    single = gpusvd.svd_lowrank(a, eps, seed=7, device="cpu")
    k = min(len(s), len(single.S))
    return {"eps": eps, "rank": out.rank, "error_bound": out.error_bound, "true_error": true,
            "single_rank": single.rank, "single_basis": single.basis_size,
            "partitions": out.partitions,
            "basis_size": out.basis_size, "passes": out.passes,
            "orth": orthogonality(u), "orth_v": orthogonality(vh, rows=True),
            "sv_vs_single": float(np.max(np.abs(s[:k] - single.S[:k])) / single.S[0]),
            "fro_over_s1": float(np.linalg.norm(a) / single.S[0]),
            "repeatable": bool(np.array_equal(s, host(again.S))),
            "type": type(out.U).__module__.split(".")[0]}


def lowrank_path_case(rank, out, comm):
    """A .npy path on root: every rank reads its own rows of the file."""
    a = low_rank(200, 60, 5, noise=1e-6, seed=11)
    path = f"{out}.lowrank.npy"
    if rank == 0:
        np.save(path, a)
    got = distributed.svd_lowrank(path if rank == 0 else None, 1e-8, comm=comm, seed=3)
    if rank != 0:
        return {"none": got is None}
    u, s, vh = (host(x) for x in (got.U, got.S, got.Vh))
    true = float(np.linalg.norm(a - (u * s) @ vh) ** 2 / np.linalg.norm(a) ** 2)
    return {"rank": got.rank, "error_bound": got.error_bound, "true_error": true,
            "type": type(got.U).__module__.split(".")[0]}


def lowrank_merge_case(rank, comm):
    """Merged basis sizes: merging every quic_merge_chunk vectors against only at the end."""
    from gpusvd._core import tunables

    a = low_rank(4000, 300, 30, noise=1e-3, seed=5)
    mine = a if rank == 0 else None
    sizes = {}
    for name, chunk in (("chunked", tunables.get().quic_merge_chunk), ("end_only", 0)):
        with tunables.override(quic_merge_chunk=chunk):
            out = distributed.svd_lowrank(mine, 1e-4, comm=comm, seed=2, device="cpu")
        sizes[name] = out.basis_size if rank == 0 else None
        sizes[name + "_rank"] = out.rank if rank == 0 else None
    if rank == 0:
        sizes["single"] = gpusvd.svd_lowrank(a, 1e-4, seed=2, device="cpu").basis_size
        sizes["chunk"] = tunables.get().quic_merge_chunk
    return sizes


def lowrank_errors(rank, comm):
    seen = {}
    seen["eps"] = outcome(lambda: distributed.svd_lowrank(
        np.ones((4, 4)) if rank == 0 else None, 2.0, comm=comm))
    seen["nan"] = outcome(lambda: distributed.svd_lowrank(
        np.full((6, 4), np.nan) if rank == 0 else None, comm=comm))
    return seen


def traced(rank, name, call):
    """``call()``, with its start and end on stderr: a launch that times out shows
    which case it was in."""
    start = time.perf_counter()
    print(f"rank {rank}: {name} ...", file=sys.stderr, flush=True)
    out = call()
    print(f"rank {rank}: {name} {time.perf_counter() - start:.1f} s", file=sys.stderr,
          flush=True)
    return out


def main():
    out, device, which = sys.argv[1], sys.argv[2], sys.argv[3]
    rank = MPI.COMM_WORLD.rank
    wanted = (lambda name: which == "all" or name in SHORT)
    comm = traced(rank, "Comm", lambda: Comm(device=device))
    results = {name: traced(rank, name, lambda: svd_case(rank, m, n, dict(opts), comm))
               for name, m, n, opts in CASES if wanted(name)}
    results.update({name: traced(rank, name, lambda: hsvd_case(rank, m, n, comm))
                    for name, m, n in HSVD_CASES if wanted(name)})
    for method, table in (("polar", POLAR_CASES), ("gr", GR_CASES)):
        results.update({name: traced(rank, name, lambda: exact_case(rank, m, n, dict(opts),
                                                                    comm, method))
                        for name, m, n, opts in table if wanted(name)})
    results.update({name: traced(rank, name,
                                 lambda: polar_rows_case(rank, m, n, dict(opts), comm))
                    for name, m, n, opts in POLAR_ROWS_CASES if wanted(name)})
    results["errors"] = traced(rank, "errors", lambda: error_cases(rank, device))
    results["lowrank"] = {c[0]: traced(rank, f"lowrank {c[0]}",
                                       lambda: lowrank_case(rank, *c[1:], comm))
                          for c in LOWRANK_CASES}
    results["lowrank_errors"] = traced(rank, "lowrank errors",
                                       lambda: lowrank_errors(rank, comm))
    results["lowrank_path"] = traced(rank, "lowrank path",
                                     lambda: lowrank_path_case(rank, out, comm))
    if device == "cpu":
        results["lowrank_merge"] = traced(rank, "lowrank merge",
                                          lambda: lowrank_merge_case(rank, comm))
    results["transport"] = comm.transport
    with open(f"{out}.{rank}.json", "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
