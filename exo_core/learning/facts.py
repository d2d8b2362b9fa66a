"""Facts the person states become beliefs in the store (docs/learning.md §7).

:func:`detect` reads one person message with a small, fixed rule set (no
model): an explicit ``remember``, or a plain statement about something of
theirs that changed. The patterns, in order:

1. ``Remember that X`` / ``Remember: X`` / ``Please remember X`` (``X`` is then read by 2-4;
   when none fits, the whole of ``X`` is the fact and its first words name it).
2. ``my S moved to V`` / ``my S has moved to V``        -> "your S lives in V"
3. ``my S is now V`` / ``my S's V is now W``             -> "your S is V"
4. ``my S is V`` (only after ``remember``)               -> "your S is V"

A question (``?`` at the end) is never a fact, and neither is a ``remember`` whose
``X`` is an instruction or a preference ("remember to cc Ana", "remember that I prefer
short replies") or a standing rule by the signal rules ("remember: always ask before
pushing"): that is a stated rule for the learner (:mod:`.chat_signals`).
``S`` is one to four words.

:class:`StatedFacts` runs inside exod on every person message (the loop's
``facts`` seam): it writes a ``fact`` node named for the subject in the right
domain (people, health, places, self; see :data:`DOMAIN_WORDS`), with the
person's words as evidence, supersedes the current belief about the same
subject (:meth:`Store.supersede`, the old node kept as history), and returns
the sentence the person hears ("Saved: your sister lives in Porto — replaces
Lisbon."). A guarded domain (``rules``) or anything private (a password, a
secret, a key: the words of :data:`PRIVATE_WORDS` or a leak shape from
:mod:`exo_core.store.leaks`) is asked first through the core's question
broker; a private fact that the person allows is written as a ``private``
node whose curated text has the secret replaced by a mask (the value stays
only in the private ledger, in the turn's utterance), so it never reaches the
pack, a shared file or an agent scope. More than :data:`MAX_FACT_CHARS` is
:class:`FactTooLongError` before anything is written.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any, Protocol

from exo_core.decisions.signal_rules import SIGNAL_RULES
from exo_core.errors import NotFoundError, UsageError
from exo_core.store.leaks import find_leaks, redact
from exo_core.store.node import Node
from exo_core.store.store import Store

__all__ = [
    "StatedFact",
    "StatedFacts",
    "FactTooLongError",
    "Asker",
    "detect",
    "domain_of",
    "MAX_FACT_CHARS",
    "DOMAIN_WORDS",
    "PRIVATE_WORDS",
]

MAX_FACT_CHARS = 2_000
PRIVATE_WORDS = ("password", "passcode", "passphrase", "pin", "secret", "api key", "token", "private key")
GUARDED_DOMAINS = frozenset({"rules"})
DOMAIN_WORDS: dict[str, tuple[str, ...]] = {
    "people": (
        "sister",
        "brother",
        "mother",
        "mom",
        "mum",
        "father",
        "dad",
        "wife",
        "husband",
        "partner",
        "son",
        "daughter",
        "friend",
        "aunt",
        "uncle",
        "cousin",
        "grandmother",
        "grandfather",
        "boss",
        "colleague",
        "neighbour",
        "neighbor",
    ),  # fmt: skip
    "health": ("dentist", "doctor", "gp", "therapist", "physio", "allergy", "medication", "pharmacy", "vet"),
    "rules": ("rule", "approval"),
}
_INSTRUCTION = re.compile(
    r"^(?:to\s|i\s+(?:prefer|like|want|hate|dislike|don'?t\s+like|would\s+rather|'?d\s+rather)\b)", re.I
)
_REMEMBER = re.compile(r"^(?:please\s+)?(?:remember|note)(?:\s+that|\s*:)?\s+(?P<fact>.+)$", re.I | re.S)
_MOVED = re.compile(r"^my\s+(?P<subject>[a-z][a-z' -]{0,40}?)\s+(?:has\s+)?moved\s+to\s+(?P<value>.+)$", re.I)
_IS_NOW = re.compile(r"^my\s+(?P<subject>[a-z][a-z' -]{0,40}?)\s+(?:is|are)\s+now\s+(?P<value>.+)$", re.I)
_IS = re.compile(r"^my\s+(?P<subject>[a-z][a-z' -]{0,40}?)\s+(?:is|are)\s+(?P<value>.+)$", re.I)


class FactTooLongError(UsageError):
    """A stated fact is longer than a belief can be; nothing was written."""

    code = "fact_too_long"


class Asker(Protocol):
    """The core's question broker, as the facts need it."""

    async def ask(self, session_id: str, text: str, options: list[str] | tuple[str, ...] = ()) -> Any:
        """Ask and wait; the answer has a 1-based ``option``."""
        ...


@dataclass(frozen=True, slots=True)
class StatedFact:
    """One fact read from a message: ``key`` names the subject ("sister"), ``claim`` is the belief."""

    key: str
    subject: str
    value: str
    claim: str
    words: str
    moved: bool = False


def _clean(text: str) -> str:
    return " ".join(text.split()).strip().rstrip(".!")


def _subject_key(subject: str) -> str:
    words = re.findall(r"[a-z0-9]+", subject.lower().replace("'s", ""))
    return "-".join(words[:4])


def detect(text: str) -> StatedFact | None:
    """The fact ``text`` states, or None (see the module docstring for the rules)."""
    words = " ".join(text.split())
    if not words or words.endswith("?"):
        return None
    told = _REMEMBER.match(words)
    body = _clean(told.group("fact")) if told else _clean(words)
    if told and (_INSTRUCTION.match(body) or is_standing_rule(body)):
        # "Remember to cc Ana", "remember that I prefer short replies": rules for the learner, not beliefs.
        return None
    if len(words) > MAX_FACT_CHARS:
        if told:
            raise FactTooLongError(
                f"that is {len(words)} characters to remember; a fact is at most {MAX_FACT_CHARS}: "
                "state it in a sentence or two, or save the text as a note"
            )
        return None
    patterns = ((_MOVED, True), (_IS_NOW, False)) + (((_IS, False),) if told else ())
    for pattern, moved in patterns:
        found = pattern.match(body)
        if found is None:
            continue
        subject, value = _clean(found.group("subject")), _clean(found.group("value"))
        key = _subject_key(subject)
        if not key or not value:
            continue
        verb = "lives in" if moved else "is"
        return StatedFact(key, subject, value, f"your {subject} {verb} {value}", words, moved)
    if told:
        key = _subject_key(" ".join(body.split()[:4]))
        return StatedFact(key or "note", body, body, body, words) if key else None
    return None


def is_standing_rule(text: str) -> bool:
    """Whether ``text`` reads as a standing instruction by the signal rules (not counting "remember ...")."""
    for rule in SIGNAL_RULES:
        if rule.option != "rule" or rule.name == "keep-in-mind":
            continue
        if rule.matches(text):
            return True
    return False


def domain_of(fact: StatedFact) -> str:
    """Which store domain the fact belongs in: by the subject's words, else ``self``."""
    subject = fact.subject.lower()
    for domain, words in DOMAIN_WORDS.items():
        if any(re.search(rf"\b{re.escape(w)}\b", subject) for w in words):
            return domain
    return "self"


def is_private(fact: StatedFact) -> bool:
    """A password, secret or key: the words of :data:`PRIVATE_WORDS` or a leak shape."""
    low = fact.words.lower()
    return bool(find_leaks(fact.words)) or any(re.search(rf"\b{re.escape(w)}\b", low) for w in PRIVATE_WORDS)


class StatedFacts:
    """The loop's ``facts`` seam over one store (see the module docstring)."""

    def __init__(self, store: Store, questions: Asker | None = None) -> None:
        self.store = store
        self.questions = questions
        self._lock = asyncio.Lock()

    async def take(self, session_id: str, text: str) -> str | None:
        """Store the fact ``text`` states, if any; returns what the person hears (None: not a fact)."""
        fact = detect(text)
        if fact is None:
            return None
        domain = domain_of(fact)
        private = is_private(fact)
        if private or domain in GUARDED_DOMAINS:
            if private:  # the question goes to every client: it never carries the secret
                hidden = _hidden(fact.claim, fact.value)
                question = f"That looks private (a password or a secret). Save it as a private note: {hidden}?"
            else:
                question = f"That is about your {domain}. Save it as a belief: {fact.claim}?"
            if not await self._allowed(session_id, question):
                return "Not saved."
        async with self._lock:
            node, replaced = await asyncio.to_thread(self._write, fact, domain, private, session_id)
        shown = "a private note (kept out of the pack)" if private else fact.claim
        tail = f" — replaces {replaced}." if replaced else "."
        return f"Saved: {shown}{tail}"

    async def _allowed(self, session_id: str, question: str) -> bool:
        if self.questions is None:
            return False  # nobody to ask: a guarded or private fact is never written unasked
        answer = await self.questions.ask(session_id, question, ("Yes", "No"))
        return answer.option == 1

    def _write(self, fact: StatedFact, domain: str, private: bool, session_id: str) -> tuple[Node, str]:
        today = _dt.date.today().isoformat()
        old = self._current(domain, fact.key, today)
        claim, words = fact.claim, fact.words
        if private:
            # The secret stays in the private ledger (the turn's utterance); curated files may be shared.
            claim = _hidden(claim, fact.value)
            words = _hidden(words, fact.value)
        summary = claim[0].upper() + claim[1:] + "."
        node = Node(
            id=self._free_id(domain, fact.key),
            title=f"{fact.subject[:1].upper()}{fact.subject[1:]}"[:80],
            type="fact",
            domain=domain,
            summary=summary,
            load_when=fact.key.replace("-", " | "),
            confidence="high",
            stability="durable",
            valid_from=today,
            sources=(f"the person, session {session_id}",),
            tags=("stated",),
            private=private,
            body=f"\n# {fact.subject}\n\n{summary}\n\nThe person said on {today}:\n\n> {words}\n",
        )
        if domain not in {n.domain for n in self.store.nodes()}:
            self.store.ensure_domain(domain)
        if old is None:
            self.store.write_node(node)
            return node, ""
        self.store.supersede(old.id, node, on=today)
        return node, _value_of(old)

    def _current(self, domain: str, key: str, today: str) -> Node | None:
        """The current belief about ``key`` in ``domain`` (its node id is the key, or the key and a number)."""
        name = re.compile(rf"{re.escape(domain)}/{re.escape(key)}(?:-\d+)?")
        found = [n for n in self.store.nodes() if name.fullmatch(n.id) and n.is_current(today)]
        return max(found, key=lambda n: (n.valid_from, n.id)) if found else None

    def _free_id(self, domain: str, key: str) -> str:
        base = f"{domain}/{key}"
        candidate, n = base, 1
        while True:
            try:
                self.store.read_node(candidate)
            except NotFoundError:
                return candidate
            n += 1
            candidate = f"{base}-{n}"


def _hidden(text: str, value: str) -> str:
    """``text`` with the secret ``value`` masked and any other leak shape redacted."""
    masked, _count = redact(text.replace(value, _mask(value)))
    return masked


def _mask(value: str) -> str:
    """A secret as a person recognises it without it being readable: its first two characters."""
    return value[:2] + "… (kept in the ledger)"


def _value_of(old: Node) -> str:
    """What the old belief said, short: the part after "lives in"/"is", else its summary."""
    text = old.summary.rstrip(".")
    for verb in (" lives in ", " is now ", " is "):
        if verb in text:
            value = text.split(verb, 1)[1]
            # "on Tuesday" -> "Tuesday": the reply reads "is on Friday — replaces Tuesday."
            return re.sub(r"^(?:on|at|in)\s+", "", value)
    return text
