"""Backend selection, the lazy CUDA probe, and the ladders as _C reports
them: every name, id and flag comes from the compiled tables."""
import collections
import functools
import os
import threading

from . import _C

OPS = _C.OPS  # op names in ABI id order
_OP_IDS = {name: i for i, name in enumerate(OPS)}
_BACKEND_IDS = {"cpu": _C.BACKEND_CPU, "cuda": _C.BACKEND_CUDA}

_probe_lock = threading.Lock()
_probe = None


class Rung(collections.namedtuple("Rung", "index name step summary flags")):
    """One row of a ladder: its index in the C table (what ``_C`` takes),
    name, tutorial step, one-line summary and ``F_*`` flags."""

    __slots__ = ()

    def has(self, flags):
        return self.flags & flags == flags


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


ENV = "CUATOMIC_BACKEND"


def resolve(backend):
    """The backend name to run on: the argument, else CUATOMIC_BACKEND, else
    the first usable one. Raises if it is unknown or not usable; an error
    that comes from CUATOMIC_BACKEND names it. The name is taken exactly,
    from the variable as from the argument ('CPU' and ' cpu' are refused,
    with the name they resemble)."""
    if backend is not None:
        return _usable_backend(backend, "")
    name = os.environ.get(ENV) or None
    if name is None:
        return usable()[0]
    return _usable_backend(name, f"{ENV}={name!r}: ")


def _usable_backend(name, source):
    """`name` if it is a usable backend; `source` starts the message of an
    error (where the name came from, when not from an argument)."""
    if not isinstance(name, str) or name not in _BACKEND_IDS:
        near = name.strip().lower() if isinstance(name, str) else None
        hint = f" (did you mean {near!r}?)" if near in _BACKEND_IDS else ""
        unset = f"; or unset {ENV} to let cuatomic choose" if source else ""
        raise ValueError(f"{source}unknown backend {name!r}: expected 'cpu' or 'cuda'{hint}{unset}")
    if name == "cuda":
        if not cuda_built():
            raise RuntimeError(f"{source}the cuda backend is not usable: cuatomic was built without CUDA "
                               "(reinstall with nvcc available, or CUATOMIC_CUDA=1 to insist)")
        probe = cuda_probe()
        if not probe["usable"]:
            raise RuntimeError(f"{source}the cuda backend is not usable: {probe['reason']}")
        _check_cache_bytes()
    else:
        _check_host_cache_bytes()
    return name


CACHE_ENV = "CUATOMIC_CACHE_BYTES"


def _check_cache_bytes():
    """ValueError naming CUATOMIC_CACHE_BYTES unless it is unset, empty or a
    number of bytes: the C side reads it when a GPU's pool is first made,
    and would take the default in silence (cuatomic/_memory.py)."""
    value = os.environ.get(CACHE_ENV)
    if value and not (value.isascii() and value.isdigit() and len(value) < 19):
        raise ValueError(f"{CACHE_ENV}={value!r}: expected a number of bytes, digits only (1073741824 for "
                         f"1 GiB; 0 caches nothing); or unset it for the default, 1/16 of the GPU up to 2 GiB")


HOST_CACHE_ENV = "CUATOMIC_HOST_CACHE_BYTES"


def _check_host_cache_bytes():
    """ValueError naming CUATOMIC_HOST_CACHE_BYTES unless it is unset, empty
    or a number of bytes: the C side reads it once (the first cpu unique
    call or memory_info) and would take the default in silence
    (cuatomic/_memory.py)."""
    value = os.environ.get(HOST_CACHE_ENV)
    if value and not (value.isascii() and value.isdigit() and len(value) < 19):
        raise ValueError(f"{HOST_CACHE_ENV}={value!r}: expected a number of bytes, digits only (268435456 for "
                         f"256 MiB; 0 keeps nothing); or unset it for the default, 1/32 of the memory up to 512 MiB")


def backend_id(name):
    return _BACKEND_IDS[name]


def op_id(op):
    if not isinstance(op, str) or op not in _OP_IDS:
        raise ValueError(f"unknown op {op!r}: expected one of {', '.join(OPS)}")
    return _OP_IDS[op]


@functools.lru_cache(maxsize=None)
def table(op, backend):
    """The ladder of `op` on `backend`: Rung rows in table order, which is
    tutorial (step) order. Needs no GPU: the table is part of the build (and
    never changes, so it is read once)."""
    op_number = op_id(op)
    if backend not in _BACKEND_IDS:
        raise ValueError(f"unknown backend {backend!r}: expected 'cpu' or 'cuda'")
    if backend == "cuda" and not cuda_built():
        raise RuntimeError("cuatomic was built without CUDA: there is no cuda variant table")
    return tuple(Rung(i, *row) for i, row in enumerate(_C.variants(_BACKEND_IDS[backend], op_number)))


def check_method(op, backend, method):
    """TypeError unless `method` is a string (naming the valid ones)."""
    if not isinstance(method, str):
        valid = ", ".join(["auto"] + [r.name for r in table(op, backend)])
        raise TypeError(f"method must be a string, one of {valid} (got {type(method).__name__} {method!r})")


@functools.lru_cache(maxsize=256)
def rung(op, backend, name):
    """The row named `name`; ValueError naming the valid ones if none is."""
    for row in table(op, backend):
        if row.name == name:
            return row
    valid = ", ".join(["auto"] + [r.name for r in table(op, backend)])
    raise ValueError(f"unknown method {name!r} for {op} on {backend}: expected one of {valid}")

