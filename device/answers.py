"""Spoken answers to numbered questions: "two", "option 3", "the second one", "yes", or the option itself.

:func:`parse_option` maps what the recogniser heard to a 1-based option
number, or ``None`` when it cannot tell (then the device asks again, or sends
the words as free text when the question takes text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["parse_option"]

_NUMBERS = {
    "one": 1,
    "won": 1,
    "first": 1,
    "1st": 1,
    "two": 2,
    "to": 2,
    "too": 2,
    "second": 2,
    "2nd": 2,
    "three": 3,
    "third": 3,
    "3rd": 3,
    "tree": 3,
    "four": 4,
    "for": 4,
    "fourth": 4,
    "4th": 4,
    "five": 5,
    "fifth": 5,
    "5th": 5,
    "six": 6,
    "sixth": 6,
    "6th": 6,
    "seven": 7,
    "seventh": 7,
    "7th": 7,
    "eight": 8,
    "ate": 8,
    "eighth": 8,
    "8th": 8,
    "nine": 9,
    "ninth": 9,
    "9th": 9,
}
# Homophones ("to", "for", "ate", "won", "tree") count only when they stand alone or after a cue word.
_WEAK = {"to", "too", "for", "ate", "won", "tree"}
_CUES = {"option", "number", "choice", "pick", "the", "choose", "say", "answer", "is", "it's", "its"}
_YES = {"yes", "yeah", "yep", "sure", "ok", "okay", "allow", "correct", "right", "affirmative", "please"}
_NO = {"no", "nope", "nah", "deny", "don't", "dont", "negative", "cancel", "stop"}
_LAST = {"last", "final"}
_ORDINALS = {
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "1st",
    "2nd",
    "3rd",
    "4th",
    "5th",
    "6th",
    "7th",
    "8th",
    "9th",
}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def parse_option(heard: str, options: Sequence[str]) -> int | None:
    """The 1-based option ``heard`` names, or ``None`` when it names none clearly."""
    words = _words(heard)
    count = len(options)
    if not words or count == 0:
        return None
    # 1. The option's own words ("Tuesday", "friday morning"): the best-covered option wins if unique.
    by_text = _match_text(words, options)
    if by_text is not None:
        return by_text
    # 2. A number or ordinal ("one" after an ordinal or "last" is only a filler: "the second one").
    words = [
        w
        for i, w in enumerate(words)
        if not (w == "one" and i > 0 and (words[i - 1] in _ORDINALS or words[i - 1] in _LAST | {"that", "this"}))
    ]
    for i, word in enumerate(words):
        value = int(word) if word.isdigit() else _NUMBERS.get(word)
        if value is None:
            continue
        if word in _WEAK and not (len(words) == 1 or (i > 0 and words[i - 1] in _CUES)):
            continue
        if 1 <= value <= count:
            return value
    if any(w in _LAST for w in words):
        return count
    # 3. Yes / no onto options that say yes / no (or a two-option question: first = yes, second = no).
    lowered = [o.strip().lower() for o in options]
    if any(w in _YES for w in words) and not any(w in _NO for w in words):
        return _index_of(lowered, _YES) or (1 if count == 2 else None)
    if any(w in _NO for w in words):
        return _index_of(lowered, _NO) or (2 if count == 2 else None)
    return None


def _index_of(options: list[str], vocabulary: set[str]) -> int | None:
    for n, option in enumerate(options, 1):
        if set(_words(option)) & vocabulary:
            return n
    return None


def _match_text(words: list[str], options: Sequence[str]) -> int | None:
    heard = set(words) - _CUES - {"a", "an", "one", "please", "i", "want", "would", "like", "and", "of"}
    scores: list[tuple[float, int]] = []
    for n, option in enumerate(options, 1):
        option_words = set(_words(option)) - {"a", "an", "the", "of", "and"}
        if not option_words:
            continue
        common = heard & option_words
        if common:
            scores.append((len(common) / len(option_words), n))
    if not scores:
        return None
    scores.sort(reverse=True)
    if len(scores) > 1 and scores[0][0] == scores[1][0]:
        return None
    return scores[0][1]
