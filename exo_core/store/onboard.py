"""The onboarding interview: from an empty store to a first pack and first nodes, with no model.

It runs inside exod (:class:`Onboarding`, the ``store.onboard`` command):
each step is asked through the core's question broker, so it reaches every
client as a ``question.asked`` event and the first ``question.answer`` from
any of them (a terminal, the web page, a button, a voice) answers it. When
the interview is finished the pack, nodes and load rules are written, the
person's own words are recorded in the ledger, and a ``ui.panel`` of kind
``onboarding`` says what was written (``data.ok``, ``data.written``) or why
not (``data.error``).

The steps themselves are a pure state machine (:func:`next_question`,
:func:`answer`, :func:`plan`): ``answer`` never mutates and raises
:class:`~exo_core.errors.BadBodyError` naming the field, so a wrong reply is
reported and the same step is asked again.
"""

from __future__ import annotations

import datetime as _dt
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from exo_core.atomic import atomic_write_text
from exo_core.errors import BadBodyError, ConflictError
from exo_core.store import layout
from exo_core.store.leaks import redact
from exo_core.store.node import Link, Node
from exo_core.store.store import Store, template_path

__all__ = [
    "Question",
    "InterviewState",
    "OnboardPlan",
    "QUESTIONS",
    "next_question",
    "confirm_text",
    "answer",
    "plan",
    "check_fillable",
    "apply_plan",
]

log = logging.getLogger(__name__)
MAX_TEXT = 500


@dataclass(frozen=True, slots=True)
class Question:
    """One step: its text and numbered options; ``skip_option`` is the 1-based option meaning "skip"."""

    step: str
    text: str
    options: tuple[str, ...] = ()
    allow_text: bool = False
    skip_option: int | None = None


@dataclass(frozen=True, slots=True)
class InterviewState:
    """Where the interview is: answers so far, as ``(step, option, text)``."""

    answers: tuple[tuple[str, int | None, str | None], ...] = ()
    finished: bool = False

    def value(self, step: str) -> tuple[int | None, str | None]:
        """The (option, text) given at ``step``; (None, None) when unanswered."""
        return next(((o, t) for s, o, t in self.answers if s == step), (None, None))


QUESTIONS: tuple[Question, ...] = (
    Question("name", "What should Exo call you?", allow_text=True),
    Question(
        "focus",
        "What will you mostly use Exo for?",
        ("Work and projects", "Writing", "Study and learning", "Running my day", "Something else (type it)"),
        allow_text=True,
    ),
    Question(
        "length",
        "How should answers be?",
        ("Short: the result first, detail only if asked", "Thorough: reasons and trade-offs", "It depends: ask me"),
    ),
    Question("tone", "Which tone suits you?", ("Plain and direct", "Warm and friendly", "Formal")),
    Question(
        "approval",
        "What must always wait for your approval?",
        ("Anything that sends, posts, pays, pushes or deletes", "That, and also every change to my files"),
    ),
    Question(
        "rule",
        "Is there a standing rule Exo should always follow? Type it, or choose 1.",
        ("No, not now",),
        allow_text=True,
        skip_option=1,
    ),
    Question(
        "languages",
        "Which languages do you write in? Type them, or choose 1.",
        ("Skip",),
        allow_text=True,
        skip_option=1,
    ),
    Question("confirm", "Write this into your store?", ("Yes, write it", "Start over")),
)
_BY_STEP = {q.step: q for q in QUESTIONS}
# The approval answer only ever adds to the operator floor, never lowers it.
_APPROVAL = {
    1: "anything that sends, posts, pays, pushes or deletes",
    2: "anything that sends, posts, pays, pushes or deletes, and every change to my files",
}


_SUMMARY_LABELS = {
    "name": "name",
    "focus": "mostly for",
    "length": "answers",
    "tone": "tone",
    "approval": "always ask before",
    "rule": "standing rule",
    "languages": "languages",
}


def confirm_text(state: InterviewState) -> str:
    """The confirm step's question with what will be written: each answer, in the person's words."""
    lines = [_BY_STEP["confirm"].text, "It will write:"]
    for step, label in _SUMMARY_LABELS.items():
        value = _choice(state, step)
        if step == "approval":
            option, _ = state.value(step)
            value = _APPROVAL.get(option or 0, value)
        if value:
            lines.append(f"- {label}: {value}")
    return "\n".join(lines)


def next_question(state: InterviewState) -> Question | None:
    """The next step to ask, or None when the interview is finished."""
    answered = {step for step, _, _ in state.answers}
    return None if state.finished else next((q for q in QUESTIONS if q.step not in answered), None)


def answer(state: InterviewState, option: int | None = None, text: str | None = None) -> InterviewState:
    """Answer the open step with a 1-based ``option`` or free ``text``; a new state, or BadBodyError."""
    question = next_question(state)
    if question is None:
        raise BadBodyError("the interview is finished; there is no open question", field="question_id")
    count = len(question.options)
    if option is not None and text is not None:
        raise BadBodyError("give an option number or text, not both", field="option")
    if option is not None:
        if isinstance(option, bool) or not isinstance(option, int) or not 1 <= option <= count:
            raise BadBodyError(f"option must be a number from 1 to {count}", field="option")
    elif text is not None:
        if not question.allow_text:
            raise BadBodyError(f"choose an option from 1 to {count}", field="text")
        text = " ".join(text.split())
        if not text or len(text) > MAX_TEXT:
            raise BadBodyError(f"type an answer of 1 to {MAX_TEXT} characters, or choose an option", field="text")
        text, _ = redact(text)  # a secret typed into an answer never reaches the store
    else:
        raise BadBodyError("give an option number or text", field="option")
    if question.step == "confirm":
        return InterviewState() if option == 2 else replace(state, finished=True)
    return replace(state, answers=(*state.answers, (question.step, option, text)))


@dataclass(frozen=True, slots=True)
class OnboardPlan:
    """What the interview will write: the pack, nodes, router rules per domain and the person's words."""

    pack: str
    nodes: tuple[Node, ...]
    load_rules: tuple[tuple[str, str], ...]  # (domain, rule line)
    said: tuple[tuple[str, str], ...]  # (ledger kind, the person's words)


def _choice(state: InterviewState, step: str) -> str | None:
    option, text = state.value(step)
    question = _BY_STEP[step]
    if text is not None:
        return text
    return None if option is None or option == question.skip_option else question.options[option - 1]


def _node(node_id: str, type_: str, title: str, summary: str, load_when: str, today: str, **extra: Any) -> Node:
    return Node(
        **{
            "id": node_id,
            "title": title,
            "type": type_,
            "domain": node_id.split("/")[0],
            "summary": summary,
            "load_when": load_when,
            "confidence": "high",
            "stability": "durable",
            "valid_from": today,
            "sources": ("onboarding interview",),
            "body": f"\n# {title}\n\n{summary}\n\nFrom the onboarding interview on {today}.\n",
            **extra,
        }
    )


def plan(state: InterviewState, *, today: str | None = None) -> OnboardPlan:
    """Turn a finished interview into the pack, nodes and load rules to write."""
    if not state.finished:
        raise ConflictError("the interview is not finished; answer every question first")
    day = today or _dt.date.today().isoformat()
    name, rule, languages = _choice(state, "name") or "the person", _choice(state, "rule"), _choice(state, "languages")
    nodes = [
        _node(
            "work/focus",
            "fact",
            "What Exo is mostly for",
            f"Mostly uses Exo for: {_choice(state, 'focus')}.",
            "plan | project | task",
            day,
        ),
        _node(
            "taste/answer-length",
            "preference",
            "Answer length",
            f"Answers should be: {_choice(state, 'length')}.",
            "answer | reply | draft | write",
            day,
        ),
        _node(
            "taste/tone",
            "preference",
            "Tone",
            f"Preferred tone: {_choice(state, 'tone')}.",
            "reply | draft | write | message",
            day,
        ),
        _node(
            "rules/approval",
            "rule",
            "What waits for approval",
            f"Always ask before: {_APPROVAL[state.value('approval')[0] or 1]}.",
            "send | post | pay | push | delete | file",
            day,
            stability="core",
        ),
    ]
    who = [f"- Name: {name}", "- Mostly here for: [[work/focus]]"]
    rules = ["- Approval: [[rules/approval]]"]
    if rule:
        nodes.append(
            _node(
                "rules/standing-rule",
                "rule",
                "A standing rule",
                f"Standing rule: {rule}",
                "",
                day,
                stability="core",
                links=(Link("see-also", "rules/approval"),),
            )
        )
        rules.append("- Standing rule: [[rules/standing-rule]]")
    if languages:
        nodes.append(
            _node("self/languages", "fact", "Languages", f"Writes in: {languages}.", "language | translate", day)
        )
        who.append("- Languages: [[self/languages]]")
    pack = (
        "# Pack\n\n<!-- The one page Exo reads on every request. It points to beliefs and never copies them.\n"
        f"Written by the onboarding interview on {day}; edit it freely. The model never sees this comment. -->\n\n"
        "## Who I am\n\n" + "\n".join(who) + "\n\n## Standing rules\n\n" + "\n".join(rules) + "\n\n"
        "## Voice and taste\n\n- Answer length: [[taste/answer-length]]\n- Tone: [[taste/tone]]\n\n"
        "## Needs my approval\n\n- See [[rules/approval]]; the operator floor always applies.\n"
    )
    load_rules = tuple((n.domain, f"- {n.load_when} -> [[{n.id}]]") for n in nodes if n.load_when)
    said = (("utterance", f"Call me {name}."),) + ((("rule", rule),) if rule else ())
    return OnboardPlan(pack, tuple(nodes), load_rules, said)


# The template's pack page as stores made before its guidance became a comment have it: still blank.
_BLANK_BEFORE_COMMENTS = """# Pack

The one page Exo reads on every request. It holds pointers to beliefs, never
copies of them: write a line here and link the node that holds the detail,
like `[[self/INDEX]]`. Counts and dates live in the nodes and the ledger.

`exo onboard` fills this page from a short interview; edit it freely after.

## Who I am

- See [[self/INDEX]].

## Standing rules

- See [[rules/INDEX]].

## Voice and taste

- See [[taste/INDEX]].

## Needs my approval

- Anything that sends, posts, pays, pushes or deletes waits for my answer.
"""


def check_fillable(store: Store, node_ids: tuple[str, ...] = ()) -> None:
    """Raise :class:`ConflictError` when the pack was edited or a node exists: onboarding only fills an empty store."""
    pack = store.root / layout.PACK
    blank = (template_path() / layout.PACK).read_text(encoding="utf-8")
    if pack.is_file() and pack.read_text(encoding="utf-8") not in (blank, _BLANK_BEFORE_COMMENTS):
        raise ConflictError(f"{pack} was already edited; onboarding only fills an empty store (or use force)")
    for node_id in node_ids:
        if store.node_path(node_id).exists():
            raise ConflictError(f"{store.node_path(node_id)} exists; onboarding would overwrite it (or use force)")


def apply_plan(store: Store, onboard: OnboardPlan, *, force: bool = False) -> list[Path]:
    """Write the plan into ``store``; never over what the person wrote unless ``force``."""
    if not force:
        check_fillable(store, tuple(n.id for n in onboard.nodes))
    written = [store.write_node(node) for node in onboard.nodes]
    for domain, rule in onboard.load_rules:
        index = store.root / domain / layout.ROUTER
        text = index.read_text(encoding="utf-8")
        if rule not in text:
            heading = "" if "## Load rules" in text else "\n## Load rules\n\n"
            atomic_write_text(index, text.rstrip("\n") + "\n" + heading + rule + "\n")
    atomic_write_text(store.root / layout.PACK, onboard.pack)
    return [*written, store.root / layout.PACK]
