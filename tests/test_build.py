"""The built extension exports only its module init.

Every other dynamic symbol of ``cuatomic._C`` (C++ templates, CUB, NVTX,
libcu++ statics, the static CUDA runtime, GNU-unique objects) would be bound
by the dynamic linker against, or in place of, the same names in CuPy,
PyTorch or Numba loaded into the same process: a crash that shows only on a
GPU machine. The symbol table is read from the ELF file itself, so the test
needs neither a GPU nor binutils.

Also: a wheel carries every subpackage (pyproject lists them by name), and a
build without CUDA says why.
"""
import os
import pathlib
import re
import struct
import subprocess
import sys

import pytest

import cuatomic._C

SHT_DYNSYM = 11
SHN_UNDEF = 0
STB_LOCAL, STB_GNU_UNIQUE = 0, 10


def dynamic_symbols(path):
    """The defined, non-local symbols of an ELF64 little-endian file's .dynsym.

    Parameters
    ----------
    path : str
        A shared object.

    Returns
    -------
    list of (str, int)
        ``(name, binding)`` for every symbol the file exports, in table order.
        Returns None when the file is not ELF64 little-endian.
    """
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for _, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != SHT_DYNSYM:
            continue
        strtab_offset = sections[link][4]
        for pos in range(offset + entsize, offset + size, entsize):  # entry 0 is the null symbol
            st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", data, pos)
            binding = st_info >> 4
            if st_shndx == SHN_UNDEF or binding == STB_LOCAL:
                continue
            end = data.index(b"\0", strtab_offset + st_name)
            out.append((data[strtab_offset + st_name:end].decode(), binding))
    return out


def test_extension_exports_only_its_init():
    symbols = dynamic_symbols(cuatomic._C.__file__)
    if symbols is None:
        pytest.skip(f"{cuatomic._C.__file__} is not an ELF64 little-endian file")
    others = [name for name, _ in symbols if name != "PyInit__C"]
    unique = [name for name, binding in symbols if binding == STB_GNU_UNIQUE]
    cxx = [name for name in others if name.startswith("_Z")]
    cuda = [name for name in others if re.search("cuda|cub|nvtx", name, re.I)]
    assert "PyInit__C" in [name for name, _ in symbols], "the module init is not exported"
    assert not others, (f"{len(others)} exported symbols besides PyInit__C ({len(cxx)} C++, {len(cuda)} CUDA/CUB, "
                        f"{len(unique)} GNU-unique), e.g. {others[:5]}: build with hidden visibility")


def test_pyproject_lists_every_subpackage():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = pathlib.Path(__file__).resolve().parents[1]
    if not (root / "pyproject.toml").exists():
        pytest.skip("pyproject.toml not next to the tests")
    listed = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    if not (root / "cuatomic").is_dir():  # the tests beside an installed wheel: it holds every listed package
        installed = pathlib.Path(cuatomic._C.__file__).parent.parent
        missing = [name for name in listed if not (installed / name.replace(".", "/")).is_dir()]
        assert not missing, f"the installed package lacks {missing}"
        return
    found = {".".join(p.parent.relative_to(root).parts) for p in (root / "cuatomic").rglob("__init__.py")}
    assert found <= set(listed), "a subpackage missing from pyproject's packages is left out of the wheel"
    # the others are data folders (cuatomic/rules: the measurements auto reads), shipped by package-data
    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for name in set(listed) - found:
        assert (root / name.replace(".", "/")).is_dir() and name in data, name


ROOT = pathlib.Path(__file__).resolve().parents[1]


def checkout_or_skip():
    """The source tree these tests sit in (not the copy beside an installed wheel, which lacks cuatomic/)."""
    if not (ROOT / "setup.py").exists() or not (ROOT / "cuatomic").is_dir():
        pytest.skip("not in a source checkout")
    return ROOT


def test_a_build_without_cuda_says_why():
    """The reason names what happened at install time: CUATOMIC_CUDA=0 asked for it, or nvcc was
    not found (CI installs with nvcc on PATH and CUATOMIC_CUDA=0: 'no nvcc' would be false)."""
    if cuatomic._C.build_info()["cuda"]:
        pytest.skip("built with CUDA")
    reason = cuatomic._C.cuda_probe()["reason"]
    assert reason.startswith("cuatomic was built without CUDA: "), reason
    assert "CUATOMIC_CUDA=0 asked for a CPU-only build" in reason or "nvcc was not found" in reason, reason


def test_setup_gives_cuatomic_cuda_0_as_the_reason():
    root = checkout_or_skip()
    run = subprocess.run([sys.executable, "setup.py", "--name"], cwd=root, capture_output=True, text=True,
                         env=dict(os.environ, CUATOMIC_CUDA="0"), timeout=300)
    assert run.returncode == 0, run.stderr
    assert "CUATOMIC_CUDA=0 asked for a CPU-only build" in run.stderr and "not found" not in run.stderr, run.stderr
