"""The rules-only decision provider, and what every provider off the device shares (docs/decisions.md §3).

* :class:`RulesOnlyProvider` scores each option by the question's cue words:
  for a board with no model at all. Cheap, weak, and calibrated like any
  other provider.
* :func:`redact` masks what a model off the device must not see; :func:`cut_draft` and
  :data:`DRAFT_NOTE` are how a draft is shown with the message.

The ``hosted`` provider (``providers = ["hosted"]``: the router's ``decision`` role) is a
:class:`~exo_core.decisions.logprobs.LogprobProvider` named ``hosted:chat``: the option words'
probabilities from the engine's ``top_logprobs``; it used to ask for one option letter and record it
at a fixed 0.9, a number no model gave. The local GGUF
provider lives in :mod:`exo_edge.decide_local`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from exo_core.decisions.calibration import softmax
from exo_core.seams.decision import Question

__all__ = [
    "RulesOnlyProvider",
    "redact",
    "cut_draft",
    "DRAFT_NOTE",
    "MAX_DRAFT",
]

MAX_DRAFT = 400  # characters of the draft a model is shown with the message (docs/decisions.md §3)
# What a prompt gains when each message is shown after the draft it answers (docs/decisions.md §3). Its
# second sentence was added after a first version, measured on the fit set, read rules as replies to the draft.
DRAFT_NOTE = (
    "Each message is shown after the assistant's answer it replies to. A message that says that answer got "
    "something wrong, or how it should have been, is a correction, even as a question or a plain statement; "
    "one that says how things should be done from now on, not only this time, is a rule, even in reply to an answer."
)
_REDACTIONS = (
    (re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+"), "[email]"),
    (re.compile(r"https?://\S+"), "[link]"),
    (re.compile(r"\+?\d[\d ()-]{6,}\d"), "[number]"),
)


def cut_draft(draft: str) -> str:
    """The draft as a model is shown it: one line, at most :data:`MAX_DRAFT` characters (its start,
    which is what a reply usually answers; a decision reads one message, not a document)."""
    line = " ".join(draft.split())
    if len(line) > MAX_DRAFT:
        return line[: MAX_DRAFT - 3] + "..."
    return line


def redact(text: str) -> str:
    """``text`` with e-mail addresses, links and long numbers masked (what a hosted provider may see)."""
    for pattern, mask in _REDACTIONS:
        text = pattern.sub(mask, text)
    return text


class RulesOnlyProvider:
    """Probabilities from cue words: each cue found adds ``weight`` to its option's score."""

    name = "rules-only"

    def __init__(self, *, weight: float = 1.0, timeout: float = 0.5) -> None:
        self.weight = weight
        self.timeout = timeout

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        """A softmax over cue counts; the question's default option gets a small head start."""
        text = f" {state.lower()} "
        return softmax(
            {
                o: self.weight * sum(1 for cue in question.cues.get(o, ()) if _has(text, cue))
                + (0.5 if o == question.default else 0.0)
                for o in question.options
            }
        )


def _has(text: str, cue: str) -> bool:
    return re.search(rf"\b{re.escape(cue)}\b", text) is not None if cue[0].isalnum() else cue in text
