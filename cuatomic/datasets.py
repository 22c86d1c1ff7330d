"""Data for the lessons: text as byte arrays.

:func:`english_like_text` makes a deterministic English-like text offline (a
stand-in for the complete works of Shakespeare that the tutorial counts
letters in); :func:`text_to_array` turns a string into the uint8 array the
tutorial feeds to its histogram kernels.
"""
import numpy as np

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

    Returns
    -------
    str
        Words drawn with Zipf-like frequencies, capitalized sentences,
        punctuation and line breaks.
    """
    if nbytes < 0:
        raise ValueError("nbytes must be >= 0")
    rng = np.random.default_rng(seed)
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
    """
    return np.frombuffer(s.encode("ascii", errors="replace"), dtype=np.uint8).copy()
