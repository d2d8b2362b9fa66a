"""Where an abstention goes (docs/decisions.md §7, "Escalation").

A decision that abstains with ``escalate`` set is not dropped:

1. **the larger model decides** when one is reachable (the laptop's model over the LAN, or a hosted
   model the person allowed): it is one more provider, run through its own :class:`Decider` so it
   is calibrated, thresholded and recorded like any other. It also takes the decisions a device model
   made below ``defer_below`` (0.9 by default: the device model's answer stands only when it is that
   sure, measured in docs/studies/signal-decisions.md, "The device model defers"); if it abstains or fails
   there, the device model's decision stands;
2. otherwise, when the **person is waiting** on the answer (a turn needs it now) and a session is
   there to ask in, the question is put to them (``question.asked`` through the
   :class:`~exo_core.agent.questions.QuestionBroker`); their answer labels the first decision in the
   ledger (``record_label(..., "person")``), so it also calibrates the providers. ``asked`` words the
   question for the person (the question's own text and option lines are written for a model);
3. otherwise, when the **learning loop** needs it, or the person left the question unanswered, it is
   queued for the larger model (the proposal queue, ``exo_edge/proposal_queue.py``, kind ``decide``),
   keyed by the decision's ledger entry so it is queued once; ``context`` rides along in the job
   (for a signal: the session and the draft it answers), so the drained answer is acted on later
   (a signal's verdict or rule: :mod:`exo_core.learning.signal_entry`);
4. otherwise it stays an abstention (``route == "unsettled"``), and the caller applies the safe default.

Nothing here can loosen the gate: decisions only ever tighten (docs/decisions.md §6).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Protocol

from exo_core.decisions.decider import Decider
from exo_core.decisions.record import record_label
from exo_core.decisions.uses import USES, toolset_question
from exo_core.errors import BadBodyError, ConfigError, ExoError
from exo_core.seams.decision import Decision, DecisionProvider, Question

__all__ = [
    "ROUTES",
    "DecisionQueue",
    "PersonAsker",
    "PersonAnswer",
    "PersonWording",
    "Settled",
    "Escalation",
    "queue_key",
    "queued_question",
]

log = logging.getLogger(__name__)
ROUTES = ("decided", "larger", "asked", "queued", "unsettled")
_DEFAULT_THRESHOLD = next(f.default for f in fields(Question) if f.name == "threshold")
MAX_QUEUED_STATE = 4000  # characters of the message kept in the queue: a decision reads one message


class PersonAnswer(Protocol):
    """What the question broker returns: a 1-based ``option`` and/or free ``text``."""

    option: int | None
    text: str | None


class PersonAsker(Protocol):
    """The question broker's ``ask`` (``exo_core.agent.questions.QuestionBroker``)."""

    async def ask(
        self,
        session_id: str,
        text: str,
        options: Sequence[str] = (),
        *,
        allow_text: bool = False,
        timeout: float | None = None,
        short: str = "",
        quiet: bool = False,
    ) -> PersonAnswer:
        """Emit ``question.asked`` and wait for the first answer."""
        ...


class DecisionQueue(Protocol):
    """The proposal queue's ``put`` (``exo_edge.proposal_queue.ProposalQueue``)."""

    def put(self, kind: str, inputs: dict[str, Any], *, key: str) -> bool:
        """Queue a job once per ``key``."""
        ...


@dataclass(frozen=True, slots=True)
class PersonWording:
    """How a question is put to the person: its ``text`` and one line per option, in the question's order."""

    text: str
    options: tuple[str, ...]
    # For a small screen, and whether a voice client keeps it silent unless asked (question.asked).
    short: str = ""
    quiet: bool = False


@dataclass(frozen=True, slots=True)
class Settled:
    """The outcome of an escalated decision.

    ``decision`` is what to act on (the larger model's, the person's answer, or the abstention);
    ``first`` is the decision the device made (its ledger entry is the one labels refer to);
    ``route`` is one of :data:`ROUTES`.
    """

    decision: Decision
    first: Decision
    route: str


def queue_key(question: Question, state: str, decision: Decision) -> str:
    """The queue key: the decision's ledger entry, else a hash of the question and the state."""
    if decision.entry_id is not None:
        return f"decide:{decision.entry_id}"
    digest = hashlib.sha256(f"{question.mechanism}\0{state}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"decide:{digest[:32]}"


def queued_question(inputs: Mapping[str, Any]) -> Question:
    """The question a queued ``decide`` job asks (its ``inputs``, as :meth:`Escalation._enqueue` wrote them),
    without its rules: the device's rules already had their say before it was queued.

    A question this core knows by its mechanism and options (``signal``, ``panel``, a ``toolset`` question
    over the job's toolsets) is that question, worked examples included, so the larger model is sent the
    same turns as when it decides live and its numbers are calibrated together (docs/decisions.md §7a).
    Any other is rebuilt from the job (its text, options, descriptions, threshold; no examples).
    :class:`BadBodyError` when the inputs do not make a question."""
    try:
        mechanism = str(inputs["mechanism"])
        options = tuple(str(o) for o in inputs["options"])
        known = USES.get(mechanism)
        if mechanism == "toolset" and options[:1] == ("none",):
            known = toolset_question(options[1:])
        if known is not None and known.options == options:
            return replace(known, rules=())
        descriptions = tuple(str(d) for d in inputs.get("descriptions") or ())
        threshold = float(inputs.get("threshold", _DEFAULT_THRESHOLD))
        kind = str(inputs.get("question_kind", "choice"))
        fallback = str(inputs.get("fallback", "main"))
        return Question(mechanism, kind, str(inputs["question"]), options, descriptions, threshold, fallback)
    except (KeyError, TypeError, ValueError, ConfigError) as exc:
        raise BadBodyError(f"a queued decision's inputs do not make a question: {exc}", field="inputs") from exc


class Escalation:
    """Runs a decision, and sends an abstention to the larger model, the person, or the queue."""

    def __init__(
        self,
        decider: Decider,
        *,
        larger: DecisionProvider | None = None,
        queue: DecisionQueue | None = None,
        asker: PersonAsker | None = None,
        ask_timeout: float = 120.0,
        defer_below: float = 0.0,
    ) -> None:
        self.decider = decider
        self.queue = queue
        self.asker = asker
        self.ask_timeout = ask_timeout
        self.defer_below = defer_below
        self._larger = None
        if larger is not None:
            self._larger = Decider(
                [larger], calibration=decider.calibration, recorder=decider.recorder, clock=decider.clock
            )

    async def decide(
        self,
        question: Question,
        state: str,
        *,
        waiting: bool = False,
        session_id: str | None = None,
        asked: PersonWording | None = None,
        context: Mapping[str, Any] | None = None,
        draft: str | None = None,
    ) -> Settled:
        """Decide ``question`` about ``state``.

        ``waiting``: the person waits on it, so ask them (in ``session_id``, worded as ``asked``) before
        queueing; an unanswered question is still queued, since the learning loop can use the answer later.
        ``draft``: the assistant's text ``state`` answers, shown to the providers (and the larger model)
        that read drafts.
        """
        first = await self.decider.decide(question, state, draft=draft)
        if self._defers(first):
            assert self._larger is not None  # _defers says so
            second = await self._larger.decide(question, state, draft=draft)
            if second.chosen is not None:
                return Settled(second, first, "larger")
            return Settled(first, first, "decided")
        if first.chosen is not None or first.escalate is None:
            return Settled(first, first, "decided")
        if self._larger is not None:
            second = await self._larger.decide(question, state, draft=draft)
            if second.chosen is not None:
                return Settled(second, first, "larger")
        if waiting and self.asker is not None and session_id is not None:
            answered = await self._ask(question, session_id, first, asked)
            if answered is not None:
                return Settled(answered, first, "asked")
        if self.queue is not None:
            self._enqueue(question, state, first, context)
            return Settled(first, first, "queued")
        return Settled(first, first, "unsettled")

    def _defers(self, first: Decision) -> bool:
        """Whether a device model's decision goes to the larger model: one is reachable, a model (not a rule)
        chose, and less surely than ``defer_below``."""
        if self._larger is None or first.chosen is None or first.via != "provider":
            return False
        return first.probabilities[first.chosen] < self.defer_below

    async def _ask(
        self, question: Question, session_id: str, first: Decision, asked: PersonWording | None
    ) -> Decision | None:
        """Put the question to the person; their option, or ``None`` (no answer, or not an option)."""
        assert self.asker is not None
        text = question.text
        shown = [question.describe(option) for option in question.options]
        short, quiet = "", False
        if asked is not None and len(asked.options) == len(question.options):
            text, shown, short, quiet = asked.text, list(asked.options), asked.short, asked.quiet
        try:
            answer = await self.asker.ask(session_id, text, shown, timeout=self.ask_timeout, short=short, quiet=quiet)
        except (TimeoutError, ExoError) as exc:  # asyncio.TimeoutError is TimeoutError (3.11+)
            log.info("the %s question went unanswered: %s", question.mechanism, exc)
            return None
        if answer.option is None or not 1 <= answer.option <= len(question.options):
            return None
        label = question.options[answer.option - 1]
        if first.entry_id is not None and self.decider.recorder is not None:
            try:
                await asyncio.to_thread(record_label, self.decider.recorder, first, "person", label=label)
            except ExoError:
                log.exception("could not record the person's answer to a %s decision", question.mechanism)
        certain: Mapping[str, float] = {o: float(o == label) for o in question.options}
        return replace(
            first, probabilities=certain, chosen=label, applied=label, provider="person", via="person", escalate=None
        )

    def _enqueue(
        self, question: Question, state: str, first: Decision, context: Mapping[str, Any] | None = None
    ) -> None:
        # A single-row insert, synchronous as the queue's put is; exod's queue takes calls from one thread.
        assert self.queue is not None
        inputs: dict[str, Any] = {
            "mechanism": question.mechanism,
            "question": question.text,
            "options": list(question.options),
            "descriptions": [question.describe(option) for option in question.options],
            "state": state[:MAX_QUEUED_STATE],
            "entry": first.entry_id,
            "role": "decision",
            # What the drain needs to rebuild a question this core does not know (queued_question).
            "question_kind": question.kind,  # "kind" is the job's (decide)
            "threshold": question.threshold,
            "fallback": question.fallback,
        }
        if context:
            inputs["context"] = dict(context)
        try:
            self.queue.put("decide", inputs, key=queue_key(question, state, first))
        except ExoError:
            log.exception("could not queue a %s decision for the larger model", question.mechanism)
