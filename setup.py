"""Build cuatomic._C: C files with the C compiler (+OpenMP), .cu files with nvcc.

Environment:
  CUATOMIC_CUDA=auto|0|1   auto (default): build the CUDA backend when nvcc is
                           found; 0: CPU only; 1: fail without nvcc.
  CUATOMIC_CUDA_ARCHS      e.g. "90" or "80;90": SM versions to compile machine
                           code for (default 75 80 86 89 90, intersected with
                           what this nvcc offers); PTX is added for the highest.
  CUDA_HOME / CUDA_PATH    where the CUDA toolkit is (else nvcc on PATH, else
                           /usr/local/cuda).
  CUATOMIC_DEBUG=1         keep debug info: -g for the C code and -lineinfo for
                           the kernels (Nsight Compute's source view), no
                           stripping, nvcc's default fatbin compression. The
                           default is a release build: no -g, no -lineinfo,
                           symbols stripped, and with nvcc 13 or newer the
                           kernels compressed for size (--compress-mode=size;
                           CUDA 13's runtime, linked in, needs driver R580
                           anyway; docs/release.md).
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from glob import glob

import numpy as np
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEFAULT_ARCHS = ["75", "80", "86", "89", "90"]


def log(msg):
    print(f"cuatomic setup: {msg}", file=sys.stderr, flush=True)


def find_cuda():
    """(cuda_home, nvcc) or (None, None)."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(var)
        if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
            return home, os.path.join(home, "bin", "nvcc")
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), nvcc
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        return "/usr/local/cuda", "/usr/local/cuda/bin/nvcc"
    return None, None


def cuda_archs(nvcc):
    wanted = os.environ.get("CUATOMIC_CUDA_ARCHS")
    wanted = re.findall(r"\d+", wanted) if wanted else DEFAULT_ARCHS
    try:
        out = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, check=True).stdout
        offered = set(re.findall(r"sm_(\d+)", out))
    except (OSError, subprocess.CalledProcessError):
        offered = set(wanted)
    archs = sorted((a for a in wanted if a in offered), key=int)
    if not archs:
        raise SystemExit(f"cuatomic setup: none of the archs {wanted} is offered by {nvcc}")
    return archs


def cuda_libdir(home):
    for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
        if os.path.exists(os.path.join(home, sub, "libcudart_static.a")):
            return os.path.join(home, sub)
    raise SystemExit(f"cuatomic setup: libcudart_static.a not found under {home}")


def nvcc_major(nvcc):
    """This nvcc's major version (0 if it cannot say)."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return 0
    m = re.search(r"release (\d+)\.", out)
    return int(m.group(1)) if m else 0


DEBUG = os.environ.get("CUATOMIC_DEBUG", "0").strip() not in ("", "0")
MODE = os.environ.get("CUATOMIC_CUDA", "auto").strip().lower()
if MODE not in ("auto", "0", "1"):
    raise SystemExit(f"cuatomic setup: CUATOMIC_CUDA must be auto, 0 or 1 (got {MODE!r})")
CUDA_HOME, NVCC = (None, None) if MODE == "0" else find_cuda()
if MODE == "1" and not NVCC:
    raise SystemExit("cuatomic setup: CUATOMIC_CUDA=1 but nvcc was not found (set CUDA_HOME)")
ARCHS = cuda_archs(NVCC) if NVCC else []
# Why a build has no CUDA, as the module says it (backend_info()["cuda"]["reason"]).
if MODE == "0":
    WHY = "CUATOMIC_CUDA=0 asked for a CPU-only build: reinstall without it to build the CUDA backend"
else:
    WHY = ("nvcc was not found at install time (not under CUDA_HOME or CUDA_PATH, on PATH, or in "
           "/usr/local/cuda): install the CUDA toolkit, or set CUDA_HOME, and reinstall")
if NVCC:
    log(f"building the CUDA backend with {NVCC} for sm_{', sm_'.join(ARCHS)} (+PTX compute_{ARCHS[-1]})")
else:
    log(f"building the CPU backend only -- the cuda backend will not be available: {WHY}")

define_macros = [
    ("NPY_NO_DEPRECATED_API", "NPY_1_25_API_VERSION"),
    ("NPY_TARGET_VERSION", "NPY_1_25_API_VERSION"),
]
libraries, library_dirs, cu_sources = ["m"], [], []  # fma, isnormal: libm, named, not borrowed from Python
if NVCC:
    define_macros += [("CUATOMIC_WITH_CUDA", "1"), ("CUATOMIC_CUDA_ARCHS", '"' + ",".join(ARCHS) + '"')]
    library_dirs = [cuda_libdir(CUDA_HOME)]
    # The static runtime: the module imports on machines without a driver
    # (libcuda is loaded on first use), and never links -lcuda.
    libraries += ["cudart_static", "stdc++", "dl", "pthread", "rt"]
    cu_sources = sorted(glob("cuda/*.cu"))
else:
    define_macros.append(("CUATOMIC_NO_CUDA_WHY", '"' + WHY.replace('"', "'") + '"'))


class BuildExt(build_ext):
    """Compile cuda/*.cu with nvcc into objects linked into the extension."""

    def build_extensions(self):
        os.makedirs(self.build_temp, exist_ok=True)
        # build_ext skips an extension that is newer than its sources, so a build
        # dir reused with another CUATOMIC_CUDA or arch choice would ship the old
        # configuration: a changed configuration forces the C files and the link.
        config = repr((NVCC, ARCHS, [(e.name, e.define_macros, e.extra_compile_args, e.extra_link_args)
                                     for e in self.extensions]))
        stamp = os.path.join(self.build_temp, "cuatomic-config.txt")
        try:
            with open(stamp) as f:
                self.force = self.force or f.read() != config
        except OSError:
            self.force = True
        if cu_sources:
            gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in ARCHS]
            gencode.append(f"-gencode=arch=compute_{ARCHS[-1]},code=compute_{ARCHS[-1]}")
            headers = glob("cuda/*.h") + glob("cuda/*.cuh")

            # Hidden by default: CUB, libcu++ and NVTX statics would otherwise be
            # exported and bind to (or be bound from) CuPy's or PyTorch's copies.
            # A release build carries no line tables and compresses the fatbin for size
            # (sm_90 + PTX: 2.7 MB of sum.cu's object with -lineinfo, 0.6 MB so).
            # Older nvccs (12.8, 12.9) offer the mode too, but their runtime runs on older
            # drivers than the mode needs: there nvcc's default compression is kept.
            release = [] if DEBUG else (["--compress-mode=size"] if nvcc_major(NVCC) >= 13 else [])
            flags = ["-std=c++17", "-O3", *(["-lineinfo"] if DEBUG else release), "--threads", "2",
                     "-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden", *gencode]
            # Objects are reused only when built from the same flags and newer than their sources.
            tag = hashlib.sha1(" ".join([NVCC, *flags]).encode()).hexdigest()[:10]

            def compile_one(src):
                obj = os.path.join(self.build_temp, f"{os.path.basename(src)}.{tag}.o")
                deps = [src] + headers
                if os.path.exists(obj) and all(os.path.getmtime(obj) >= os.path.getmtime(d) for d in deps):
                    return obj
                cmd = [NVCC, *flags, "-c", src, "-o", obj]
                log(" ".join(cmd))
                subprocess.run(cmd, check=True)
                return obj

            with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
                objects = list(pool.map(compile_one, cu_sources))
            for ext in self.extensions:
                ext.extra_objects = list(ext.extra_objects or []) + objects
        super().build_extensions()
        with open(stamp, "w") as f:
            f.write(config)


ext = Extension(
    "cuatomic._C",
    sources=sorted(glob("csrc/*.c") + glob("csrc/cpu/*.c")),
    include_dirs=[np.get_include()],
    define_macros=define_macros,
    libraries=libraries,
    library_dirs=library_dirs,
    # Only PyInit__C (PyMODINIT_FUNC marks it visible) is exported: hidden
    # visibility for our code, nothing re-exported from the static CUDA
    # runtime or any other archive, and csrc/exports.map for what escapes
    # both. Peers loaded into the same process (CuPy, PyTorch, Numba) then
    # never resolve a symbol to ours.
    # -g0 after Python's own -g: a release build carries no debug info (CUATOMIC_DEBUG=1 keeps it).
    extra_compile_args=["-std=gnu11", "-O3", "-fopenmp", "-ffp-contract=off", "-Wall", "-Wno-unused-function",
                        "-fvisibility=hidden", *(["-g"] if DEBUG else ["-g0"])],
    extra_link_args=["-fopenmp", "-Wl,--exclude-libs,ALL", "-Wl,--version-script=csrc/exports.map",
                     *([] if DEBUG else ["-Wl,--strip-all"])],
    # The CUDA sources too: a changed kernel must relink the extension.
    depends=glob("csrc/*.h") + glob("csrc/cpu/*.h") + glob("cuda/*.h") + glob("cuda/*.cuh") + glob("cuda/*.cu")
    + ["csrc/exports.map"],
)

setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt})
