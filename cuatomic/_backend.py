"""Backend selection, the lazy CUDA probe, and the variant tables."""
import functools
import os
import threading

from . import _C

OPS = ("sum", "dot", "histogram", "filter", "mutex_add_one", "add_one", "prod")  # ABI op ids
_OP_IDS = {name: i for i, name in enumerate(OPS)}
_BACKEND_IDS = {"cpu": _C.BACKEND_CPU, "cuda": _C.BACKEND_CUDA}

_probe_lock = threading.Lock()
_probe = None


@functools.lru_cache(maxsize=None)
def cuda_built():
    return bool(_C.build_info()["cuda"])


def cuda_probe():
    """The CUDA device probe, run once on first use and cached."""
    global _probe
    if _probe is None:
        with _probe_lock:
            if _probe is None:
                _probe = dict(_C.cuda_probe())
    return _probe


def usable():
    """Usable backends in preference order."""
    return ["cuda", "cpu"] if cuda_built() and cuda_probe()["usable"] else ["cpu"]


def resolve(backend):
    """The backend name to run on: the argument, else CUATOMIC_BACKEND, else
    the first usable one. Raises if it is unknown or not usable."""
    name = backend if backend is not None else os.environ.get("CUATOMIC_BACKEND") or None
    if name is None:
        return usable()[0]
    if not isinstance(name, str) or name not in _BACKEND_IDS:
        raise ValueError(f"unknown backend {name!r}: expected 'cpu' or 'cuda'")
    if name == "cuda":
        if not cuda_built():
            raise RuntimeError("the cuda backend is not usable: cuatomic was built without CUDA "
                               "(reinstall with nvcc available, or CUATOMIC_CUDA=1 to insist)")
        probe = cuda_probe()
        if not probe["usable"]:
            raise RuntimeError(f"the cuda backend is not usable: {probe['reason']}")
    return name


def backend_id(name):
    return _BACKEND_IDS[name]


def op_id(op):
    if not isinstance(op, str) or op not in _OP_IDS:
        raise ValueError(f"unknown op {op!r}: expected one of {', '.join(OPS)}")
    return _OP_IDS[op]


@functools.lru_cache(maxsize=None)
def table(op, backend):
    """Rows (name, step, summary, flags) of a backend's variant table, in
    tutorial order. Needs no GPU: the table is part of the build (and never
    changes, so it is read once)."""
    op_number = op_id(op)
    if backend not in _BACKEND_IDS:
        raise ValueError(f"unknown backend {backend!r}: expected 'cpu' or 'cuda'")
    if backend == "cuda" and not cuda_built():
        raise RuntimeError("cuatomic was built without CUDA: there is no cuda variant table")
    return tuple(sorted(_C.variants(_BACKEND_IDS[backend], op_number), key=lambda row: row[1]))


def is_wide(op, backend, method):
    """Whether a rung accumulates floats wider than the result (F_WIDE:
    compensated float64 for float32 and float64)."""
    return bool(choose(op, backend, method)[1] & _C.F_WIDE)


def choose(op, backend, method, *, require=0):
    """Resolve `method` against the table: "auto" picks the row flagged as
    default (that has the `require` flags); a name must exist."""
    if not isinstance(method, str):
        valid = ", ".join(["auto"] + [row[0] for row in table(op, backend)])
        raise TypeError(f"method must be a string, one of {valid} (got {type(method).__name__} {method!r})")
    return _choose(op, backend, method, require)


@functools.lru_cache(maxsize=256)
def _choose(op, backend, method, require):
    rows = table(op, backend)
    if method == "auto":
        for name, _, _, flags in rows:
            if flags & _C.F_DEFAULT and (flags & require) == require:
                return name, flags
        for name, _, _, flags in rows:
            if (flags & require) == require:
                return name, flags
    for name, _, _, flags in rows:
        if name == method:
            return name, flags
    valid = ", ".join(["auto"] + [row[0] for row in rows])
    raise ValueError(f"unknown method {method!r} for {op} on {backend}: expected one of {valid}")
