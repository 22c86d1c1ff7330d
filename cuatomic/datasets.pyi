import pathlib
from typing import Any, Literal, overload

import numpy as np

SHAKESPEARE_URL: str
SHAKESPEARE_NBYTES: int
STAND_IN: str
GUTENBERG: str

def english_like_text(nbytes: int, seed: Any = 0) -> str: ...
def text_to_array(s: str) -> np.ndarray: ...
def cache_dir() -> pathlib.Path: ...
@overload
def shakespeare(*, timeout: float | None = ..., url: str = ..., with_source: Literal[False] = ...) -> np.ndarray: ...
@overload
def shakespeare(*, timeout: float | None = ..., url: str = ..., with_source: Literal[True]) -> tuple[np.ndarray, str]: ...
