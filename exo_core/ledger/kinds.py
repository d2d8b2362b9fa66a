"""Entry kinds, scopes and the body rules each kind must satisfy.

Every kind is listed here; an append of any other kind is refused
(:class:`BadBodyError`, field ``kind``). Body rules are deliberately small:
they pin the fields that later views and the learning loop read, and leave
the rest free. Validation runs at append (our own writes) and again in
``verify()`` (anyone's writes), so a view never meets a body it cannot read.

Kinds (docs/ledger.md §2):

=============  ==========================================================
utterance      the person's own words: ``text``. Never tool/web/file text.
rule           a standing rule the person gave: ``text``.
action         a tool call and the gate's outcome: ``tool``, ``outcome``;
               tool output is data inside the action (``result``).
approval       an answer to an approval request: ``decision`` allow|deny.
verdict        ``verdict`` accept|edit|reject|should_have_been and
               ``judged`` (an entry id that must also be in ``refs``).
outcome        what came of something: ``status``.
proposal       a proposed change to a belief/skill: ``target``.
promotion      a proposal promoted: ``target``.
rejection      a proposal rejected: ``target``.
item           a saved item (docs/store.md): ``item_id``.
retrieval      ids that went into a prompt: ``node_ids``, ``item_ids``.
decision       a decision model's record: hashes, labels and numbers only
               (no raw text: every string is at most 128 characters with no
               whitespace).
checkpoint     a signed checkpoint of the ledger state before this entry:
               ``size``, ``head``.
enrol          the owner enrols another machine's signing key: ``key`` (a
               key id). Counts only when the author is the owner key the
               verifying machine pinned (docs/ledger.md §4).
policy         the gate's policy exod runs under changed: ``file``,
               ``sha256`` (and the ``previous`` digest and who changed it);
               written by ``exo gate set`` and by exod when it finds the file
               changed by hand.
resolve        the person settled a sync conflict over a curated file:
               ``path``, ``keep`` mine|theirs|both, ``kept`` (the sha256 the
               file holds now, "" when deleted) and ``superseded`` (the
               versions it replaces); the next sync applies it to the other
               copy (docs/store.md, "Resolving a conflict").
=============  ==========================================================
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from exo_core.errors import BadBodyError

__all__ = ["KINDS", "VERDICTS", "RESOLUTIONS", "validate_kind", "validate_scope", "validate_body", "is_entry_id"]

VERDICTS = ("accept", "edit", "reject", "should_have_been")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_SCOPE = re.compile(r"person|(agent|group):[a-z0-9][a-z0-9_-]{0,63}")
_TOKEN = re.compile(r"\S{1,128}")


def is_entry_id(value: object) -> bool:
    """True when ``value`` is a 64-hex-digit entry id (or chain hash)."""
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def _needs(kind: str, *keys: str) -> Callable[[Mapping[str, Any], tuple[str, ...]], None]:
    """The rule of a kind whose body needs non-empty strings at ``keys``."""

    def check(body: Mapping[str, Any], refs: tuple[str, ...]) -> None:
        for key in keys:
            if not isinstance(body.get(key), str) or not body[key]:
                raise BadBodyError(f"{kind} body needs a non-empty string {key!r}", field=f"body.{key}")

    return check


def _approval(body: Mapping[str, Any], refs: tuple[str, ...]) -> None:
    if body.get("decision") not in ("allow", "deny"):
        raise BadBodyError("approval body needs 'decision': 'allow' or 'deny'", field="body.decision")


def _verdict(body: Mapping[str, Any], refs: tuple[str, ...]) -> None:
    if body.get("verdict") not in VERDICTS:
        raise BadBodyError(f"verdict body needs 'verdict' in {', '.join(VERDICTS)}", field="body.verdict")
    judged = body.get("judged")
    if not is_entry_id(judged):
        raise BadBodyError("verdict body needs 'judged': the judged entry id", field="body.judged")
    # The judged entry must be a resolvable ref, not just a string in the body:
    # the learning loop counts verdicts as evidence, so an unresolved target
    # would raise confidence on nothing (docs/learning.md §1).
    if judged not in refs:
        raise BadBodyError("verdict: the judged entry id must also be in refs", field="refs")


def _retrieval(body: Mapping[str, Any], refs: tuple[str, ...]) -> None:
    for key in ("node_ids", "item_ids"):
        if not isinstance(body.get(key), list) or not all(isinstance(v, str) for v in body[key]):
            raise BadBodyError(f"retrieval body needs a list of strings {key!r}", field=f"body.{key}")


def _no_text(value: Any, path: str) -> None:
    if isinstance(value, str):
        if not _TOKEN.fullmatch(value):
            raise BadBodyError(
                f"decision {path}: strings must be hashes, ids or labels "
                "(1-128 characters, no whitespace); raw text is not recorded",
                field=path,
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_text(key, f"{path}.<key>")
            _no_text(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _no_text(item, f"{path}[{i}]")


def _decision(body: Mapping[str, Any], refs: tuple[str, ...]) -> None:
    _needs("decision", "decider")(body, refs)
    _no_text(dict(body), "body")


def _checkpoint(body: Mapping[str, Any], refs: tuple[str, ...]) -> None:
    size = body.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise BadBodyError("checkpoint body needs 'size': a non-negative integer", field="body.size")
    if not is_entry_id(body.get("head")):
        raise BadBodyError("checkpoint body needs 'head': a 64-hex chain hash", field="body.head")


def _enrol(body: Mapping[str, Any], refs: tuple[str, ...]) -> None:
    from exo_core.ledger.keys import is_key_id  # keys imports nacl; kinds stays light

    if not is_key_id(body.get("key")):
        raise BadBodyError("enrol body needs 'key': a key id ('ed25519:' + 64 hex digits)", field="body.key")


RESOLUTIONS = ("mine", "theirs", "both")


def _file_state(value: object) -> bool:
    return value == "" or is_entry_id(value)


def _resolve(body: Mapping[str, Any], refs: tuple[str, ...]) -> None:
    _needs("resolve", "path")(body, refs)
    if body.get("keep") not in RESOLUTIONS:
        raise BadBodyError(f"resolve body needs 'keep' in {', '.join(RESOLUTIONS)}", field="body.keep")
    if not _file_state(body.get("kept")):
        raise BadBodyError("resolve body needs 'kept': a sha256, or '' for a deleted file", field="body.kept")
    superseded = body.get("superseded")
    if not isinstance(superseded, list) or not superseded or not all(_file_state(v) for v in superseded):
        raise BadBodyError(
            "resolve body needs 'superseded': a list of sha256 values ('' for a deleted file)",
            field="body.superseded",
        )


KINDS: Mapping[str, Callable[[Mapping[str, Any], tuple[str, ...]], None]] = {
    "utterance": _needs("utterance", "text"),
    "rule": _needs("rule", "text"),
    "action": _needs("action", "tool", "outcome"),
    "approval": _approval,
    "verdict": _verdict,
    "outcome": _needs("outcome", "status"),
    "proposal": _needs("proposal", "target"),
    "promotion": _needs("promotion", "target"),
    "rejection": _needs("rejection", "target"),
    "item": _needs("item", "item_id"),
    "retrieval": _retrieval,
    "decision": _decision,
    "checkpoint": _checkpoint,
    "enrol": _enrol,
    "policy": _needs("policy", "file", "sha256"),
    "resolve": _resolve,
}


def validate_kind(kind: object) -> str:
    """Return ``kind`` if it is a known kind; else :class:`BadBodyError`."""
    if not isinstance(kind, str) or kind not in KINDS:
        raise BadBodyError(f"unknown ledger entry kind {kind!r}; known kinds: {', '.join(sorted(KINDS))}", field="kind")
    return kind


def validate_scope(scope: object) -> str:
    """Return ``scope`` if well formed (``person``, ``agent:NAME``, ``group:NAME``)."""
    if not isinstance(scope, str) or not _SCOPE.fullmatch(scope):
        raise BadBodyError(
            f"bad scope {scope!r}; expected 'person', 'agent:NAME' or 'group:NAME' "
            "(NAME: lower-case letters, digits, '_' or '-', at most 64)",
            field="scope",
        )
    return scope


def validate_body(kind: str, body: object, refs: tuple[str, ...]) -> None:
    """Check ``body`` against the rules of ``kind``; :class:`BadBodyError` if not met."""
    if not isinstance(body, Mapping):
        raise BadBodyError(f"{kind} body must be a JSON object", field="body")
    KINDS[validate_kind(kind)](body, refs)
