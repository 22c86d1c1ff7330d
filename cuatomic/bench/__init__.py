"""cuatomic.bench: the benchmarks and the peers they are measured against.

Not loaded by ``import cuatomic``. The peers (CuPy, PyTorch, Numba and the
tutorial's Numba kernels, CUB through ``_C``) are in ``peers``, which
imports each library only when a benchmark asks for it.

    python -m cuatomic bench [--quick] [--backend cpu|cuda] [--out DIR]
    python -m cuatomic bench --targets        the target table against the peers
    python -m cuatomic bench auto [--out F]   re-measure the rule of method="auto"
    python -m cuatomic bench scatter          the scatter table (np.add.at) against the peers
    python -m cuatomic bench argmin           the argmin/argmax table against the peers
    python -m cuatomic bench nonzero          the nonzero table against the peers
    python -m cuatomic bench histogramdd      the histogram2d/histogramdd table against the peers
    python -m cuatomic bench axis             the sum/min/max along an axis table against the peers
    python -m cuatomic bench unique           the unique (hash tables) table against the peers

See ``suite`` (the ladder benchmark and the command), ``targets`` (the
target table), ``toolkit`` and ``small`` (the other tables), ``measure``
(what they share), ``peers`` (what they are measured against) and
``auto`` (the measurements ``method="auto"`` reads).
"""
import sys

from . import auto, suite
from .measure import agrees
from .suite import ENTROPIES, OPS, make_input, markdown, run
# (cuatomic.bench.targets stays the function, as it always was; the module of that name is
# reached with `from cuatomic.bench.targets import ...` or importlib.import_module.)
from .targets import targets, targets_markdown


def main(argv=None):
    """``python -m cuatomic bench``: the ``auto`` subcommand, else the suite."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["auto"]:
        return auto.main(argv[1:])
    if argv[:1] == ["argmin"]:
        from . import argmin
        return argmin.main(argv[1:])
    if argv[:1] == ["axis"]:
        from . import axis
        return axis.main(argv[1:])
    if argv[:1] == ["histogramdd"]:
        from . import histogramdd
        return histogramdd.main(argv[1:])
    if argv[:1] == ["nonzero"]:
        from . import nonzero
        return nonzero.main(argv[1:])
    if argv[:1] == ["unique"]:
        from . import unique
        return unique.main(argv[1:])
    if argv[:1] == ["scatter"]:
        from . import scatter
        return scatter.main(argv[1:])
    return suite.main(argv)


__all__ = ["ENTROPIES", "OPS", "agrees", "make_input", "main", "markdown", "run", "targets", "targets_markdown"]
