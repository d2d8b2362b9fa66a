"""The onboarding interview: from an empty store to a first pack and first nodes.

A pure state machine that needs no model. Each step is a :class:`Question`
shaped like the protocol's ``question.asked`` event (``question_id``, ``text``,
numbered ``options``, ``allow_text``); each reply is an :class:`Answer` shaped
like the ``question.answer`` command (a 1-based ``option`` or free ``text``).
So a terminal, the web page, a button or a voice can drive it::

    state = start()
    while (q := next_question(state)) is not None:
        state = answer(state, Answer(q.question_id, option=1))   # or text="..."
    written = apply_plan(store, plan(state))

``answer`` never mutates: it returns a new state or raises
:class:`~exo_core.errors.BadBodyError` naming the field, so a wrong button
press is reported and the same question is asked again.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, replace
from pathlib import Path

from exo_core.errors import BadBodyError, ConflictError
from exo_core.store import layout
from exo_core.store.atomic import atomic_write_text
from exo_core.store.leaks import redact
from exo_core.store.node import Link, Node
from exo_core.store.ledger_bridge import LedgerWriter
from exo_core.store.store import Store, template_path

__all__ = [
    "Question",
    "Answer",
    "InterviewState",
    "OnboardPlan",
    "QUESTIONS",
    "start",
    "next_question",
    "answer",
    "plan",
    "apply_plan",
]

MAX_TEXT = 500


@dataclass(frozen=True, slots=True)
class Question:
    """One interview question, as a ``question.asked`` body."""

    question_id: str
    text: str
    options: tuple[str, ...] = ()
    allow_text: bool = False
    skip_option: int | None = None  # the 1-based option meaning "skip", if any

    def to_event_body(self) -> dict[str, object]:
        """The ``question.asked`` event body."""
        return {"question_id": self.question_id, "text": self.text, "options": list(self.options),
                "allow_text": self.allow_text}


@dataclass(frozen=True, slots=True)
class Answer:
    """A reply, as a ``question.answer`` command body."""

    question_id: str
    option: int | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class InterviewState:
    """Where the interview is: answers so far, as ``(question_id, option, text)``."""

    answers: tuple[tuple[str, int | None, str | None], ...] = ()
    finished: bool = False

    def value(self, question_id: str) -> tuple[int | None, str | None]:
        """The (option, text) given to ``question_id``; (None, None) when unanswered."""
        for qid, option, text in self.answers:
            if qid == question_id:
                return option, text
        return None, None


QUESTIONS: tuple[Question, ...] = (
    Question("onboard.name", "What should Exo call you?", allow_text=True),
    Question(
        "onboard.focus",
        "What will you mostly use Exo for?",
        ("Work and projects", "Writing", "Study and learning", "Running my day", "Something else (type it)"),
        allow_text=True,
    ),
    Question(
        "onboard.length",
        "How should answers be?",
        ("Short: the result first, detail only if asked", "Thorough: reasons and trade-offs", "It depends: ask me"),
    ),
    Question("onboard.tone", "Which tone suits you?", ("Plain and direct", "Warm and friendly", "Formal")),
    Question(
        "onboard.approval",
        "What must always wait for your approval?",
        (
            "Anything that sends, posts, pays, pushes or deletes",
            "That, and also every change to my files",
        ),
    ),
    Question(
        "onboard.rule",
        "Is there a standing rule Exo should always follow? Type it, or choose 1.",
        ("No, not now",),
        allow_text=True,
        skip_option=1,
    ),
    Question(
        "onboard.languages",
        "Which languages do you write in? Type them, or choose 1.",
        ("Skip",),
        allow_text=True,
        skip_option=1,
    ),
    Question("onboard.confirm", "Write this into your store?", ("Yes, write it", "Start over")),
)
_BY_ID = {q.question_id: q for q in QUESTIONS}
# The approval answer only ever adds to the operator floor, never lowers it.
_APPROVAL = {
    1: "anything that sends, posts, pays, pushes or deletes",
    2: "anything that sends, posts, pays, pushes or deletes, and every change to my files",
}


def start() -> InterviewState:
    """A new interview."""
    return InterviewState()


def next_question(state: InterviewState) -> Question | None:
    """The next question to ask, or None when the interview is finished."""
    if state.finished:
        return None
    answered = {qid for qid, _, _ in state.answers}
    for question in QUESTIONS:
        if question.question_id not in answered:
            return question
    return None


def answer(state: InterviewState, reply: Answer) -> InterviewState:
    """Apply ``reply`` to the current question; a new state, or BadBodyError naming the field."""
    question = next_question(state)
    if question is None:
        raise BadBodyError("the interview is finished; there is no open question", field="question_id")
    if reply.question_id != question.question_id:
        raise BadBodyError(
            f"question {reply.question_id!r} is not open; answer {question.question_id!r}", field="question_id"
        )
    option, text = reply.option, reply.text
    if option is not None and text is not None:
        raise BadBodyError("give an option number or text, not both", field="option")
    if option is not None:
        if isinstance(option, bool) or not isinstance(option, int) or not 1 <= option <= len(question.options):
            raise BadBodyError(f"option must be a number from 1 to {len(question.options)}", field="option")
    elif text is not None:
        if not question.allow_text:
            raise BadBodyError(f"choose an option from 1 to {len(question.options)}", field="text")
        text = " ".join(text.split())
        if not text:
            raise BadBodyError("the answer is empty; type something or choose an option", field="text")
        if len(text) > MAX_TEXT:
            raise BadBodyError(f"keep the answer under {MAX_TEXT} characters", field="text")
        text, _ = redact(text)  # a secret typed into an answer never reaches the store
    else:
        raise BadBodyError("give an option number or text", field="option")
    if question.question_id == "onboard.confirm":
        if option == 2:
            return start()
        return replace(state, answers=state.answers + ((question.question_id, option, None),), finished=True)
    return replace(state, answers=state.answers + ((question.question_id, option, text),))


@dataclass(frozen=True, slots=True)
class OnboardPlan:
    """What the interview will write: the pack, nodes, and router rules per domain."""

    pack: str
    nodes: tuple[Node, ...]
    load_rules: tuple[tuple[str, str], ...]  # (domain, rule line)
    said: tuple[tuple[str, str], ...]  # (ledger kind, the person's words)


def _choice(state: InterviewState, qid: str) -> str | None:
    option, text = state.value(qid)
    question = _BY_ID[qid]
    if text is not None:
        return text
    if option is None or option == question.skip_option:
        return None
    return question.options[option - 1]


def _node(node_id: str, type_: str, title: str, summary: str, load_when: str, today: str, **extra: object) -> Node:
    fields: dict[str, object] = dict(
        id=node_id, title=title, type=type_, domain=node_id.split("/")[0], summary=summary, load_when=load_when,
        confidence="high", stability="durable", valid_from=today, sources=("onboarding interview",),
        body=f"\n# {title}\n\n{summary}\n\nFrom the onboarding interview on {today}.\n",
    )
    fields.update(extra)
    return Node(**fields)  # type: ignore[arg-type]


def plan(state: InterviewState, *, today: str | None = None) -> OnboardPlan:
    """Turn a finished interview into the pack, nodes and load rules to write."""
    if not state.finished:
        raise ConflictError("the interview is not finished; answer every question first")
    day = today or _dt.date.today().isoformat()
    name = _choice(state, "onboard.name") or "the person"
    focus = _choice(state, "onboard.focus")
    length = _choice(state, "onboard.length")
    tone = _choice(state, "onboard.tone")
    approval_option, _ = state.value("onboard.approval")
    approval = _APPROVAL[approval_option or 1]
    rule = _choice(state, "onboard.rule")
    languages = _choice(state, "onboard.languages")
    nodes = [
        _node("work/focus", "fact", "What Exo is mostly for", f"Mostly uses Exo for: {focus}.", "plan | project | task", day),
        _node("taste/answer-length", "preference", "Answer length", f"Answers should be: {length}.",
              "answer | reply | draft | write", day),
        _node("taste/tone", "preference", "Tone", f"Preferred tone: {tone}.", "reply | draft | write | message", day),
        _node("rules/approval", "rule", "What waits for approval", f"Always ask before: {approval}.",
              "send | post | pay | push | delete | file", day, stability="core"),
    ]
    if rule:
        nodes.append(_node("rules/standing-rule", "rule", "A standing rule", f"Standing rule: {rule}", "", day,
                           stability="core", links=(Link("see-also", "rules/approval"),)))
    if languages:
        nodes.append(_node("self/languages", "fact", "Languages", f"Writes in: {languages}.", "language | translate", day))
    by_id = {n.id: n for n in nodes}
    pointers = {
        "who": [f"- Name: {name}", f"- Mostly here for: [[work/focus]]"]
        + (["- Languages: [[self/languages]]"] if "self/languages" in by_id else []),
        "rules": ["- Approval: [[rules/approval]]"] + (["- Standing rule: [[rules/standing-rule]]"] if rule else []),
        "voice": ["- Answer length: [[taste/answer-length]]", "- Tone: [[taste/tone]]"],
    }
    pack = (
        f"# Pack\n\nThe one page Exo reads on every request. It points to beliefs and never copies them.\n"
        f"Written by the onboarding interview on {day}; edit it freely.\n\n"
        "## Who I am\n\n" + "\n".join(pointers["who"]) + "\n\n"
        "## Standing rules\n\n" + "\n".join(pointers["rules"]) + "\n\n"
        "## Voice and taste\n\n" + "\n".join(pointers["voice"]) + "\n\n"
        "## Needs my approval\n\n- See [[rules/approval]]; the operator floor always applies.\n"
    )
    rules = tuple((n.domain, f"- {n.load_when} -> [[{n.id}]]") for n in nodes if n.load_when)
    said: list[tuple[str, str]] = [("utterance", f"Call me {name}.")]
    if rule:
        said.append(("rule", rule))
    return OnboardPlan(pack, tuple(nodes), rules, tuple(said))


def apply_plan(
    store: Store, onboard: OnboardPlan, *, ledger: LedgerWriter | None = None, force: bool = False
) -> list[Path]:
    """Write the plan into ``store``; the person's own words go to the ledger if given.

    Refuses (:class:`ConflictError`) when the pack was already edited or a node
    exists, unless ``force``: onboarding builds a store from empty, it never
    overwrites what the person wrote.
    """
    pack_path = store.root / layout.PACK
    template_pack = (template_path() / layout.PACK).read_text(encoding="utf-8")
    if not force:
        if pack_path.is_file() and pack_path.read_text(encoding="utf-8") != template_pack:
            raise ConflictError(f"{pack_path} was already edited; onboarding only fills an empty store (or use --force)")
        for node in onboard.nodes:
            if store.node_path(node.id).exists():
                raise ConflictError(f"{store.node_path(node.id)} exists; onboarding would overwrite it (use --force)")
    written = [store.write_node(node) for node in onboard.nodes]
    for domain, rule in onboard.load_rules:
        index = store.root / domain / layout.ROUTER
        text = index.read_text(encoding="utf-8")
        if rule not in text:
            atomic_write_text(index, text.rstrip("\n") + "\n" + rule + "\n" if "## Load rules" in text
                              else text + "\n## Load rules\n\n" + rule + "\n")
    atomic_write_text(pack_path, onboard.pack)
    written.append(pack_path)
    if ledger is not None:
        for kind, words in onboard.said:
            ledger.append(kind, {"text": words, "source": "onboarding"}, scope=store.scope)
    return written
