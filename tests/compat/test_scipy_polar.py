"""SciPy's own tests of ``scipy.linalg.polar`` (scipy/linalg/tests/test_decomp_polar.py,
as the installed SciPy ships it), run on ``gpusvd.polar``: the module's ``polar`` is
swapped for gpusvd's and each of its test functions called with each of its parameter
sets (its precomputed cases, the properties of U and P on real and complex, tall, wide
and empty matrices, the dtypes of empty results)."""

import itertools

import pytest

upstream = pytest.importorskip("scipy.linalg.tests.test_decomp_polar")

import gpusvd  # noqa: E402


def _calls():
    """(name, kwargs) of every upstream test function and parameter set."""
    calls = []
    for name in sorted(n for n in dir(upstream) if n.startswith("test_")):
        marks = [m for m in getattr(getattr(upstream, name), "pytestmark", [])
                 if m.name == "parametrize"]
        grids = []
        for mark in marks:
            names = [k.strip() for k in mark.args[0].split(",")]
            grids.append([dict(zip(names, v if len(names) > 1 else (v,)))
                          for v in mark.args[1]])
        for combo in itertools.product(*grids):
            calls.append((name, {k: v for part in combo for k, v in part.items()}))
    return calls


CALLS = _calls()


def test_the_upstream_tests_are_there():
    """Without them the test below would pass by running nothing."""
    assert {name for name, _ in CALLS} >= {"test_precomputed_cases", "test_verify_cases",
                                           "test_empty"}


@pytest.mark.parametrize("name, kwargs", CALLS,
                         ids=[f"{n}-{'-'.join(map(str, kw.values()))}" for n, kw in CALLS])
def test_scipy_polar_tests_on_gpusvd(monkeypatch, name, kwargs):
    calls = []

    def polar(*args, **kw):
        calls.append(args)
        return gpusvd.polar(*args, **kw)

    monkeypatch.setattr(upstream, "polar", polar)
    getattr(upstream, name)(**kwargs)
    assert calls   # the upstream test called gpusvd.polar
