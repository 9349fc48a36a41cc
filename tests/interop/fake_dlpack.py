"""A minimal array library that speaks only DLPack, around NumPy arrays on the host.

What ``gpusvd._core.arrays`` sees from PyTorch or JAX, without either installed: an
object with ``__dlpack__`` and ``__dlpack_device__`` but no ``__array__``, whose module
has a ``from_dlpack`` (as ``torch`` and ``jax.numpy`` do). ``ReadOnlyArray`` exports its
data read-only (DLPack 1.0's flag), as JAX does for its immutable arrays.
"""

import numpy as np


class FakeArray:
    def __init__(self, data):
        self._data = data

    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype

    def __dlpack__(self, **kwargs):
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def numpy(self):
        """A copy of the data as NumPy, for the tests' checks."""
        return np.array(self._data)


class ReadOnlyArray(FakeArray):
    def __init__(self, data):
        data = np.array(data)
        data.flags.writeable = False
        super().__init__(data)


def from_dlpack(x):
    return FakeArray(np.from_dlpack(x))
