"""Two decision providers the core can run on its own: rules-only and hosted (docs/decisions.md §3).

* :class:`RulesOnlyProvider` scores each option by the question's cue words:
  for a board with no model at all. Cheap, weak, and calibrated like any
  other provider.
* :class:`HostedProvider` asks the router's ``decision`` role (a hosted or
  LAN model, with the router's own fallback and cooldowns) for one letter,
  over redacted state. A chat model's single answer carries no usable
  probability, so its raw answer is the picked option at ``confidence``;
  calibration on the person's labels turns that into a real number.

The local GGUF provider lives in :mod:`exo_edge.decide_local`.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping

from exo_core.agent.model import ChatMessage, ClosableTransport, ModelRequest, ModelTransport, TextDelta
from exo_core.decisions.calibration import softmax
from exo_core.decisions.question import BadProviderOutput, Question

__all__ = [
    "RulesOnlyProvider",
    "HostedProvider",
    "redact",
    "cut_draft",
    "DRAFT_NOTE",
    "LETTERS",
    "MAX_DRAFT",
    "RAW_CONFIDENCE",
]

LETTERS = string.ascii_uppercase
MAX_DRAFT = 400  # characters of the draft a model is shown with the message (docs/decisions.md §3)
# What a prompt gains when each message is shown after the draft it answers (docs/decisions.md §3). Its
# second sentence was added after a first version, measured on the fit set, read rules as replies to the draft.
DRAFT_NOTE = (
    "Each message is shown after the assistant's answer it replies to. A message that says that answer got "
    "something wrong, or how it should have been, is a correction, even as a question or a plain statement; "
    "one that says how things should be done from now on, not only this time, is a rule, even in reply to an answer."
)
RAW_CONFIDENCE = 0.9  # a larger model's one answer, before calibration (the queue's drain uses it too)
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


class HostedProvider:
    """One letter from the router's ``decision`` role (temperature 0, two tokens at most)."""

    def __init__(
        self,
        transport: ModelTransport,
        *,
        name: str = "hosted",
        role: str = "decision",
        timeout: float = 2.0,
        confidence: float = RAW_CONFIDENCE,
    ) -> None:
        self.transport = transport
        self.name = name
        self.role = role
        self.timeout = timeout
        self.confidence = confidence

    def request(self, question: Question, state: str, draft: str | None = None) -> ModelRequest:
        """The request sent: lettered options, worked examples, the redacted state.

        With ``draft`` (the assistant's text the message answers) each example and the message are
        shown after the draft they answer, redacted and cut to :data:`MAX_DRAFT` characters.
        """
        lines = [f"{question.text} Answer with the letter of one option and nothing else."]
        lines += [f"{LETTERS[i]}. {o}: {question.describe(o)}" for i, o in enumerate(question.options)]
        with_drafts = draft is not None and len(question.example_drafts) == len(question.examples)
        if with_drafts:
            lines.insert(1, DRAFT_NOTE)
        for i, (text, option) in enumerate(question.examples):
            shown = f"Message: {text}\nAnswer: {LETTERS[question.options.index(option)]}"
            if with_drafts:
                shown = f"Assistant's answer: {question.example_drafts[i]}\n{shown}"
            lines.append(shown)
        user = f"Message: {redact(state)}\nAnswer:"
        if draft is not None:
            user = f"Assistant's answer: {redact(cut_draft(draft))}\n{user}"
        return ModelRequest(
            messages=(ChatMessage("system", "\n".join(lines)), ChatMessage("user", user)),
            max_tokens=2,
            temperature=0.0,
            role=self.role,
        )

    async def aclose(self) -> None:
        """Close the transport when it holds anything (the router's HTTP session)."""
        if isinstance(self.transport, ClosableTransport):
            await self.transport.aclose()

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        """The picked option at ``confidence``, the rest shared; :class:`BadProviderOutput` if no letter."""
        return await self._ask(self.request(question, state), question)

    async def probabilities_after(self, question: Question, state: str, draft: str) -> Mapping[str, float]:
        """As :meth:`probabilities`, with the draft ``state`` answers shown before it."""
        return await self._ask(self.request(question, state, draft), question)

    async def _ask(self, request: ModelRequest, question: Question) -> Mapping[str, float]:
        text = ""
        async for chunk in self.transport.stream(request):
            if isinstance(chunk, TextDelta):
                text += chunk.text
        found = re.match(r"\s*\(?([A-Z])\b", text)
        index = LETTERS.index(found.group(1)) if found else -1
        if not 0 <= index < len(question.options):
            raise BadProviderOutput(f"{self.name} did not answer with an option letter: {text[:40]!r}")
        rest = (1.0 - self.confidence) / (len(question.options) - 1)
        return {o: self.confidence if i == index else rest for i, o in enumerate(question.options)}
