"""``gpusvd bench``: the JSON of every algorithm at tiny sizes, and the plot (or its absence)."""

import json
import pathlib
import re
import statistics
import sys

import pytest

from gpusvd import _bench, cli


@pytest.mark.parametrize("algorithm", _bench.ALGORITHMS)
def test_bench_writes_json(tmp_path, capsys, algorithm):
    out = tmp_path / f"{algorithm}.json"
    rc = cli.main(["bench", algorithm, "--sizes", "8", "12", "--repeat", "2", "--device", "cpu",
                   "-o", str(out), "--no-plot"])
    text = capsys.readouterr().out
    assert rc == 0 and f"wrote {out}" in text and not (tmp_path / f"{algorithm}.png").exists()
    result = json.loads(out.read_text())
    assert result["algorithm"] == algorithm and result["sizes"] == [8, 12]
    assert "versions" in result["machine"]
    methods = {r["method"] for r in result["records"]}
    assert any(m.startswith("gpusvd") for m in methods) and len(methods) >= 2
    for r in result["records"]:
        assert "failed" not in r, r
        assert r["seconds"] > 0 and len(r["times"]) == 2
        for key in _bench.METRICS[algorithm]:
            assert r[key] is not None
        if algorithm == "lowrank":
            assert r["error"] < 1e-8
        else:
            assert r[_bench.METRICS[algorithm][0]] < 50


def test_the_test_install_brings_matplotlib():
    """A plot is part of ``gpusvd bench``: the README's test install (the one CI runs)
    brings matplotlib, so the plot tests below run instead of skipping."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = pathlib.Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    extra = re.search(r'pip install -e "\.\[(\w+)\]" && python -m pytest', readme).group(1)
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("matplotlib") for d in project["optional-dependencies"][extra])


def test_bench_plot(tmp_path, capsys):
    out = tmp_path / "svd.json"
    assert cli.main(["bench", "svd", "--sizes", "8", "16", "--repeat", "1", "-o", str(out)]) == 0
    png = tmp_path / "svd.png"
    assert f"wrote {png}" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_says_when_matplotlib_is_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    out = tmp_path / "svdvals.json"
    assert cli.main(["bench", "svdvals", "--sizes", "8", "--repeat", "1", "-o", str(out)]) == 0
    assert "no plot: matplotlib is not installed" in capsys.readouterr().out
    assert out.exists() and not (tmp_path / "svdvals.png").exists()


def test_plot_draws_the_values_of_the_table(tmp_path, monkeypatch):
    """Squared errors of 1e-30 are drawn at 1e-30, not at a floor."""
    import matplotlib.figure

    drawn = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k:
                        drawn.extend(line.get_ydata() for line in fig.axes[1].lines))
    records = [{"method": "gpusvd", "where": "cpu", "n": n, "seconds": 0.1, "times": [0.1],
                "error": error, "rank": 2} for n, error in ((8, 3e-30), (16, 2e-31))]
    result = {"algorithm": "lowrank", "dtype": "float64", "sizes": [8, 16],
              "machine": {"gpus": []}, "records": records}
    assert _bench.plot(result, tmp_path / "lowrank.png")
    assert [list(y) for y in drawn] == [[3e-30, 2e-31]]


@pytest.mark.parametrize("algorithm", ["svd", "svdvals"])
def test_cpu_legend_says_auto_is_gesdd(algorithm):
    """On the CPU gpusvd's svd is LAPACK's gesdd (the auto rule): its line lies under
    gesdd's, and the legend says why."""
    from gpusvd._bench import peers

    names = [name for name, _, _ in peers.methods(algorithm, 16, "cpu")]
    assert "gpusvd (= gesdd on the CPU)" in names


def test_accuracy_axis_has_several_labels():
    """A residual that stays inside one decade still gets labelled ticks (it had one)."""
    from gpusvd._bench import report

    records = [{"method": "gpusvd", "where": "cpu", "n": n, "seconds": t, "times": [t],
                "residual": r, "orthogonality": 1.0, "sv_error": 1.0}
               for n, t, r in ((8, 0.011, 0.21), (16, 0.012, 0.34), (32, 0.013, 0.46))]
    result = {"algorithm": "svd", "dtype": "float64", "sizes": [8, 16, 32],
              "machine": {"gpus": []}, "records": records}
    fig = report.figure(result)
    fig.canvas.draw()
    for axes in fig.axes:
        low, high = axes.get_ylim()
        shown = [t for t in axes.yaxis.get_major_ticks()
                 if t.label1.get_text() and low <= t.get_loc() <= high]
        assert len(shown) >= 2, [t.label1.get_text() for t in shown]


def test_interleaved_timing_takes_turns_and_keeps_failures():
    """Each round calls every function once, in a new order, so that each follows each of
    the others; a function that raises in its warm-up is returned as its exception and
    left out of the rounds."""
    order = []

    def call(name):
        def run():
            order.append(name)
            return name
        return run

    def broken():
        raise RuntimeError("no such driver")

    out = _bench.time_interleaved({"a": call("a"), "b": call("b"), "c": call("c"),
                                   "d": broken}, warmup=1, rounds=40, sync=lambda: None)
    assert order[:3] == ["a", "b", "c"]  # the warm-up calls
    rounds = [tuple(order[i:i + 3]) for i in range(3, len(order), 3)]
    assert len(rounds) == 40 and all(sorted(r) == ["a", "b", "c"] for r in rounds)
    after = {(x, y) for r in rounds for x, y in zip(r, r[1:])}
    assert len(after) == 6  # every function ran right after each of the others
    assert isinstance(out["d"], RuntimeError)
    for name in "abc":
        assert len(out[name].times) == 40 and len(out[name].warmup_times) == 1
        assert out[name].result == name
        assert out[name].median == statistics.median(out[name].times)
