"""Every public function of gpusvd, gpusvd.distributed and gpusvd.testing has a numpydoc
docstring with Parameters, Returns and Examples sections, and every public class one with
Examples. The Examples themselves run as doctests (``--doctest-modules`` on src)."""

import importlib
import inspect
import re

import pytest

PUBLIC_MODULES = ("gpusvd", "gpusvd.distributed", "gpusvd.testing")
FUNCTION_SECTIONS = ("Parameters", "Returns", "Examples")
CLASS_SECTIONS = ("Examples",)


def _public_names(module):
    """The module's ``__all__``, or else its functions and classes not named with ``_``."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return sorted(name for name, obj in vars(module).items()
                  if not name.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj)))


def _public_objects():
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in _public_names(module):
            yield f"{module_name}.{name}", getattr(module, name)


PUBLIC = dict(_public_objects())
FUNCTIONS = sorted(name for name, obj in PUBLIC.items() if not inspect.isclass(obj))
CLASSES = sorted(name for name, obj in PUBLIC.items() if inspect.isclass(obj))


def _sections(doc):
    """The numpydoc section headings of ``doc``: a line underlined by as many dashes."""
    lines = doc.splitlines()
    return {line.strip() for line, under in zip(lines, lines[1:])
            if line.strip() and re.fullmatch(r"-+", under.strip())
            and len(under.strip()) == len(line.strip())}


def _check(qualified_name, required):
    doc = inspect.getdoc(PUBLIC[qualified_name])
    assert doc, f"{qualified_name} has no docstring"
    missing = [s for s in required if s not in _sections(doc)]
    assert not missing, f"{qualified_name}'s docstring lacks the sections {missing}"
    examples = doc.split("Examples\n--------", 1)[1]
    assert ">>> " in examples, f"{qualified_name}'s Examples hold no doctest"


def test_every_public_module_has_public_names():
    assert all(any(name.startswith(f"{m}.") and name.count(".") == m.count(".") + 1
                   for name in PUBLIC) for m in PUBLIC_MODULES)


def test_sections_are_found():
    doc = "Summary.\n\nParameters\n----------\nx : int\n\nReturns\n---\nint\n"
    assert _sections(doc) == {"Parameters"}  # "Returns" is underlined too short


@pytest.mark.parametrize("qualified_name", FUNCTIONS)
def test_function_docstring(qualified_name):
    _check(qualified_name, FUNCTION_SECTIONS)


@pytest.mark.parametrize("qualified_name", CLASSES)
def test_class_docstring(qualified_name):
    _check(qualified_name, CLASS_SECTIONS)
