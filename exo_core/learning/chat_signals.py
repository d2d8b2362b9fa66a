"""Every person message after a draft is a signal (docs/learning.md §1).

:class:`ChatSignals` follows exod's live events. Each finished reply of the
assistant (``message.completed``, role ``assistant``, complete, no tool
calls) is recorded as a draft: an ``action`` entry ``{"tool": "reply",
"outcome": "log", "session", "text"}``. Each person message
(``message.completed``, role ``user``) goes through the signal decision
(correction / rule / neither, with its probability; exod decides it with
:class:`exo_core.decisions.signal_escalation.SignalSettler`, which sends an abstention to
the larger model, the person or the proposal queue):

* a **correction** of the session's last draft becomes a ``verdict``
  (``reject``, ``judged`` = the draft's entry id, ``reason`` = the person's
  words, ``probability``), so the reviewer reads it like a web edit;
* a **rule** becomes a stated ``rule`` entry (the person's words);
* *neither* (or an abstaining decision) records nothing more: the message is
  already an ``utterance`` of the turn, weak evidence as before.

The entry a decision teaches is :func:`exo_core.learning.signal_entry.signal_entry`'s, the same
one the proposal queue's drain records for a queued signal the larger model decides later. A
message the loop's facts seam reads as a stated fact (:func:`exo_core.learning.facts.detect`)
is not a signal at all: it became a belief or was asked about, so "Remember that my wifi
password is ..." never turns into a rule whose words reach the pack. Nor is a rule that carries
a secret shape (:func:`exo_core.store.leaks.find_leaks`) recorded.

The reply to a stated fact ("Saved: your sister lives in Porto.") is no draft either: it is the
store's confirmation, not the assistant's writing, so a "no, that's wrong" after it is no verdict on
the person's taste (the turns of stated facts are remembered, bounded like the drafts).

A draft is answered once; the map of open drafts is bounded
(:data:`MAX_OPEN_DRAFTS` sessions, oldest dropped). Writes run in a worker
thread; a failed write is logged and the stream goes on (the turn itself is
recorded by the loop regardless).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from exo_core.errors import ClosedResourceError, ExoError
from exo_core.learning.signal_entry import is_stated_fact, signal_entry
from exo_core.seams.recorder import Recorder

__all__ = ["ChatSignals", "MAX_OPEN_DRAFTS"]

log = logging.getLogger(__name__)

MAX_OPEN_DRAFTS = 256
# Characters of an open draft kept for the signal decision (a model is shown its first 400: docs/decisions.md §3).
MAX_DRAFT_TEXT = 2000


class ChatSignals:
    """Records drafts and reads person messages as signals (``decide``: text, session, draft, its text)."""

    def __init__(
        self,
        hub: Any,
        recorder: Recorder,
        decide: Callable[[str, str, str | None, str | None], Awaitable[Any]],
        *,
        closing: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``decide(text, session, draft, draft_text)``: the draft is the ledger id of the one the message
        answers, if any, and ``draft_text`` its words (the signal decision's models read them);
        ``closing`` is awaited once the stream stops (what the decision holds open)."""
        self.hub = hub
        self.recorder = recorder
        self.decide = decide
        self.closing = closing
        self._drafts: OrderedDict[str, str] = OrderedDict()
        self._draft_texts: dict[str, str] = {}  # the open draft's words per session (the keys of _drafts)
        self._fact_turns: OrderedDict[str, None] = OrderedDict()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Begin following events."""
        self._task = asyncio.create_task(self._watch(), name="learning-chat-signals")

    async def _watch(self) -> None:
        try:
            async with self.hub.subscribe(since=self.hub.last_seq) as sub:
                while True:
                    item = await sub.next()
                    if item is None:
                        continue
                    event = json.loads(item.data)
                    if event.get("type") != "message.completed" or not event.get("session"):
                        continue
                    try:
                        await self.on_message(event["session"], event["body"])
                    except ExoError:
                        log.exception("a chat signal was not recorded; the turn itself is")
        except ClosedResourceError:
            return

    async def on_message(self, session: str, body: Mapping[str, Any]) -> str | None:
        """Handle one stored message; returns the kind of entry recorded for it, if any."""
        text = str(body.get("content") or "").strip()
        if not text:
            return None
        if body.get("role") == "assistant":
            if body.get("tool_calls") or body.get("status", "complete") != "complete":
                return None
            turn = str(body.get("turn_id") or "")
            if turn and turn in self._fact_turns:
                del self._fact_turns[turn]
                return None  # the facts seam's confirmation of a stated fact, not a draft
            draft = await asyncio.to_thread(
                self.recorder.record, "action", {"tool": "reply", "outcome": "log", "session": session, "text": text}
            )
            if draft:
                self._drafts[session] = draft
                self._draft_texts[session] = text[:MAX_DRAFT_TEXT]
                self._drafts.move_to_end(session)
                while len(self._drafts) > MAX_OPEN_DRAFTS:
                    dropped, _ = self._drafts.popitem(last=False)
                    self._draft_texts.pop(dropped, None)
            return "action"
        if body.get("role") != "user":
            return None
        if is_stated_fact(text):
            # The loop's facts seam owns it ("Remember that my wifi password is ..."): a belief, or asked
            # about, never a stated rule whose words would reach the pack.
            self._drafts.pop(session, None)
            self._draft_texts.pop(session, None)
            turn = str(body.get("turn_id") or "")
            if turn:
                self._fact_turns[turn] = None
            while len(self._fact_turns) > MAX_OPEN_DRAFTS:
                self._fact_turns.popitem(last=False)
            return None
        decision = await self.decide(text, session, self._drafts.get(session), self._draft_texts.get(session))
        said = decision.applied
        probability = float(decision.probabilities.get(said, 0.0)) if said else 0.0
        draft = self._drafts.pop(session, None)
        self._draft_texts.pop(session, None)
        entry = signal_entry(said, text, session=session, draft=draft, probability=probability)
        if entry is None:
            return None
        await asyncio.to_thread(self.recorder.record, entry.kind, entry.body, refs=entry.refs)
        return entry.kind

    async def aclose(self) -> None:
        """Stop following events."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.closing is not None:
            await self.closing()
