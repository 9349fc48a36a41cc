"""Reading a matrix from ``.npy``, ``.npz`` or HDF5 and writing results as ``.npz``, for
the ``gpusvd`` command (:mod:`gpusvd.cli`)."""

import argparse
import contextlib
import os
import zipfile

import numpy as np

from ._core.backend import to_host


def device_argument(text):
    """The ``--device`` option of the ``gpusvd`` commands: ``auto``, ``cpu``, ``gpu`` or a
    GPU index, as :func:`gpusvd.svd`'s ``device`` takes it."""
    if text in ("auto", "cpu", "gpu"):
        return text
    if text.isdigit():
        return int(text)
    raise argparse.ArgumentTypeError(f"expected auto, cpu, gpu or a GPU index, got {text!r}")


def _split_dataset(spec, dataset):
    """(path, dataset) from ``FILE.h5:/group/data`` or ``--dataset``."""
    head, sep, tail = spec.rpartition(":")
    if sep and head.lower().endswith((".h5", ".hdf5")):
        if dataset is not None and dataset != tail:
            raise ValueError(f"two dataset paths given: {tail!r} in {spec!r} and --dataset "
                             f"{dataset!r}")
        return head, tail
    return spec, dataset


@contextlib.contextmanager
def _reading(path):
    """Name the file in the errors of NumPy's and h5py's readers."""
    try:
        yield
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        text = message(exc)
        if "allow_pickle" in text or "Python objects" in text:
            # NumPy's advice (allow_pickle=) is a keyword the command line does not have,
            # and loading pickles from a data file would run the code they hold.
            text = "it holds Python objects, not numbers; expected an array of numbers"
        raise ValueError(f"{path}: cannot be read ({text})") from exc


def _check_npy(path):
    """Refuse a file without NumPy's magic string before np.load takes it for a pickle."""
    with open(path, "rb") as f:
        if f.read(len(np.lib.format.MAGIC_PREFIX)) != np.lib.format.MAGIC_PREFIX:
            raise ValueError(f"{path}: not a NumPy .npy file (no NumPy header); expected "
                             "an array written by numpy.save")


def _h5_datasets(group):
    names = []
    group.visititems(lambda name, obj: names.append("/" + name) if hasattr(obj, "dtype")
                     else None)
    return names


def _read_h5(path, dataset, lazy, stack):
    try:
        import h5py
    except ImportError:
        raise ValueError("reading .h5 files needs h5py (pip install h5py)") from None
    with _reading(path):
        f = stack.enter_context(h5py.File(path, "r"))
    names = _h5_datasets(f)
    if dataset is None:
        if len(names) != 1:
            raise ValueError(f"{path} holds {len(names)} datasets ({', '.join(names[:8])}); "
                             f"name one as {path}:/path or with --dataset")
        dataset = names[0]
    obj = f.get(dataset)
    if obj is None or not hasattr(obj, "dtype"):
        raise ValueError(f"{path} has no dataset {dataset!r}; it holds "
                         f"{', '.join(names[:8]) or 'none'}")
    return obj if lazy else obj[()]


def read_matrix(spec, *, key=None, dataset=None, lazy=False, stack):
    """The array stored at ``spec`` (``.npy``, ``.npz`` or ``.h5``/``.hdf5``).

    With ``lazy``, a ``.npy`` file comes back as a read-only memmap and an HDF5 dataset as
    the h5py dataset itself (kept open by ``stack``, a :class:`contextlib.ExitStack`),
    so that only row blocks are ever read.

    Examples
    --------
    >>> import contextlib, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npz")
    >>> np.savez(path, a=np.eye(2), b=np.ones(3))
    >>> with contextlib.ExitStack() as stack:
    ...     read_matrix(path, key="b", stack=stack)
    array([1., 1., 1.])
    """
    path, dataset = _split_dataset(spec, dataset)
    suffix = os.path.splitext(path)[1].lower()
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a directory; expected a .npy, .npz, .h5 or .hdf5 file")
    if not os.path.isfile(path):
        raise ValueError(f"{path}: no such file")
    if key is not None and suffix != ".npz":
        raise ValueError(f"--key names an array of a .npz file; {path} is not one")
    if dataset is not None and suffix not in (".h5", ".hdf5"):
        raise ValueError(f"a dataset path applies to .h5/.hdf5 files; {path} is not one")
    if suffix == ".npy":
        _check_npy(path)
        with _reading(path):
            return np.load(path, mmap_mode="r" if lazy else None, allow_pickle=False)
    if suffix == ".npz":
        with _reading(path):
            z = stack.enter_context(np.load(path, allow_pickle=False))
        if not z.files:
            raise ValueError(f"{path} holds no arrays")
        if key is not None and key not in z.files:
            raise ValueError(f"{path} has no array {key!r}; it holds {', '.join(z.files)}")
        with _reading(path):
            return z[z.files[0] if key is None else key]
    if suffix in (".h5", ".hdf5"):
        return _read_h5(path, dataset, lazy, stack)
    raise ValueError(f"{path}: unknown format {suffix or '(no extension)'!r}; "
                     "expected .npy, .npz, .h5 or .hdf5")


def check_out(path):
    """Fail before the work, not after it, on an output path that cannot be written."""
    if not path.lower().endswith(".npz"):
        raise ValueError(f"--out {path}: the output is a .npz file; name it so")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise ValueError(f"--out {path}: no such directory {folder}")


def write(path, arrays):
    np.savez(path, **{k: to_host(v) for k, v in arrays.items()})
    print(f"wrote {path} ({', '.join(arrays)})")


def message(exc):
    """One line for an error message: the exception's text with whitespace collapsed."""
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    elif isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())
