"""The note of what this Exo can do (``exo/abilities``), written by Exo from its tools, store and board.

"Hello! What can you help me with?" is answered the way every other question
is: from a store note that retrieval puts in front of the model. A sentence
in the base prompt did not change the 0.5B model's greeting and broke a file
request (docs/models.md, "The base prompt"); a note the model reads only when
asked about itself changes nothing else. So:

* the note is **generated**, never hand-written text that goes stale: the
  abilities of the tools exod offers (:meth:`ToolSpec.ability_text`), what the
  person's store keeps (the root router's domain lines) and the board profile;
* it is **pinned by its load rule** ("what can you do", "who are you", ...)
  and tagged :data:`PIN_ONLY`, so similarity never brings it into a prompt
  about anything else (exo_core/retrieval/rank.py, :func:`pin_only`);
* it is **refreshed** by ``exo init`` and each time exod starts (when the
  tools may have changed), and only while it is still a generated version:
  its ``sources`` carry a digest of the generated fields, and a note whose
  fields no longer match it was edited by the person and is kept as it is.
  The load rule is written only with a new note, so a person who removed it
  keeps it removed.

No ``[[links]]`` in the text the model reads: the base Gemma model copied the
pack's ``[[self/INDEX]]`` as its answer to everything.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from exo_core.atomic import atomic_write_text
from exo_core.errors import ExoError
from exo_core.private_files import private_dir
from exo_core.store import layout
from exo_core.store.node import PIN_ONLY, Node
from exo_core.store.store import Store

__all__ = [
    "ABILITIES_ID",
    "DOMAIN",
    "PIN_ONLY",
    "TRIGGERS",
    "Board",
    "abilities_node",
    "list_abilities",
    "refresh_abilities",
    "is_generated",
]

DOMAIN = "exo"
ABILITIES_ID = f"{DOMAIN}/abilities"
# Ways a person asks the assistant about itself; each alternative matches a request holding all its words.
TRIGGERS = (
    "what can you do",
    "what can you help",
    "how can you help",
    "what do you do",
    "who are you",
    "what are you",
    "your tools",
    "your abilities",
    "what can i ask",
)
_TITLE = "What Exo can do here"
_DIGEST = re.compile(r"\(digest ([0-9a-f]{16})\)")
_DOMAIN_LINE = re.compile(r"[-*]\s+\[\[(?P<domain>[^\[\]|#/]+)/INDEX\]\]\s*:\s*(?P<about>.+)")
_ABOUT_DOMAIN = "what this Exo can do here (a note Exo writes from its tools; yours to edit)"
_INDEX = (
    "# Exo\n\n"
    "What this Exo can do here. Exo writes [[exo/abilities]] from the tools it offers, the domains of\n"
    "this store and its board profile, when `exo init` runs and each time exod starts. Edit it and it is\n"
    "kept as you wrote it; delete it to get a fresh one. Its load rule brings it into the prompt when you\n"
    "ask Exo what it can do; remove the rule and it stays out.\n\n"
    "## Load rules\n\n"
)


@dataclass(frozen=True, slots=True)
class Board:
    """The machine's board profile and its local model, as the note names them."""

    name: str
    model: str


def list_abilities(abilities: Sequence[str]) -> str:
    """``abilities`` as one phrase: repeats dropped, "read files" and "write files" made "read and write files"."""
    groups: dict[str, list[str]] = {}
    for ability in dict.fromkeys(a.strip() for a in abilities if a.strip()):
        verb, _, rest = ability.partition(" ")
        if rest and " " not in rest:  # "<verb> <object>": verbs of one object share it
            groups.setdefault(rest, []).append(verb)
        else:
            groups[ability] = []
    phrases = [_joined(verbs) + " " + key if verbs else key for key, verbs in groups.items()]
    return _joined(phrases)


def _joined(words: Sequence[str]) -> str:
    if len(words) < 2:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _domains(store: Store) -> list[str]:
    """What each domain of the store holds, from the root router's ``- [[d/INDEX]]: about`` lines."""
    try:
        text = (store.root / layout.ROUTER).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    found = []
    for line in text.split("\n"):
        match = _DOMAIN_LINE.fullmatch(line.strip())
        if match is not None and match["domain"] != DOMAIN:
            found.append(match["about"].strip().rstrip("."))
    return found


def _digest(node: Node) -> str:
    fields = [node.title, node.summary, node.load_when, " ".join(node.tags), node.body]
    return hashlib.sha256("\0".join(fields).encode("utf-8")).hexdigest()[:16]


def abilities_node(abilities: Sequence[str], *, store: Store, board: Board | None, today: str) -> Node:
    """The generated note: what the offered tools let Exo do, what the store keeps, the board."""
    listed = list_abilities(abilities)
    summary = f"Exo can {listed}." if listed else "Exo answers in words; it offers no tools here."
    lines = []
    domains = _domains(store)
    if domains:
        lines.append("It answers from what the person's notes keep: " + "; ".join(domains) + ".")
    if board is not None:
        lines.append(f"Here it runs the {board.name} board profile, with the local model {board.model}.")
    node = Node(
        id=ABILITIES_ID,
        title=_TITLE,
        type="fact",
        domain=DOMAIN,
        summary=summary,
        load_when=" | ".join(TRIGGERS),
        confidence="high",
        stability="volatile",
        valid_from=today,
        tags=(PIN_ONLY,),
        body="\n" + "\n".join(lines) + "\n" if lines else "",
    )
    source = f"written by Exo from its tools, store and board (digest {_digest(node)})"
    return dataclasses.replace(node, sources=(source,))


def is_generated(node: Node) -> bool:
    """True when ``node`` is a version Exo wrote and nobody edited: its digest matches its fields."""
    for source in node.sources:
        match = _DIGEST.search(source)
        if match is not None:
            return match[1] == _digest(node)
    return False


def refresh_abilities(store: Store, abilities: Sequence[str], *, board: Board | None, today: str | None = None) -> str:
    """Write or refresh the note in ``store``; one line saying what was done.

    A missing note is written with its load rule; a generated one is replaced
    when what it says changed; an edited one (or one that no longer parses)
    is kept. Raises only what writing the store raises (an ``ExoError``).
    """
    day = today or _dt.date.today().isoformat()
    fresh = abilities_node(abilities, store=store, board=board, today=day)
    path = store.node_path(ABILITIES_ID)
    if not path.exists():
        _write_router(store)
        store.write_node(fresh)
        return f"wrote {ABILITIES_ID} (what this Exo can do: {len(abilities)} tools)"
    try:
        current = store.read_node(ABILITIES_ID)
    except ExoError as exc:
        return f"kept {ABILITIES_ID}: it does not parse ({exc}); fix it or delete it to get a fresh one"
    if not is_generated(current):
        return f"kept {ABILITIES_ID}: edited by the person (delete it to get a fresh one)"
    if _digest(current) == _digest(fresh):
        return f"{ABILITIES_ID} is up to date"
    store.write_node(fresh)
    return f"refreshed {ABILITIES_ID} (what this Exo can do: {len(abilities)} tools)"


def _write_router(store: Store) -> None:
    """The ``exo`` domain's router with the note's load rule, and its line in the root router."""
    index = store.root / DOMAIN / layout.ROUTER
    rule = f"- {' | '.join(TRIGGERS)} -> [[{ABILITIES_ID}]]"
    if not index.is_file():
        private_dir(index.parent)
        atomic_write_text(index, _INDEX + rule + "\n")
    store.ensure_domain(DOMAIN, about=_ABOUT_DOMAIN)  # after the router is written: only the root's line
    if any(ABILITIES_ID in existing.targets for existing in store.router(DOMAIN).rules):
        return
    text = index.read_text(encoding="utf-8")
    heading = "" if "## Load rules" in text else "\n## Load rules\n\n"
    atomic_write_text(index, text.rstrip("\n") + "\n" + heading + rule + "\n")
