"""What a user reads: the documents stay inside the repository,
cite the papers they implement, and the public docstrings say what a function does, not
how fast it once ran."""

import importlib
import inspect
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "BENCHMARKS.md", ROOT / "NOTES.md",
                    *(ROOT / "docs").glob("*.md")])
# Markdown links [text](target) and the inline code spans that name a path.
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
OUTSIDE = re.compile(r"\.\./shared|(?<![\w.])\.\./\.\.")
# Lines a docstring may hold at most: parameters, returns, raises, a short rule and an
# example that runs (gpusvd.svd, the longest, has 100).
DOCSTRING_LINES = 110
# A benchmark result in a docstring: a device name, or a time against another time.
MEASUREMENT = re.compile(r"H100|H200|\b\d+(\.\d+)? ?(ms|s) against\b")


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_no_link_leaves_the_repository(path):
    text = path.read_text()
    assert not OUTSIDE.search(text), OUTSIDE.search(text).group(0)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: outside links are fine
            continue
        resolved = (path.parent / target).resolve()
        assert resolved.is_relative_to(ROOT), f"{path.name} links outside: {target}"
        assert resolved.exists(), f"{path.name} links to a missing {target}"


def test_readme_cites_the_papers():
    readme = (ROOT / "README.md").read_text()
    for citation in ("doi:10.1109/IPDPS.2009.5161058", "doi:10.1007/978-3-642-31464-3_58",
                     "Takagi factorization on GPU using CUDA", "doi:10.1137/140952429",
                     "doi:10.1137/120876605"):
        assert citation in readme


def _public_functions():
    for module_name in ("gpusvd", "gpusvd.distributed", "gpusvd.testing"):
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                yield f"{module_name}.{name}", obj


@pytest.mark.parametrize(("name", "fn"), list(_public_functions()), ids=lambda x: str(x))
def test_docstrings_say_what_not_how_fast(name, fn):
    doc = inspect.getdoc(fn)
    assert len(doc.splitlines()) <= DOCSTRING_LINES, name
    assert not MEASUREMENT.search(doc), f"{name}: {MEASUREMENT.search(doc).group(0)}"


def test_benchmarks_is_a_reference_not_a_diary():
    """BENCHMARKS.md is organized by the questions users ask, each with
    its latest table; no section is a session or a date."""
    text = (ROOT / "BENCHMARKS.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("#")]
    for heading in headings:
        assert not re.search(r"[Ss]ession|\d{4}-\d{2}-\d{2}", heading), heading
    for question in ("Exact SVD", "Values only", "Small matrices and stacks", "Tall and wide",
                     "Complex", "Low-rank", "Takagi", "Relative accuracy", "Several GPUs",
                     "The CPU", "The first call"):
        assert any(question in h for h in headings), question


def test_notes_hold_decisions_not_sessions():
    """NOTES.md: the decisions in force and the open questions; no section is a session or a
    date."""
    text = (ROOT / "NOTES.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert not [h for h in headings if re.search(r"[Ss]ession|\d{4}-\d{2}-\d{2}", h)]
    assert "## Open questions" in headings
