"""What cuatomic can tell about itself: the ladders, the backends, what
"auto" would run for a call, and what the last call launched."""

import numpy as np

from . import (_C, _argmin, _auto, _backend, _bincount, _counter, _filter, _histogram, _histogramdd, _reduce,
               _reduce_op, _scatter)
from ._common import flag, launch_config, prepare, stream_of
from ._interop import on_inputs_gpu

_INDEX_OPS = ("nonzero", "flatnonzero", "argwhere", "compress")


@on_inputs_gpu
def explain(op, *args, backend=None, stream=None, **kwargs):
    """What ``method="auto"`` runs for a call, and why.

    Parameters
    ----------
    op : {"sum", "dot", "histogram", "filter", "mutex_add_one", "add_one", "prod", "reduce", "weighted_histogram", "bincount", "at", "argmin", "argmax", "nonzero", "flatnonzero", "argwhere", "compress", "histogramdd", "histogram2d", "unique"}
    *args, **kwargs
        The call's arguments, as for the op itself (only what the rule looks
        at is used: the input, ``bins``/``range`` for a histogram, whether
        there are ``weights`` -- ``"weighted_histogram"`` is a histogram with
        weights --, for ``"bincount"`` the input, ``weights`` and
        ``minlength``, which give the number of bins, and the ufunc
        (positional: ``explain("reduce", a, "maximum")``) and ``dtype`` for
        reduce; for ``"at"``, ``a``, ``indices``, ``b`` and the ufunc, also
        positional: ``explain("at", a, indices, b, "maximum")``).
    backend, stream
        As for :func:`sum`.

    Returns
    -------
    Choice
        ``method``, ``reason`` and the ``facts`` the rule looked at (size,
        dtype, bins, the measured skew of a sample); ``str()`` reads as a
        sentence. ``method`` is None for a histogram of no bins (edges of
        fewer than two values): that call launches no rung.

    Raises
    ------
    TypeError, ValueError, OverflowError
        Every error the call itself would raise for these arguments (each
        op's own checks are the ones explain runs: the array and ``dtype``
        of sum and prod, both vectors of dot, the bins and range of a
        histogram, the grid of add_one, the op and value of filter, the
        ``blocks`` and ``threads`` of any), ``explain("histogram")``
        without the array (the rule needs the bins, the report the data),
        an unknown op.

    Notes
    -----
    argmax runs the argmin ladder: its Choice names ``"argmin"``. nonzero,
    flatnonzero, argwhere and compress run the filter ladder (returning
    indices of ``a``, or of compress's condition): theirs names
    ``"filter"``. The Choice of a histogram with weights, or of a bincount, names the
    ladder that runs: ``op`` is ``"weighted_histogram"`` or
    ``"histogram"``, as :func:`last_launch` reports it.

    Examples
    --------
    >>> import numpy as np, cuatomic
    >>> text = np.frombuffer(b"the quick brown fox " * 100, np.uint8)
    >>> cuatomic.explain("histogram", text, bins=128, range=(0, 128), backend="cpu").method
    'bytes'
    """
    if isinstance(op, str) and op in _INDEX_OPS:  # the filter ladder, returning indices of a (compress: its condition)
        kwargs = dict(kwargs)
        if op == "compress":
            kwargs.pop("a", None)
            if "condition" in kwargs:
                args = (kwargs.pop("condition"),)
        return explain("filter", *args[:1], backend=backend, stream=stream, **kwargs)
    if not (isinstance(op, str) and op in ("bincount", "argmax", "histogram2d")):
        _backend.op_id(op)
    be = _backend.resolve(backend)
    s = stream_of(stream)
    if op in ("histogram", "weighted_histogram"):
        if not args and "a" not in kwargs:
            raise TypeError(f"explain({op!r}) needs the array, as the call takes it: "
                            f"explain({op!r}, a, bins=..., range=...) (the rule reads the bins, and the "
                            "report the data's skew)")
        a = args[0] if args else kwargs["a"]
        bins = args[1] if len(args) > 1 else kwargs.get("bins", 10)
        bounds = args[2] if len(args) > 2 else kwargs.get("range")
        weights = kwargs.get("weights")
        return _histogram.explain(be, a, bins, bounds, weights=weights,
                                  weighted=op == "weighted_histogram" or weights is not None,
                                  blocks=kwargs.get("blocks"), threads=kwargs.get("threads"), stream=s)
    if op == "bincount":
        if not args and "x" not in kwargs:
            raise TypeError("explain('bincount') needs the array, as the call takes it: "
                            "explain('bincount', x, weights=..., minlength=...) (its largest value sets the bins)")
        x = args[0] if args else kwargs["x"]
        weights = args[1] if len(args) > 1 else kwargs.get("weights")
        minlength = args[2] if len(args) > 2 else kwargs.get("minlength", 0)
        return _bincount.explain(be, x, weights, minlength, blocks=kwargs.get("blocks"),
                                           threads=kwargs.get("threads"), stream=s)
    if op in ("histogramdd", "histogram2d"):
        names = ("x", "y", "bins", "range") if op == "histogram2d" else ("sample", "bins", "range")
        given = dict(zip(names, args), **{k: kwargs[k] for k in names if k in kwargs})
        if op == "histogram2d":
            given["sample"] = [given.pop("x", None), given.pop("y", None)]
        return _histogramdd.explain(be, given.get("sample"), given.get("bins", 10), given.get("range"),
                                    kwargs.get("blocks"), kwargs.get("threads"), s)
    if op in ("argmin", "argmax"):
        launch_config(kwargs.get("blocks"), kwargs.get("threads"))  # checked as the call checks them
        a = args[0] if args else kwargs.get("a")
        return _argmin.explain(be, a, op == "argmax", s)
    if op == "reduce":
        a = args[0] if args else kwargs.get("a")
        ufunc = args[1] if len(args) > 1 else "add"  # positional: `op` names explain's own first argument
        return _reduce_op.explain(be, a, ufunc, kwargs.get("dtype"), s)
    if op == "at":  # positional: `op` names explain's own first argument, so the ufunc is the fourth
        names = ("a", "indices", "b", "ufunc")
        given = dict(zip(names, args), **{k: kwargs[k] for k in names if k in kwargs})
        return _scatter.explain(be, **given, blocks=kwargs.get("blocks"), threads=kwargs.get("threads"), stream=s)
    if op in ("add_one", "mutex_add_one"):
        blocks = args[0] if args else kwargs.get("blocks", 10)
        threads = args[1] if len(args) > 1 else kwargs.get("threads", 16)
        return _auto.choose(op, be, {"n": _counter.grid(blocks, threads)[2]})  # the call's checks
    launch_config(kwargs.get("blocks"), kwargs.get("threads"))  # checked as the call checks them
    facts = {}
    given = bool(args) or "a" in kwargs  # (a None given is an array argument the op refuses, as the call does)
    a = args[0] if args else kwargs.get("a")
    if given:
        # Each op's own preparation: its errors, and the dtype its rule reads
        if op == "dot":
            b = args[1] if len(args) > 1 else kwargs.get("b", a)  # without b: as dot(a, a)
            inp, _, _ = _reduce.dot_prepared(a, b, be, s)
        elif op in ("sum", "prod"):
            inp, _ = _reduce.prepared(op, a, kwargs.get("dtype"), be, s)
        else:
            inp = prepare(a, be, stream=s)
        if op == "filter" and len(args) > 1:  # (explain's own first argument is named op: filter's is positional)
            compare = _filter.check_op(args[1])
            if len(args) > 2:
                _filter.predicate(inp.dtype, compare, args[2])
        facts = {"n": inp.n, "dtype": str(inp.dtype)}
    require = _C.F_ORDERED if op == "filter" and flag("ordered", kwargs.get("ordered", True)) else 0
    fits = None
    if op == "filter" and given:  # the rungs that cannot run this call are passed by, as the call does
        fits = _filter.rung_fits(be, inp, *launch_config(kwargs.get("blocks"), kwargs.get("threads")))
    return _auto.choose(op, be, facts, require=require, fits=fits)


def last_launch():
    """What the last call on this thread launched.

    Returns
    -------
    dict or None
        ``backend``, ``op``, ``method`` (the rung that ran: the one named,
        or the one ``"auto"`` picked), ``blocks`` and ``threads`` (the grid
        it launched, after defaults), ``chunks`` (launches: more than
        one when a large host array was streamed to the GPU in pieces), and
        ``cpu_threads`` (on the cpu backend, the OS threads that ran it: the
        OpenMP team sized to the work, one per 2^16 elements at most, see
        ``backend_info()["cpu_threads"]`` for the whole team; None on cuda);
        None before the first call on this thread.
    """
    found = _C.last_launch()
    if found is None:
        return None
    found["backend"] = "cpu" if found["backend"] == _C.BACKEND_CPU else "cuda"
    found["op"] = _backend.OPS[found["op"]]
    return found


def methods(op, backend=None):
    """The method ladder of an operation, in tutorial order.

    Parameters
    ----------
    op : {"sum", "dot", "histogram", "filter", "mutex_add_one", "add_one", "prod", "reduce", "weighted_histogram", "at", "argmin", "argmax", "nonzero", "flatnonzero", "argwhere", "compress", "histogramdd", "histogram2d", "unique"}
        ``"weighted_histogram"`` is the ladder of :func:`histogram` with
        weights (and of :func:`bincount` with weights); ``"argmax"`` runs
        the ``"argmin"`` ladder; nonzero, flatnonzero, argwhere and
        compress run the ``"filter"`` ladder, returning indices;
        ``"histogram2d"`` runs the ``"histogramdd"`` ladder.
    backend : {"cuda", "cpu"}, optional
        Default: the default backend.

    Returns
    -------
    list of (name, step, summary)

    Raises
    ------
    ValueError
        An unknown op or backend (a list, or any other unhashable value,
        included).
    RuntimeError
        ``backend="cuda"`` in a build without CUDA.
    """
    if isinstance(op, str) and op == "argmax":
        op = "argmin"  # one ladder: argmax inverts the keys its rungs compare
    if isinstance(op, str) and op in _INDEX_OPS:
        op = "filter"  # the filter rungs, returning indices
    if isinstance(op, str) and op == "histogram2d":
        op = "histogramdd"
    _backend.op_id(op)  # before the cached table lookup: an unhashable op is an unknown op, not a TypeError
    if backend is None:
        be = _backend.resolve(None)
    elif isinstance(backend, str) and backend in ("cpu", "cuda"):
        be = backend
    else:
        raise ValueError(f"unknown backend {backend!r}: expected 'cpu' or 'cuda'")
    return [(r.name, r.step, r.summary) for r in _backend.table(op, be)]


def backends():
    """Usable backends in preference order: ``["cuda", "cpu"]`` or ``["cpu"]``.

    The first call probes the GPU (no CUDA call happens at import)."""
    return list(_backend.usable())


def backend_info():
    """What this build has and what this machine offers.

    Returns
    -------
    dict
        The same keys in every build (with or without CUDA) and on every
        machine: ``build`` (``cuda``: bool, ``archs``: list of SM versions
        with machine code, ``ptx``: the compute capability of the PTX, "" in
        a build without CUDA; a build made without a GPU has PTX only),
        ``backends``, ``default_backend`` (what a call without ``backend=``
        runs on: ``CUATOMIC_BACKEND``, else the first usable backend; None
        when ``CUATOMIC_BACKEND`` names no usable backend, and then
        ``default_backend_error`` says why -- the error every such call
        raises; it is "" otherwise), ``cpu_threads``, ``numpy``, and
        ``cuda``: the probe of the current device (``usable``, ``reason``:
        why it is not, ``name``, ``device``, ``compute_capability``,
        ``sm_count``, ``cooperative_launch``, ``driver_version``,
        ``runtime_version``, ``total_memory``, ``shared_per_block_optin``,
        ``l2_bytes``, ``memory_gbps``: the peak memory bandwidth; numbers
        are 0 and strings empty where there is no device or no CUDA).
    """
    build = dict(_C.build_info())
    build["archs"] = [a for a in build["archs"].split(",") if a]
    probe = dict(_backend.cuda_probe())
    try:
        default, error = _backend.resolve(None), ""
    except (ValueError, RuntimeError) as e:  # CUATOMIC_BACKEND names no usable backend
        default, error = None, str(e)
    return {
        "build": build,
        "backends": _backend.usable(),
        "default_backend": default,
        "default_backend_error": error,
        "cpu_threads": _C.cpu_threads(),
        "numpy": np.__version__,
        "cuda": probe,
    }


