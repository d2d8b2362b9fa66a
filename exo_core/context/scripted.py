"""A scripted summarizer: a real ModelTransport whose summary is derived from its input.

Used by tests, benchmarks and demos in place of a model on the ``aux`` role. It
reads the transcript between ``<transcript>`` markers and answers with its
first words (for a merge, the first words of each part), so the same input
always gives the same summary and a summary's size is bounded. It can be
slowed down (``delay``), made to fail its first calls (``fail``), or never
answer (``hang``), and it counts its calls and the most calls it ever served
at once.

Spec form (``exo serve --summarizer``, ``[context] summarizer``)::

    scripted-summary
    scripted-summary:delay=0.2,fail=2,words=40
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable

from exo_core.errors import ConfigError, RetryableModelError
from exo_core.seams.model import Finish, ModelChunk, ModelRequest, TextDelta, UsageChunk

__all__ = ["ScriptedSummarizer", "SPEC_PREFIX"]

SPEC_PREFIX = "scripted-summary"

_TRANSCRIPT = re.compile(r"<transcript>\n?(.*?)\n?</transcript>", re.S)
_LABEL = re.compile(r"^\[\d+ (?:user|assistant|tool|system)\] ?", re.M)


def _flag(value: str) -> bool:
    return value.lower() in ("", "1", "true", "yes")


_OPTIONS: dict[str, Callable[[str], float | int | bool]] = {"delay": float, "fail": int, "words": int, "hang": _flag}


class ScriptedSummarizer:
    """Deterministic summaries from the request text; see the module docstring."""

    def __init__(self, *, delay: float = 0.0, fail: int = 0, hang: bool = False, words: int = 40) -> None:
        self.delay = delay
        self.fail = fail
        self.hang = hang
        self.words = words
        self.calls = 0
        self.active = 0
        self.max_active = 0
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_spec(cls, spec: str) -> ScriptedSummarizer:
        """Parse ``scripted-summary[:key=value,...]``."""
        if not spec.startswith(SPEC_PREFIX):
            raise ConfigError(f"not a scripted summarizer spec: {spec!r}")
        options: dict[str, float | int | bool] = {}
        for item in filter(None, spec[len(SPEC_PREFIX) :].lstrip(":").split(",")):
            key, _, value = item.partition("=")
            if key not in _OPTIONS:
                raise ConfigError(f"unknown scripted summarizer option {key!r}; known: delay, fail, hang, words")
            try:
                options[key] = _OPTIONS[key](value)
            except ValueError as exc:
                raise ConfigError(f"bad value for scripted summarizer option {key!r}: {value!r}") from exc
        return cls(**options)  # type: ignore[arg-type]  # each value was converted by its own option's parser

    def summarize(self, text: str) -> str:
        """The summary this transport gives for a request whose user text is ``text``."""
        match = _TRANSCRIPT.search(text)
        body = match.group(1) if match else text
        if "[older part]" in body and "[newer part]" in body:
            older, _, newer = body.partition("[newer part]")
            older = older.replace("[older part]", "")
            half = max(1, self.words // 2)
            return f"Earlier: {_first_words(older, half)} Later: {_first_words(newer, half)}"
        lines = [line for line in body.splitlines() if line.strip()]
        return f"{len(lines)} messages: {_first_words(_LABEL.sub('', body), self.words)}"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        self.calls += 1
        self.requests.append(request)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            if self.hang:
                await asyncio.Event().wait()
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.fail > 0:
                self.fail -= 1
                raise RetryableModelError("scripted summarizer failure")
            user = "\n".join(m.content for m in request.messages if m.role == "user")
            text = self.summarize(user)
        finally:
            self.active -= 1
        yield TextDelta(text)
        yield UsageChunk(input_tokens=len(user) // 4, output_tokens=len(text) // 4, model=SPEC_PREFIX)
        yield Finish("end")


def _first_words(text: str, count: int) -> str:
    words = text.split()
    return " ".join(words[:count]) + (" …" if len(words) > count else "")
