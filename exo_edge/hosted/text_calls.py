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
"""

from __future__ import annotations

import json
from typing import Any

from exo_core.agent.model import ToolCall
from exo_core.models.failures import FailureKind, ProviderError

__all__ = ["TextCallFilter", "OPEN_TAG", "CLOSE_TAG"]

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"


def _partial_suffix(text: str, tag: str) -> int:
    """The length of the longest end of ``text`` that is a proper start of ``tag``."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class TextCallFilter:
    """Feeds on streamed content; gives back text to show now and collects whole tool calls."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.calls: list[ToolCall] = []
        self._buffer = ""
        self._in_call = False
        self._space = ""  # white space held back: shown only when more text follows it

    def feed(self, piece: str) -> str:
        """Add ``piece`` of content; the text that can be shown now (may be empty)."""
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
        rest = self._buffer
        self._buffer = ""
        if self._in_call:
            self._in_call = False
            self.calls.append(self._parse(rest))
            return ""
        text = self._release(rest)
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
        args = data.get("arguments", {})
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
