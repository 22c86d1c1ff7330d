"""add_one and mutex_add_one: the tutorial's race and its mutex."""
from . import _C, _backend
from ._common import auto_rung, launch_config, named_rung, stream_of

def grid(blocks, threads):
    """(blocks, threads, how many threads run) of a counter call, with the
    call's errors (:func:`launch_config`'s); :func:`cuatomic.explain`
    reads the same."""
    b, t = launch_config(blocks, threads)
    return b, t, max(b, 1) * max(t, 1)


def _counter(op, blocks, threads, method, backend, stream):
    be = _backend.resolve(backend)
    rung = named_rung(op, be, method)
    b, t, n = grid(blocks, threads)
    if rung is None:
        rung = auto_rung(op, be, n)
    return _C.counter(backend=_backend.backend_id(be), op=_backend.op_id(op), rung=rung.index, blocks=b,
                      threads=t, stream=stream_of(stream))


def add_one(blocks=10, threads=16, *, method="auto", backend=None, stream=None):
    """The tutorial's race: blocks*threads threads each add one to a counter.

    Parameters
    ----------
    blocks, threads : int, optional
        Grid size (``add_one_kernel[10, 16]`` in the tutorial).
    method : {"racy", "atomic", "mutex", "auto"}, optional
        ``racy``: an unprotected load and store, so concurrent increments
        are lost; ``atomic``: atomicAdd; ``mutex``: the plain increment under
        the CAS spin lock. ``"auto"``: the fastest correct rung measured
        for this grid size (never ``racy``).
    backend : {"cuda", "cpu"}, optional
    stream : optional
        As for :func:`sum`.

    Returns
    -------
    int
        What the counter holds at the end: exactly blocks*threads for
        ``atomic`` and ``mutex``, at most that for ``racy`` -- usually less:
        on the cpu backend the whole OpenMP team runs the racy grid, and
        each thread's load/store windows span 8 ms in all, so that updates
        are lost at any grid size, on a busy machine too (one thread, with
        ``OMP_NUM_THREADS=1``, cannot race).
    """
    return _counter("add_one", blocks, threads, method, backend, stream)


def mutex_add_one(blocks=10, threads=16, *, method="auto", backend=None, stream=None):
    """blocks*threads threads each add one inside a CAS spin-lock critical section.

    Lock: CAS 0 -> 1 until it succeeds, then a fence; unlock: a fence, then an
    atomic exchange back to 0, as in the tutorial.

    Parameters
    ----------
    blocks, threads : int, optional
    method : {"spin", "warp_lock", "auto"}, optional
        ``spin`` (the tutorial's lesson: every thread takes the lock) or
        ``warp_lock`` (one lane takes it for its warp, test-and-test-and-set
        with backoff, and the warp's lanes increment in turn inside it);
        ``"auto"`` (the default, as for every op): the rung measured
        fastest for this grid size (see :func:`explain`).
    backend : {"cuda", "cpu"}, optional
    stream : optional
        As for :func:`sum`.

    Returns
    -------
    int
        Exactly blocks*threads.
    """
    return _counter("mutex_add_one", blocks, threads, method, backend, stream)


