"""Calls a chat model wrote out as text instead of as a call (docs/models.md, "Text or a tool call", step 6).

The call-opening ban in :mod:`exo_edge.chat_run` covers one token, and
Qwen2.5-Coder 0.5B walks around it: ``({"name": "ask_person", ...})``,
``>{"name": ...}``, a fenced JSON object. These helpers, free of any model,
tell such an answer from prose while it streams (:func:`call_shaped`), read
the call it spells (:func:`written_call`) so the core's judge can rule on it,
and tell earlier calls in words for a prompt that offers no tools
(:func:`calls_as_notes`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from exo_core.seams.model import ChatMessage, ToolCall
from exo_edge.chat_template import CALL_CLOSE, CALL_OPEN, MalformedToolCall, parse_native_calls

__all__ = ["call_shaped", "calls_as_notes", "written_call"]

# What a call written as text hides behind: anything but a letter or a digit before its ``{`` or ``<tool_call>``
# (the 0.5B has written "(", ">" and a fence), and a code fence's language, perhaps cut short ("```js").
_CALL_WRAPPING = re.compile(r"^(?:[^\w{<]+(?:json|jso|js|j)?)*")


def call_shaped(text: str) -> bool | None:
    """Whether an answer that starts with ``text`` is a call written out; ``None`` while it cannot tell yet.

    Call-shaped: after anything but letters and digits (whitespace, brackets,
    quotes, arrows, a code fence) comes ``{`` or ``<tool_call>``. A prose answer is told apart at its first
    letter, so only such answers are ever held back.
    """
    wrapping = _CALL_WRAPPING.match(text)
    head = text[wrapping.end() :] if wrapping else text
    if not head:
        return None
    if head.startswith(("{", CALL_OPEN)):
        return True
    if CALL_OPEN.startswith(head):
        return None
    return False


def written_call(text: str, tools: Sequence[Mapping[str, Any]]) -> ToolCall | None:
    """The call to an offered tool that ``text`` spells out, if it spells one (the first JSON object or tag)."""
    try:
        calls = parse_native_calls(text, tools)
    except MalformedToolCall:
        return None
    if calls:
        return calls[0]
    start = text.find("{")
    if start < 0:
        return None
    try:
        data, end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    try:
        calls = parse_native_calls(CALL_OPEN + text[start:end] + CALL_CLOSE, tools)
    except MalformedToolCall:
        return None
    if not calls:
        return None
    return calls[0]


def calls_as_notes(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The conversation with its tool calls told in words: for a prompt that offers no tools (step 6).

    Rendered natively, earlier calls are ``<tool_call>`` blocks and the model,
    even offered no tools, continues the pattern (the 0.5B wrote
    ``{"name": "buy_oat_milk", ...}``). So a call's turn is left out and its
    result joins the person's message before it, as what that tool returned.
    """
    called: dict[str, ToolCall] = {}
    out: list[ChatMessage] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            for made in message.tool_calls:
                called[made.id] = made
            if message.content.strip():
                out.append(ChatMessage("assistant", message.content))
            continue
        if message.role != "tool":
            out.append(message)
            continue
        answered = called.get(message.tool_call_id or "")
        source = "a tool"
        if answered is not None:
            shown = ", ".join(f"{key}={value!r}" for key, value in answered.arguments.items())
            source = f"{answered.name}({shown})"
        note = f"What {source} returned:\n{message.content}"
        if out and out[-1].role == "user":
            out[-1] = ChatMessage("user", out[-1].content.rstrip() + "\n\n" + note)
        else:
            out.append(ChatMessage("user", note))
    return out
