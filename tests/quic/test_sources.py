"""Row-block reads of out-of-core sources (quic/sources.py): a whole memmap of a file is
read by ``os.preadv``, anything else through NumPy; both give the rows asked for."""

import numpy as np
import pytest

from gpusvd.quic.sources import _file_span, open_source


@pytest.fixture
def saved(tmp_path):
    a = np.random.default_rng(0).standard_normal((37, 11)).astype(np.float32)
    path = tmp_path / "a.npy"
    np.save(path, a)
    return a, path


def test_whole_memmap_is_read_from_the_file(saved):
    a, path = saved
    source = open_source(str(path))
    assert _file_span(source.obj) is not None
    for r0, r1 in [(0, 37), (5, 16), (36, 37)]:
        out = np.full((r1 - r0, 11), np.nan, np.float32)
        source.read_into(r0, r1, out)
        np.testing.assert_array_equal(out, a[r0:r1])


def test_views_and_casts_are_read_through_numpy(saved):
    a, path = saved
    view = np.load(path, mmap_mode="r")[3:]
    assert _file_span(view) is None                       # a view's offset is its parent's
    source = open_source(view)
    out = np.empty((6, 11), np.float32)
    source.read_into(2, 8, out)
    np.testing.assert_array_equal(out, a[5:11])
    wide = np.empty((6, 11), np.float64)                  # a cast: not a byte copy
    open_source(str(path)).read_into(2, 8, wide)
    np.testing.assert_array_equal(wide, a[2:8])


def test_fortran_memmap_is_not_read_as_rows(tmp_path):
    a = np.asfortranarray(np.arange(48, dtype=np.float64).reshape(8, 6))
    path = tmp_path / "f.npy"
    np.save(path, a)
    source = open_source(str(path))
    assert _file_span(source.obj) is None
    out = np.empty((3, 6))
    source.read_into(4, 7, out)
    np.testing.assert_array_equal(out, a[4:7])
