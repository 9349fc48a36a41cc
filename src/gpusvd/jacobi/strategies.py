"""Pivot strategies of the one-sided Jacobi method as tables (paper 003, §3).

A *p-strategy* of even order n is a sweep of n − 1 parallel steps (p-steps), each of
n/2 disjoint pivot pairs, covering every pair (p, q), p < q, exactly once. Built here:

- ``"row"`` and ``"column"``: R∥ and C∥, the p-strategies closest (Definition 1) to the
  row- and column-cyclic sequential strategies. For n = 2^k·o, o odd, R∥ of the base
  order 2o comes from the lexicographic maximal-independent-set search of Alg. 3.1, and
  Alg. 3.2 expands it k − 1 times (the paper's tentative corollary, verified by it for
  n <= 18 and by our tests against Alg. 3.1 for small n).
- ``"row-reverse"`` and ``"column-reverse"``: their reverses, the sweeps run backwards
  (far-from-diagonal pairs first), the paper's fastest (Fig. 7); ``"row-reverse"`` is
  the default.
- ``"brent-luk"``: Brent and Luk's round-robin ordering (the paper's ref. [4]).
- ``"modulus"``: the modified modulus strategy (the paper's refs. [36, 37]): on K_(n−1)
  the pairs with i + j ≡ s (mod n − 1), the remaining index of each step paired with n − 1.
- ``"row-cyclic"`` and ``"column-cyclic"``: the sequential strategies themselves, as
  n(n − 1)/2 steps of one pair each (for the CPU inner kernel and for reference).

Tables are 0-based int32 arrays of shape (steps, pairs per step, 2) with p < q in each pair.
Alg. 3.1 is exponential in the worst case, so only odd parts up to
:data:`MAX_SEARCHED_ODD_PART` are searched; the drivers run a problem of any other
order at :func:`padded_order`, filled with zero columns (:mod:`.padding`). Each table
is computed once per process.
"""

import functools

import numpy as np

# Largest odd part o of n = 2^k·o for which R∥/C∥ are searched by Alg. 3.1 (base order
# 2o <= 18, the orders the paper verified): here order 22 took 1.4 s and order 26 4 min.
MAX_SEARCHED_ODD_PART = 9

PARALLEL = ("row-reverse", "column-reverse", "row", "column", "brent-luk", "modulus")
SEQUENTIAL = ("row-cyclic", "column-cyclic")
NAMES = PARALLEL + SEQUENTIAL


def _row_cyclic(n):
    return [(p, q) for p in range(n - 1) for q in range(p + 1, n)]


def _column_cyclic(n):
    return [(p, q) for q in range(1, n) for p in range(q)]


def _search(order, n):
    """Alg. 3.1: the p-strategy closest to the sequential strategy ``order`` (a pair list).

    Depth-first over p-steps; each p-step is the lexicographically next perfect matching
    (a maximal independent set of n/2 vertices in the collision graph) of the pairs left,
    enumerated in increasing order of the pairs' positions in ``order``; a dead end
    backtracks to the next candidate.
    """
    t = n // 2
    steps = []

    def matchings(left):
        chosen, used = [], set()

        def extend(start):
            if len(chosen) == t:
                yield list(chosen)
                return
            for pos in range(start, len(left)):
                p, q = order[left[pos]]
                if p in used or q in used:
                    continue
                chosen.append(left[pos])
                used.update((p, q))
                if _completable(left, pos + 1, used):
                    yield from extend(pos + 1)
                used.difference_update((p, q))
                chosen.pop()

        yield from extend(0)

    def _completable(left, start, used):
        # Every uncovered index needs a later pair whose two indices are both uncovered.
        free = set(range(n)) - used
        reachable = set()
        for pos in range(start, len(left)):
            p, q = order[left[pos]]
            if p in free and q in free:
                reachable.update((p, q))
        return free <= reachable

    def gen(left):
        if not left:
            return True
        for step in matchings(left):
            steps.append(step)
            taken = set(step)
            if gen([e for e in left if e not in taken]):
                return True
            steps.pop()
        return False

    if not gen(list(range(len(order)))):
        raise RuntimeError(f"Alg. 3.1 found no p-strategy of order {n}")  # cannot happen
    return [[order[e] for e in step] for step in steps]


def _expand(steps, rows):
    """Alg. 3.2: the closest block p-strategy of order 2n from one of order n (0-based)."""
    n = len(steps) + 1
    out = [[(2 * k, 2 * k + 1) for k in range(n)]]
    for i in range(2, 2 * n):
        step = []
        for p, q in steps[i // 2 - 1]:
            if i % 2 == 0:
                step += [(2 * p, 2 * q), (2 * p + 1, 2 * q + 1)]           # nw, se
            else:
                ne, sw = (2 * p, 2 * q + 1), (2 * p + 1, 2 * q)
                step += [ne, sw] if rows else [sw, ne]
        out.append(step)
    return out


def _closest(n, rows):
    o = _odd_part(n)
    k = (n // o).bit_length() - 1
    if o > MAX_SEARCHED_ODD_PART:
        raise ValueError(f"R∥/C∥ of order {n} = 2^{k}·{o} needs Alg. 3.1 at order {2 * o}; "
                         f"odd parts up to {MAX_SEARCHED_ODD_PART} are supported "
                         f"(padded_order gives the next supported order)")
    base = 2 * o
    steps = _search(_row_cyclic(base) if rows else _column_cyclic(base), base)
    for _ in range(k - 1):
        steps = _expand(steps, rows)
    return steps


def _brent_luk(n):
    top, bottom = list(range(0, n, 2)), list(range(1, n, 2))
    steps = []
    for _ in range(n - 1):
        steps.append([(min(a, b), max(a, b)) for a, b in zip(top, bottom)])
        # Index 0 stays; the others move one place around the 2 × n/2 ring.
        top, bottom = [top[0], bottom[0], *top[1:-1]], [*bottom[1:], top[-1]]
    return steps


def _modulus(n):
    r = n - 1
    steps = []
    for s in range(r):
        step = [(i, j) for i in range(r) for j in range(i + 1, r) if (i + j) % r == s]
        lone = next(i for i in range(r) if (2 * i) % r == s)
        steps.append(step + [(lone, r)])
    return steps


@functools.cache
def _table(name, n):
    if name == "row-cyclic":
        steps = [[pair] for pair in _row_cyclic(n)]
    elif name == "column-cyclic":
        steps = [[pair] for pair in _column_cyclic(n)]
    elif name in ("row", "column", "row-reverse", "column-reverse"):
        steps = _closest(n, name.startswith("row"))
        if name.endswith("reverse"):
            steps = steps[::-1]
    elif name == "brent-luk":
        steps = _brent_luk(n)
    else:
        steps = _modulus(n)
    table = np.array(steps, dtype=np.int32).reshape(len(steps), -1, 2)
    table.flags.writeable = False
    return table


def pivot_strategy(name, n):
    """One sweep of the pivot strategy ``name`` of order ``n`` as a table.

    Parameters
    ----------
    name : str
        One of :data:`NAMES`: ``"row-reverse"`` (default of the drivers),
        ``"column-reverse"``, ``"row"``, ``"column"``, ``"brent-luk"``, ``"modulus"``
        (parallel), ``"row-cyclic"``, ``"column-cyclic"`` (sequential).
    n : int
        Even order >= 2 (any order >= 2 for the sequential ones).

    Returns
    -------
    (steps, n // 2, 2) int32 ndarray, read-only: steps = n − 1 p-steps of disjoint
    0-based pairs (p, q), p < q. Sequential strategies: (n(n − 1)/2, 1, 2).

    Examples
    --------
    >>> pivot_strategy("row", 4).tolist()
    [[[0, 1], [2, 3]], [[0, 2], [1, 3]], [[0, 3], [1, 2]]]
    >>> pivot_strategy("row-reverse", 4)[0].tolist()
    [[0, 3], [1, 2]]
    """
    if name not in NAMES:
        raise ValueError(f"unknown strategy {name!r}; expected one of {', '.join(NAMES)}")
    if not isinstance(n, (int, np.integer)) or n < 2 or (name in PARALLEL and n % 2):
        raise ValueError(f"strategy {name!r} needs an {'even ' if name in PARALLEL else ''}"
                         f"order n >= 2, got {n!r}")
    return _table(name, int(n))


def padded_order(name, n):
    """The smallest order >= ``n`` (>= 2) for which :func:`pivot_strategy` has ``name``.

    Any order for the sequential strategies, an even one for ``"brent-luk"`` and
    ``"modulus"``, and for R∥/C∥ and their reverses an even one whose odd part Alg. 3.1
    searches. Problems of other orders are filled with zero columns (:mod:`.padding`).

    Examples
    --------
    >>> padded_order("row", 22), padded_order("brent-luk", 22), padded_order("row", 7)
    (24, 22, 8)
    """
    if name not in NAMES:
        raise ValueError(f"unknown strategy {name!r}; expected one of {', '.join(NAMES)}")
    if name in SEQUENTIAL:
        return max(2, n)
    order = max(2, n + n % 2)
    while name not in ("brent-luk", "modulus") and _odd_part(order) > MAX_SEARCHED_ODD_PART:
        order += 2
    return order


def _odd_part(n):
    while n % 2 == 0:
        n //= 2
    return n


def block_count(blocks):
    """The smallest even count >= ``blocks`` whose odd part is searchable (Alg. 3.1).

    Examples
    --------
    >>> block_count(9), block_count(18), block_count(64)
    (10, 18, 64)
    """
    return padded_order("row", blocks)
