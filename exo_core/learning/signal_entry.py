"""A signal decision's ledger entry: the verdict or stated rule one person message teaches (docs/learning.md §1).

The signal decision (:data:`exo_core.decisions.uses.SIGNAL`: correction / rule / neither) is settled
in two places, and both record what it teaches with :func:`signal_entry`, so the entries are the same
whichever path settled it:

* live, inside exod (:class:`exo_core.learning.chat_signals.ChatSignals`): the rules, the device's
  providers, the larger model when reachable, or the person's answer;
* later, when the abstention was queued (kind ``decide``, ``context = {session, draft}``) and the
  proposal queue's drain gets the larger model's answer (``exo_edge/proposal_queue.py``).

What a decision teaches:

* a **correction** of a draft becomes a ``verdict`` (``reject``, ``judged`` = the draft's entry id,
  ``session``, ``reason`` = the person's words, ``probability``; ``refs`` = the draft), so the
  reviewer reads it like a web edit; a correction with no draft to judge teaches nothing;
* a **rule** becomes a stated ``rule`` entry (``text`` = the person's words, ``session``,
  ``probability``), unless its words carry a secret shape (:func:`exo_core.store.leaks.find_leaks`):
  a rule's words reach the pack;
* *neither*, or an abstention, teaches nothing (the message is already an ``utterance``).

A message the facts seam reads as a stated fact (:func:`is_stated_fact`) teaches nothing here at all:
it became a belief or was asked about (docs/learning.md §7), so "Remember that my wifi password is ..."
never turns into a rule whose words reach the pack.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from exo_core.learning.facts import FactTooLongError, detect
from exo_core.store.leaks import find_leaks

__all__ = ["SignalEntry", "signal_entry", "is_stated_fact"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SignalEntry:
    """One ledger entry to append: its ``kind``, ``body`` and ``refs``."""

    kind: str
    body: Mapping[str, Any]
    refs: tuple[str, ...] = ()


def is_stated_fact(text: str) -> bool:
    """Whether the facts seam reads ``text`` as a fact (a too-long "remember" counts: it was refused as one)."""
    try:
        return detect(text) is not None
    except FactTooLongError:
        return True


def signal_entry(
    said: str | None, text: str, *, session: str, draft: str | None, probability: float
) -> SignalEntry | None:
    """The entry the signal ``said`` about the person's ``text`` teaches, or ``None`` (see the module's docstring).

    ``draft`` is the ledger id of the draft the message answers, if any; ``probability`` is the
    decision's probability of ``said``.
    """
    if said not in ("correction", "rule"):
        return None
    if is_stated_fact(text):
        return None
    if said == "correction":
        if draft is None:
            return None
        verdict = {
            "verdict": "reject",
            "judged": draft,
            "session": session,
            "reason": text,
            "probability": probability,
        }
        return SignalEntry("verdict", verdict, (draft,))
    if find_leaks(text):
        log.warning("a stated rule that carries a secret was not recorded (it would reach the pack)")
        return None
    rule = {"text": text, "session": session, "probability": probability}
    return SignalEntry("rule", rule)
