import dataclasses
from typing import Any, Literal, NamedTuple, Sequence, SupportsIndex, TypedDict

import numpy as np
import numpy.typing as npt

from . import datasets as datasets
from ._backend import Rung as _Rung
from .timing import BenchmarkResult as BenchmarkResult
from .timing import SweepRow as SweepRow

__version__: str
__all__ = [
    "UniqueAllResult",
    "UniqueCountsResult",
    "UniqueInverseResult",
    "unique",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "BenchmarkResult",
    "Choice",
    "CudaError",
    "ExactSum",
    "Stream",
    "SweepRow",
    "Timer",
    "benchmark",
    "sweep",
    "prod",
    "DeviceArray",
    "add_at",
    "add_one",
    "argmax",
    "argmin",
    "argwhere",
    "at",
    "backend_info",
    "bincount",
    "backends",
    "compress",
    "datasets",
    "dot",
    "explain",
    "filter",
    "flatnonzero",
    "free_memory",
    "histogram",
    "histogram2d",
    "histogramdd",
    "last_launch",
    "max",
    "mean",
    "memory_info",
    "methods",
    "min",
    "pinned_array",
    "pinned_empty",
    "mutex_add_one",
    "nonzero",
    "reduce",
    "reduceat",
    "sum",
    "to_device",
]

# Names for the stubs only (not at runtime: private, so stubtest passes them over).
_Backend = Literal["cuda", "cpu"]
_Op = Literal["sum", "dot", "histogram", "filter", "mutex_add_one", "add_one", "prod", "reduce", "weighted_histogram",
              "at", "argmin", "argmax", "nonzero", "flatnonzero", "argwhere", "compress", "histogramdd", "histogram2d", "segmented"]
_ExplainOp = _Op | Literal["bincount"]
_ReduceOp = Literal["add", "multiply", "minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor"]
_ScatterOp = Literal["add", "subtract", "multiply", "minimum", "maximum", "bitwise_and", "bitwise_or", "bitwise_xor"]
_CompareOp = Literal["<", "<=", ">", ">=", "==", "!="] | np.ufunc
_Axis = SupportsIndex | Sequence[SupportsIndex] | None

class CudaError(RuntimeError):
    code: int
    name: str
    def __init__(self, message: str, code: int = ..., name: str = ...) -> None: ...

@dataclasses.dataclass(frozen=True)
class Choice:
    op: str
    backend: str
    method: str | None
    reason: str
    facts: dict[str, Any]
    rung: _Rung | None = ...

class ExactSum:
    value: int
    special: int
    def __init__(self, value: int = 0, special: int = 0) -> None: ...
    @classmethod
    def from_words(cls, words: npt.ArrayLike, special: int) -> ExactSum: ...
    def add(self, a: Any, *, method: str = "exact", backend: _Backend | None = None, blocks: int | None = None,
            threads: int | None = None, stream: Any = None) -> ExactSum: ...
    def add_dot(self, a: Any, b: Any, *, method: str = "exact", backend: _Backend | None = None,
                blocks: int | None = None, threads: int | None = None, stream: Any = None) -> ExactSum: ...
    def merge(self, other: ExactSum) -> ExactSum: ...
    def __add__(self, other: ExactSum) -> ExactSum: ...
    def __eq__(self, other: object) -> bool: ...
    __hash__: None  # type: ignore[assignment]
    def __getstate__(self) -> tuple[int, int]: ...
    def __setstate__(self, state: tuple[int, int]) -> None: ...
    def result(self, dtype: npt.DTypeLike = ...) -> np.floating[Any]: ...
    def __float__(self) -> float: ...

def explain(op: _ExplainOp, *args: Any, backend: _Backend | None = None, stream: Any = None, **kwargs: Any) -> Choice: ...
def last_launch() -> dict[str, Any] | None: ...

class Stream:
    @property
    def ptr(self) -> int: ...
    def synchronize(self) -> None: ...
    def close(self) -> None: ...
    def __del__(self) -> None: ...

class DeviceArray:
    def __init__(self, buffer: Any, shape: int | Sequence[int], dtype: npt.DTypeLike) -> None: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def size(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def ndim(self) -> int: ...
    @property
    def device(self) -> int: ...
    @property
    def ptr(self) -> int: ...
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...
    @classmethod
    def empty(cls, shape: int | Sequence[int], dtype: npt.DTypeLike) -> DeviceArray: ...
    @classmethod
    def from_host(cls, a: npt.ArrayLike) -> DeviceArray: ...
    def copy_to_host(self) -> np.ndarray: ...
    def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def __array__(self, dtype: npt.DTypeLike | None = None, copy: bool | None = None) -> np.ndarray: ...
    def reshape(self, *shape: int | Sequence[int]) -> DeviceArray: ...
    def __len__(self) -> int: ...

_ArrayIn = npt.ArrayLike | DeviceArray

def pinned_empty(shape: int | Sequence[int], dtype: npt.DTypeLike = ...) -> np.ndarray: ...
def pinned_array(a: npt.ArrayLike) -> np.ndarray: ...
def backends() -> list[str]: ...
def backend_info() -> dict[str, Any]: ...
def methods(op: _Op, backend: _Backend | None = None) -> list[tuple[str, int, str]]: ...
class _MemoryInfo(TypedDict):
    in_use: int
    cached: int
    cache_limit: int
    pinned_host: int
    host_cached: int
    host_cache_limit: int

def memory_info(device: int | None = None) -> _MemoryInfo: ...
def free_memory(device: int | None = None) -> None: ...
def to_device(a: _ArrayIn, backend: _Backend | None = None, device: int | None = None) -> DeviceArray | np.ndarray: ...
def sum(
    a: _ArrayIn,
    axis: _Axis = None,
    *,
    dtype: npt.DTypeLike | None = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> Any: ...
def dot(
    a: _ArrayIn,
    b: _ArrayIn,
    *,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> np.generic: ...
def histogram(
    a: _ArrayIn,
    bins: int | str | npt.ArrayLike = 10,
    range: tuple[float, float] | None = None,
    *,
    weights: _ArrayIn | None = None,
    density: bool = False,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> tuple[np.ndarray | DeviceArray, np.ndarray]: ...
def bincount(
    x: _ArrayIn,
    weights: _ArrayIn | None = None,
    minlength: int = 0,
    *,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> np.ndarray | DeviceArray: ...
def filter(
    a: _ArrayIn,
    op: _CompareOp,
    value: Any,
    *,
    ordered: bool = True,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> np.ndarray | DeviceArray: ...
def mutex_add_one(
    blocks: int = 10, threads: int = 16, *, method: str = "auto", backend: _Backend | None = None, stream: Any = None
) -> int: ...
def add_one(
    blocks: int = 10, threads: int = 16, *, method: str = "auto", backend: _Backend | None = None, stream: Any = None
) -> int: ...
def prod(
    a: _ArrayIn,
    axis: _Axis = None,
    *,
    dtype: npt.DTypeLike | None = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> Any: ...
def argmin(
    a: _ArrayIn,
    axis: SupportsIndex | None = None,
    out: Any = None,
    *,
    keepdims: bool = False,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> Any: ...
def argmax(
    a: _ArrayIn,
    axis: SupportsIndex | None = None,
    out: Any = None,
    *,
    keepdims: bool = False,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> Any: ...
def nonzero(
    a: _ArrayIn,
    *,
    ordered: bool = True,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> tuple[np.ndarray, ...] | tuple[DeviceArray, ...]: ...
def flatnonzero(
    a: _ArrayIn,
    *,
    ordered: bool = True,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> np.ndarray | DeviceArray: ...
def argwhere(
    a: _ArrayIn,
    *,
    ordered: bool = True,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> np.ndarray | DeviceArray: ...
def compress(
    condition: _ArrayIn,
    a: Any,
    axis: SupportsIndex | None = None,
    *,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> np.ndarray | DeviceArray: ...
def histogramdd(
    sample: Any,
    bins: Any = 10,
    range: Sequence[tuple[float, float] | None] | None = None,
    density: bool | None = None,
    weights: Any = None,
    *,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> tuple[np.ndarray | DeviceArray, list[np.ndarray]]: ...
def histogram2d(
    x: _ArrayIn,
    y: _ArrayIn,
    bins: Any = 10,
    range: Sequence[tuple[float, float] | None] | None = None,
    density: bool | None = None,
    weights: Any = None,
    *,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> tuple[np.ndarray | DeviceArray, np.ndarray, np.ndarray]: ...
def reduce(
    a: _ArrayIn,
    op: _ReduceOp | np.ufunc,
    axis: _Axis = None,
    *,
    dtype: npt.DTypeLike | None = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> Any: ...
def at(
    a: Any,
    indices: Any,
    b: Any = None,
    op: _ScatterOp | np.ufunc = "add",
    *,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> None: ...
def add_at(
    a: Any,
    indices: Any,
    b: Any = None,
    *,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> None: ...
def reduceat(
    a: npt.ArrayLike,
    indices: npt.ArrayLike,
    op: _ScatterOp | np.ufunc = "add",
    *,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> np.ndarray: ...
def min(
    a: _ArrayIn,
    axis: _Axis = None,
    *,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> Any: ...
def max(
    a: _ArrayIn,
    axis: _Axis = None,
    *,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = None,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> Any: ...
def mean(
    a: _ArrayIn,
    axis: _Axis = None,
    dtype: npt.DTypeLike | None = None,
    out: Any = None,
    keepdims: bool = False,
    *,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> Any: ...

class Timer:
    backend: str
    stream: int
    elapsed: float | None
    def __init__(self, stream: Any = None, backend: _Backend | None = None) -> None: ...
    def __enter__(self) -> Timer: ...
    def __exit__(self, *exc: object) -> bool: ...
    def __del__(self) -> None: ...

def benchmark(fn: Any, *args: Any, repeat: int = 20, warmup: int = 2, stream: Any = None,
              **kwargs: Any) -> BenchmarkResult: ...
def sweep(op: str, *args: Any, blocks: int | Sequence[int] | None = None, threads: int | Sequence[int] | None = None,
          methods: str | Sequence[str] | None = None, repeat: int = 5, warmup: int = 1, backend: _Backend | None = None,
          progress: bool | None = None, **kwargs: Any) -> list[SweepRow]: ...

class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any

class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any

class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any

def unique(
    a: Any,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    *,
    equal_nan: bool = True,
    sorted: bool = True,
    method: str = "auto",
    backend: _Backend | None = None,
    blocks: int | None = None,
    threads: int | None = None,
    stream: Any = None,
) -> Any: ...
def unique_values(x: Any, *, method: str = "auto", backend: _Backend | None = None, blocks: int | None = None,
                  threads: int | None = None, stream: Any = None) -> Any: ...
def unique_counts(x: Any, *, method: str = "auto", backend: _Backend | None = None, blocks: int | None = None,
                  threads: int | None = None, stream: Any = None) -> UniqueCountsResult: ...
def unique_inverse(x: Any, *, method: str = "auto", backend: _Backend | None = None, blocks: int | None = None,
                   threads: int | None = None, stream: Any = None) -> UniqueInverseResult: ...
def unique_all(x: Any, *, method: str = "auto", backend: _Backend | None = None, blocks: int | None = None,
               threads: int | None = None, stream: Any = None) -> UniqueAllResult: ...
