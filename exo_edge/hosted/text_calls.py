"""Tool calls an OpenAI-compatible server leaves in the answer's text, in the Hermes/Qwen format.

Qwen2.5's chat template asks the model to write a call as::

    <tool_call>
    {"name": "read_file", "arguments": {"path": "notes.txt"}}
    </tool_call>

Ollama, ``llama-server --jinja`` and vLLM with a tool parser turn that into
the API's ``tool_calls``; llama-cpp-python's own server (``python -m
llama_cpp.server``, the laptop engine the tests run, docs/models.md §3) and
vLLM without a parser pass it through as ``content``. :class:`TextCallFilter`
splits streamed content into the text to show and the calls to run, so the
device's loop gets the same seam chunks from every engine. Text is streamed as
it comes except a tail that may be the start of ``<tool_call>``, and
white space around calls, which is held until real text follows.

Small Qwen2.5-Coder models often write the call without the tags, as the
whole answer: ``{"name": ..., "arguments": {...}}``, bare or in a ```` ```json ````
fence (seen with the 0.5B on llama_cpp.server). An answer that *begins* like
that is held (up to :data:`BARE_LIMIT` characters) and becomes a call only if
all of it is one such object naming an offered tool; anything else is shown
as the text it is.
"""

from __future__ import annotations

import json
from typing import Any

from exo_core.seams.failures import FailureKind, ProviderError
from exo_core.seams.model import ToolCall

__all__ = ["TextCallFilter", "OPEN_TAG", "CLOSE_TAG", "BARE_LIMIT"]

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
# The longest answer held back as a possible bare call; past it the answer is text.
BARE_LIMIT = 4096
_FENCES = ("```json", "```")


def _partial_suffix(text: str, tag: str) -> int:
    """The length of the longest end of ``text`` that is a proper start of ``tag``."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class TextCallFilter:
    """Feeds on streamed content; gives back text to show now and collects whole tool calls."""

    def __init__(self, provider: str, names: frozenset[str] = frozenset()) -> None:
        self.provider = provider
        self.names = names  # the offered tools: a bare object is a call only if it names one
        self.calls: list[ToolCall] = []
        self._buffer = ""
        self._in_call = False
        self._space = ""  # white space held back: shown only when more text follows it
        self._bare: str | None = "" if names else None  # the answer so far while it may be one bare call

    def feed(self, piece: str) -> str:
        """Add ``piece`` of content; the text that can be shown now (may be empty)."""
        if self._bare is not None:
            self._bare += piece
            verdict = _bare_start(self._bare)
            if verdict is None or (verdict and len(self._bare) <= BARE_LIMIT):
                return ""  # undecided, or held as a possible bare call
            piece, self._bare = self._bare, None
        return self._tagged(piece)

    def _tagged(self, piece: str) -> str:
        """Text mode: ``<tool_call>`` blocks are taken out, the rest shown."""
        self._buffer += piece
        shown: list[str] = []
        while True:
            if self._in_call:
                end = self._buffer.find(CLOSE_TAG)
                if end < 0:
                    break
                self.calls.append(self._parse(self._buffer[:end]))
                self._buffer = self._buffer[end + len(CLOSE_TAG) :]
                self._in_call = False
                continue
            start = self._buffer.find(OPEN_TAG)
            if start >= 0:
                shown.append(self._buffer[:start])
                self._buffer = self._buffer[start + len(OPEN_TAG) :]
                self._in_call = True
                continue
            keep = _partial_suffix(self._buffer, OPEN_TAG)
            cut = len(self._buffer) - keep
            shown.append(self._buffer[:cut])
            self._buffer = self._buffer[cut:]
            break
        return self._release("".join(shown))

    def finish(self) -> str:
        """The stream ended: the text still held, after parsing a call left open (no closing tag)."""
        shown = ""
        if self._bare is not None:
            held, self._bare = self._bare, None
            call = self._bare_call(held)
            if call is not None:
                self.calls.append(call)
                return ""
            shown = self._tagged(held)
        rest = self._buffer
        self._buffer = ""
        if self._in_call:
            self._in_call = False
            self.calls.append(self._parse(rest))
            return shown
        text = shown + self._release(rest)
        if self.calls:
            return text
        return text + self._space

    def _release(self, text: str) -> str:
        """``text`` with held white space before it; white space at its end is held in turn."""
        if not text:
            return ""
        body = text.rstrip()
        if not body:
            self._space += text
            return ""
        out = self._space + body
        self._space = text[len(body) :]
        return out

    def _bare_call(self, held: str) -> ToolCall | None:
        """The call ``held`` is when all of it is one ``{"name", "arguments"}`` object naming an offered tool."""
        text = held.strip()
        for fence in _FENCES:
            if text.startswith(fence) and text.endswith("```") and len(text) > len(fence) + 3:
                text = text[len(fence) : -3].strip()
                break
        try:
            data: Any = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict) or data.get("name") not in self.names:
            return None
        if set(data) - {"name", "arguments", "parameters"}:
            return None
        return self._parse(text)

    def _parse(self, raw: str) -> ToolCall:
        text = raw.strip()
        try:
            data: Any = json.loads(text)
        except ValueError as exc:
            raise ProviderError(
                f"{self.provider}: the model wrote a tool call that is not JSON: {text[:120]!r}",
                kind=FailureKind.SERVER,
                provider=self.provider,
            ) from exc
        if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"]:
            raise ProviderError(
                f"{self.provider}: the model wrote a tool call without a name: {text[:120]!r}",
                kind=FailureKind.SERVER,
                provider=self.provider,
            )
        args = data.get("arguments", data.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args or "{}")
            except ValueError as exc:
                raise ProviderError(
                    f"{self.provider}: tool call {data['name']!r} has arguments that are not JSON: {args[:120]!r}",
                    kind=FailureKind.SERVER,
                    provider=self.provider,
                ) from exc
        if not isinstance(args, dict):
            raise ProviderError(
                f"{self.provider}: tool call {data['name']!r} arguments are not an object",
                kind=FailureKind.SERVER,
                provider=self.provider,
            )
        return ToolCall(f"call_text_{len(self.calls)}", data["name"], args)


def _bare_start(text: str) -> bool | None:
    """Whether an answer beginning ``text`` may be a bare call (None: too little to tell yet)."""
    head = text.lstrip()
    if not head:
        return None
    if head.startswith("{"):
        return True
    for fence in _FENCES:
        if fence.startswith(head):
            return None
    if head.startswith("```json"):
        return True
    if head.startswith("```"):
        after = head[3:].lstrip(" ")
        if not after:
            return None
        return after.startswith(("\n{", "\r\n{")) or after in ("\n", "\r\n")
    return False
