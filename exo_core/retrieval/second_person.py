"""The store's words about its person, turned to address that person as "you".

The store speaks of its person in two voices: notes written by hand or by the
learning loop say "the person" ("The person's manager is Dana"), and the pack
and stated facts keep the person's own first person ("Who I am", "I'm allergic
to peanuts"). A small chat model reads both as being about itself and answers
"I am the person's manager" or "My sister lives in Porto". Before any of it
reaches the model, :func:`addressed` rewrites both voices into the second
person, the form the answer itself should take ("Your manager is Dana"): a
small model copies what it is shown, so it is shown the answer's own words.

The rules are few and mechanical (docs/retrieval.md, "In the prompt"):

* "the person's" → "your"; "the person" with a form of *be*, *have* or *do*
  after it takes the second person's form ("the person is" → "you are"); a
  verb in the third person singular loses its ending ("the person lives" →
  "you live"), past one adverb ("the person always prefers" → "you always
  prefer"); any other "the person" → "you".
* "I" → "you" ("I am" → "you are", "I was" → "you were", "I'm" → "you're"),
  "my" → "your", "me" → "you", "mine" → "yours", "myself" → "yourself".
* A replaced word keeps its capital; "you" opening a sentence, a line or a
  list item is capitalised.

Quoted speech keeps its words: text between double quotes or on a ``>``
quote line is the person's own record of what was said and is left alone.
"""

from __future__ import annotations

import re

__all__ = ["addressed"]

# The forms of be, have and do after a third-person subject, and the second person's.
_AFTER_PERSON = {
    "is": "are",
    "was": "were",
    "has": "have",
    "does": "do",
    "isn't": "aren't",
    "wasn't": "weren't",
    "hasn't": "haven't",
    "doesn't": "don't",
}
_AFTER_I = {"am": "are", "was": "were", "wasn't": "weren't"}
_FIRST_PERSON = {
    "my": "your",
    "me": "you",
    "mine": "yours",
    "myself": "yourself",
    "i'm": "you're",
    "i've": "you've",
    "i'd": "you'd",
    "i'll": "you'll",
}
# Adverbs that may stand between the subject and its verb ("the person always prefers").
_ADVERBS = frozenset(
    "always never usually often also still now sometimes rarely only really mostly already just seldom".split()
)
# Words ending in "s" after "the person" that are not verbs.
_NOT_VERBS = frozenset("thus plus across always sometimes perhaps yes".split())

_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")
_SPACED_WORD = re.compile(r" +([A-Za-z]+(?:['’][A-Za-z]+)?)")
_PERSON = re.compile(r"\b([Tt])he person(?:['’]s)?\b")
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|^>.*$", re.M)
_SENTENCE_START = re.compile(r"(^|[.!?]\s+|^\s*[-*]\s+|^#+\s+|\]\s+|:\s+)(you|your|you're|you've|you'd|you'll)\b", re.M)


def _base_form(verb: str) -> str:
    """The base form of a verb in the third person singular: "lives" → "live", "watches" → "watch"."""
    low = verb.lower()
    if low.endswith("ies") and len(low) > 4:
        return verb[:-3] + "y"
    if low.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
        return verb[:-2]
    return verb[:-1]


def _is_third_person_verb(word: str) -> bool:
    low = word.lower()
    if word[:1].isupper() or len(low) < 3 or low in _NOT_VERBS:
        return False
    return low.endswith("s") and not low.endswith(("ss", "us", "is", "'s", "’s"))


def _next_words(text: str, start: int, count: int) -> list[re.Match[str]]:
    """Up to ``count`` words right after ``start``, each after spaces only (group 1 is the word)."""
    found: list[re.Match[str]] = []
    position = start
    for _ in range(count):
        match = _SPACED_WORD.match(text, position)
        if match is None:
            break
        found.append(match)
        position = match.end()
    return found


def _keep_case(original: str, replacement: str) -> str:
    if original[:1].isupper() and not original.startswith("I"):
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _second_person_of_person(text: str) -> str:
    """Every "the person" in ``text`` turned to "you", with the verb that follows it."""
    out: list[str] = []
    position = 0
    for match in _PERSON.finditer(text):
        out.append(text[position : match.start()])
        position = match.end()
        capital = match.group(1) == "T"
        if match.group(0).lower().endswith(("'s", "’s")):
            out.append("Your" if capital else "your")
            continue
        out.append("You" if capital else "you")
        following = _next_words(text, position, 2)
        if not following:
            continue
        first = following[0].group(1)
        low = first.lower().replace("’", "'")
        if low in _AFTER_PERSON:
            out.append(text[position : following[0].start(1)] + _AFTER_PERSON[low])
            position = following[0].end(1)
            continue
        verb = following[0]
        if low in _ADVERBS and len(following) > 1:
            verb = following[1]
        if _is_third_person_verb(verb.group(1)):
            out.append(text[position : verb.start(1)] + _base_form(verb.group(1)))
            position = verb.end(1)
    out.append(text[position:])
    return "".join(out)


def _second_person_of_first(text: str) -> str:
    """Every first-person word in ``text`` turned to the second person."""
    out: list[str] = []
    position = 0
    for match in _WORD.finditer(text):
        if match.start() < position:
            continue  # the verb after "I", already replaced
        word = match.group(0)
        low = word.lower().replace("’", "'")
        if word == "I":
            out.append(text[position : match.start()] + "you")
            position = match.end()
            following = _next_words(text, position, 1)
            verb = following[0].group(1).lower() if following else ""
            if verb in _AFTER_I:
                out.append(text[position : following[0].start(1)] + _AFTER_I[verb])
                position = following[0].end(1)
            continue
        if low in _FIRST_PERSON:
            out.append(text[position : match.start()] + _keep_case(word, _FIRST_PERSON[low]))
            position = match.end()
    out.append(text[position:])
    return "".join(out)


def _capitalised(text: str) -> str:
    return _SENTENCE_START.sub(lambda m: m.group(1) + m.group(2)[:1].upper() + m.group(2)[1:], text)


def _addressed_part(text: str) -> str:
    return _capitalised(_second_person_of_first(_second_person_of_person(text)))


def addressed(text: str) -> str:
    """``text`` (store words about its person) rewritten to address that person as "you".

    Quoted speech (between double quotes, or a ``>`` quote line) is kept word for word.
    """
    out: list[str] = []
    position = 0
    for quote in _QUOTED.finditer(text):
        out.append(_addressed_part(text[position : quote.start()]))
        out.append(quote.group(0))
        position = quote.end()
    out.append(_addressed_part(text[position:]))
    return "".join(out)
