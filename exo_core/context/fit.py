"""Fitting one model input into the model's window, in a stated order (docs/context.md, "Sized to the model").

A :class:`Draft` is the input before fitting, in parts: the base prompt, the
pack, the beliefs retrieved for the message (best first), the history view's
elements (oldest first) and the verbatim tail, whose messages from
``current`` on belong to the turn being answered. :func:`fit` takes the
tokens of each part (counted by the model's own tokenizer where it has one)
and the room left once the answer, the tools and the template are reserved,
and trims, each step only while the input is still too big:

1. tool results bigger than a quarter of the room are cut (head and end kept);
2. history elements are dropped, oldest first;
3. earlier exchanges of the tail are dropped, oldest first, all but the last;
4. retrieved beliefs are dropped, lowest-ranked first;
5. the last earlier exchange is dropped;
6. the current turn's tool results are cut further, oldest first, then all but the newest down
   to a marker (the calls stay, so the model still sees what it did);
7. the pack is cut from its end (a notice says so);
8. the current user message is cut (head and end kept; a notice says so).

The base prompt is never cut; when it does not fit with the answer's room,
the window is too small for the configuration and
:class:`ContextWindowTooSmallError` says where to raise it. Nothing here
touches a model, the database or the clock: the rules are tested on their own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from exo_core.context.config import estimate_tokens
from exo_core.context.view import VIEW_FOOTER, VIEW_HEADER
from exo_core.errors import ConfigError
from exo_core.seams.model import ChatMessage

__all__ = [
    "LAYOUTS",
    "Draft",
    "Trimmed",
    "ContextWindowTooSmallError",
    "draft_texts",
    "draft_tokens",
    "fit",
    "render",
    "recalled_message",
    "clip_middle",
]

# How render() lays the parts out: "reuse" (what never changes first, what changes every turn last) or
# "system" (everything but the tail in one system message, retrieved beliefs included: the earlier layout,
# kept for same-run comparisons).
LAYOUTS = ("reuse", "system")
# A tool result may take at most this share of the room before it is cut (step 1).
TOOL_SHARE = 4
# What a cut tool result of the current turn keeps at least (step 6), in tokens.
TOOL_FLOOR = 48
# What the current user message keeps at least (step 8), in tokens.
CURRENT_FLOOR = 24


class ContextWindowTooSmallError(ConfigError):
    """The base prompt, the tools and the answer's room alone do not fit in the model's window."""


@dataclass(frozen=True, slots=True)
class Draft:
    """One model input in parts, before fitting (see the module docstring)."""

    base: str
    pack: str = ""
    recalled: tuple[str, ...] = ()
    recall_heading: str = ""
    history: tuple[str, ...] = ()
    tail: tuple[ChatMessage, ...] = ()
    current: int = 0
    layout: str = "reuse"  # LAYOUTS: how render() orders the parts


@dataclass(frozen=True, slots=True)
class Trimmed:
    """What :func:`fit` left out, and the input's tokens before and after."""

    tokens_before: int
    tokens_after: int
    tool_results_cut: int = 0
    history_dropped: int = 0
    exchanges_dropped: int = 0
    recalled_dropped: int = 0
    pack_cut: bool = False
    current_cut: bool = False

    @property
    def any(self) -> bool:
        """Whether anything was cut or left out."""
        return self.tokens_after < self.tokens_before

    @property
    def loud(self) -> bool:
        """Whether the person should be told: the pack or their own message was cut."""
        return self.pack_cut or self.current_cut

    def describe(self) -> str:
        """One line for a notice: what was left out to fit the window."""
        parts = []
        if self.history_dropped:
            parts.append(f"{self.history_dropped} older history part(s)")
        if self.exchanges_dropped:
            parts.append(f"{self.exchanges_dropped} earlier exchange(s)")
        if self.recalled_dropped:
            parts.append(f"{self.recalled_dropped} recalled note(s)")
        if self.tool_results_cut:
            parts.append(f"the middle of {self.tool_results_cut} tool result(s)")
        if self.pack_cut:
            parts.append("the end of the pack")
        if self.current_cut:
            parts.append("the middle of your message")
        said = ", ".join(parts) if parts else "nothing"
        return f"to fit the model's window ({self.tokens_before} -> {self.tokens_after} tokens) I left out {said}"


def clip_middle(text: str, tokens: int, target: int) -> str:
    """``text`` (``tokens`` long) cut to about ``target`` tokens, its head and end kept (errors come last)."""
    if tokens <= target or not text:
        return text
    keep = max(0, len(text) * max(0, target - 12) // max(1, tokens))  # 12: the marker's own tokens
    head = keep // 2
    end = keep - head
    left_out = len(text) - head - end
    return (
        f"{text[:head]}\n[... {left_out} characters left out to fit the model's window ...]\n{text[len(text) - end :]}"
    )


def _message_text(message: ChatMessage) -> str:
    if not message.tool_calls:
        return message.content
    calls = json.dumps([{"name": c.name, "arguments": c.arguments} for c in message.tool_calls], ensure_ascii=False)
    return message.content + calls


def draft_texts(draft: Draft) -> list[str]:
    """Every text :func:`fit` needs counted (count them once, in one batch)."""
    texts = [draft.base, draft.pack, draft.recall_heading, VIEW_HEADER + VIEW_FOOTER]
    texts.extend(draft.recalled)
    texts.extend(draft.history)
    texts.extend(_message_text(m) for m in draft.tail)
    return texts


class _Counts:
    """Tokens of texts, from the counter's answers; a cut text is estimated in proportion to its length."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self._counts = dict(counts)

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        known = self._counts.get(text)
        if known is not None:
            return known
        return estimate_tokens(text)

    def remember(self, text: str, tokens: int) -> None:
        """Record the (estimated) tokens of a text made by cutting another."""
        self._counts[text] = tokens

    def cut(self, text: str, target: int) -> str:
        """``text`` cut to about ``target`` tokens; remembers the cut text's tokens."""
        tokens = self(text)
        out = clip_middle(text, tokens, target)
        if out != text:
            self.remember(out, min(tokens, max(1, target)))
        return out


def draft_tokens(draft: Draft, counts: Mapping[str, int] | _Counts, *, overhead: int) -> int:
    """The tokens of ``draft`` rendered: its parts, plus ``overhead`` for each message's template."""
    count = counts if isinstance(counts, _Counts) else _Counts(counts)
    apart = overhead if draft.layout == "reuse" else 0  # each a message of its own (render)
    system = count(draft.base) + count(draft.pack)
    if draft.recalled:
        system += apart + count(draft.recall_heading) + sum(count(r) + 1 for r in draft.recalled)
    if draft.history:
        system += apart + count(VIEW_HEADER + VIEW_FOOTER) + sum(count(h) + 1 for h in draft.history)
    tail = sum(count(_message_text(m)) + overhead for m in draft.tail)
    return system + overhead + tail


def _exchanges(tail: Sequence[ChatMessage], current: int) -> list[int]:
    """Start indexes of the earlier exchanges (a person's message and what followed it) before ``current``."""
    starts = [i for i in range(current) if tail[i].role == "user"]
    if current > 0 and (not starts or starts[0] != 0):
        starts.insert(0, 0)  # a tail that does not open with the person's message: its head is one exchange
    return starts


def fit(draft: Draft, counts: Mapping[str, int], room: int, *, overhead: int) -> tuple[Draft, Trimmed]:
    """``draft`` trimmed, in the module's order, until it fits in ``room`` tokens; and what was trimmed."""
    count = _Counts(counts)
    before = draft_tokens(draft, count, overhead=overhead)
    floor = count(draft.base) + 2 * overhead
    if floor > room:
        raise ContextWindowTooSmallError(
            f"the base prompt alone needs {floor} tokens but only {room} are left in the model's window "
            "after the answer's room and the tools"
        )
    state = _Fitting(draft, count, room, overhead)
    state.cut_tool_results(max(TOOL_FLOOR, room // TOOL_SHARE), current_only=False)
    state.drop_history()
    state.drop_exchanges(keep=1)
    state.drop_recalled()
    state.drop_exchanges(keep=0)
    state.cut_tool_results(TOOL_FLOOR, current_only=True)
    state.cut_tool_results(0, current_only=True, spare_last=True)
    state.cut_pack()
    state.cut_current()
    after = state.tokens()
    if after > room:
        raise ContextWindowTooSmallError(
            f"the input still needs {after} tokens after trimming everything that may be trimmed; "
            f"only {room} are left in the model's window after the answer's room and the tools"
        )
    return state.draft, replace(state.trimmed, tokens_before=before, tokens_after=after)


class _Fitting:
    """One fit in progress: the draft so far and what was trimmed."""

    def __init__(self, draft: Draft, count: _Counts, room: int, overhead: int) -> None:
        self.draft = draft
        self.count = count
        self.room = room
        self.overhead = overhead
        self.trimmed = Trimmed(tokens_before=0, tokens_after=0)

    def tokens(self) -> int:
        return draft_tokens(self.draft, self.count, overhead=self.overhead)

    def over(self) -> int:
        return self.tokens() - self.room

    def cut_tool_results(self, cap: int, *, current_only: bool, spare_last: bool = False) -> None:
        """Cut tool results above ``cap`` tokens, oldest first, while over (``spare_last``: not the newest)."""
        tail = list(self.draft.tail)
        start = self.draft.current if current_only else 0
        results = [i for i in range(start, len(tail)) if tail[i].role == "tool"]
        if spare_last:
            results = results[:-1]
        cut = 0
        for i in results:
            if self.over() <= 0:
                break
            message = tail[i]
            tokens = self.count(message.content)
            if tokens <= cap:
                continue
            target = max(cap, tokens - self.over())
            tail[i] = replace(message, content=self.count.cut(message.content, target))
            self.draft = replace(self.draft, tail=tuple(tail))
            cut += 1
        if cut:
            self.trimmed = replace(self.trimmed, tool_results_cut=self.trimmed.tool_results_cut + cut)

    def drop_history(self) -> None:
        """Drop history elements, oldest first, while over."""
        dropped = 0
        while self.draft.history and self.over() > 0:
            self.draft = replace(self.draft, history=self.draft.history[1:])
            dropped += 1
        self.trimmed = replace(self.trimmed, history_dropped=self.trimmed.history_dropped + dropped)

    def drop_exchanges(self, *, keep: int) -> None:
        """Drop earlier exchanges of the tail, oldest first, leaving ``keep`` of them, while over."""
        dropped = 0
        while self.over() > 0:
            starts = _exchanges(self.draft.tail, self.draft.current)
            if len(starts) <= keep:
                break
            end = starts[1] if len(starts) > 1 else self.draft.current
            self.draft = replace(self.draft, tail=self.draft.tail[end:], current=self.draft.current - end)
            dropped += 1
        self.trimmed = replace(self.trimmed, exchanges_dropped=self.trimmed.exchanges_dropped + dropped)

    def drop_recalled(self) -> None:
        """Drop retrieved beliefs, lowest-ranked (last) first, while over."""
        dropped = 0
        while self.draft.recalled and self.over() > 0:
            self.draft = replace(self.draft, recalled=self.draft.recalled[:-1])
            dropped += 1
        self.trimmed = replace(self.trimmed, recalled_dropped=self.trimmed.recalled_dropped + dropped)

    def cut_pack(self) -> None:
        """Cut the pack from its end by what is still over (the pack's start says who the person is)."""
        over = self.over()
        if over <= 0 or not self.draft.pack:
            return
        tokens = self.count(self.draft.pack)
        target = tokens - over
        if target <= 8:
            pack = ""
        else:
            keep = len(self.draft.pack) * (target - 8) // tokens
            pack = self.draft.pack[:keep].rstrip() + "\n[... the rest of the pack left out to fit the model's window]"
            self.count.remember(pack, target)
        self.draft = replace(self.draft, pack=pack)
        self.trimmed = replace(self.trimmed, pack_cut=True)

    def cut_current(self) -> None:
        """Cut the current user message (head and end kept) by what is still over."""
        over = self.over()
        index = self.draft.current
        if over <= 0 or index >= len(self.draft.tail):
            return
        message = self.draft.tail[index]
        tokens = self.count(message.content)
        target = max(CURRENT_FLOOR, tokens - over)
        if target >= tokens:
            return
        tail = list(self.draft.tail)
        tail[index] = replace(message, content=self.count.cut(message.content, target))
        self.draft = replace(self.draft, tail=tuple(tail))
        self.trimmed = replace(self.trimmed, current_cut=True)


def render(draft: Draft) -> list[ChatMessage]:
    """The model input of ``draft``, laid out for reuse (docs/context.md, "Laid out for reuse").

    What never changes comes first and what changes every turn last, so an
    engine that keeps the state of the longest common prefix (llama.cpp, a
    server's prompt cache) evaluates only the new end of each call:

    1. one system message: the base prompt, then the pack (a chat template puts the tools after it);
    2. the history view, a system message of its own (it changes only when a span is summarized);
    3. the tail before the current turn;
    4. the beliefs retrieved for this message (:func:`recalled_message`), just before it;
    5. the current turn: the person's message, then any calls and results that followed.

    The ``system`` layout puts 1, 2 and 4 in one system message (see :data:`LAYOUTS`).
    """
    if draft.layout == "system":
        return _render_one_system(draft)
    system = "\n\n".join(p for p in (draft.base, draft.pack.strip()) if p)
    head = [ChatMessage(role="system", content=system)] if system else []
    if draft.history:
        history = VIEW_HEADER + "\n\n" + "\n\n".join(draft.history) + "\n" + VIEW_FOOTER
        head.append(ChatMessage(role="system", content=history))
    tail = list(draft.tail)
    notes = recalled_message(draft.recall_heading, draft.recalled)
    if notes is not None:
        tail.insert(min(draft.current, len(tail)), notes)
    return head + tail


def _render_one_system(draft: Draft) -> list[ChatMessage]:
    """The ``system`` layout: one system message (base, pack, recalled, history), then the tail."""
    memory = ""
    if draft.pack or draft.recalled:
        memory = draft.pack.rstrip()
        if draft.recalled:
            memory += f"\n\n{draft.recall_heading}\n" + "\n".join(draft.recalled)
        memory = memory.strip() + "\n"
    history = ""
    if draft.history:
        history = VIEW_HEADER + "\n\n" + "\n\n".join(draft.history) + "\n" + VIEW_FOOTER
    system = "\n\n".join(p for p in (draft.base, memory, history) if p)
    head = [ChatMessage(role="system", content=system)] if system else []
    return head + list(draft.tail)


def recalled_message(heading: str, recalled: Sequence[str]) -> ChatMessage | None:
    """The beliefs retrieved for the current message as the system message that goes just before it."""
    if not recalled:
        return None
    return ChatMessage(role="system", content=(f"{heading}\n" if heading else "") + "\n".join(recalled))
