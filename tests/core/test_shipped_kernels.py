"""Every CUDA kernel the package loads ships compiled and up to date (CI, no GPU needed).

A stale binary would not be wrong, only slow: the loader falls back to NVRTC (seconds per
file on the first call). These tests make a .cu or header change without
``scripts/build-kernels`` fail in CI instead; the GPU test checks the shipped binaries
load and agree with NVRTC's.
"""

import pathlib

import pytest

from gpusvd._core import kernels

FILES = sorted(kernels.REGISTRY)


def test_every_kernel_file_is_registered():
    on_disk = {str(p.relative_to(kernels._PACKAGE)) for p in kernels._PACKAGE.rglob("*.cu")}
    assert on_disk == set(kernels.REGISTRY)


@pytest.mark.parametrize("relpath", FILES)
def test_shipped_binary_is_up_to_date(relpath):
    record = kernels.manifest()["files"].get(relpath)
    assert record is not None, f"{relpath} has no shipped binary: run scripts/build-kernels"
    assert record["hash"] == kernels.source_hash(relpath), (
        f"{relpath} (or a header it includes) changed since its binary was built: "
        f"run scripts/build-kernels and commit src/gpusvd/_core/cuda/bin")
    assert kernels.shipped(relpath) is not None


@pytest.mark.parametrize("relpath", FILES)
def test_every_instantiation_has_a_symbol_in_the_binary(relpath):
    path, symbols = kernels.shipped(relpath)
    assert set(symbols) == set(kernels.REGISTRY[relpath].names)
    data = path.read_bytes()
    missing = [name for name, mangled in symbols.items() if mangled.encode() not in data]
    assert not missing, f"{path.name} lacks {missing}"


def test_manifest_records_the_targets():
    record = kernels.manifest()
    assert record["sass"] == list(kernels.SASS_ARCHS) and record["ptx"] == kernels.PTX_ARCH
    shipped = {p.name for p in kernels.BINARIES.glob("*.fatbin")}
    assert shipped == {r["fatbin"] for r in record["files"].values()}


def test_binaries_are_package_data():
    pyproject = (pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    line = next(l for l in pyproject.splitlines() if l.startswith("gpusvd = ["))
    for pattern in ('"**/*.cu"', '"**/*.cuh"', '"_core/cuda/bin/*"'):
        assert pattern in line


def test_a_changed_source_is_stale(monkeypatch):
    relpath = FILES[0]
    text = kernels.expanded_source(relpath)
    monkeypatch.setattr(kernels, "expanded_source", lambda r: text + "// changed\n")
    assert kernels.shipped(relpath) is None


def test_headers_are_inlined_once():
    text = kernels.expanded_source("jacobi/kernels/inner_jacobi.cu")
    assert "#include \"" not in text
    assert text.count("struct alignas(2 * sizeof(R)) Complex") == 1
