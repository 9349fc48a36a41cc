"""Squeezing parameters of a Gaussian boson sampler that encodes a graph, by Takagi.

A Gaussian boson sampler (GBS) prepares N single-mode squeezed states, sends them through
an N-mode interferometer U and counts photons. Its pure output state is described by the
complex symmetric N×N matrix B = U·diag(tanh r)·Uᵀ (Hamilton et al., PRL 119, 170501
(2017); Brádler et al., PRA 98, 032310 (2018)), and the probability of a pattern of single
photons in the modes S is |Haf(B_S)|² / ∏ cosh r_j. To sample the perfect matchings of a
graph, B is set to c·A, A the graph's adjacency matrix:

1. Takagi-factorize A = U·diag(σ)·Uᵀ (σ ≥ 0: for a real symmetric A, the |eigenvalues|);
2. then c·A = U·diag(c·σ)·Uᵀ, so tanh r_j = c·σ_j, which needs c < 1/σ_max;
3. the mean photon number Σ sinh² r_j = Σ λ²/(1 − λ²), λ = c·σ_j, grows from 0 to ∞ as c
   goes from 0 to 1/σ_max: c is the root that gives the target mean photon number.

The result is checked through the state itself: the covariance matrix of those squeezers
and that interferometer (ħ = 2, xxpp order) gives back B = c·A by the GBS formula
A_state = X·(I − Q⁻¹)* of Hamilton et al., its mean photon number by (tr σ − 2N)/4, and
its vacuum probability 1/√det Q = ∏ 1/cosh r_j. Run ``python examples/gbs_squeezing.py``.
"""

import argparse

import numpy as np
from scipy.optimize import brentq

import gpusvd

DB_PER_NEPER = 20 / np.log(10)  # squeezing in dB: 10·log10(e^{2r})
SHOWN = 8  # squeezing parameters printed


def random_graph(n, p, seed):
    """Adjacency matrix of an Erdős–Rényi graph G(n, p)."""
    rng = np.random.default_rng(seed)
    upper = np.triu(rng.random((n, n)) < p, k=1)
    return (upper | upper.T).astype(np.float64)


def mean_photons(lam):
    """Σ sinh² r_j with tanh r_j = λ_j: Σ λ²/(1 − λ²)."""
    return float(np.sum(lam ** 2 / (1 - lam ** 2)))


def scale_for(sigma, target):
    """c in (0, 1/σ_max) with mean_photons(c·σ) = target."""
    top = 1 / sigma[0]
    return brentq(lambda c: mean_photons(c * sigma) - target, 0.0, top * (1 - 1e-15),
                  xtol=1e-16 * top, rtol=4 * np.finfo(float).eps)


def covariance(r, u):
    """Covariance matrix (ħ = 2, xxpp) of squeezers r (x anti-squeezed) fed into u."""
    vacuum_squeezed = np.diag(np.concatenate([np.exp(2 * r), np.exp(-2 * r)]))
    symplectic = np.block([[u.real, -u.imag], [u.imag, u.real]])  # a -> u·a
    return symplectic @ vacuum_squeezed @ symplectic.T


def husimi_q(cov):
    """The Husimi covariance matrix Q = σ_(a, a†) + I/2 of a Gaussian state (ħ = 2)."""
    n = len(cov) // 2
    x, xp, p = cov[:n, :n], cov[:n, n:], cov[n:, n:]
    eye = np.eye(n)
    adag_a = (x + p + 1j * (xp - xp.T) - 2 * eye) / 4   # ⟨a_i† a_j⟩
    a_a = (x - p + 1j * (xp + xp.T)) / 4                 # ⟨a_i a_j⟩
    return np.block([[adag_a, a_a.conj()], [a_a, adag_a.conj()]]) + np.eye(2 * n)


def gbs_matrix(q):
    """The GBS matrix X·(I − Q⁻¹)* of the state; for a pure state, B ⊕ B*."""
    n = len(q) // 2
    zero, eye = np.zeros((n, n)), np.eye(n)
    x = np.block([[zero, eye], [eye, zero]])
    return x @ (np.eye(2 * n) - np.linalg.inv(q)).conj()


def squeezing(adjacency, target, device):
    """Squeezing and interferometer encoding ``adjacency`` at ``target`` mean photons."""
    sigma, u = gpusvd.takagi(adjacency, device=device)
    c = scale_for(sigma, target)
    r = np.arctanh(c * sigma)
    cov = covariance(r, u)
    q = husimi_q(cov)
    b = gbs_matrix(q)[:len(r), :len(r)]
    moduli = np.sort(np.abs(np.linalg.eigvalsh(adjacency)))[::-1]
    return {
        "sigma": sigma, "u": u, "c": c, "r": r,
        "takagi_residual": float(np.max(np.abs(u @ np.diag(sigma) @ u.T - adjacency))),
        "eig_error": float(np.max(np.abs(sigma - moduli))),
        "mean_photons": mean_photons(c * sigma),
        "mean_photons_state": float((np.trace(cov) - len(cov)) / 4),
        "b_error": float(np.max(np.abs(b - c * adjacency))),
        "vacuum": float(np.prod(1 / np.cosh(r))),
        "vacuum_state": float(1 / np.sqrt(np.linalg.det(q).real)),
    }


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=12, help="vertices = modes (default 12)")
    p.add_argument("--edge-probability", type=float, default=0.4)
    p.add_argument("--photons", type=float, default=3.0,
                   help="target mean photon number (default 3)")
    p.add_argument("--device", default="auto", type=lambda d: int(d) if d.isdigit() else d,
                   help="auto, cpu, gpu or a GPU index")
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    adjacency = random_graph(args.size, args.edge_probability, args.seed)
    g = squeezing(adjacency, args.photons, args.device)
    print(f"graph: {args.size} vertices, {int(adjacency.sum()) // 2} edges; Takagi values "
          f"sigma_max = {g['sigma'][0]:.4f}, residual {g['takagi_residual']:.1e}, "
          f"against |eigvalsh|: {g['eig_error']:.1e}")
    print(f"c = {g['c']:.6f} (c * sigma_max = {g['c'] * g['sigma'][0]:.4f} < 1) gives "
          f"mean photon number {g['mean_photons']:.6f} (target {args.photons:g})")
    shown = " ".join(f"{v:.4f}" for v in g["r"][:SHOWN])
    print(f"squeezing r_j: {shown}{' ...' if args.size > SHOWN else ''}; largest "
          f"{g['r'][0] * DB_PER_NEPER:.2f} dB")
    print(f"the state's covariance matrix gives back B = c*A to {g['b_error']:.1e}, "
          f"mean photon number {g['mean_photons_state']:.6f}, vacuum probability "
          f"{g['vacuum_state']:.6f} (prod 1/cosh r_j: {g['vacuum']:.6f})")
    return g


if __name__ == "__main__":
    try:
        main()
    except (ValueError, MemoryError) as exc:  # a bad option, no GPU: one line, as argparse
        raise SystemExit(f"{_parser().prog}: error: {exc}") from None
