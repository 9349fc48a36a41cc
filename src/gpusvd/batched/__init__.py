"""The batched engine: the polar SVD of a whole stack of matrices at once.

QDWH with weights per matrix, every step a batched GEMM, Cholesky and triangular solve
over the stack (:mod:`.qdwh`, :mod:`.cholesky_qr`), then one batched Hermitian
eigensolver (:mod:`.eigh`): no loop over the matrices of a stack (:mod:`.driver`).
"""
