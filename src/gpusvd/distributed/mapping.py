"""The block-column mapping of the outer p-strategy onto the ranks (paper 003, §5).

With g ranks the columns of G form 2g block-columns; an outer p-strategy of order 2g
(:func:`gpusvd.jacobi.strategies.pivot_strategy`) pairs them, and each rank processes
one pair per outer block step. Between two steps every rank keeps one of its two
block-columns and sends the other to one rank while receiving one from another (§5:
"a single block-column on a GPU i is sent to a GPU j, and replaced by the one received
from a GPU k").

Such an assignment of the next step's pairs to ranks always exists: taking the ranks as
vertices and the next pairs as edges between the holders of their two block-columns
gives a graph in which every vertex has degree 2, a union of cycles (a pair already
held by one rank is a loop); walking each cycle and giving every rank the edge it
leaves by assigns each rank one pair that contains a block-column it holds. Every rank
computes the same mapping from the same tables, so it needs no communication.

Departure from the paper: its Fig. 5 also picks the mapping that favours the fast
links of its 4-GPU topology; here every link counts the same (the 2-GPU machines have
one link, and NCCL picks the route).
"""

from typing import NamedTuple


class Move(NamedTuple):
    """The transition to the next outer block step, the same on every rank."""

    pairs: tuple   # per rank: the next pair (p, q), p < q, of block-column indices
    send: tuple    # per rank: (block-column, destination rank) or None
    recv: tuple    # per rank: (block-column, source rank) or None


def next_move(held, step):
    """Assign the pairs of ``step`` to ranks that already hold one of their block-columns.

    Parameters
    ----------
    held : sequence of (p, q)
        The pair each rank holds now (rank r holds ``held[r]``).
    step : sequence of (p, q)
        The pairs of the next p-step, as many as ranks.

    Returns
    -------
    :class:`Move`

    Examples
    --------
    >>> move = next_move([(0, 1), (2, 3)], [(0, 2), (1, 3)])
    >>> move.pairs, move.send, move.recv
    (((0, 2), (1, 3)), ((1, 1), (2, 0)), ((2, 1), (1, 0)))
    """
    ranks = len(held)
    holder = {b: r for r, pair in enumerate(held) for b in pair}
    pair_of = {b: i for i, pair in enumerate(step) for b in pair}
    taken = [None] * ranks
    assigned = set()
    for start in range(ranks):
        r = start
        while taken[r] is None:
            i = next(pair_of[b] for b in held[r] if pair_of[b] not in assigned)
            taken[r] = i
            assigned.add(i)
            away = [b for b in step[i] if holder[b] != r]
            r = holder[away[0]] if away else r
    pairs = tuple(tuple(sorted(step[i])) for i in taken)
    owner = {b: r for r, pair in enumerate(pairs) for b in pair}
    send = tuple(next(((b, owner[b]) for b in held[r] if owner[b] != r), None)
                 for r in range(ranks))
    recv = tuple(next(((b, holder[b]) for b in pairs[r] if holder[b] != r), None)
                 for r in range(ranks))
    return Move(pairs, send, recv)
