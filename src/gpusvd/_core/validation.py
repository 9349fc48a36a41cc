"""Validation of user input; every message says what is wrong and what is expected.

The numeric options of every public function are checked here, once, so that the entry
points agree: a tolerance is a number in (0, 1), a sweep limit an integer >= 1,
QUIC-SVD's ε and δ numbers in (0, 1), Hermitian signs ±1.
"""

import numbers

import numpy as np

from .backend import to_host, total

_REAL = (np.dtype(np.float32), np.dtype(np.float64))
_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))


def working_dtype(dtype, *, allow_complex, what):
    """The dtype a decomposition computes in for input of ``dtype``, in native byte order.

    Integers and booleans are promoted to float64 as NumPy does, float16 to float32; a
    big-endian float64 computes in (native) float64, as NumPy and SciPy do.

    Examples
    --------
    >>> working_dtype(">f8", allow_complex=False, what="svd")
    dtype('float64')
    >>> working_dtype(np.int32, allow_complex=False, what="svd")
    dtype('float64')
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return np.dtype(np.float64)
    dtype = dtype.newbyteorder("=")
    if dtype == np.float16:
        return np.dtype(np.float32)
    if dtype in _REAL or (allow_complex and dtype in _COMPLEX):
        return dtype
    allowed = "float32 or float64" + (", complex64 or complex128" if allow_complex else "")
    raise ValueError(f"{what} takes {allowed} input (integers are promoted), got {dtype}")


def check_matrix(a, *, what):
    """Raise ``ValueError`` unless ``a`` is a matrix or a stack of matrices."""
    if a.ndim < 2:
        raise ValueError(f"{what} expects a 2-D array or a stack of them (..., M, N); "
                         f"got an array of shape {a.shape}")


# ‖A − Aᴴ‖_F/‖A‖_F allowed of a matrix said to be Hermitian, in units of n·ε.
HERMITIAN_TOL = 100


def asymmetry_sums(stack, xp, *, conjugate):
    """(‖S − Sᵀ‖²_F, ‖S‖²_F) of each matrix S of ``stack`` (batch, n, n) scaled by its
    largest entry (S − Sᴴ with ``conjugate``), on the device as a (2, batch) array: the
    relative asymmetry ‖A − Aᵀ‖_F/‖A‖_F is the square root of their ratio, and the
    scaling keeps the squares from overflowing."""
    peak = xp.abs(stack).max(axis=(1, 2))
    scaled = stack / xp.where(peak > 0, peak, 1)[:, None, None]
    other = scaled.transpose(0, 2, 1)
    skew = scaled - (other.conj() if conjugate else other)

    def squares(x):
        return x.real ** 2 + x.imag ** 2 if x.dtype.kind == "c" else x ** 2
    return xp.stack([total(squares(skew), (1, 2)), total(squares(scaled), (1, 2))])


def relative_asymmetry(sums):
    """‖A − Aᵀ‖_F/‖A‖_F of each matrix from :func:`asymmetry_sums` on the host."""
    return np.sqrt(sums[0] / np.where(sums[1] > 0, sums[1], 1))


def check_hermitian(stack, xp, *, what):
    """Raise ``ValueError`` unless each matrix of ``stack`` (batch, n, n) is Hermitian
    within ``HERMITIAN_TOL``·n·ε in ‖A − Aᴴ‖_F/‖A‖_F, naming the first that is not; one
    host synchronization for the stack."""
    batch, n = stack.shape[:2]
    if batch == 0 or n == 0:
        return
    ratio = relative_asymmetry(to_host(asymmetry_sums(stack, xp, conjugate=True)))
    allowed = HERMITIAN_TOL * n * float(np.finfo(stack.dtype).eps)
    if (ratio > allowed).any():
        first = int(np.flatnonzero(ratio > allowed)[0])
        which = "the input is" if batch == 1 else f"matrix {first} of the stack is"
        raise ValueError(f"{what}(hermitian=True): {which} not Hermitian: "
                         f"‖A − Aᴴ‖_F/‖A‖_F = {ratio[first]:.3g}, above the "
                         f"tolerance {allowed:.3g} ({HERMITIAN_TOL}·n·ε); pass "
                         "hermitian=False for the SVD of any matrix")


def not_finite(what):
    """The ``ValueError`` for input that holds NaN or infinity."""
    return ValueError(f"{what}: the input contains NaN or infinity; pass finite values "
                      "(or check_finite=False to skip this check at your own risk)")


def check_choice(name, value, allowed):
    """Raise ``ValueError`` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(map(repr, allowed))}")


def check_no_options(options, *, what):
    """Raise ``ValueError`` if ``options`` (unknown keyword arguments) is not empty."""
    if options:
        raise ValueError(f"{what}: unknown option(s) {', '.join(sorted(options))}")


def _is_real_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_open_interval(name, value, *, what):
    """``value`` as a float if it is a number in (0, 1), else ``ValueError``.

    Examples
    --------
    >>> check_open_interval("eps", 1e-6, what="svd_lowrank")
    1e-06
    """
    if not _is_real_number(value) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{what}: {name} must be a number in the open interval (0, 1), "
                         f"got {value!r}")
    return float(value)


def check_eps(eps, *, what):
    """The low-rank SVD's error bound: a number in (0, 1). An integer of 1 or more is
    refused with what it looks like, a rank (torch.svd_lowrank's ``q``, scikit-learn's
    ``n_components``), and the option that caps the rank.

    Examples
    --------
    >>> check_eps(0.05, what="svd_lowrank")
    0.05
    """
    if _is_real_number(eps) and float(eps) >= 1 and float(eps).is_integer():
        raise ValueError(
            f"{what}: eps must be a number in the open interval (0, 1) (the bound on the "
            f"squared relative error), got {eps!r}, which looks like a rank: to cap the "
            f"rank as torch.svd_lowrank(a, q={int(eps)}) does, pass max_rank={int(eps)} "
            f"(error_bound then says the error reached)")
    return check_open_interval("eps", eps, what=what)


# The options of the peers' low-rank SVDs (torch.svd_lowrank and pca_lowrank, scikit-learn's
# randomized_svd): what each is there, and what takes its place in QUIC-SVD.
_RANK = ("a rank", "pass max_rank={v!r} to cap the rank, or eps for the error it may leave")
_ITERATIONS = ("power iterations", "QUIC-SVD needs none: its error is guaranteed (eps, with "
                                   "probability 1 − delta)")
_PEER_LOWRANK = {"q": _RANK, "k": _RANK, "n_components": _RANK, "niter": _ITERATIONS,
                 "n_iter": _ITERATIONS,
                 "n_oversamples": ("oversampling", "QUIC-SVD grows its basis until eps is met"),
                 "M": ("a matrix subtracted first", "pass a − M"),
                 "center": ("centering", "pass a − a.mean(axis=0)"),
                 "random_state": ("the sampling's seed", "pass seed={v!r}")}


def refuse_peer_options(options, *, what):
    """``TypeError`` for keywords ``what`` does not take (``options``, possibly empty),
    saying for those of the peers' low-rank SVDs (``torch.svd_lowrank``'s ``q``, ``niter``,
    ``M``; scikit-learn's ``n_components``, ``n_iter``) what takes their place."""
    if not options:
        return
    name = next((k for k in _PEER_LOWRANK if k in options), min(options))
    if name not in _PEER_LOWRANK:
        raise TypeError(f"{what}() got an unexpected keyword argument {name!r}")
    meaning, instead = _PEER_LOWRANK[name]
    raise TypeError(f"{what}() takes no {name!r} ({meaning} in other low-rank SVDs): "
                    f"{instead.format(v=options[name])}")


def check_tol(tol, *, what):
    """A convergence tolerance: None (the method's default) or a number in (0, 1).

    Zero can never be met in floating point (the sweeps would run to their limit), and a
    relative tolerance of 1 or more is met before the first sweep.
    """
    if tol is None:
        return None
    return check_open_interval("tol", tol, what=what)


def check_count(name, value, *, what, optional=False):
    """``value`` as an int if it is an integer >= 1 (or None where ``optional``).

    Examples
    --------
    >>> check_count("max_sweeps", 30, what="takagi")
    30
    """
    if optional and value is None:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)) \
            or value < 1:
        expected = "None or an integer >= 1" if optional else "an integer >= 1"
        raise ValueError(f"{what}: {name} must be {expected}, got {value!r}")
    return int(value)


def check_flag(name, value, *, what):
    """``value`` as a bool if it is True or False, else ``ValueError``."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{what}: {name} must be True or False, got {value!r}")
    return bool(value)


def check_signs(signs, n, *, what):
    """The signs of J = diag(signs) as a host array: 1-D, length ``n``, only ±1."""
    signs = to_host(signs)
    if signs.ndim != 1 or signs.shape[0] != n:
        raise ValueError(f"{what}: signs must be a 1-D array of length n = {n} (one per "
                         f"column of g), got shape {signs.shape}")
    if not np.isin(signs, (-1, 1)).all():
        raise ValueError(f"{what}: signs must hold only +1 and -1")
    return signs


def check_gradient_options(gauge_invariant, broadening):
    """``ValueError`` unless ``gauge_invariant`` is a bool and ``broadening`` is valid
    (:func:`check_broadening`)."""
    if not isinstance(gauge_invariant, bool):
        raise ValueError(f"gauge_invariant must be True or False, got {gauge_invariant!r}")
    check_broadening(broadening)


def check_broadening(value):
    """``ValueError`` unless the gradients' Lorentzian ``broadening`` is None or a finite
    number > 0."""
    if value is None:
        return
    if not _is_real_number(value) or not (0 < float(value) < float("inf")):
        raise ValueError(f"broadening must be None or a finite number > 0, got {value!r}")
