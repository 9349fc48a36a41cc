"""Communication of the multi-GPU level: MPI ranks, one GPU (or CPU) each; root's input.

SPMD over mpi4py ranks (paper 003, §5, "multiple processes ... communicate via MPI").
A rank computes on the GPU picked by its rank within its node (the
``MPI.COMM_TYPE_SHARED`` split), or on the CPU with NumPy. Block-columns move between
ranks by NCCL point-to-point calls through CuPy where both are present, otherwise
through host buffers with MPI; control data (shapes, counts, errors) always through MPI.

Errors: every phase that can fail on one rank ends in :meth:`Comm.phase`, a collective
that makes every rank raise the exception of the first failing rank (the failing rank
raises its own), so no rank is left waiting in a later collective.
"""

import contextlib
import os
import pickle
import time

import numpy as np

from .._core.backend import cupy_or_none, to_host
from .._core.front_end import Received, prepare
from .._core.results import SVDResult
from .._core.scaling import scale_values

# The name of gpusvd.distributed.svd in its messages, whichever method computes.
WHAT = "distributed svd"

# NVLink SHARP (multicast) buffers fail on the H200 machines the GPU tests
# run on; NCCL reads the variable when its first communicator is created.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as exc:  # pragma: no cover - mpi4py is in the test extra
        raise ImportError("gpusvd.distributed needs mpi4py (pip install mpi4py mpich)") from exc
    return MPI


def _check_device(device):
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'gpu' (one GPU per rank, chosen "
                         f"by the rank within its node), got {device!r}")


def _choose_device(world, device):
    """``None`` (CPU) or this rank's GPU index; the same kind on every rank."""
    MPI = _mpi()
    cp = cupy_or_none() if device != "cpu" else None
    local = world.Split_type(MPI.COMM_TYPE_SHARED)
    local_rank = local.Get_rank()
    local.Free()
    have = 0 if cp is None else cp.cuda.runtime.getDeviceCount()
    everywhere = world.allreduce(int(have > 0), op=MPI.MIN)
    if device == "gpu" and not everywhere:
        raise ValueError("device='gpu' was asked for but some rank sees no usable GPU")
    if device == "cpu" or not everywhere:
        return None
    return local_rank % have


def _nccl_or_none(world, device_id):
    """A CuPy NCCL communicator over ``world`` when every rank can make one, else None.

    ``GPUSVD_NCCL=0`` in the environment turns NCCL off (GPU arrays then move through
    host buffers and MPI): for MPI builds without NCCL, or several ranks on one GPU,
    which NCCL refuses.
    """
    MPI = _mpi()
    try:
        from cupy.cuda import nccl
        usable = int(device_id is not None and nccl.available
                     and os.environ.get("GPUSVD_NCCL", "1") != "0")
    except ImportError:
        usable = 0
    if not world.allreduce(usable, op=MPI.MIN):
        return None
    uid = nccl.get_unique_id() if world.Get_rank() == 0 else None
    uid = world.bcast(uid, root=0)
    return nccl.NcclCommunicator(world.Get_size(), uid, world.Get_rank())


def _portable(exc):
    """``exc`` if it survives pickling, else a RuntimeError that carries its text."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


@contextlib.contextmanager
def given_or_own(comm, device):
    """``comm`` itself when it is a :class:`Comm`, else a Comm made over ``comm`` (an
    mpi4py communicator or None for ``COMM_WORLD``) on ``device``, closed on leaving."""
    if isinstance(comm, Comm):
        yield comm
        return
    with Comm(comm, device) as own:
        yield own


def received(a, comm, check_finite, what, scan=True):
    """Root's input (or a rank's own block) through the front end
    (:func:`gpusvd._core.front_end.prepare`, ``scan`` as there) on ``comm``'s device: one
    matrix, no stack. An input received already (``method="auto"`` looks at it to choose
    the method) passes as it is."""
    if isinstance(a, Received):
        return a
    job = prepare(a, what=what, device="cpu" if comm.device_id is None else comm.device_id,
                  check_finite=check_finite, scan=scan)
    if job.batch != ():
        raise ValueError(f"{what} decomposes one matrix (M, N), got shape "
                         f"{(*job.batch, *job.stack.shape[1:])}; decompose a stack "
                         "matrix by matrix")
    return job


def consecutive_blocks(m, ranks):
    """Each rank's rows (or columns): consecutive blocks of m·r/ranks … m·(r + 1)/ranks."""
    return [(m * r // ranks, m * (r + 1) // ranks) for r in range(ranks)]


def delivered(received, exponent, compute_uv, u, s, vh):
    """(U, S, Vh), or S, in the type of the ``received`` input (:func:`received`): S
    times 2^exponent."""
    xp = received.xp
    s = scale_values(s, exponent, xp)
    if not compute_uv:
        return received.values(s[None])
    return SVDResult(received.vectors(xp.ascontiguousarray(u)[None]),
                     received.values(s[None]),
                     received.vectors(xp.ascontiguousarray(vh)[None]))


class Comm:
    """The ranks of one distributed computation, its array namespace and its transports.

    ``xp`` is CuPy when every rank has a GPU (and ``device`` allows it), else NumPy;
    ``comm_seconds`` adds up the wall time spent in :meth:`exchange_many`,
    :meth:`scatter` and :meth:`gather` (measured between device synchronizations);
    ``last_run`` is the :class:`.outer.OuterInfo` of the last decomposition (None before).
    A context manager: leaving it calls :meth:`close` on every rank.
    """

    def __init__(self, world=None, device="auto"):
        self.world = _mpi().COMM_WORLD if world is None else world
        self.rank = self.world.Get_rank()
        self.size = self.world.Get_size()
        self.comm_seconds = 0.0
        self.last_run = None
        self.device_id = None
        self._nccl = None
        with self.phase():
            _check_device(device)
        self.device_id = _choose_device(self.world, device)
        self.xp = np if self.device_id is None else cupy_or_none()
        if self.device_id is not None:
            with self.device_context():
                self._nccl = _nccl_or_none(self.world, self.device_id)

    @property
    def transport(self):
        """``"nccl"``, ``"host"`` (GPU arrays staged through MPI) or ``"mpi"`` (CPU)."""
        if self._nccl is not None:
            return "nccl"
        return "mpi" if self.xp is np else "host"

    def device_context(self):
        """A context that makes this rank's GPU current (a no-op on the CPU)."""
        if self.device_id is None:
            return contextlib.nullcontext()
        return self.xp.cuda.Device(self.device_id)

    # ---------------------------------------------------------------- control and errors

    @contextlib.contextmanager
    def phase(self):
        """Run the block; afterwards every rank raises if any rank raised inside it."""
        error = None
        try:
            yield
        except Exception as exc:
            error = exc
        failures = self.world.allgather(None if error is None else _portable(error))
        first = error if error is not None else next(
            (f for f in failures if f is not None), None)
        # Dropped before raising: an exception held by this frame, whose traceback holds
        # the frame, is a cycle that keeps the caller's arrays and communicator alive
        # until the cyclic collector runs, at a different moment on every rank.
        error = failures = None
        if first is not None:
            try:
                raise first
            finally:
                first = None

    def close(self):
        """Free the NCCL communicator, on every rank at once (a collective; idempotent).

        NCCL's destroy is a collective among the GPUs of a node: one rank destroying a
        communicator while another waits in a different one hangs both. The decompositions
        close a Comm they made themselves before returning; a Comm passed to them stays
        open for reuse until its owner closes it.
        """
        if self._nccl is None:
            return
        with self.device_context():
            self.synchronize()
            self.world.Barrier()
            self._nccl.destroy()
        self._nccl = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def bcast(self, obj, root):
        return self.world.bcast(obj, root=root)

    def sum(self, value):
        """The sum of the integer ``value`` over all ranks."""
        return self.world.allreduce(int(value), op=_mpi().SUM)

    def synchronize(self):
        if self.device_id is not None:
            self.xp.cuda.Device(self.device_id).synchronize()

    # ---------------------------------------------------------------- block-columns

    def exchange(self, send, dest, shape, dtype, source):
        """Send ``send`` to ``dest`` and receive an array ``shape`` from ``source`` at once.

        ``dest`` or ``source`` None: nothing goes that way. Returns the received array
        (None if nothing was received). See :meth:`exchange_many`.
        """
        got = self.exchange_many([] if dest is None else [(send, dest)],
                                 [] if source is None else [(shape, source)], dtype)
        return got[0] if got else None

    def exchange_many(self, sends, recvs, dtype):
        """Post every send ``(array, dest)`` and receive ``(shape, source)`` at once.

        Returns the received arrays in the order of ``recvs``. Two ranks must list the
        messages between them in the same order (they are matched in order). Empty arrays
        are not sent: both sides know their shape, and neither NCCL nor MPI is given a
        zero-byte message. Timed, between device synchronizations (the paper's phases (4)
        and (6)).
        """
        sends = [(send, dest) for send, dest in sends if send.size]
        full = [i for i, (shape, _) in enumerate(recvs) if 0 not in shape]
        self.synchronize()
        start = time.perf_counter()
        if self._nccl is not None:
            received = [self.xp.empty(recvs[i][0], dtype) for i in full]
            self._nccl_exchange(sends, [(g, recvs[i][1]) for g, i in zip(received, full)])
        else:
            received = self._mpi_exchange(sends, [recvs[i] for i in full], dtype)
        self.synchronize()
        self.comm_seconds += time.perf_counter() - start
        got = dict(zip(full, received))
        return [got[i] if i in got else self.xp.empty(shape, dtype)
                for i, (shape, _) in enumerate(recvs)]

    def _nccl_exchange(self, sends, recvs):
        from cupy.cuda import nccl

        stream = self.xp.cuda.get_current_stream().ptr
        # Contiguous copies live until the group has run (NCCL starts it at groupEnd).
        sends = [(self.xp.ascontiguousarray(send), dest) for send, dest in sends]
        nccl.groupStart()
        for send, dest in sends:
            self._nccl.send(send.data.ptr, send.nbytes, nccl.NCCL_UINT8, dest, stream)
        for got, source in recvs:
            self._nccl.recv(got.data.ptr, got.nbytes, nccl.NCCL_UINT8, source, stream)
        nccl.groupEnd()

    def _mpi_exchange(self, sends, recvs, dtype):
        host = [np.empty(shape, dtype) for shape, _ in recvs]
        requests = [self.world.Irecv(h, source=source) for h, (_, source) in zip(host, recvs)]
        host_sends = [(np.ascontiguousarray(to_host(send)), dest)
                      for send, dest in sends]
        requests += [self.world.Isend(send, dest=dest) for send, dest in host_sends]
        _mpi().Request.Waitall(requests)
        return [self.xp.asarray(h) for h in host]

    def scatter(self, parts, root, shapes, dtype):
        """Root's ``parts[r]`` to rank r for every rank (root keeps its own); returns mine."""
        mine = None
        for r in range(self.size):
            if r == root:
                if self.rank == root:
                    mine = parts[r]
                continue
            if self.rank == root:
                self.exchange(parts[r], r, None, dtype, None)
            elif self.rank == r:
                mine = self.exchange(None, None, shapes[r], dtype, root)
        return mine

    def broadcast(self, array, root, shape, dtype):
        """Root's ``array`` (of ``shape``) on every rank; root keeps its own."""
        if self.rank == root:
            self.exchange_many([(array, r) for r in range(self.size) if r != root], [], dtype)
            return array
        return self.exchange_many([], [(shape, root)], dtype)[0]

    def summed(self, part, root):
        """The sum over the ranks of ``part`` (the same shape and dtype on every rank, float
        or complex), the same bits on every rank: NCCL's all-reduce where the ranks have it
        (its ring and tree algorithms end by handing every rank the one reduced copy);
        otherwise MPI's reduction on ``root``, then its broadcast (through host buffers for
        GPU arrays). Timed with the exchanges."""
        part = self.xp.ascontiguousarray(part)
        self.synchronize()
        start = time.perf_counter()
        if self._nccl is not None:
            total = self._nccl_sum(part)
        else:
            host = np.ascontiguousarray(to_host(part))
            total = np.empty_like(host)
            if host.size:
                self.world.Reduce(host, total, op=_mpi().SUM, root=root)
                self.world.Bcast(total, root=root)
            total = self.xp.asarray(total)
        self.synchronize()
        self.comm_seconds += time.perf_counter() - start
        return total

    def _nccl_sum(self, part):
        from cupy.cuda import nccl

        kinds = {"f": {4: nccl.NCCL_FLOAT32, 8: nccl.NCCL_FLOAT64},
                 "c": {8: nccl.NCCL_FLOAT32, 16: nccl.NCCL_FLOAT64}}
        kind = kinds[part.dtype.kind][part.dtype.itemsize]
        count = part.size * (2 if part.dtype.kind == "c" else 1)   # a complex sum by parts
        total = self.xp.empty_like(part)
        if count:
            self._nccl.allReduce(part.data.ptr, total.data.ptr, count, kind, nccl.NCCL_SUM,
                                 self.xp.cuda.get_current_stream().ptr)
        return total

    def gather(self, mine, root, shapes, dtype):
        """Every rank's ``mine`` to root, as a list indexed by rank (None elsewhere)."""
        parts = [None] * self.size if self.rank == root else None
        for r in range(self.size):
            if r == root:
                if self.rank == root:
                    parts[r] = mine
                continue
            if self.rank == root:
                parts[r] = self.exchange(None, None, shapes[r], dtype, r)
            elif self.rank == r:
                self.exchange(mine, root, None, dtype, None)
        return parts
