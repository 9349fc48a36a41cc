"""Slow, obviously correct reference for the back-transformation of stage 2 (the oracle of
test_chase_back.py): every recorded reflector made a dense n×n matrix and multiplied in."""

import numpy as np


def apply_reflectors(v, tau, b, c):
    """Q·c, Q = ∏ H(s, k) in the order (s, k), H(s, k) = I − τ·v·vᴴ on the indices
    s+1+k·b … (cut at n): c is multiplied by each H, the last factor first."""
    c = np.array(c, dtype=np.result_type(v, c))
    n = c.shape[0]
    for s in reversed(range(v.shape[0])):
        for k in reversed(range(v.shape[1])):
            start = s + 1 + k * b
            if start >= n:
                continue
            ln = min(b, n - start)
            h = np.eye(n, dtype=c.dtype)
            h[start:start + ln, start:start + ln] -= tau[s, k] * np.outer(v[s, k, :ln],
                                                                          v[s, k, :ln].conj())
            c = h @ c
    return c
