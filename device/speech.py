"""Speaking while the text still streams: a sentence splitter and a speaker queue.

:class:`SentenceSplitter` takes answer text as it arrives (``message.delta``
pieces) and hands out whole sentences as soon as they end, so the first
sentence is spoken while the model is still writing the rest.
:class:`Speaker` synthesises and plays sentences one after another from a
bounded queue; :meth:`Speaker.stop` (any button press) drops what is queued
and cuts off the sentence being played.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable

from device.tts import AudioOutput, TextToSpeech
from exo_core.errors import ExoError

__all__ = ["SentenceSplitter", "Speaker", "speakable"]

log = logging.getLogger(__name__)

_END = re.compile(r"([.!?;:]+[\"')\]]*)(\s+)|(\n\s*\n?)")
_MIN_CHARS = 12
_MAX_CHARS = 220


def speakable(text: str) -> str:
    """``text`` without markup a voice should not read (code fences, bullets, links)."""
    text = re.sub(r"```.*?```", " (code shown on screen) ", text, flags=re.S)
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)
    text = re.sub(r"[*_`#>|]+", " ", text)
    return " ".join(text.split())


class SentenceSplitter:
    """Cuts streamed text into sentences; :meth:`flush` returns the unfinished rest."""

    def __init__(self) -> None:
        self._buffer = ""

    def feed(self, text: str) -> list[str]:
        """Add ``text``; returns the sentences it completed."""
        self._buffer += text
        out: list[str] = []
        while True:
            cut = self._next_cut()
            if cut is None:
                break
            sentence, self._buffer = self._buffer[:cut], self._buffer[cut:]
            sentence = speakable(sentence)
            if sentence:
                out.append(sentence)
        return out

    def _next_cut(self) -> int | None:
        start = 0
        while True:
            match = _END.search(self._buffer, start)
            if match is None:
                break
            end = match.end()
            if len(self._buffer[:end].strip()) >= _MIN_CHARS:
                return end
            start = end
        if len(self._buffer) > _MAX_CHARS:
            space = self._buffer.rfind(",", 0, _MAX_CHARS)
            space = space + 1 if space > _MIN_CHARS else self._buffer.rfind(" ", 0, _MAX_CHARS)
            return space if space > 0 else _MAX_CHARS
        return None

    def flush(self) -> list[str]:
        """The rest of the text as a last sentence (if any)."""
        rest, self._buffer = speakable(self._buffer), ""
        return [rest] if rest else []

    def reset(self) -> None:
        """Forget unfinished text."""
        self._buffer = ""


class Speaker:
    """Speaks queued sentences in order; ``stop`` silences it."""

    def __init__(
        self,
        tts: TextToSpeech,
        output: AudioOutput,
        *,
        limit: int = 64,
        on_state: Callable[[bool], None] | None = None,
        on_spoken: Callable[[str, float], None] | None = None,
    ) -> None:
        self._tts = tts
        self._output = output
        self._queue: asyncio.Queue[str] = asyncio.Queue(maxsize=limit)
        self._task: asyncio.Task[None] | None = None
        self._current: asyncio.Task[None] | None = None
        self._on_state = on_state or (lambda speaking: None)
        self._on_spoken = on_spoken or (lambda text, at: None)
        self.speaking = False
        self.dropped = 0

    def start(self) -> None:
        """Start the speaking task (call inside the event loop)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="device-speaker")

    def say(self, sentence: str) -> None:
        """Queue ``sentence``; when the queue is full the sentence is dropped and counted."""
        if not sentence.strip():
            return
        try:
            self._queue.put_nowait(sentence)
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("speech queue full; a sentence is shown but not spoken")
            return
        self._set(True)

    def stop(self) -> bool:
        """Drop queued sentences and cut the one playing; returns whether anything was stopped."""
        stopped = self.speaking
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
        if self._current is not None and not self._current.done():
            self._current.cancel()
            stopped = True
        self._set(False)
        return stopped

    async def wait_idle(self) -> None:
        """Wait until everything queued has been spoken (or stopped)."""
        await self._queue.join()

    async def close(self) -> None:
        """Stop speaking and end the task."""
        self.stop()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def _set(self, speaking: bool) -> None:
        if speaking != self.speaking:
            self.speaking = speaking
            self._on_state(speaking)

    async def _run(self) -> None:
        while True:
            sentence = await self._queue.get()
            try:
                self._current = asyncio.create_task(self._speak(sentence))
                try:
                    await self._current
                except asyncio.CancelledError:
                    if self._task is not None and self._task.cancelling():
                        raise
            finally:
                self._current = None
                self._queue.task_done()
            if self._queue.empty():
                self._set(False)

    async def _speak(self, sentence: str) -> None:
        try:
            audio = await asyncio.to_thread(self._tts.synth, sentence)
        except ExoError as exc:
            log.warning("could not speak %r: %s", sentence[:40], exc.message)
            return
        self._on_spoken(sentence, time.monotonic())
        await self._output.play(audio, sentence)
