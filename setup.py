"""Build cuatomic._C: C files with the C compiler (+OpenMP), .cu files with nvcc.

Environment:
  CUATOMIC_CUDA=auto|0|1   auto (default): build the CUDA backend when nvcc is
                           found; 0: CPU only; 1: fail without nvcc.
  CUATOMIC_CUDA_ARCHS      e.g. "90" or "80;90": SM versions to compile machine
                           code for, intersected with what this nvcc offers;
                           PTX is added for the highest. "all": 75 80 90,
                           every GPU from Turing on (what a wheel to share or
                           a Docker image built without a GPU needs). "ptx":
                           PTX for compute_75 only, which the driver compiles
                           for the GPU at first use. sm_80 code runs on every
                           8.x GPU (8.6, 8.9 too): "75 80 86 89 90" adds code
                           tuned for those. Default: the GPUs this machine has
                           (nvidia-smi), as PyTorch's extensions do -- one
                           arch compiles in half the time; a GPU no arch of
                           this nvcc fits: "all"; no GPU at all: "ptx" (a
                           fifth of "all"'s compile time; the machine cannot
                           run the cuda backend anyway).
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
  CUATOMIC_BUILD_CACHE     where compiled objects are kept for the next build
                           (default $XDG_CACHE_HOME/cuatomic/objects, else
                           ~/.cache/cuatomic/objects; 0: no cache). See
                           ObjectCache: an object is reused only when every
                           input of its compilation is the same.

pip hides a build's output unless -v is given, and the CUDA kernels take
minutes the first time: the progress lines (one per CUDA file) also go to
the terminal, when there is one.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from glob import glob

#: One arch per major version: a cubin for X.y runs on every X.z with z >= y,
#: so sm_80's code runs on 8.6 and 8.9 GPUs (the kernels test only
#: __CUDA_ARCH__ >= 800); compute_90's PTX is JIT-compiled for newer ones. Every
#: arch costs a whole device compilation of every file: sm_86 and sm_89 took
#: about 28% of the CUDA files' compile time (nvcc --time, 2-core machine).
DEFAULT_ARCHS = ["75", "80", "90"]
#: A build on a machine without a GPU embeds PTX for Turing only: no ptxas
#: at build time (cicc alone: about a fifth of DEFAULT_ARCHS' compile time);
#: every GPU from Turing on compiles it at its first use, and the driver
#: keeps the result (~/.nv/ComputeCache).
PTX_ONLY = "75"
#: The object cache's bound: the least recently used objects go first. One
#: configuration's objects take about 6 MB (default archs, release).
CACHE_MAX_BYTES = 256 << 20
#: The CUDA files that take longest to compile, longest first (CPU seconds
#: for the default archs, nvcc --time, 2-core machine: weighted.cu about 70,
#: cub.cu 65, reduce.cu 50, histogram.cu 45, filter.cu 30, sum.cu 25 ...; the
#: others under 25, most under 5). They are started first, the rest after
#: them in name order, then the C files: the short ones fill the cores at the
#: end, where in name order weighted.cu (the last) compiled alone for ~40 s.
#: A file not named here only starts later; nothing else depends on it.
CUDA_LONGEST_FIRST = ("weighted.cu", "cub.cu", "reduce.cu", "histogram.cu", "filter.cu", "sum.cu", "exact.cu",
                      "scatter.cu", "dot.cu")


def log(msg):
    print(f"cuatomic setup: {msg}", file=sys.stderr, flush=True)


_terminal = []


def progress(msg):
    """log(msg), and the same line on the terminal when stderr is not it.

    pip runs the build with its output captured (shown only with -v or on
    failure), so a first build would otherwise be minutes of silence.
    Without a controlling terminal (CI, tests) this is log().
    """
    log(msg)
    if not _terminal:
        tty = None
        if not sys.stderr.isatty():
            try:
                tty = open("/dev/tty", "w")
            except OSError:
                pass
        _terminal.append(tty)
    if _terminal[0] is not None:
        try:
            _terminal[0].write(f"cuatomic setup: {msg}\n")
            _terminal[0].flush()
        except OSError:
            _terminal[0] = None


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


def local_archs():
    """The compute capabilities of this machine's GPUs ("90" for 9.0), from
    nvidia-smi (no CUDA context, a fraction of a second); [] without one."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted({m[0] + m[1] for m in re.findall(r"^\s*(\d+)\.(\d)\s*$", out, re.M)}, key=int)


def cuda_archs(nvcc):
    """What to compile for: (SM versions of machine code, ascending; the
    compute capability of the PTX). CUATOMIC_CUDA_ARCHS: a list, "all"
    (DEFAULT_ARCHS) or "ptx" (PTX_ONLY); else this machine's GPUs, where
    this nvcc offers them all and none is older than the defaults' first,
    Turing; a GPU that does not fit: DEFAULT_ARCHS (a Pascal GPU keeps
    them, and the module says at run time that it has no code for it);
    no GPU: PTX_ONLY. Only the SM versions this nvcc offers are kept."""
    try:
        out = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, check=True).stdout
        offered = set(re.findall(r"sm_(\d+)", out))
    except (OSError, subprocess.CalledProcessError):
        offered = None
    asked = os.environ.get("CUATOMIC_CUDA_ARCHS", "").strip().lower()
    # PTX for Turing, or for the oldest arch a later nvcc still offers
    ptx_only = PTX_ONLY if offered is None or PTX_ONLY in offered else \
        min((a for a in offered if int(a) >= int(PTX_ONLY)), key=int, default=PTX_ONLY)
    if asked == "ptx":
        return [], ptx_only
    if asked and asked != "all":
        wanted = re.findall(r"\d+", asked)
    else:
        here = [] if asked else local_archs()
        if not asked and not here:
            progress(f"no GPU found (nvidia-smi): building the CUDA backend as PTX for "
                     f"compute_{ptx_only} only, which the driver compiles for a GPU at its first use (seconds "
                     "per CUDA file, cached by the driver); CUATOMIC_CUDA_ARCHS=all builds machine code for "
                     "every GPU from Turing on (a wheel to share, a Docker image)")
            return [], ptx_only
        usable = here and min(map(int, here)) >= int(DEFAULT_ARCHS[0])  # the kernels need sm_70's intrinsics
        wanted = here if usable and (offered is None or set(here) <= offered) else DEFAULT_ARCHS
        if wanted != DEFAULT_ARCHS:
            progress(f"building for this machine's GPUs (sm_{', sm_'.join(wanted)}); "
                     "CUATOMIC_CUDA_ARCHS=all builds for every GPU from Turing on")
    archs = sorted((a for a in wanted if offered is None or a in offered), key=int)
    if not archs:
        raise SystemExit(f"cuatomic setup: none of the archs {wanted} is offered by {nvcc}")
    return archs, archs[-1]


def cuda_libdir(home):
    for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
        if os.path.exists(os.path.join(home, sub, "libcudart_static.a")):
            return os.path.join(home, sub)
    raise SystemExit(f"cuatomic setup: libcudart_static.a not found under {home}")


def nvcc_major(nvcc):
    """This nvcc's major version (0 if it cannot say)."""
    m = re.search(r"release (\d+)\.", _output([nvcc, "--version"]))
    return int(m.group(1)) if m else 0


def cpu_count():
    """The cores this process may run on (a container's or taskset's share)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _output(cmd):
    """A command's stdout and stderr, '' when it cannot run."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout + proc.stderr


# ------------------------------------------------------------ object cache

def cache_dir():
    """Where objects are kept between builds, or None (CUATOMIC_BUILD_CACHE=0).

    Per user, outside the source tree: pip builds an editable install in a
    fresh temporary directory each time, so objects kept in the build
    directory are never seen by the next `pip install`.
    """
    explicit = os.environ.get("CUATOMIC_BUILD_CACHE", "").strip()
    if explicit:
        return None if explicit == "0" else explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cuatomic", "objects")


def tool_identity(path):
    """What decides a compiler's output besides its arguments: its real
    path and what it says its version is."""
    real = os.path.realpath(shutil.which(path) or path)
    return f"{real}\n{_output([real, '--version'])}"


def nvcc_identity(nvcc):
    """nvcc's identity, the host compiler's it runs (NVCC_CCBIN, else g++
    and gcc on PATH, as nvcc picks them) and the flags nvcc adds from the
    environment."""
    host = os.environ.get("NVCC_CCBIN")
    hosts = [host] if host else ["g++", "gcc"]
    env = [f"{k}={os.environ.get(k, '')}" for k in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN")]
    return "\n".join([tool_identity(nvcc), *(tool_identity(h) for h in hosts), *env])


def object_key(identity, argv, inputs):
    """sha256 of everything an object is made from.

    Parameters
    ----------
    identity : str
        The compiler's identity (tool_identity, nvcc_identity).
    argv : list of str
        The flags, without the source and object names.
    inputs : list of (str, bytes)
        The files it reads, named: for a .cu file its source and every
        header of cuda/ (the toolkit's own headers are the identity's);
        for a C file the preprocessed source, which holds every header.
    """
    h = hashlib.sha256()
    for part in (identity, *argv):
        h.update(part.encode() + b"\0")
    for name, data in inputs:
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


class ObjectCache:
    """Compiled objects by key (object_key), in a directory shared by every
    build of this user: two `pip install`s of an unchanged tree compile
    once. A key covers the compiler, the flags and the bytes of every
    input, so an object is never reused for another configuration. Kept
    below max_bytes by dropping the least recently used objects; every
    failure to read or write the cache only costs a compilation.
    """

    def __init__(self, root, max_bytes=CACHE_MAX_BYTES):
        self.root, self.max_bytes = root, max_bytes

    def path(self, key):
        return os.path.join(self.root, key[:2], key + ".o")

    def fetch(self, key, dest):
        """Copy the object of `key` to dest; False when there is none."""
        src = self.path(key)
        try:
            _copy_atomically(src, dest)
            os.utime(src)  # its last use: prune drops the oldest
            return True
        except OSError:
            return False

    def store(self, key, obj):
        try:
            _copy_atomically(obj, self.path(key))
            self.prune()
        except OSError as e:
            log(f"could not keep {obj} in the object cache {self.root} ({e})")

    def prune(self):
        files = []
        for path in glob(os.path.join(self.root, "*", "*.o")):
            try:
                st = os.stat(path)
            except OSError:
                continue
            files.append((st.st_mtime, st.st_size, path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.max_bytes:
                break
            try:
                os.remove(path)
                total -= size
            except OSError:
                pass


def _copy_atomically(src, dest):
    """Copy src to dest so that no reader (a concurrent build) sees half a file."""
    os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dest) or ".", suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def c_flags(debug):
    """The C files' flags (after Python's own: -g0 after its -g, so that a release
    build carries no debug info; CUATOMIC_DEBUG=1 keeps it)."""
    return ["-std=gnu11", "-O3", "-fopenmp", "-ffp-contract=off", "-Wall", "-Wno-unused-function",
            "-fvisibility=hidden", *(["-g"] if debug else ["-g0"])]


def cuda_flags(archs, ptx, debug, major):
    """nvcc's flags for the archs (SM versions of machine code, ascending;
    maybe none), the PTX's compute capability, a debug or a release build,
    and nvcc's major version."""
    gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    gencode.append(f"-gencode=arch=compute_{ptx},code=compute_{ptx}")
    # Hidden by default: CUB, libcu++ and NVTX statics would otherwise be
    # exported and bind to (or be bound from) CuPy's or PyTorch's copies.
    # A release build carries no line tables and compresses the fatbin for size
    # (sm_90 + PTX: 2.7 MB of sum.cu's object with -lineinfo, 0.6 MB so).
    # Older nvccs (12.8, 12.9) offer the mode too, but their runtime runs on older
    # drivers than the mode needs: there nvcc's default compression is kept.
    release = [] if debug else (["--compress-mode=size"] if major >= 13 else [])
    # nvcc's -O is the host compiler's level only (the device code is the same
    # bytes at -O0 and -O3): these files' host code checks and launches, and
    # -O1 compiles it in half of -O3's time (weighted.cu: 8.6 s against 16 s).
    return ["-std=c++17", "-O1", *(["-lineinfo"] if debug else release),
            "-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden", *gencode]


def cuda_order(sources):
    """sources in the order they are started: CUDA_LONGEST_FIRST's, then the others by name."""
    rank = {name: i for i, name in enumerate(CUDA_LONGEST_FIRST)}
    return sorted(sources, key=lambda s: (rank.get(os.path.basename(s), len(rank)), s))


def queue_cuda(nvcc, flags, sources, headers, build_temp, pool, jobs, cache=None, threads=None):
    """Queue the compilation of every .cu source with nvcc into build_temp
    on `pool` (an executor of `jobs` workers, which the C files may share),
    longest first (cuda_order), or take its object from the cache. Returns
    the objects' paths in the order of sources (each named by its key: a
    changed input gives a new name) and a function that waits for them and
    returns those paths.

    Each nvcc compiles its archs `threads` at a time (nvcc --threads;
    default: the cores); a line per source says what it cost. Neither the
    order nor the threads change an object, so neither is in its key.
    """
    os.makedirs(build_temp, exist_ok=True)
    identity = nvcc_identity(nvcc)
    shared = [(os.path.basename(h), _read(h)) for h in sorted(headers)]
    keys = {src: object_key(identity, flags, [(os.path.basename(src), _read(src)), *shared]) for src in sources}
    objects = {src: os.path.join(build_temp, f"{os.path.basename(src)}.{keys[src][:16]}.o") for src in sources}
    todo = []
    for src in sources:
        obj = objects[src]
        if os.path.exists(obj) or (cache and cache.fetch(keys[src], obj)):
            continue
        todo.append(src)
    if len(todo) < len(sources):
        log(f"{len(sources) - len(todo)} of {len(sources)} CUDA objects reused"
            + (f" (object cache {cache.root})" if cache else ""))
    paths = [objects[s] for s in sources]
    if not todo:
        return paths, lambda: paths
    threads = threads or cpu_count()
    progress(f"compiling {len(todo)} CUDA files, {jobs} at a time: minutes the first time, the objects are kept "
             f"for the next build{f' in {cache.root}' if cache else ''} (CUATOMIC_CUDA_ARCHS=90, say: one arch only)")
    done, lock, t0 = [], threading.Lock(), time.monotonic()

    def one(src):
        start, obj = time.monotonic(), objects[src]
        cmd = [nvcc, *flags, "--threads", str(threads), "-c", src, "-o", obj + ".part"]
        log(" ".join(cmd))
        subprocess.run(cmd, check=True)
        os.replace(obj + ".part", obj)  # an interrupted build leaves no object that looks whole
        if cache:
            cache.store(keys[src], obj)
        with lock:
            done.append(src)
            progress(f"[{len(done)}/{len(todo)}] {src} compiled in {time.monotonic() - start:.0f} s "
                     f"({time.monotonic() - t0:.0f} s so far)")

    futures = [pool.submit(one, src) for src in cuda_order(todo)]

    def wait():
        for f in futures:
            f.result()  # the first failure is raised here
        return paths

    return paths, wait


def compile_cuda(nvcc, flags, sources, headers, build_temp, cache=None, jobs=None, threads=None):
    """Compile every .cu source (queue_cuda), `jobs` at a time (default:
    the cores); returns the objects in the order of sources."""
    jobs = max(1, jobs or cpu_count())
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return queue_cuda(nvcc, flags, sources, headers, build_temp, pool, jobs, cache, threads)[1]()


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def cached_c_compile(compiler, cache, debug):
    """Wrap a distutils compiler's _compile (one C file to one object) with
    the object cache. The key holds the preprocessed source (every header
    included, Python's and NumPy's too), the flags but the include paths
    (pip's isolated build puts NumPy's headers in a new directory each
    time; their contents are in the preprocessed source) and the
    compiler's identity. A debug build keeps the line markers, whose paths
    its debug info names; a release build has none (-g0)."""
    original = compiler._compile
    identity = tool_identity(compiler.compiler_so[0])

    def _compile(obj, src, ext, cc_args, extra_postargs, pp_opts):
        flags = [*compiler.compiler_so, *cc_args, *extra_postargs]
        pre = [a for a in flags if a != "-c"] + ["-E", *([] if debug else ["-P"]), src]
        try:
            preprocessed = subprocess.run(pre, capture_output=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return original(obj, src, ext, cc_args, extra_postargs, pp_opts)  # its error comes from the compile
        key = object_key(identity, [a for a in flags if not a.startswith("-I")], [("c", preprocessed)])
        if cache.fetch(key, obj):
            return True
        original(obj, src, ext, cc_args, extra_postargs, pp_opts)
        cache.store(key, obj)
        return False

    return _compile


def parallel_compile(compiler, pool, jobs, then=None, after_cuda=False):
    """Make a distutils compiler's compile() run its files on `pool` (an
    executor of `jobs` workers; distutils runs them one by one): the calls
    to _compile are collected, then queued there (`after_cuda`: behind the
    CUDA files queued first) and waited for; then `then()`, if given,
    before compile() returns and the extension is linked."""
    original_compile, one = compiler.compile, compiler._compile

    def compile(*args, **kwargs):
        calls = []
        compiler._compile = lambda *a: calls.append(a)
        try:
            objects = original_compile(*args, **kwargs)
        finally:
            compiler._compile = one
        progress(f"compiling {len(calls)} C files (or taking them from the object cache), {jobs} at a time"
                 + (", as the CUDA files end" if after_cuda else ""))
        futures = [pool.submit(one, *a) for a in calls]
        reused = sum(1 for f in futures if f.result())  # True: from the object cache
        if reused:
            log(f"{reused} of {len(calls)} C objects reused (object cache)")
        if then:
            then()
        return objects

    compiler.compile = compile


# ----------------------------------------------------------------- the build

def main():
    import numpy as np
    from setuptools import Extension, setup
    from setuptools.command.build_ext import build_ext

    debug = os.environ.get("CUATOMIC_DEBUG", "0").strip() not in ("", "0")
    mode = os.environ.get("CUATOMIC_CUDA", "auto").strip().lower()
    if mode not in ("auto", "0", "1"):
        raise SystemExit(f"cuatomic setup: CUATOMIC_CUDA must be auto, 0 or 1 (got {mode!r})")
    cuda_home, nvcc = (None, None) if mode == "0" else find_cuda()
    if mode == "1" and not nvcc:
        raise SystemExit("cuatomic setup: CUATOMIC_CUDA=1 but nvcc was not found (set CUDA_HOME)")
    archs, ptx = cuda_archs(nvcc) if nvcc else ([], "")
    # Why a build has no CUDA, as the module says it (backend_info()["cuda"]["reason"]).
    if mode == "0":
        why = "CUATOMIC_CUDA=0 asked for a CPU-only build: reinstall without it to build the CUDA backend"
    else:
        why = ("nvcc was not found at install time (not under CUDA_HOME or CUDA_PATH, on PATH, or in "
               "/usr/local/cuda): install the CUDA toolkit, or set CUDA_HOME, and reinstall")
    if nvcc:
        code = f"sm_{', sm_'.join(archs)} (+PTX compute_{ptx})" if archs else f"PTX compute_{ptx} only"
        log(f"building the CUDA backend with {nvcc} for {code}")
    else:
        log(f"building the CPU backend only -- the cuda backend will not be available: {why}")
    root = cache_dir()
    cache = ObjectCache(root) if root else None

    define_macros = [
        ("NPY_NO_DEPRECATED_API", "NPY_1_25_API_VERSION"),
        ("NPY_TARGET_VERSION", "NPY_1_25_API_VERSION"),
    ]
    libraries, library_dirs, cu_sources = ["m"], [], []  # fma, isnormal: libm, named, not borrowed from Python
    if nvcc:
        define_macros += [("CUATOMIC_WITH_CUDA", "1"), ("CUATOMIC_CUDA_ARCHS", '"' + ",".join(archs) + '"'),
                          ("CUATOMIC_CUDA_PTX", f'"{ptx}"')]
        library_dirs = [cuda_libdir(cuda_home)]
        # The static runtime: the module imports on machines without a driver
        # (libcuda is loaded on first use), and never links -lcuda.
        libraries += ["cudart_static", "stdc++", "dl", "pthread", "rt"]
        cu_sources = sorted(glob("cuda/*.cu"))
    else:
        define_macros.append(("CUATOMIC_NO_CUDA_WHY", '"' + why.replace('"', "'") + '"'))

    class BuildExt(build_ext):
        """Compile cuda/*.cu with nvcc into objects linked into the extension;
        the C files in parallel; both through the object cache."""

        def build_extensions(self):
            os.makedirs(self.build_temp, exist_ok=True)
            if cache and hasattr(self.compiler, "compiler_so"):  # a Unix compiler: gcc -E gives the key
                self.compiler._compile = cached_c_compile(self.compiler, cache, debug)
            # One pool, one job per core: the CUDA files are queued first, longest first, the C
            # files behind them, so that the short ones keep both cores busy to the end. The
            # CUDA objects join the extension's once its C files are compiled, before the link.
            jobs = max(1, cpu_count())
            pool = ThreadPoolExecutor(max_workers=jobs)
            try:
                cuda_paths, cuda_objects = [], lambda: []
                if cu_sources:
                    headers = glob("cuda/*.h") + glob("cuda/*.cuh")
                    flags = cuda_flags(archs, ptx, debug, nvcc_major(nvcc))
                    cuda_paths, cuda_objects = queue_cuda(nvcc, flags, cu_sources, headers, self.build_temp, pool,
                                                          jobs, cache)
                # build_ext skips an extension that is newer than its sources (it does not look
                # at extra objects), so a build dir reused with another CUATOMIC_CUDA or arch
                # choice, or a changed .cu file, would ship the old code: a changed configuration
                # or CUDA object (named by its inputs' key) forces the C files and the link.
                config = repr((nvcc, archs, ptx, cuda_paths,
                               [(e.name, e.define_macros, e.extra_compile_args, e.extra_link_args)
                                for e in self.extensions]))
                stamp = os.path.join(self.build_temp, "cuatomic-config.txt")
                try:
                    with open(stamp) as f:
                        self.force = self.force or f.read() != config
                except OSError:
                    self.force = True
                added = []

                def add_cuda_objects():
                    if not added:
                        added.extend(cuda_objects())
                        for ext in self.extensions:
                            ext.extra_objects = list(ext.extra_objects or []) + added

                parallel_compile(self.compiler, pool, jobs, then=add_cuda_objects, after_cuda=bool(cu_sources))
                super().build_extensions()
                cuda_objects()  # an extension that was up to date did not wait: a failed file still fails the build
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)  # nothing new starts; the running ones end
                raise
            pool.shutdown()
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
        extra_compile_args=c_flags(debug),
        extra_link_args=["-fopenmp", "-Wl,--exclude-libs,ALL", "-Wl,--version-script=csrc/exports.map",
                         *([] if debug else ["-Wl,--strip-all"])],
        # The CUDA sources too: a changed kernel must relink the extension.
        depends=glob("csrc/*.h") + glob("csrc/cpu/*.h") + glob("cuda/*.h") + glob("cuda/*.cuh") + glob("cuda/*.cu")
        + ["csrc/exports.map"],
    )

    setup(ext_modules=[ext], cmdclass={"build_ext": BuildExt})


# setuptools runs this file as __main__ (pip, python setup.py); the tests import it for its helpers.
if __name__ == "__main__":
    main()
