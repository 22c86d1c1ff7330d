"""Data for the lessons: text as byte arrays.

:func:`shakespeare` gives the complete works of Shakespeare as the tutorial
used them (a uint8 array), from a local file, a cache, a one-time download,
or -- offline with nothing cached -- a generated stand-in;
:func:`english_like_text` makes that deterministic English-like text;
:func:`text_to_array` turns a string into the uint8 array the tutorial feeds
to its histogram kernels.
"""
import math
import numbers
import os
import pathlib
import tempfile
import urllib.request
import warnings

import numpy as np

from ._common import check_fits_memory, integer_arg

#: Project Gutenberg's plain-text complete works, as the tutorial downloads it.
SHAKESPEARE_URL = "https://www.gutenberg.org/files/100/100-0.txt"
#: Size of the stand-in text when the download cannot be made (the tutorial's text is about 5.7 MB).
SHAKESPEARE_NBYTES = 5_700_000

# Common English words, most frequent first: drawn with Zipf-like weights,
# they give letter frequencies close to real prose (' ' and 'e' dominate).
_WORDS = (
    "the and to of i you a my in that is not it me with for be his your this but he have as thou so him will "
    "what by thy all her no do shall if are we thee on lord our king good now sir from come at they or well "
    "let here would more was which she how then their love man them may there hath when one like than upon "
    "make were go know say did see us an should yet must why am out such speak can what tis heart time hand "
    "come father death life night eyes fair sweet blood give take true mine nor nay poor old young wife "
    "honour heaven world great before think never tell much doth noble mistress brother queen duke lady "
    "gentle master friends sword crown fortune grace pray answer"
).split()


def english_like_text(nbytes, seed=0):
    """A deterministic English-like text of exactly `nbytes` ASCII characters.

    Parameters
    ----------
    nbytes : int
    seed : int, optional
        Anything ``numpy.random.default_rng`` takes.

    Returns
    -------
    str
        Words drawn with Zipf-like frequencies, capitalized sentences,
        punctuation and line breaks.

    Raises
    ------
    TypeError, ValueError
        An `nbytes` that is not a non-negative integer, or so large that
        building the text (about 4 bytes for each of its characters) could
        not fit in this machine's memory; a `seed` NumPy refuses.
    """
    nbytes = integer_arg("nbytes", nbytes, 0)
    # The sentences (a str object each), the joined text and its cut are
    # alive together at the end: about four times the text.
    check_fits_memory(4 * nbytes, f"english_like_text(nbytes={nbytes}): the text and the sentences it is made of",
                      lambda memory: f"nbytes may be at most {memory // 4}")
    try:
        rng = np.random.default_rng(seed)
    except (TypeError, ValueError) as e:
        raise type(e)(f"seed={seed!r}: {e}") from None
    weights = 1.0 / np.arange(1, len(_WORDS) + 1)
    weights /= weights.sum()
    pieces, size = [], 0
    while size < nbytes:
        count = int(rng.integers(4, 16))
        words = [_WORDS[i] for i in rng.choice(len(_WORDS), size=count, p=weights)]
        words[0] = words[0].capitalize()
        for j in range(1, count - 1):
            if rng.random() < 0.08:
                words[j] += ","
        sentence = " ".join(words) + (". ", "! ", "? ", ".\n", ";\n")[int(rng.integers(0, 5))]
        pieces.append(sentence)
        size += len(sentence)
    return "".join(pieces)[:nbytes]


def text_to_array(s):
    """A string as a uint8 array of its ASCII codes, as in the tutorial.

    Characters outside ASCII are replaced by ``?``.

    Parameters
    ----------
    s : str

    Returns
    -------
    numpy.ndarray of uint8

    Raises
    ------
    TypeError
        If `s` is not a str (bytes are already codes: ``np.frombuffer(b,
        np.uint8)``).
    """
    if not isinstance(s, str):
        raise TypeError(f"s must be a str (got {type(s).__name__}); for bytes use np.frombuffer(s, np.uint8)")
    return np.frombuffer(s.encode("ascii", errors="replace"), dtype=np.uint8).copy()


def cache_dir():
    """Where downloads are kept: ``CUATOMIC_DATA``, else the user cache
    directory (``$XDG_CACHE_HOME/cuatomic`` or ``~/.cache/cuatomic``)."""
    explicit = os.environ.get("CUATOMIC_DATA")
    if explicit:
        return pathlib.Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "cuatomic"


def _read_text(path):
    return pathlib.Path(path).read_text(encoding="utf-8", errors="replace")


#: What :func:`shakespeare` says its text is, by where it came from.
STAND_IN = "a generated stand-in for Shakespeare (offline)"
GUTENBERG = "Shakespeare (Project Gutenberg)"


def shakespeare(*, timeout=30.0, url=SHAKESPEARE_URL, with_source=False):
    """The complete works of Shakespeare as a uint8 array, as in the tutorial.

    Looked up in order: the file named by ``CUATOMIC_TEXT`` (any local text);
    ``shakespeare.txt`` in :func:`cache_dir`; a download from `url`, made
    once and cached. Offline with nothing cached, a deterministic generated
    English-like text of :data:`SHAKESPEARE_NBYTES` bytes is returned instead,
    with a warning that says so.

    Parameters
    ----------
    timeout : float or None, optional
        Seconds to wait for the download (a positive number; None: no
        limit).
    url : str, optional
    with_source : bool, optional
        Also return what the text is, for a title or a caption.

    Returns
    -------
    numpy.ndarray of uint8
        ASCII codes (other characters become ``?``).
    source : str
        Only with `with_source`: :data:`GUTENBERG` (downloaded, or the
        cached download), :data:`STAND_IN`, or ``"<file name>
        (CUATOMIC_TEXT)"``.

    Warns
    -----
    RuntimeWarning
        When the generated stand-in is returned.

    Raises
    ------
    TypeError, ValueError
        A `timeout` that is not a positive number of seconds (or None), a
        `url` that is not a str: checked first, wherever the text comes from.
    """
    if timeout is not None:
        if isinstance(timeout, (bool, np.bool_)) or not isinstance(timeout, numbers.Real):
            raise TypeError(f"timeout must be a number of seconds or None (got {type(timeout).__name__})")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"timeout must be a positive number of seconds (got {timeout!r})")
    if not isinstance(url, str):
        raise TypeError(f"url must be a str (got {type(url).__name__})")

    def result(text, source):
        return (text, source) if with_source else text

    local = os.environ.get("CUATOMIC_TEXT")
    if local:
        return result(text_to_array(_read_text(local)), f"{pathlib.Path(local).name} (CUATOMIC_TEXT)")
    cached = cache_dir() / "shakespeare.txt"
    if cached.exists():
        return result(text_to_array(_read_text(cached)), GUTENBERG)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data = response.read()
    except (OSError, ValueError) as e:  # URLError, timeouts and refused connections are OSErrors
        warnings.warn(f"could not download {url} ({e}); using a generated English-like text of "
                      f"{SHAKESPEARE_NBYTES:,} bytes instead", RuntimeWarning, stacklevel=2)
        return result(text_to_array(english_like_text(SHAKESPEARE_NBYTES)), STAND_IN)
    try:  # cache it, atomically: a reader never sees half a file
        cached.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cached.parent, delete=False) as tmp:
            tmp.write(data)
        os.replace(tmp.name, cached)
    except OSError as e:
        warnings.warn(f"could not cache the text in {cached.parent} ({e})", RuntimeWarning, stacklevel=2)
    return result(text_to_array(data.decode("utf-8", errors="replace")), GUTENBERG)
