"""Lessons outside the feature catalog: the larger model points at the line, the person's words name it.

The catalog (:mod:`.features`) explains only what it knows. When a person's
correction removes or rejects a line no catalog feature accounts for, and no
lesson already explains it, the reviewer calls it *unexplained* and the learner
queues it (a ``reflect`` job whose inputs carry ``explain``) for the larger
model: the laptop's engine when it answers (docs/learning.md §6, docs/models.md §3).

The model is asked to *select*, not to write: only the lines a lesson could be
kept from are offered (:func:`choices`), numbered, and it answers whether the
person wants something removed or added and which line their correction is
about. The request offers one tool, :data:`PICK_TOOL`, whose arguments are an
enum of ``remove``/``add`` and an enum of those numbers, and requires it, so an
engine that constrains a forced call to its schema (llama_cpp.server turns it
into a grammar) can only answer a choice; an engine that does not force it may
answer in text, and ``{"line": 2}``, ``2`` or *add* is read too
(:func:`parse_choice`). The learner then derives the lesson's *marker*
from the chosen line's own text (:func:`grounded_marker`): the run of its words
the person's words name, compared by stem (:func:`.features.stems`), or, for a
line the person deleted, the line itself. So the marker is always words of the
draft, never the model's, and the claim is written from it ("Wants drafts
without 'Fun fact'."). From then on the marker is checked exactly as a catalog
feature is: a correction that removes or names it supports the lesson, one that
keeps it or an accept of a draft with it opposes it.

The answer is kept only when the person's own correction supports the marker as
the lesson book will recompute it (:func:`usable`, unchanged by how the marker
was found): the proposal cites the person's verdict, never the model's words.
Promotion is the same as for every lesson
(:func:`exo_core.learning.promotion.decide`): high weight from two sessions for
taste, and a lesson whose words name something public or irreversible
(:func:`guarded_by`) is guarded and is never promoted unless the person says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from exo_core.learning.features import CATALOG, features_in, has_marker, marker_stance, marker_words, stems
from exo_core.learning.lessons import slug

__all__ = [
    "EXPLAIN",
    "PICK_TOOL",
    "WANTS",
    "MAX_MARKER",
    "Reflection",
    "removed_lines",
    "unexplained_lines",
    "choices",
    "explain_prompt",
    "explain_tool",
    "parse_choice",
    "grounded_marker",
    "read_reflection",
    "usable",
    "guarded_by",
    "reflected_proposal",
]

# The job input that marks a reflect job as "explain this edit" (its value: the verdict's entry id).
EXPLAIN = "explain"
# The one tool a reflection request offers and requires: what the person wants and the chosen line's number.
PICK_TOOL = "pick_line"
WANTS = ("remove", "add")
MAX_MARKER = 80
# Unnamed content words a marker may span between two named ones ("drink enough water").
MAX_GAP = 1
_GUARDED = re.compile(r"\b(push|post|publish|pay|send|sent|delete|transfer|email)", re.I)
_CLAUSE_END = (",", ";", ":", ".", "?", "!")
_EDGE = " \t\n.,;:!?\"'()[]{}"


@dataclass(frozen=True, slots=True)
class Reflection:
    """What the learner makes of one answer: a claim and marker, or ``why`` (a label) it keeps nothing."""

    claim: str = ""
    marker: str = ""
    line: int = 0
    why: str = ""


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
    known = [m for m in markers if m]
    had = features_in(before)
    lines = before.splitlines()
    out = []
    for line in removed_lines(before, after):
        if features_in(line) or any(has_marker(m, line) for m in known):
            continue
        without = "\n".join(kept for kept in lines if kept.strip() != line)
        if any(not f.present(without) for f in had):
            continue
        out.append(line)
    return out


def choices(inputs: dict[str, Any]) -> list[str]:
    """The lines the model may pick: only those a lesson could be kept from (:func:`usable`).

    For an edit, every unexplained line the person deleted; for a rejection, the unexplained lines that
    share a word stem with the person's words, since a rejection supports a marker only when their words
    name it (:func:`.features.marker_stance`). Offering a line no answer could be kept from would only let
    a small model pick it; with no line left there is nothing to ask.
    """
    lines = [str(line) for line in inputs["removed"]]
    if inputs.get("after"):
        return lines
    named = stems(str(inputs.get("reason", "")))
    return [line for line in lines if stems(line) & named]


def _edit(inputs: dict[str, Any]) -> bool:
    return bool(inputs.get("after"))


def explain_prompt(inputs: dict[str, Any]) -> tuple[str, str]:
    """The larger model's system and user text: does the person want something removed (which line) or added."""
    listed = "\n".join(f"{n}. {line}" for n, line in enumerate(choices(inputs), start=1))
    said = str(inputs.get("reason", "")).strip()
    if _edit(inputs):
        system = (
            "A person deleted lines from an assistant's draft. Pick the deleted line that shows what they do not want."
        )
        user = f"Deleted lines:\n{listed}"
        if said:
            user += f"\n\nThe person said: {said}"
        return system, user
    system = (
        "A person objected to an assistant's draft. Say whether they want something removed from the draft "
        "or something added that it does not have, and pick the line of the draft their words are about."
    )
    return system, f"Lines of the draft:\n{listed}\n\nThe person said: {said}"


def explain_tool(inputs: dict[str, Any]) -> dict[str, Any]:
    """The tool a reflection request requires: ``want`` (remove or add; not asked of an edit, which removed)
    and ``line``, one of the listed lines' numbers."""
    properties: dict[str, Any] = {}
    if not _edit(inputs):
        properties["want"] = {"type": "string", "enum": list(WANTS)}
    properties["line"] = {"type": "integer", "enum": list(range(1, len(choices(inputs)) + 1))}
    return {
        "name": PICK_TOOL,
        "description": "What the person wants (remove or add) and the number of the line their correction is about.",
        "parameters": {"type": "object", "properties": properties, "required": list(properties)},
    }


def parse_choice(text: str, count: int) -> tuple[str, int] | None:
    """``(want, line)`` from the model's answer: ``{"want": "remove", "line": 2}``, or text with a number
    (``want`` then ``remove``) or the word ``add``; None when neither, or the line is not 0..``count``.

    ``want`` is ``add`` (line 0) when the person asks for something the draft lacks, else ``remove``.
    """
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    want: object = "remove"
    number: object = None
    if isinstance(data, dict):
        want, number = data.get("want", "remove"), data.get("line")
    elif isinstance(data, int):
        number = data
    else:
        found = re.search(r"\d+", text)
        if found:
            number = int(found.group())
        elif re.search(r"\badd\b", text, re.I):
            want, number = "add", 0
    if want not in WANTS:
        return None
    if want == "add":
        return "add", 0
    if isinstance(number, bool) or not isinstance(number, int):
        return None
    if number == 0:  # "none of these lines" in a plain answer
        return "add", 0
    if not 1 <= number <= count:
        return None
    return "remove", number


def _named(token: str, named: set[str]) -> bool:
    return bool(stems(token) & named)


def _clip(text: str) -> str:
    """``text`` without edge punctuation, cut at a space to :data:`MAX_MARKER` characters (still a substring;
    "" when its first word alone is longer)."""
    text = text.strip(_EDGE)
    if len(text) <= MAX_MARKER:
        return text
    head = text[: MAX_MARKER + 1]
    cut = max(head.rfind(" "), head.rfind("\t"))
    if cut <= 0:
        return ""  # one word longer than a marker: never cut inside a word
    return head[:cut].strip(_EDGE)


def _named_span(line: str, named: set[str]) -> str:
    """The run of ``line``'s words with the most words the person named, within one clause, allowing
    stop words and :data:`MAX_GAP` unnamed words between named ones; as the line writes it."""
    tokens = list(re.finditer(r"\S+", line))
    best = ""
    best_hits = 0
    start = 0
    while start < len(tokens):
        if not _named(tokens[start].group(), named):
            start += 1
            continue
        end, hits, gap, i = start, 1, 0, start
        while not tokens[i].group().endswith(_CLAUSE_END) and i + 1 < len(tokens):
            i += 1
            if _named(tokens[i].group(), named):
                end, hits, gap = i, hits + 1, 0
            elif marker_words(tokens[i].group()):
                gap += 1
                if gap > MAX_GAP:
                    break
        if hits > best_hits:
            best, best_hits = line[tokens[start].start() : tokens[end].end()], hits
        start = end + 1
    return _clip(best)


def grounded_marker(line: str, inputs: dict[str, Any]) -> str:
    """The marker of the lesson about ``line``, from its own words ("" when the correction names none).

    The words of the line the person's words name (by stem); for a line the person deleted whose words
    they did not name, the line itself (clipped to :data:`MAX_MARKER` at a word).
    """
    named = stems(str(inputs.get("reason", "")))
    span = _named_span(line, named) if named else ""
    if span:
        return span
    after = str(inputs.get("after", ""))
    if after and line in removed_lines(str(inputs["draft"]), after):
        return _clip(line)
    return ""


def read_reflection(text: str, inputs: dict[str, Any]) -> Reflection:
    """The lesson the learner takes from the model's answer ``text`` to the job ``inputs``, or why none.

    Labels: ``not_a_line_choice`` (no usable answer), ``wants_something_added`` (a lesson to require
    something is not built: its words would be the model's, not the draft's),
    ``line_not_named_by_the_correction`` (no words of the chosen line are the person's), and
    :func:`usable`'s.
    """
    lines = choices(inputs)
    chosen = parse_choice(text.strip(), len(lines))
    if chosen is None:
        return Reflection(why="not_a_line_choice")
    want, line = chosen
    if want == "add":
        return Reflection(why="wants_something_added")
    marker = grounded_marker(lines[line - 1], inputs)
    if not marker:
        return Reflection(line=line, why="line_not_named_by_the_correction")
    why = usable(marker, inputs)
    return Reflection(f"Wants drafts without '{marker}'.", marker, line, why)


def usable(marker: str, inputs: dict[str, Any]) -> str:
    """Why ``marker`` cannot be a lesson, as a label ("" when it can).

    The person's own correction must support it as the lesson book will recompute it
    (:func:`.features.marker_stance`): in the draft and gone from their version, or in the draft and
    named in their words. A marker a catalog feature already covers is the catalog's.
    """
    if not 2 <= len(marker) <= MAX_MARKER:
        return "not_a_marker"
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
