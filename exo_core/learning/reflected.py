"""Lessons outside the feature catalog: the larger model names them, the person's own edits weigh them.

The catalog (:mod:`.features`) explains only what it knows. When a person's
edit removes a line no catalog feature accounts for, and no lesson already
explains it, the reviewer calls the edit *unexplained* and the learner queues
it (a ``reflect`` job whose inputs carry ``explain``) for the larger model: the
laptop's engine when it answers (docs/learning.md §6, docs/models.md §3).

The model answers two lines: ``LESSON: Wants Y, not X.`` and ``AVOID: <words
from the draft>``. The words are the lesson's *marker*, and from then on the
marker is checked exactly as a catalog feature is: an edit that removes it
supports the lesson, one that keeps it or an accept of a draft with it opposes
it. The model's answer is kept only when its marker is in the draft and gone
from the person's version (:func:`usable`): it cannot invent evidence, and its
proposal cites the person's edit, never its own words. Promotion is the same as
for every lesson (:func:`exo_core.learning.promotion.decide`): high weight from
two sessions for taste, and a lesson whose words name something public or
irreversible (:func:`guarded_by`) is guarded and is never promoted unless the
person says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from exo_core.learning.features import CATALOG, features_in, marker_stance
from exo_core.learning.lessons import slug, valid_claim

__all__ = [
    "EXPLAIN",
    "removed_lines",
    "unexplained_lines",
    "explain_prompt",
    "parse_reflection",
    "usable",
    "guarded_by",
    "reflected_proposal",
]

# The job input that marks a reflect job as "explain this edit" (its value: the verdict's entry id).
EXPLAIN = "explain"
MAX_MARKER = 80
_GUARDED = re.compile(r"\b(push|post|publish|pay|send|sent|delete|transfer|email)", re.I)
_LESSON = re.compile(r"^\s*LESSON:\s*(.+)$", re.I | re.M)
_AVOID = re.compile(r"^\s*AVOID:\s*(.+)$", re.I | re.M)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def removed_lines(before: str, after: str) -> list[str]:
    """The draft's lines the person's version no longer has, in order."""
    kept = set(_lines(after))
    return [line for line in _lines(before) if line not in kept]


def unexplained_lines(before: str, after: str, markers: Iterable[str]) -> list[str]:
    """Removed lines that no catalog feature and no known marker accounts for.

    A line is the catalog's when a feature is in it, or when taking that line alone out of the draft
    takes a feature out (a bullet of a comparison, the filler that made a draft long).
    """
    known = [m.lower() for m in markers if m]
    had = features_in(before)
    lines = before.splitlines()
    out = []
    for line in removed_lines(before, after):
        if features_in(line) or any(m in line.lower() for m in known):
            continue
        without = "\n".join(kept for kept in lines if kept.strip() != line)
        if any(not f.present(without) for f in had):
            continue
        out.append(line)
    return out


def explain_prompt(inputs: dict[str, Any]) -> tuple[str, str]:
    """The larger model's system and user text for an unexplained edit or rejection."""
    # A worked example, not a template: small models copy a template's placeholders verbatim.
    system = (
        "A person corrected an assistant's draft. Name the lesson about their taste and the exact words "
        "of the draft they do not want. Answer in exactly two lines, like this example:\n"
        "LESSON: Wants answers without trivia asides.\n"
        "AVOID: Fun fact\n"
        "(for a draft line 'Fun fact: octopuses have three hearts.' that the person objected to). "
        "The AVOID words must be copied exactly from the draft."
    )
    lines = "\n".join(f"- {line}" for line in inputs["removed"])
    if inputs.get("after"):
        user = f"Draft:\n{inputs['draft']}\n\nTheir version:\n{inputs['after']}\n\nRemoved lines:\n{lines}"
    else:
        user = f"Draft:\n{inputs['draft']}\n\nThey said: {inputs['reason']}\n\nDraft lines:\n{lines}"
    if inputs.get("after") and inputs.get("reason"):
        user += f"\n\nThey said: {inputs['reason']}"
    return system, user


def parse_reflection(text: str) -> tuple[str, str] | None:
    """``(claim, marker)`` from the model's answer; None when it is not the two lines asked for."""
    lesson, avoid = _LESSON.search(text), _AVOID.search(text)
    if lesson is None or avoid is None:
        return None
    claim = " ".join(lesson.group(1).split())
    marker = " ".join(avoid.group(1).split()).strip("\"'`")
    if not valid_claim(claim) or not 2 <= len(marker) <= MAX_MARKER:
        return None
    return claim, marker


def usable(marker: str, inputs: dict[str, Any]) -> str:
    """Why the model's marker cannot be a lesson, as a label ("" when it can).

    The person's own correction must support it as the lesson book will recompute it
    (:func:`.features.marker_stance`): in the draft and gone from their version, or in the draft and
    named in their words. A marker a catalog feature already covers is the catalog's.
    """
    if any(f.present(marker) for f in CATALOG):
        return "a_catalog_feature"
    after = str(inputs.get("after", "")) or None
    verdict = str(inputs.get("verdict", "edit" if after is not None else "reject"))
    if marker_stance(marker, verdict, str(inputs["draft"]), after, str(inputs.get("reason", ""))) != 1:
        return "not_supported_by_the_correction"  # not in the draft, kept, or not what they named
    return ""


def guarded_by(claim: str, marker: str) -> bool:
    """A lesson about something public or irreversible (posting, sending, paying, deleting) is guarded."""
    return _GUARDED.search(f"{claim} {marker}") is not None


def reflected_proposal(claim: str, marker: str, verdict_id: str) -> dict[str, Any]:
    """The proposal body of a lesson the larger model named from the edit ``verdict_id``."""
    guarded = guarded_by(claim, marker)
    domain = "rules" if guarded else "taste"
    body: dict[str, Any] = {
        "target": f"{domain}/avoid-{slug(marker, 48)}",
        "source": "learning",
        "home": "pack",
        "claim": claim,
        "domain": domain,
        "marker": marker,
        "by": "reflection",
        "because": f"the larger model read the person's edit (entry {verdict_id[:8]})",
    }
    if guarded:
        body["guarded"] = "public"
    return body
