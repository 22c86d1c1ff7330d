"""The built extension exports only its module init.

Every other dynamic symbol of ``cuatomic._C`` (C++ templates, CUB, NVTX,
libcu++ statics, the static CUDA runtime, GNU-unique objects) would be bound
by the dynamic linker against, or in place of, the same names in CuPy,
PyTorch or Numba loaded into the same process: a crash that shows only on a
GPU machine. The symbol table is read from the ELF file itself, so the test
needs neither a GPU nor binutils.

Also: a wheel carries every subpackage (pyproject lists them by name), an
sdist every file the README links to, a build without CUDA says why,
setup.py's object cache serves an object only to the same compilation, and
the C files compile without a warning.
"""
import os
import pathlib
import re
import shutil
import struct
import subprocess
import sys
import tarfile

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


def test_sdist_holds_what_the_readme_links_to(tmp_path):
    """Outside the repository (PyPI's page, an unpacked sdist) the README's links must resolve."""
    root = checkout_or_skip()
    pytest.importorskip("setuptools")
    tree = tmp_path / "tree"
    shutil.copytree(root, tree, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "wheelhouse", "*.egg-info", "__pycache__", ".pytest_cache", "*.so", "*.o"))
    env = dict(os.environ, CUATOMIC_CUDA="0")  # an sdist compiles nothing: no need to look for nvcc
    run = subprocess.run([sys.executable, "-c", "from setuptools.build_meta import build_sdist; "
                          "print(build_sdist('dist'))"], cwd=tree, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    sdist = tree / "dist" / run.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
        readme = tar.extractfile(f"{top}/README.md").read().decode()
    links = {m.split("#")[0] for m in re.findall(r"\]\(([^)\s]+)\)", readme)}
    local = sorted(link for link in links if link and "://" not in link and not link.startswith("mailto:"))
    assert any(link.startswith("docs/") for link in local), local
    missing = [link for link in local if link not in names and not any(n.startswith(link.rstrip("/") + "/")
                                                                       for n in names)]
    assert not missing, f"{sdist.name} lacks what the README links to: {missing} (MANIFEST.in)"


# ---------------------------------------------------------------- setup.py's object cache
#
# pip builds each install in a new temporary directory, so setup.py keeps compiled objects in a
# per-user cache. These tests prove that an object is reused only for the same compilation: the
# same compiler, flags and input bytes. nvcc is played by a script that writes its arguments and
# its source into the object, so every object says what it was compiled from.

FAKE_NVCC = """\
import os, sys
args = sys.argv[1:]
if "--version" in args:
    print(os.environ.get("FAKE_NVCC_VERSION", "Cuda compilation tools, release 13.0, V13.0.88"))
    sys.exit(0)
src, obj = args[args.index("-c") + 1], args[args.index("-o") + 1]
with open(os.environ["FAKE_NVCC_LOG"], "a") as f:
    f.write(os.path.basename(src) + "\\n")
flags = [a for a in args if a not in (src, obj, "-c", "-o")]
with open(src) as s, open(obj, "w") as o:
    o.write(repr(flags) + os.environ.get("NVCC_APPEND_FLAGS", "") + s.read())
"""


def load_setup():
    """setup.py as a module: its helpers, without running the build (that runs only as __main__)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("cuatomic_setup", checkout_or_skip() / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module._terminal[:] = [None]  # its progress lines to stderr only, not to the terminal running pytest
    return module


@pytest.fixture
def fake_cuda(tmp_path, monkeypatch):
    """A fake nvcc, two .cu files and a header; compiled() returns (and forgets) what nvcc compiled."""
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text(f"#!{sys.executable}\n{FAKE_NVCC}")
    nvcc.chmod(0o755)
    log = tmp_path / "nvcc.log"
    monkeypatch.setenv("FAKE_NVCC_LOG", str(log))
    for name in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "FAKE_NVCC_VERSION"):
        monkeypatch.delenv(name, raising=False)
    src = tmp_path / "cuda"
    src.mkdir()
    (src / "a.cu").write_text('#include "common.cuh"\n// a\n')
    (src / "b.cu").write_text('#include "common.cuh"\n// b\n')
    (src / "common.cuh").write_text("// common\n")

    def compiled():
        names = sorted(log.read_text().split()) if log.exists() else []
        log.unlink(missing_ok=True)
        return names

    return str(nvcc), src, compiled


def test_object_cache_serves_only_the_same_compilation(fake_cuda, tmp_path, monkeypatch):
    setup = load_setup()
    nvcc, src, compiled = fake_cuda
    cache = setup.ObjectCache(str(tmp_path / "cache"))
    sources, headers = [str(src / "a.cu"), str(src / "b.cu")], [str(src / "common.cuh")]
    release_90 = setup.cuda_flags(["90"], "90", False, 13)
    builds = iter(range(100))

    def build(flags=release_90, use=cache):
        """A build as pip makes it: in a new directory; returns {source name: object text}."""
        objects = setup.compile_cuda(nvcc, flags, sources, headers, str(tmp_path / f"build{next(builds)}"),
                                     use, jobs=2, threads=1)
        return {pathlib.Path(s).name: pathlib.Path(o).read_text() for s, o in zip(sources, objects)}

    first = build()
    assert compiled() == ["a.cu", "b.cu"]
    assert build() == first and compiled() == [], "an unchanged tree built elsewhere compiles again"

    # Every configuration setup.py makes gets its own objects: other archs, a debug build, an older nvcc.
    configs = {"90": release_90, "80;90": setup.cuda_flags(["80", "90"], "90", False, 13),
               "ptx": setup.cuda_flags([], "75", False, 13),
               "debug": setup.cuda_flags(["90"], "90", True, 13), "nvcc 12": setup.cuda_flags(["90"], "90", False, 12)}
    assert len({repr(f) for f in configs.values()}) == len(configs)
    for name, flags in configs.items():
        if name != "90":
            got = build(flags)
            assert compiled() == ["a.cu", "b.cu"], name
            assert all(text.startswith(repr([*flags, "--threads", "1"])) for text in got.values()), name
            assert build(flags) == got and compiled() == [], name
    assert build() == first and compiled() == []

    # A changed source compiles that source only; a changed header, every source.
    (src / "a.cu").write_text('#include "common.cuh"\n// a, changed\n')
    assert "changed" in build()["a.cu"] and compiled() == ["a.cu"]
    (src / "common.cuh").write_text("// common, changed\n")
    build()
    assert compiled() == ["a.cu", "b.cu"]

    # Another compiler (its version), or flags nvcc takes from the environment: compiled again.
    monkeypatch.setenv("FAKE_NVCC_VERSION", "Cuda compilation tools, release 13.1, V13.1.0")
    build()
    assert compiled() == ["a.cu", "b.cu"]
    monkeypatch.setenv("NVCC_APPEND_FLAGS", "-G")
    assert all("]-G#include" in text for text in build().values())
    assert compiled() == ["a.cu", "b.cu"]

    # No cache: always compiled.
    build(use=None)
    build(use=None)
    assert compiled() == ["a.cu", "a.cu", "b.cu", "b.cu"]


def test_the_longest_cuda_files_start_first(fake_cuda, tmp_path):
    """CUDA_LONGEST_FIRST names files that exist, and they are started first, in its order, the
    others after them by name: the short ones and the C files then fill the cores at the end."""
    setup = load_setup()
    nvcc, src, _ = fake_cuda
    real = {p.name for p in (ROOT / "cuda").glob("*.cu")} if (ROOT / "cuda").is_dir() else set()
    assert not real or set(setup.CUDA_LONGEST_FIRST) <= real, set(setup.CUDA_LONGEST_FIRST) - real
    first, second = setup.CUDA_LONGEST_FIRST[:2]
    names = ["a.cu", second, "b.cu", first]
    for name in names:
        (src / name).write_text(f"// {name}\n")
    sources = [str(src / n) for n in names]
    objects = setup.compile_cuda(nvcc, ["-O3"], sources, [], str(tmp_path / "build"), None, jobs=1, threads=1)
    started = pathlib.Path(os.environ["FAKE_NVCC_LOG"]).read_text().split()
    assert started == [first, second, "a.cu", "b.cu"]
    assert [pathlib.Path(o).name.split(".cu.")[0] + ".cu" for o in objects] == names  # in the sources' order


def test_cuda_object_names_change_with_their_inputs(fake_cuda, tmp_path):
    """setup.py's config stamp holds the CUDA objects' paths, because build_ext relinks only for
    newer sources (not extra objects): a changed .cu file or flag must give a new path, or an
    in-place rebuild would compile the kernel and ship the old extension."""
    setup = load_setup()
    nvcc, src, _ = fake_cuda
    sources = [str(src / "a.cu"), str(src / "b.cu")]

    def paths(flags):
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(1) as pool:
            names, wait = setup.queue_cuda(nvcc, flags, sources, [], str(tmp_path / "build"), pool, 1, None, 1)
            assert wait() == names
        return names

    first = paths(["-O1"])
    assert paths(["-O1"]) == first
    assert paths(["-O3"])[0] != first[0]
    (src / "a.cu").write_text("// a, changed\n")
    again = paths(["-O1"])
    assert again[0] != first[0] and again[1] == first[1]


def test_object_cache_is_bounded(tmp_path):
    setup = load_setup()
    cache = setup.ObjectCache(str(tmp_path / "cache"), max_bytes=3000)
    obj = tmp_path / "x.o"
    for i in range(10):
        obj.write_bytes(bytes(1000))
        cache.store(f"{i:02d}" + "0" * 62, str(obj))
        os.utime(cache.path(f"{i:02d}" + "0" * 62), (i, i))  # stored in order, oldest first
    kept = sorted(p.name[:2] for p in (tmp_path / "cache").rglob("*.o"))
    assert kept == ["07", "08", "09"]  # the most recently used
    assert cache.fetch("09" + "0" * 62, str(tmp_path / "y.o")) and not cache.fetch("00" + "0" * 62, str(obj))


def test_c_objects_are_keyed_by_what_the_preprocessor_reads(tmp_path):
    """C objects are keyed by the preprocessed source, so the same headers at another path (pip's
    isolated NumPy) reuse them and a changed header, macro or flag does not."""
    setup = load_setup()
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")

    class Compiler:  # the part of a distutils compiler that setup.py's wrapper uses
        compiler_so = ["gcc", "-fPIC"]
        calls = 0

        def _compile(self, obj, src, ext, cc_args, extra_postargs, pp_opts):
            Compiler.calls += 1
            subprocess.run(self.compiler_so + cc_args + [src, "-o", obj] + extra_postargs, check=True)

    (tmp_path / "a.c").write_text('#include "h.h"\nint f(void) { return H + X; }\n')
    for inc in ("inc1", "inc2"):
        (tmp_path / inc).mkdir()
        (tmp_path / inc / "h.h").write_text("#define H 1\n")
    cache = setup.ObjectCache(str(tmp_path / "cache"))
    compile_one = setup.cached_c_compile(Compiler(), cache, debug=False)

    def build(inc="inc1", macro="-DX=2", flags=("-O2",)):
        before = Compiler.calls
        obj = tmp_path / f"o{len(list(tmp_path.glob('o*.o')))}.o"
        pp = [f"-I{tmp_path / inc}", macro]
        compile_one(str(obj), str(tmp_path / "a.c"), ".c", pp + ["-c"], list(flags), pp)
        return Compiler.calls - before

    assert build() == 1
    assert build() == 0
    assert build(inc="inc2") == 0  # the same header elsewhere
    assert build(macro="-DX=3") == 1
    assert build(flags=("-O3",)) == 1
    (tmp_path / "inc2" / "h.h").write_text("#define H 2\n")
    assert build(inc="inc2") == 1
    assert build(inc="inc1") == 0


def test_progress_reaches_the_terminal_while_pip_hides_the_output(fake_cuda, tmp_path):
    """pip captures a build's output (shown with -v); the CUDA files' progress lines go to the
    terminal too: here a pseudo-terminal is the build's controlling terminal, stderr a pipe."""
    pty = pytest.importorskip("pty")
    import termios
    root = checkout_or_skip()
    nvcc, src, compiled = fake_cuda
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('s', {str(root / 'setup.py')!r})\n"
            "s = importlib.util.module_from_spec(spec); spec.loader.exec_module(s)\n"
            f"s.compile_cuda({nvcc!r}, ['-O3'], [{str(src / 'a.cu')!r}, {str(src / 'b.cu')!r}], [], "
            f"{str(tmp_path / 'build')!r}, None, jobs=1, threads=1)\n")
    master, slave = pty.openpty()

    def controlling_terminal():  # in the child: a new session whose terminal is the pty (stdin)
        os.setsid()
        import fcntl
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        run = subprocess.run([sys.executable, "-c", code], stdin=slave, capture_output=True, text=True,
                             preexec_fn=controlling_terminal, timeout=120)
    finally:
        os.close(slave)
    screen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer has closed the pty
            break
        if not chunk:
            break
        screen += chunk
    os.close(master)
    assert run.returncode == 0, run.stderr
    screen = screen.decode(errors="replace")
    for line in ("[1/2] ", "[2/2] ", "compiling 2 CUDA files"):
        assert line in run.stderr, run.stderr  # pip -v and CI logs have them
        assert line in screen, screen
    assert compiled() == ["a.cu", "b.cu"]


def test_c_sources_compile_without_warnings(tmp_path):
    """Every C file, compiled with the build's own flags (CPU-only configuration), warns about
    nothing: a warning at every build (vector.c's -Wpsabi was one) hides the one that matters."""
    setup = load_setup()
    import sysconfig
    from concurrent.futures import ThreadPoolExecutor
    import numpy as np
    cc = sysconfig.get_config_var("CC") or "gcc"
    if shutil.which(cc.split()[0]) is None:
        pytest.skip(f"{cc} is not installed")
    includes = [f"-I{np.get_include()}", f"-I{sysconfig.get_paths()['include']}"]
    macros = ["-DNPY_NO_DEPRECATED_API=NPY_1_25_API_VERSION", "-DNPY_TARGET_VERSION=NPY_1_25_API_VERSION"]
    sources = sorted((ROOT / "csrc").glob("*.c")) + sorted((ROOT / "csrc" / "cpu").glob("*.c"))

    def warnings_of(src):
        cmd = [*cc.split(), "-fPIC", *macros, *includes, *setup.c_flags(False), "-c", str(src), "-o",
               str(tmp_path / f"{src.parent.name}_{src.stem}.o")]
        run = subprocess.run(cmd, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return run.stderr.strip()

    with ThreadPoolExecutor(max_workers=setup.cpu_count()) as pool:
        found = {src.relative_to(ROOT).as_posix(): w for src, w in zip(sources, pool.map(warnings_of, sources)) if w}
    assert not found, "\n".join(found.values())


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


def test_default_archs_are_one_per_major_version():
    """A cubin for X.y runs on every X.z GPU with z >= y: a second arch of one major version
    compiles every kernel again for no GPU that could not run the first one's code."""
    archs = [int(a) for a in load_setup().DEFAULT_ARCHS]
    majors = [a // 10 for a in archs]
    assert archs == sorted(archs) and len(set(majors)) == len(majors), archs
    assert 75 in archs and 90 in archs  # Turing (the tutorial's T4) up to Hopper, PTX beyond


def test_archs_default_to_this_machine_s_gpus(tmp_path, monkeypatch):
    """No CUATOMIC_CUDA_ARCHS: the GPUs nvidia-smi lists (one arch compiles in half the time), where
    this nvcc offers them all; a GPU this nvcc cannot target or one older than Turing (the kernels
    need sm_70), or "all": every GPU from Turing on; no GPU (none listed, an nvidia-smi that fails
    or says something else, none on the PATH) or "ptx": PTX for Turing only, no machine code. An
    explicit list is taken as it is. The PTX is for the newest arch with machine code."""
    setup = load_setup()
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    nvcc = bin_ / "nvcc"
    nvcc.write_text("#!/bin/sh\necho sm_61; echo sm_75; echo sm_80; echo sm_86; echo sm_90\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUATOMIC_CUDA_ARCHS", raising=False)
    every = (setup.DEFAULT_ARCHS, setup.DEFAULT_ARCHS[-1])
    ptx_only = ([], setup.PTX_ONLY)
    assert setup.PTX_ONLY == setup.DEFAULT_ARCHS[0]  # every GPU the defaults serve can compile it

    def smi(text, code=0):
        (bin_ / "nvidia-smi").write_text(f"#!/bin/sh\nprintf '{text}'\nexit {code}\n")
        (bin_ / "nvidia-smi").chmod(0o755)

    smi("9.0\n9.0\n")
    assert setup.cuda_archs(str(nvcc)) == (["90"], "90")
    smi("8.6\n9.0\n")
    assert setup.cuda_archs(str(nvcc)) == (["86", "90"], "90")
    for text in ["12.0\n", "6.1\n", "6.1\n9.0\n"]:
        smi(text)
        assert setup.cuda_archs(str(nvcc)) == every, text
    for text, code in [("", 0), ("No devices were found\n", 6), ("Field compute_cap is not a valid field\n", 2)]:
        smi(text, code)
        assert setup.cuda_archs(str(nvcc)) == ptx_only, text
    smi("9.0\n")
    monkeypatch.setenv("CUATOMIC_CUDA_ARCHS", "all")
    assert setup.cuda_archs(str(nvcc)) == every
    monkeypatch.setenv("CUATOMIC_CUDA_ARCHS", "80;90")
    assert setup.cuda_archs(str(nvcc)) == (["80", "90"], "90")
    monkeypatch.setenv("CUATOMIC_CUDA_ARCHS", " PTX ")
    assert setup.cuda_archs(str(nvcc)) == ptx_only
    (bin_ / "nvidia-smi").unlink()
    monkeypatch.setenv("PATH", str(bin_))  # no nvidia-smi anywhere (a GPU machine has one on its PATH)
    monkeypatch.delenv("CUATOMIC_CUDA_ARCHS")
    assert setup.cuda_archs(str(nvcc)) == ptx_only
    nvcc.write_text("#!/bin/sh\necho sm_80; echo sm_90; echo sm_100\n")  # an nvcc that dropped Turing
    assert setup.cuda_archs(str(nvcc)) == ([], "80")


def test_cuda_flags_embed_ptx_for_the_asked_compute_capability():
    """Machine code for each arch and PTX for one: the newest, or Turing's alone (no GPU at build
    time); nvcc's -O is the host code's level, the kernels are compiled as ptxas's default."""
    setup = load_setup()
    flags = setup.cuda_flags(["75", "80", "90"], "90", False, 13)
    gencode = [f for f in flags if f.startswith("-gencode")]
    assert gencode == ["-gencode=arch=compute_75,code=sm_75", "-gencode=arch=compute_80,code=sm_80",
                       "-gencode=arch=compute_90,code=sm_90", "-gencode=arch=compute_90,code=compute_90"]
    ptx = setup.cuda_flags([], "75", False, 13)
    assert [f for f in ptx if f.startswith("-gencode")] == ["-gencode=arch=compute_75,code=compute_75"]
    assert not any(f.startswith(("-Xptxas", "-dopt", "-G")) for f in flags + ptx)
