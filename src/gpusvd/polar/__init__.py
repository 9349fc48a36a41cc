"""The polar method: A = U_p·H by QDWH, then H = V·Σ·Vᴴ, for one matrix and for stacks.

- :mod:`.qdwh`: the QDWH iteration, its weights, schedule and two steps, written once for
  a stack (one matrix is a stack of one), and the engine that runs the steps eagerly;
- :mod:`.estimates`: ‖A‖₂ and σ_min(A), from which the iteration starts;
- :mod:`.cholesky_qr`: shifted CholeskyQR3 and the batched Gram, Cholesky and triangular
  solves the steps are made of;
- :mod:`.fixed_schedule`: one real matrix of up to 1024 columns as one CUDA graph;
- :mod:`.eigh`: the Hermitian eigensolver of a stack;
- :mod:`.svd`: the SVD through the polar decomposition (``method="polar"``);
- :mod:`.decomposition`: :func:`gpusvd.polar`.
"""
