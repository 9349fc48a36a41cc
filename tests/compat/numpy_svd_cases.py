"""The matrices of NumPy's linalg tests (numpy/linalg/tests/test_linalg.py), rebuilt.

NumPy's SVD tests run one check over a table of cases: small square, non-square and
Hermitian matrices in every dtype, empty ones, a plain list, random ones; each again as a
stack (``_tile3``: the matrix, twice it and three times it; ``_tile213``: six copies in a
(3, 2) stack) and again with strides of 3 or -4 along each matrix axis (the data in a
larger buffer), and with stride 0 where an axis has length 1. The tags say which family a
case belongs to, as upstream's do.
"""

import itertools
from typing import NamedTuple

import numpy as np

_RNG = np.random.default_rng(1234)


class Case(NamedTuple):
    name: str
    a: object          # ndarray or nested list
    tags: frozenset


def _c(name, a, *tags):
    return Case(name, a, frozenset(tags))


def _base():
    f32, f64, c64, c128 = np.float32, np.float64, np.complex64, np.complex128
    sq = [[1.0, 2.0], [3.0, 4.0]]
    csq = [[1 + 2j, 2 + 3j], [3 + 4j, 4 + 5j]]
    wide = [[1.0, 2.0, 3.0], [3.0, 4.0, 6.0]]
    tall = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    cwide = [[1 + 1j, 2 + 2j, 3 - 3j], [3 - 5j, 4 + 9j, 6 + 2j]]
    ctall = [[1 + 1j, 2 + 2j], [3 - 3j, 4 - 9j], [5 - 4j, 6 + 8j]]
    herm = [[1.0, 2.0], [2.0, 1.0]]
    cherm = [[1.0, 2 + 3j], [2 - 3j, 1.0]]
    return [
        # test_linalg.py CASES, tag "square"
        _c("single", np.array(sq, f32), "square"),
        _c("double", np.array(sq, f64), "square"),
        _c("csingle", np.array(csq, c64), "square"),
        _c("cdouble", np.array(csq, c128), "square"),
        _c("0x0", np.empty((0, 0), f64), "square", "size-0"),
        _c("8x8", _RNG.random((8, 8)), "square"),
        _c("1x1", _RNG.random((1, 1)), "square"),
        _c("nonarray", [[1, 2], [3, 4]], "square"),
        # tag "nonsquare"
        _c("single_nsq_1", np.array(wide, f32), "nonsquare"),
        _c("single_nsq_2", np.array(tall, f32), "nonsquare"),
        _c("double_nsq_1", np.array(wide, f64), "nonsquare"),
        _c("double_nsq_2", np.array(tall, f64), "nonsquare"),
        _c("csingle_nsq_1", np.array(cwide, c64), "nonsquare"),
        _c("csingle_nsq_2", np.array(ctall, c64), "nonsquare"),
        _c("cdouble_nsq_1", np.array(cwide, c128), "nonsquare"),
        _c("cdouble_nsq_2", np.array(ctall, c128), "nonsquare"),
        _c("8x11", _RNG.random((8, 11)), "nonsquare"),
        _c("1x5", _RNG.random((1, 5)), "nonsquare"),
        _c("5x1", _RNG.random((5, 1)), "nonsquare"),
        _c("0x4", _RNG.random((0, 4)), "nonsquare", "size-0"),
        _c("4x0", _RNG.random((4, 0)), "nonsquare", "size-0"),
        # tag "hermitian"
        _c("hsingle", np.array(herm, f32), "hermitian"),
        _c("hdouble", np.array(herm, f64), "hermitian"),
        _c("hcsingle", np.array(cherm, c64), "hermitian"),
        _c("hcdouble", np.array(cherm, c128), "hermitian"),
        _c("hempty", np.empty((0, 0), f64), "hermitian", "size-0"),
        _c("hnonarray", [[1, 2], [2, 1]], "hermitian"),
        _c("matrix_b_only", np.array(herm), "hermitian"),
        _c("hmatrix_1x1", _RNG.random((1, 1)), "hermitian"),
    ]


def _generalized(cases):
    """Upstream's ``_make_generalized_cases``: two stacks of every array case."""
    out = []
    for case in cases:
        if not isinstance(case.a, np.ndarray):
            continue
        a = case.a
        tags = case.tags | {"generalized"}
        out.append(Case(case.name + "_tile3", np.array([a, 2 * a, 3 * a]), tags))
        out.append(Case(case.name + "_tile213", np.array([a] * 6).reshape(3, 2, *a.shape),
                        tags))
    return out


def strided(a):
    """(label, view) of ``a`` with the strides of upstream's ``_stride_comb_iter``."""
    if not isinstance(a, np.ndarray):
        yield "nop", a
        return
    steps = [(1,)] * a.ndim
    steps[-1] = steps[-2] = (1, 3, -4)
    if a.ndim > 2:
        steps[-3] = (1, -4)
    for step in itertools.product(*steps):
        buffer = np.empty([abs(n * s) for n, s in zip(a.shape, step)], a.dtype)
        buffer.view(np.uint8).fill(0xEF)  # garbage between the strided entries
        view = buffer[tuple(slice(None, None, s) for s in step)]
        view[...] = a
        yield "stride_" + "_".join(f"{s:+d}" for s in step), view
    zero = [(-1, a.shape[-1] == 1), (-2, a.shape[-2] == 1)]
    for axis, length_one in zero:
        if length_one:
            strides = list(a.strides)
            strides[axis] = 0
            yield f"stride_0_axis{axis}", np.lib.stride_tricks.as_strided(a, strides=strides)
    if a.ndim > 2 and a.shape[:-2] == (1, 1):
        strides = list(a.strides)
        strides[-1] = strides[-2] = 0
        yield "stride_0_0", np.lib.stride_tricks.as_strided(a, strides=strides)


BASE = _base()
CASES = BASE + _generalized(BASE)


def select(require, exclude=()):
    """The cases carrying every tag of ``require`` and none of ``exclude``."""
    return [c for c in CASES if set(require) <= c.tags and not c.tags & set(exclude)]
