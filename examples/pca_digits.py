"""Principal component analysis of scikit-learn's handwritten digits with gpusvd.

The digits data set (1797 images of 8×8 pixels, shipped inside scikit-learn, nothing is
downloaded) is centred column by column; its principal axes are the right singular
vectors of the centred matrix X and the variance along axis i is S[i]² / (n − 1). Two
ways are shown:

- ``gpusvd.svd`` (Golub–Reinsch): every component, compared with ``numpy.linalg.svd``;
- ``gpusvd.svd_lowrank`` (QUIC-SVD) with ``eps = 1 − target``: its guarantee
  ‖X − U·diag(S)·Vh‖²_F ≤ eps·‖X‖²_F says exactly that the components it returns explain
  at least ``target`` of the total variance, so it picks the number of components itself.

Run ``python examples/pca_digits.py`` (add ``--device gpu`` on a GPU machine).
"""

import argparse

import numpy as np
from sklearn.datasets import load_digits

import gpusvd


def explained_variance_ratio(s):
    """Share of the total variance along each principal axis, from singular values."""
    power = np.asarray(s, dtype=np.float64) ** 2
    return power / power.sum()


def components_for(ratio, target):
    """Fewest leading components whose variance ratios add up to at least ``target``."""
    return int(np.searchsorted(np.cumsum(ratio), target) + 1)


def pca(x, *, target, device, seed):
    """Exact and QUIC-SVD principal components of the rows of ``x``, and their checks."""
    centred = x - x.mean(axis=0)
    total = float(np.sum(centred ** 2))
    _, s, vh = gpusvd.svd(centred, full_matrices=False, device=device)
    s_ref = np.linalg.svd(centred, compute_uv=False)
    ratio, ratio_ref = explained_variance_ratio(s), explained_variance_ratio(s_ref)
    low = gpusvd.svd_lowrank(centred, eps=1 - target, seed=seed, device=device)
    scores = centred @ vh[:2].T  # the first two principal coordinates of each image
    return {
        "shape": centred.shape,
        "ratio": ratio,
        "ratio_error": float(np.max(np.abs(ratio - ratio_ref))),
        "variance": s ** 2 / (len(centred) - 1),
        "needed": components_for(ratio_ref, target),
        "lowrank_rank": low.rank,
        "lowrank_explained": 1 - low.error_bound,
        "lowrank_explained_true": float(np.sum(low.S ** 2)) / total,
        "lowrank_sv_error": float(np.max(np.abs(low.S - s_ref[:low.rank]) / s_ref[0])),
        "score_variance": scores.var(axis=0, ddof=1),
    }


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=None,
                   help="images used (default: all 1797)")
    p.add_argument("--target", type=float, default=0.95,
                   help="variance the low-rank PCA must explain (default 0.95)")
    p.add_argument("--device", default="auto", type=lambda d: int(d) if d.isdigit() else d,
                   help="auto, cpu, gpu or a GPU index")
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    x = load_digits().data[:args.size]
    r = pca(x, target=args.target, device=args.device, seed=args.seed)
    print(f"digits: {r['shape'][0]} images x {r['shape'][1]} pixels, centred")
    print("explained variance ratio of the first 5 components (gpusvd.svd): "
          + " ".join(f"{v:.4f}" for v in r["ratio"][:5]))
    print(f"largest difference from numpy.linalg.svd's ratios: {r['ratio_error']:.1e}")
    print(f"variance of the first two principal coordinates: "
          f"{r['score_variance'][0]:.2f} {r['score_variance'][1]:.2f} "
          f"(S^2/(n-1): {r['variance'][0]:.2f} {r['variance'][1]:.2f})")
    print(f"svd_lowrank(eps={1 - args.target:.2g}): {r['lowrank_rank']} components explain "
          f"{r['lowrank_explained']:.4f} of the variance (checked: "
          f"{r['lowrank_explained_true']:.4f}); the fewest that reach {args.target:g}: "
          f"{r['needed']}")
    print(f"their singular values against numpy's: largest difference "
          f"{r['lowrank_sv_error']:.1e} relative to S[0]")
    return r


if __name__ == "__main__":
    try:
        main()
    except (ValueError, MemoryError) as exc:  # a bad option, no GPU: one line, as argparse
        raise SystemExit(f"{_parser().prog}: error: {exc}") from None
