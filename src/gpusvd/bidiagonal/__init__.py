"""Solvers of a real upper bidiagonal B, used by both reductions (golub_reinsch, condensed).

- ``two_by_two``: plane rotations and the 2×2 SVD (dlartg, dlas2, dlasv2), for qr and dqds.
- ``dqds``: the values alone, each to high relative accuracy (dqds, LAPACK's dlasq).
- ``qr``: the implicitly shifted QR of Demmel & Kahan (dbdsqr), emitting its rotations.
- ``rotations``: the QR's rotation log applied to the columns of X or Y (Numba).
- ``rotations_cuda``: the same on the GPU, chunk by chunk (kernels/apply_rotations.cu).
- ``qr_svd``: the SVD with vectors by the QR and its rotations, the values by dqds.
- ``bisection``: the values by bisection on the Golub–Kahan tridiagonal (Numba).
- ``bisection_cuda``: the same on the GPU, a group of lanes per value (kernels/bisection.cu).
- ``dbdsdc``: the SVD by divide and conquer, LAPACK's dbdsdc on the host.
- ``dc_svd``: the SVD by divide and conquer (Gu & Eisenstat), its GEMMs in ``xp``.
- ``secular``: the step and convergence check of a secular equation's root finder (dlaed4).
- ``secular_svd``: the roots of a divide-and-conquer merge's secular equation (dlasd4, Numba).
- ``secular_svd_cuda``: the same on the GPU (kernels/secular.cu).
- ``merge_vectors_cuda``: a merge's vectors and the leaves' placement on the GPU
  (kernels/merge_vectors.cu).
- ``rotate_pairs_cuda``: deflation's column rotations on the GPU (kernels/rotate_pairs.cu).
"""
