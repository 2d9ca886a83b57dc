"""Match instruction tokens to read words, forgiving what OCR confuses: case, 0/O/o, 1/l/I/i,
5/S, 8/B, 2/Z, and quotes or punctuation around a word.

    from pixelrl.vision.text_match import match_tokens
    match_tokens(["mY8", "Submit"], words)   # [(token, best Word or None, score 0..1), ...]

Similarity is rapidfuzz's normalised Indel ratio of the normalised strings (``pip install
'pixelrl[reader]'``; without rapidfuzz a difflib fallback gives the same ratio, slower).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

# Characters OCR swaps on screens, mapped onto one representative each.
CONFUSABLE = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l", "!": "l", "5": "s",
                            "8": "b", "2": "z", "\u201c": '"', "\u201d": '"', "\u2018": "'",
                            "\u2019": "'"})  # fmt: skip
PUNCTUATION = "\"'`.,:;!?()[]{}<>"


def normalise(text: str) -> str:
    """Lower case, confusable characters merged (0→o, 1/i/I/|→l, 5→s, 8→b, 2→z), surrounding
    punctuation stripped."""
    return text.strip().strip(PUNCTUATION).lower().translate(CONFUSABLE).strip(PUNCTUATION)


def similarity(a: str, b: str) -> float:
    """1.0 for strings equal after :func:`normalise`, else their normalised Indel ratio."""
    a, b = normalise(a), normalise(b)
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    try:
        from rapidfuzz.fuzz import ratio
    except ImportError:
        import difflib

        return difflib.SequenceMatcher(None, a, b).ratio()
    return ratio(a, b) / 100.0


def best_match(token: str, words: Iterable[Any]) -> tuple[Any | None, float]:
    """The word (anything with ``.text``) most similar to ``token`` and the similarity; ties go
    to the first in reading order. ``(None, 0.0)`` when there are no words."""
    best, best_score = None, 0.0
    for word in words:
        score = similarity(token, word.text)
        if score > best_score:
            best, best_score = word, score
    return best, best_score


def match_tokens(
    tokens: Sequence[str], words: Sequence[Any], threshold: float = 0.0
) -> list[tuple[str, Any | None, float]]:
    """For each instruction token, the best read word and its score (None below
    ``threshold``)."""
    out = []
    for token in tokens:
        word, score = best_match(token, words)
        out.append((token, word if score >= threshold and word is not None else None, score))
    return out
