"""cuatomic imported first, then a GPU or array library, in one process.

A symbol that cuatomic._C exported (CUB, libcu++, the static CUDA runtime)
could be bound in place of the peer's own copy and crash it. Each case runs
in a fresh interpreter, in the order a user has: cuatomic first, used, then
the peer imported and used. The peers are never imported by this process.
"""
import importlib.util
import subprocess
import sys
import textwrap

import pytest

CUATOMIC_FIRST = """
import numpy as np
import cuatomic
assert cuatomic.sum(np.arange(10)) == 45
if "cuda" in cuatomic.backends():
    assert cuatomic.sum(cuatomic.to_device(np.arange(10), backend="cuda"), backend="cuda") == 45
"""

# (module that must be installed, what a user does with it)
PEERS = {
    "ml_dtypes": ("ml_dtypes", """
        import ml_dtypes
        assert np.ones(3, dtype=ml_dtypes.bfloat16).astype(np.float32).sum() == 3
    """),
    "cupy": ("cupy", """
        import cupy
        assert not cupy.is_available() or int(cupy.ones(3).sum()) == 3
    """),
    "torch": ("torch", """
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        assert int(torch.ones(3, device=device).sum()) == 3
    """),
    "numba": ("numba", """
        import numba
        assert numba.njit(lambda x: x.sum())(np.ones(3)) == 3
    """),
    "numba.cuda": ("numba", """
        from numba import cuda
        assert not cuda.is_available() or cuda.to_device(np.ones(3)).copy_to_host().sum() == 3
    """),
    "jax": ("jax", """
        import jax.numpy as jnp
        assert int(jnp.ones(3).sum()) == 3
    """),
}


def run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_peer_after_cuatomic(peer):
    module, use = PEERS[peer]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    use = textwrap.dedent(use)
    proc = run(CUATOMIC_FIRST + use)
    if proc.returncode != 0:
        alone = run("import numpy as np\n" + use)
        if alone.returncode != 0:  # the peer fails here on its own: nothing to learn about cuatomic
            pytest.skip(f"{peer} fails without cuatomic too: {alone.stderr.strip().splitlines()[-1:]}")
    assert proc.returncode == 0, f"{peer} after cuatomic exited {proc.returncode}:\n{proc.stderr[-3000:]}"
