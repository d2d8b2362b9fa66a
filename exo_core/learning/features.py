"""Checkable taste features: the rules-only classifier and the exact graders.

A feature is a property of an output that a person may want gone ("opens
with a preamble", "uses em dashes") or of an action ("pushes to a shared
remote"). Each carries the positive claim its lesson makes ("wants Y, not X"),
the keywords by which a person's own words name it, its domain, and whether
the lesson guards something (public, irreversible, financial, third-party;
such lessons are never promoted automatically).

The catalog serves three stages: stage 1 of the reviewer (what changed
between a draft and the person's edit), the weight function (the stance of
a cited entry is recomputed from the texts, never read from the proposal),
and the eval's checkable-rule graders (exact). It is deliberately small and
generic: lessons outside it come from the person's own rules or from the
larger model's reflection.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Feature",
    "CATALOG",
    "feature",
    "features_in",
    "stance",
    "marker_stance",
    "marker_words",
    "has_marker",
    "stem",
    "stems",
    "match_words",
    "action_text",
]

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_EMOJI = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf]")


def _rx(pattern: str, flags: int = re.I) -> Callable[[str], bool]:
    compiled = re.compile(pattern, flags)
    return lambda text: compiled.search(text) is not None


def _bullets_for_comparison(text: str) -> bool:
    comparing = re.search(r"\b(vs\.?|versus|compared?|comparison)\b", text, re.I) is not None
    bullets = len(re.findall(r"^\s*[-*] ", text, re.M)) >= 2
    return comparing and bullets and "|---" not in text.replace(" ", "")


@dataclass(frozen=True, slots=True)
class Feature:
    """One checkable property (``present`` says whether ``text`` has it)."""

    key: str
    claim: str
    domain: str
    keywords: tuple[str, ...]
    present: Callable[[str], bool]
    guarded: str = ""
    action: bool = False
    node: str = ""

    @property
    def target(self) -> str:
        """The store node that holds this lesson (its one home)."""
        return self.node or f"taste/{self.key.replace('_', '-')}"


CATALOG: tuple[Feature, ...] = (
    Feature(
        "preamble",
        "Wants the result first, not a preamble.",
        "writing",
        ("preamble", "result first", "get to the point", "answer first"),
        _rx(
            r"^\s*(sure|certainly|of course|great question|absolutely|i'?d be happy|happy to help|"
            r"here(?:'s| is| are))\b"
        ),
    ),
    Feature(
        "em_dash",
        "Wants plain punctuation, not em dashes.",
        "writing",
        ("em dash", "em-dash", "dashes"),
        lambda t: "\u2014" in t,
    ),
    Feature(
        "bullets_for_comparison",
        "Wants a table when comparing options, not bullets.",
        "writing",
        ("table", "tables"),
        _bullets_for_comparison,
    ),
    Feature(
        "exclamation", "Wants a calm tone, not exclamation marks.", "writing", ("exclamation",), lambda t: "!" in t
    ),
    Feature(
        "emoji",
        "Wants plain text, not emoji.",
        "writing",
        ("emoji", "emojis", "smiley"),
        lambda t: _EMOJI.search(t) is not None,
    ),
    Feature(
        "imperial_units",
        "Wants metric units, not miles, pounds or Fahrenheit.",
        "writing",
        ("metric", "kilometres", "kilometers", "miles", "imperial"),
        _rx(r"\b\d+(\.\d+)?\s*(miles?|mi|pounds?|lbs?|feet|ft|fahrenheit|\u00b0F|inch(es)?|gallons?)\b"),
    ),
    Feature(
        "us_dates",
        "Wants ISO dates (YYYY-MM-DD), not spelled-out or US dates.",
        "writing",
        ("iso date", "iso dates", "date format", "yyyy-mm-dd"),
        _rx(rf"\b({_MONTHS}) \d{{1,2}}(st|nd|rd|th)?,? \d{{4}}\b|\b\d{{1,2}}/\d{{1,2}}/\d{{4}}\b", 0),
    ),
    Feature(
        "sign_off",
        "Wants the reply to end when the content ends, not with a sign-off.",
        "writing",
        ("sign-off", "sign off", "pleasantries", "hope this helps", "regards"),
        _rx(r"(best regards|kind regards|cheers|hope this helps|let me know if)[^\n]*\s*\Z"),
    ),
    Feature(
        "long",
        "Wants short answers, not long ones.",
        "writing",
        ("shorter", "too long", "brief"),
        lambda t: len(t.split()) > 120,
        node="taste/answer-length",
    ),
    Feature(
        "hedging",
        "Wants direct statements, not hedging.",
        "writing",
        ("hedging", "hedge", "waffle"),
        _rx(r"\b(i think|perhaps|it might be|it seems|arguably)\b"),
    ),
    Feature(
        "code_unlabelled",
        "Wants code blocks labelled with their language.",
        "writing",
        ("language tag", "label the code"),
        _rx(r"^```[ \t]*$", re.M),
    ),
    Feature(
        "push",
        "Asks before pushing to a shared remote, never pushes unasked.",
        "actions",
        ("push", "pushing"),
        _rx(r"\bgit\s+push\b"),
        guarded="public",
        action=True,
        node="rules/ask-before-push",
    ),
    Feature(
        "send",
        "Asks before sending anything to another person.",
        "actions",
        ("send", "sending", "email"),
        _rx(r"\b(send_email|send_message|sendmail)\b"),
        guarded="third-party",
        action=True,
        node="rules/ask-before-send",
    ),
)
_BY_KEY = {f.key: f for f in CATALOG}


def feature(key: str) -> Feature | None:
    """The catalog feature named ``key``."""
    return _BY_KEY.get(key)


def features_in(text: str, *, action: bool = False) -> tuple[Feature, ...]:
    """The catalog features present in ``text`` (text features, or action features)."""
    return tuple(f for f in CATALOG if f.action == action and f.present(text))


def match_words(text: str) -> tuple[Feature, ...]:
    """Features the person's own words name (``"no em dashes please"`` names em_dash)."""
    low = " " + re.sub(r"\s+", " ", text.lower()) + " "
    return tuple(f for f in CATALOG if any(re.search(rf"\b{re.escape(k)}\b", low) for k in f.keywords))


def action_text(body: Mapping[str, Any]) -> str:
    """The text an action feature is checked on: tool name, arguments and the gate's summary."""
    return " ".join(str(body.get(k, "")) for k in ("tool", "arguments", "command", "summary"))


def stance(feat: Feature, verdict: str, before: str, after: str | None, reason: str = "") -> int | None:
    """How one verdict bears on the lesson "avoid ``feat``": +1 supports, -1 opposes, None neither.

    An edit that removes the feature supports; one that keeps or adds it
    opposes (the person saw it and let it stand). An accept of a draft with
    the feature opposes; of one without it, says nothing (silence lets a
    lesson fade). A rejection supports only when the person's reason names
    the feature.
    """
    had = feat.present(before)
    if verdict in ("edit", "should_have_been"):
        if after is None:
            return None
        if feat.present(after):
            return -1
        return +1 if had else None
    if verdict == "accept":
        return -1 if had else None
    if verdict in ("reject", "deny"):
        named = feat in match_words(reason) if reason else feat.action
        return +1 if had and named else None
    return None


_STOP = frozenset(
    "a an and are as at be but by do for from i in is it me my no not of on or please so that the this to we "
    "with you your".split()
)


def marker_words(text: str) -> set[str]:
    """The content words of ``text`` (lower case, letters and digits), without the commonest ones."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP}


def stem(word: str) -> str:
    """A light stem of one lower-case word, so a person's "summaries" names a draft's "summary".

    Plurals, ``-ing`` and ``-ed`` off, a doubled last consonant undoubled ("skipped", "skip"), a final
    ``e`` off ("deleted", "delete"). Deliberately small: no derivations ("investment" stays apart from
    "investing"), so two words meet only when they are the same word inflected.
    """
    w = word
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("sses", "xes", "ches", "shes")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    elif len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def stems(text: str) -> set[str]:
    """The stems of the content words of ``text`` longer than one letter (the "m" of "I'm" names nothing)."""
    return {stem(w) for w in marker_words(text) if len(w) > 1}


def has_marker(marker: str, text: str) -> bool:
    """Whether ``text`` has ``marker``, ignoring case, starting at a word's start.

    A marker is matched as the beginning of a word, so "AI" is in "an AI tool" but not in "said",
    and "email" is in "emails" (docs/learning.md §6).
    """
    needle = marker.lower().strip()
    if not needle:
        return False
    return re.search(r"(?<![a-z0-9])" + re.escape(needle), text.lower()) is not None


def marker_stance(marker: str, verdict: str, before: str, after: str | None, reason: str = "") -> int | None:
    """How a verdict bears on "avoid ``marker``", as :func:`stance` does for a catalog feature.

    A marker is the words a lesson outside the catalog avoids (:mod:`.reflected`), matched ignoring
    case at a word's start (:func:`has_marker`). A rejection supports only when the draft had the
    marker and the person's reason shares the stem of one of its content words ("Drop the TL;DR line"
    and ``TL;DR``; "summaries" and ``summary``, :func:`stems`).
    """
    had = has_marker(marker, before)
    if verdict in ("edit", "should_have_been"):
        if after is None or not had:
            return None
        return -1 if has_marker(marker, after) else +1
    if verdict == "accept":
        return -1 if had else None
    if verdict == "reject":
        return +1 if had and reason and stems(marker) & stems(reason) else None
    return None
