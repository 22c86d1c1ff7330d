"""``method="auto"``: the rule that picks a rung for a call, and the
:class:`Choice` that :func:`cuatomic.explain` reports.

The rule is data. ``python -m cuatomic bench auto`` times every rung of
every ladder on a set of cases (op, dtype, size, bins, and for some ops
the data's kind and at's row length) and writes, per case, each rung's
median time; the files measured for this release ship in
``cuatomic/rules/``: ``cpu.json``, and a ``cuda-<GPU name>.json`` per GPU
measured (so far an H200's), read on the GPU of that name, or on
another GPU the file of the GPU most like it (architecture, memory
bandwidth, SMs, L2: :func:`nearest_gpu_rules`). ``CUATOMIC_AUTO_RULES``
may name a file measured on your own hardware instead. For a call, auto takes the
measured case nearest to it (same dtype first, then the nearest bin count,
data kind and row length, then the nearest size, on a log scale: the
weights below) and runs the fastest rung of that
case that the call can use: one that keeps order when ``ordered=True``,
that can count the bins on this device (``histogram_fits``), and that is
not the lesson's race (``F_RACY``); a float sum, dot or product also keeps
the accuracy promise (compensated and deterministic rungs only, whatever
the times say). Rungs never measured come after the
measured ones, highest step first; with no measurement at all, the top
rung of the ladder runs. Every step of that is reported in the Choice.
"""
import dataclasses
import functools
import json
import math
import os
import pathlib

import numpy as np

from . import _C, _backend, _interop
from ._device import DeviceArray

SAMPLE = 4096  # elements read to estimate skew (explain() only)
RULES_ENV = "CUATOMIC_AUTO_RULES"
RULES_DIR = pathlib.Path(__file__).parent / "rules"

# How far apart two cases are: a different dtype outweighs any size, a
# factor of two in bins outweighs one in size (bins decide where counts live),
# other data (at's uniform or skewed indices, where the call's are known) a
# factor of sixteen in bins, and a factor of two in at's row length one in
# bins (a row's elements are updated side by side).
_DTYPE_WEIGHT, _BINS_WEIGHT, _SIZE_WEIGHT, _DATA_WEIGHT, _ROW_WEIGHT = 1000.0, 4.0, 1.0, 16.0, 4.0


@dataclasses.dataclass(frozen=True)
class Choice:
    """What ``method="auto"`` runs for one call.

    Attributes
    ----------
    op, backend, method : str
        The operation, the backend and the rung chosen (`method` None for
        a call that launches no rung: a histogram of no bins, a bincount of
        empty input).
    reason : str
        Why, in one sentence: the measured case it came from and what the
        runner-up took, and any faster rung that could not run this call.
    facts : dict
        What the rule looked at (size, dtype, bins, the nearest measured
        case, and for :func:`cuatomic.explain` of a histogram the share of a
        sample in its most common bin; of at, the row length, the kind of
        case read, "uniform" or "zipf", and the skew of a sample of the
        indices).
    """

    op: str
    backend: str
    method: str
    reason: str
    facts: dict
    rung: object = dataclasses.field(default=None, repr=False, compare=False)  # the _backend.Rung

    def __str__(self):
        facts = ", ".join(f"{k}={v}" for k, v in self.facts.items())
        return f"{self.op} on {self.backend}: method={self.method!r} -- {self.reason}" + (f" [{facts}]" if facts else "")


def rules(backend, gpu=None):
    """The measurements auto reads for `backend`: the file named by
    ``CUATOMIC_AUTO_RULES`` when it was measured on that backend, else the
    one shipped with cuatomic -- on cuda, the file measured on the GPU the
    call runs on (`gpu`: an ordinal; None: the current one), else the one
    measured on the GPU most like it (:func:`nearest_gpu_rules`); {"cases":
    []} when there is none. A file that cannot be read, is not JSON or is
    not a measurement file is a ValueError naming the variable and the file
    (raised again by every call that asks auto, until the variable or the
    file is mended)."""
    if gpu is None and backend == "cuda" and not _backend.cuda_probe()["usable"]:
        gpu = -1  # no GPU to match: the shipped files as they are
    return _rules(backend, _gpu(backend) if gpu is None else gpu)


def _gpu(backend):
    """The ordinal of the GPU a cuda call runs on (the current one: a call
    on another GPU's arrays has made it current), None on the cpu; no
    question asked in a process that sees one GPU."""
    if backend != "cuda":
        return None
    return _interop.current_gpu_ordinal()


@functools.lru_cache(maxsize=None)
def _rules(backend, gpu):
    override = os.environ.get(RULES_ENV)
    if override:
        data = _read_rules(pathlib.Path(override), f"{RULES_ENV}={override!r}")
        if data["backend"] == backend:
            data["source"] = str(override)
            return data
    if backend == "cuda":
        return nearest_gpu_rules(dict(_C.device_facts(gpu)) if gpu >= 0 else None)
    path = RULES_DIR / f"{backend}.json"
    if not path.exists():
        return {"backend": backend, "cases": [], "source": None}
    data = _read_rules(path, f"the rules shipped with cuatomic, {path}")
    data["source"] = f"cuatomic/rules/{path.name}"
    return data


def forget():
    """Forget every cached rule and ranking (after CUATOMIC_AUTO_RULES or a
    rules file changed)."""
    for cached in (_rules, _ranking, _candidates):
        cached.cache_clear()


def rules_file_name(backend, device):
    """The name a rules file measured on `device` ships under:
    ``cpu.json``, or ``cuda-<the GPU's name, lowercase, words joined by
    '-'>.json`` (``cuda-nvidia-h100-80gb-hbm3.json``)."""
    if backend != "cuda":
        return f"{backend}.json"
    slug = "-".join("".join(c if c.isalnum() else " " for c in device.lower()).split())
    return f"cuda-{slug}.json"


# How unlike two GPUs are, for rules measured on one read on the other: a
# different architecture (compute capability) outweighs the rest; then a
# factor of two in memory bandwidth (what most calls wait on), in SMs (the
# grids and how many blocks contend), and in L2 (where tables and bins live).
_ARCH_WEIGHT, _BANDWIDTH_WEIGHT, _SM_WEIGHT, _L2_WEIGHT = 8.0, 2.0, 1.0, 0.5


def gpu_distance(a, b):
    """How unlike GPUs `a` and `b` are (dicts of :func:`cuatomic._C.device_facts`'s
    keys): 0 for the same name."""
    if a.get("name") == b.get("name"):
        return 0.0
    (ma, na), (mb, nb) = a["compute_capability"], b["compute_capability"]
    d = _ARCH_WEIGHT * (abs(ma - mb) + 0.1 * abs(na - nb))
    for key, weight in (("memory_gbps", _BANDWIDTH_WEIGHT), ("sm_count", _SM_WEIGHT), ("l2_bytes", _L2_WEIGHT)):
        d += weight * _log_distance(a[key], b[key])
    return d + 1e-3  # another GPU, however alike, after the same one


def nearest_gpu_rules(facts):
    """The shipped cuda rules for a GPU with these facts: the file measured
    on a GPU of its name, else the one measured on the GPU nearest it
    (:func:`gpu_distance` to each file's ``device_facts``); a file whose
    GPU's facts were not recorded stands in for another GPU only when no
    file has them. Its ``source`` names the file and, when the GPU
    differs, ``nearest_to`` the GPU it stands in for. `facts` None (no GPU
    to match): the first file by name."""
    best, best_d = None, None
    for path in sorted(RULES_DIR.glob("cuda-*.json")):
        data = _read_rules(path, f"the rules shipped with cuatomic, {path}")
        measured = data.get("device_facts")
        if facts is None:
            d = math.inf
        elif data.get("device") == facts["name"]:
            d = 0.0
        elif measured is not None:
            d = gpu_distance(facts, measured)
        else:
            d = math.inf
        if best_d is None or d < best_d:
            best, best_d = dict(data, source=f"cuatomic/rules/{path.name}"), d
    if best is None:
        return {"backend": "cuda", "cases": [], "source": None}
    if best_d > 0 and facts is not None:
        best["nearest_to"] = facts["name"]
    return best


def _read_rules(path, what):
    """A measurement file as :func:`rules` reads it, its shape checked: a
    JSON object with a ``backend`` name and a list of ``cases``, each with
    its ``op``, size ``n`` and ``ms`` (a time or null per rung), and where
    given a ``dtype`` NumPy reads, a number of ``bins``, a ``row`` length
    (at least 1) and the ``data``'s kind (a name). ValueError
    naming `what` (the variable and the file) otherwise."""
    redo = "measure one with `python -m cuatomic bench auto --out FILE`, or unset " + RULES_ENV
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:  # (json's JSONDecodeError is a ValueError)
        raise ValueError(f"{what}: cannot read the measurements auto chooses by: {e} ({redo})") from e

    def refuse(problem):
        raise ValueError(f"{what}: not a measurement file of method='auto': {problem} ({redo})")

    if not isinstance(data, dict) or not isinstance(data.get("backend"), str) or not isinstance(
            data.get("cases"), list):
        refuse("expected a JSON object with \"backend\" (a name) and \"cases\" (a list)")
    if "device_facts" in data:  # what gpu_distance reads
        facts = data["device_facts"]
        cc = facts.get("compute_capability") if isinstance(facts, dict) else None
        if not (isinstance(facts, dict) and isinstance(facts.get("name"), str) and isinstance(cc, list)
                and len(cc) == 2 and all(type(v) is int for v in cc)
                and all(type(facts.get(k)) in (int, float) and facts[k] > 0
                        for k in ("memory_gbps", "sm_count", "l2_bytes"))):
            refuse("device_facts needs the GPU's name, compute_capability [major, minor] and positive "
                   "memory_gbps, sm_count and l2_bytes")
    for i, case in enumerate(data["cases"]):
        if not isinstance(case, dict):
            refuse(f"case {i} is not an object")
        if not isinstance(case.get("op"), str):
            refuse(f"case {i} has no \"op\" name")
        for key, least in (("n", 0), ("bins", 1), ("row", 1)):
            value = case.get(key, least if key != "n" else None)
            if type(value) is not int or value < least:
                refuse(f"case {i} ({case['op']}) has {key}={value!r}: expected an integer of at least {least}")
        if not isinstance(case.get("data", ""), str):
            refuse(f"case {i} ({case['op']}) has data={case['data']!r}: expected the data's kind, a name")
        if "dtype" in case:
            try:
                np.dtype(case["dtype"])
            except TypeError:
                refuse(f"case {i} ({case['op']}) has dtype={case['dtype']!r}, which NumPy does not read")
        ms = case.get("ms")
        if not isinstance(ms, dict) or not all(isinstance(k, str) and (t is None or (
                type(t) in (int, float) and t >= 0)) for k, t in ms.items()):
            refuse(f"case {i} ({case['op']}) has ms={ms!r}: expected {{rung name: milliseconds or null}}")
    return data


def _dtype_distance(a, b):
    if a == b:
        return 0.0
    ka, kb = np.dtype(a).kind, np.dtype(b).kind
    same_kind = ka == kb or (ka in "biu" and kb in "biu")
    return 0.5 if same_kind else 1.0


def _log_distance(a, b):
    return abs(math.log2(max(a, 1)) - math.log2(max(b, 1)))


def _distance(case, dtype, n, bins, data=None, row=None):
    d = _DTYPE_WEIGHT * _dtype_distance(case["dtype"], dtype) if "dtype" in case and dtype else 0.0
    if bins is not None and "bins" in case:
        d += _BINS_WEIGHT * _log_distance(case["bins"], bins)
    if data is not None and case.get("data", data) != data:
        d += _DATA_WEIGHT
    if row is not None:
        d += _ROW_WEIGHT * _log_distance(case.get("row", 1), row)
    return d + _SIZE_WEIGHT * _log_distance(case["n"], n)


def _case_name(op, case):
    parts = [op] + [f"{k}={case[k]}" for k in ("dtype", "n", "bins", "data", "row") if k in case]
    return " ".join(parts)


@functools.lru_cache(maxsize=1024)
def _ranking(op, backend, dtype, n, bins, data=None, row=None, gpu=None):
    """(rungs fastest first, a sentence on where that order comes from, the
    nearest case's name or None, its {rung name: ms} measured) for one op
    on one backend."""
    ladder = _backend.table(op, backend)
    measured_on = _rules(backend, gpu)
    cases = [c for c in measured_on["cases"] if c["op"] == op]
    if len(ladder) == 1:
        return ladder, "the only rung of the ladder", None, {}
    if not cases:
        ranked = tuple(sorted(ladder, key=lambda r: -r.step))
        return ranked, "no measurement of this op on this backend: the top rung of the ladder", None, {}
    case = min(cases, key=lambda c: _distance(c, dtype, n, bins, data, row))
    ms = {name: t for name, t in case["ms"].items() if t is not None}
    by_name = {r.name: r for r in ladder}
    measured = sorted((name for name in ms if name in by_name), key=lambda name: ms[name])
    rest = sorted((r for r in ladder if r.name not in ms), key=lambda r: -r.step)
    ranked = tuple(by_name[name] for name in measured) + tuple(rest)
    where = measured_on.get("device") or backend
    if measured_on.get("nearest_to"):
        where += f", standing in for this {measured_on['nearest_to']}, which has no rules of its own"
    times = ", ".join(f"{name} {ms[name]:.3g} ms" for name in measured[:3])
    return ranked, f"fastest where measured nearest ({_case_name(op, case)} on {where}: {times})", \
        _case_name(op, case), ms


def measured_ms(op, backend, n, dtype=None, bins=None, data=None, row=None):
    """{rung name: median ms} of the measured case nearest a call (empty
    where none is), as :func:`choose` reads it."""
    return _ranking(op, backend, None if dtype is None else np.dtype(dtype).name, int(n), bins, data, row,
                    _gpu(backend))[3]


_LACKS = ((_C.F_ORDERED, "does not keep input order"), (_C.F_WIDE, "is not compensated"),
          (_C.F_DETERMINISTIC, "is not deterministic"))


def _why_not(row, require):
    """Why auto may not run this rung whatever its speed, or None."""
    if row.flags & _C.F_RACY:
        return "the lesson's race (loses updates)"
    missing = [text for flag, text in _LACKS if require & flag and not row.flags & flag]
    return ", ".join(missing) or None


def accuracy_flags(op, dtype):
    """Flags auto requires whatever the speed: a float sum, dot or product
    keeps cuatomic's accuracy promise (compensated float64, F_WIDE) and
    gives the same bits every call (F_DETERMINISTIC), so "auto" never
    trades them for a faster tutorial rung."""
    if op in ("sum", "dot", "prod") and dtype is not None and np.dtype(dtype).kind == "f":
        return _C.F_WIDE | (_C.F_DETERMINISTIC if op != "prod" else 0)
    return 0


@functools.lru_cache(maxsize=4096)
def _candidates(op, backend, dtype, n, bins, require, data=None, row=None, gpu=None):
    """Every rung fastest first, each with why auto may not run it (None
    when it may), the ranking's sentence and the nearest case; `dtype` is
    a NumPy dtype or its name (both hash), so a call pays for the rule once
    per distinct (op, backend, dtype, n, bins, require, data, row, gpu)."""
    name = None if dtype is None else np.dtype(dtype).name
    require |= accuracy_flags(op, name)
    ranked, why, case, _ = _ranking(op, backend, name, n, bins, data, row, gpu)
    return tuple((rung, _why_not(rung, require)) for rung in ranked), why, case


def choose(op, backend, facts, *, require=0, fits=None):
    """The Choice for a call with these facts (``n``, ``dtype``, and
    ``bins`` for a histogram or at, ``data`` for at's indices, "uniform" or
    "zipf", and its ``row`` length): the fastest measured rung that has the
    `require` flags (and :func:`accuracy_flags`), is not racy, and that
    ``fits(rung)`` (None, or why it cannot run) accepts."""
    rows, why, case = _candidates(op, backend, facts.get("dtype"), int(facts.get("n", 1)), facts.get("bins"),
                                  require, facts.get("data"), facts.get("row"), _gpu(backend))
    skipped = []
    for row, why_not in rows:
        why_not = why_not or (fits(row) if fits else None)
        if why_not is not None:
            skipped.append(f"{row.name}: {why_not}")
            continue
        out = dict(facts)
        if case:
            out["measured"] = case
        reason = why if not skipped else f"{why}; passed by -- {'; '.join(skipped)}"
        return Choice(op, backend, row.name, reason, out, row)
    raise ValueError(f"no rung of {op} on {backend} can run this call: " + "; ".join(skipped))


def is_wide(op, backend, method):
    """Whether a rung accumulates floats wider than the result (F_WIDE:
    compensated float64 for float32 and float64). "auto" is the rung auto
    runs for a large float array."""
    _backend.check_method(op, backend, method)
    if method == "auto":
        return choose(op, backend, {"n": 1 << 24, "dtype": "float32"}).rung.has(_C.F_WIDE)
    return _backend.rung(op, backend, method).has(_C.F_WIDE)


def rung_for(op, backend, n, dtype=None, bins=None, *, require=0, fits=None, data=None, row=None):
    """The rung :func:`choose` picks, without building its Choice: the
    per-call path of ``method="auto"``."""
    rows, _, _ = _candidates(op, backend, dtype, int(n), bins, require, data, row, _gpu(backend))
    for rung, why_not in rows:
        if why_not is None and (fits is None or fits(rung) is None):
            return rung
    facts = {"n": n, "dtype": None if dtype is None else np.dtype(dtype).name, "bins": bins, "data": data, "row": row}
    return choose(op, backend, facts, require=require, fits=fits).rung  # raises, naming every refusal


def sample(inp, stream=0, k=SAMPLE):
    """Up to k elements of a prepared input, on the host: evenly spaced
    from host memory; from device memory a contiguous window from the
    middle of a DeviceArray (one small copy), else a strided gather."""
    if inp.n == 0:
        return np.empty(0, inp.dtype)
    if not inp.device:
        step = max(1, inp.n // k)
        return inp.x.reshape(-1)[::step][:k]
    owner = inp.owner
    count = min(k, inp.n)
    if isinstance(owner, DeviceArray) and owner.ptr == inp.x:
        window = np.empty(count, inp.dtype)
        start = (inp.n - count) // 2 * inp.dtype.itemsize
        owner._buffer.copy_to_host(window.view(np.uint8), start, window.nbytes)
        return window
    step = max(1, inp.n // k)
    count = min(k, (inp.n + step - 1) // step)
    out = DeviceArray.empty((count,), inp.dtype)
    _C.gather(inp.x, out.ptr, count, inp.dtype.itemsize, (count,), (step * inp.dtype.itemsize,), stream)
    return out.copy_to_host()


def top_bin_share(values, edges):
    """Share of the sample in its most common bin (0 when nothing is binned).
    Bytes are counted by value (exact for bins of width one, a lower bound
    otherwise) -- a bincount, far cheaper than binning the sample."""
    if values.size == 0:
        return 0.0
    if values.dtype.itemsize == 1 and values.dtype.kind in "biu":
        counts = np.bincount(values.view(np.uint8), minlength=256)
        return float(counts.max() / values.size)
    counts, _ = np.histogram(values, edges)
    total = counts.sum()
    return float(counts.max() / total) if total else 0.0
