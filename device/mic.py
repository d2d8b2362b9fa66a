"""Push-to-talk capture: ALSA on the device, WAV files in ``--mock``.

``start()`` begins capture when the talk button goes down; ``stop()`` ends it
when the button comes up and returns what was recorded.

* :class:`AlsaMicrophone` runs ``arecord`` (alsa-utils) writing raw 16 kHz
  mono 16-bit samples to a pipe, read by a worker thread.
* :class:`FileMicrophone` plays the part of the microphone from WAV files
  queued with :meth:`FileMicrophone.queue` (the next file is "what was said"
  during the next press); with nothing queued it records silence.
"""

from __future__ import annotations

import collections
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Protocol

import numpy as np

from device.audio import STT_RATE, Audio, read_wav
from exo_core.errors import UnsupportedError

__all__ = ["Microphone", "AlsaMicrophone", "FileMicrophone"]

_MAX_SECONDS = 30


class Microphone(Protocol):
    """Push-to-talk capture."""

    def start(self) -> None:
        """Begin recording."""
        ...

    def stop(self) -> Audio:
        """End recording and return it (blocking for at most a moment)."""
        ...

    def cancel(self) -> None:
        """End recording and throw it away."""
        ...


class AlsaMicrophone:
    """``arecord -f S16_LE -r 16000 -c 1 -t raw`` from an ALSA capture device (at most 30 s a press)."""

    def __init__(self, device: str = "default") -> None:
        path = shutil.which("arecord")
        if path is None:
            raise UnsupportedError("arecord is not installed (Debian package alsa-utils)")
        self._command = [
            path,
            "-q",
            "-D",
            device,
            "-f",
            "S16_LE",
            "-r",
            str(STT_RATE),
            "-c",
            "1",
            "-t",
            "raw",
            "-d",
            str(_MAX_SECONDS),
        ]
        self._proc: subprocess.Popen[bytes] | None = None
        self._chunks: list[bytes] = []
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        self.cancel()
        self._chunks = []
        self._proc = subprocess.Popen(self._command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        proc = self._proc

        def read() -> None:
            assert proc.stdout is not None
            while True:
                chunk = proc.stdout.read(3200)
                if not chunk:
                    return
                self._chunks.append(chunk)

        self._reader = threading.Thread(target=read, name="device-mic", daemon=True)
        self._reader.start()

    def stop(self) -> Audio:
        proc, reader = self._proc, self._reader
        self._proc, self._reader = None, None
        if proc is None:
            return Audio.silence()
        proc.terminate()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=2)
        if reader is not None:
            reader.join(timeout=2)
        raw = b"".join(self._chunks)
        raw = raw[: len(raw) - len(raw) % 2]
        return Audio(np.frombuffer(raw, dtype="<i2").copy(), STT_RATE)

    def cancel(self) -> None:
        if self._proc is not None:
            self.stop()


class FileMicrophone:
    """A microphone that "hears" queued WAV files, one per press."""

    def __init__(self) -> None:
        self._queued: collections.deque[Path] = collections.deque(maxlen=64)
        self._lock = threading.Lock()
        self._recording = False

    def queue(self, path: Path) -> None:
        """What the person will say during the next press."""
        with self._lock:
            self._queued.append(path)

    def start(self) -> None:
        self._recording = True

    def stop(self) -> Audio:
        if not self._recording:
            return Audio.silence()
        self._recording = False
        with self._lock:
            path = self._queued.popleft() if self._queued else None
        return read_wav(path) if path is not None else Audio.silence(1.0)

    def cancel(self) -> None:
        if self._recording:
            self.stop()
