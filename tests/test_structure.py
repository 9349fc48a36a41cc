"""The package's import structure (docs/design.md, "The packages"): no
private name crosses a package boundary, no two modules import each other, and no two
packages import each other.

A private name (``_x``) may be imported only by a module of the same subpackage
(``gpusvd.condensed.driver`` from ``gpusvd.condensed.band``); never from another
subpackage, never from a module above the importer, and never between the modules of
the top-level package, which are the public layer. A helper that two packages need lives
below both of them, public. Imports inside functions count: a lazy import is still an
edge of the graph.
"""

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"


def _modules():
    """{dotted name: path} of every module under src/gpusvd."""
    found = {}
    for path in sorted((SRC / "gpusvd").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _package(name):
    """The package that holds module ``name`` (a package holds itself)."""
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def _imports(name):
    """(source module, imported name or None) of every ``gpusvd`` import in ``name``."""
    tree = ast.parse(MODULES[name].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package(name).split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("gpusvd"):
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                yield (full, None) if full in MODULES else (target, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    yield alias.name, None


EDGES = {name: set(_imports(name)) for name in MODULES}


def _private_crossings():
    for importer, edges in EDGES.items():
        for source, imported in edges:
            if imported is None or not imported.startswith("_") or imported.startswith("__"):
                continue
            same_package = _package(importer) == _package(source) != "gpusvd"
            if not same_package:
                yield f"{importer} imports {imported} from {source}"


def test_no_private_name_crosses_a_package():
    assert list(_private_crossings()) == []


def _cycles():
    graph = {name: {source for source, _ in edges if source in MODULES and source != name
                    and not MODULES[source].name == "__init__.py"}
             for name, edges in EDGES.items()}
    state, stack, found = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_no_import_cycle():
    assert _cycles() == []


def _unit(name):
    """The package directly under gpusvd that holds module ``name`` (a top-level module is
    its own unit); None for gpusvd itself, the public API, which imports every package."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else None


def _package_circles():
    """The sets of gpusvd's packages that reach each other through their imports (the
    strongly connected components of more than one package)."""
    graph = {}
    for importer, edges in EDGES.items():
        if _unit(importer) is not None:
            graph.setdefault(_unit(importer), set()).update(
                _unit(source) for source, _ in edges
                if _unit(source) not in (None, _unit(importer)))

    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {unit: reach(unit) for unit in graph}
    circles = {frozenset({unit} | {other for other in reached[unit] if unit in reached[other]})
               for unit in graph}
    return [set(circle) for circle in circles if len(circle) > 1]


def test_no_two_packages_import_each_other():
    circles = sorted(_package_circles(), key=sorted)
    assert circles == [], circles


@pytest.mark.parametrize("name", ["gpusvd.cli", "gpusvd._bench.command",
                                  "gpusvd.condensed.band_cuda", "gpusvd.condensed.driver",
                                  "gpusvd.golub_reinsch.driver"])
def test_the_modules_of_the_issue_are_seen(name):
    """The walk sees the modules whose imports the issue named (a guard for the test)."""
    assert name in MODULES and EDGES[name]
