"""Offline text-to-speech and audio output behind small interfaces.

* :class:`EspeakTTS` runs Debian's ``espeak-ng`` (GPL-3.0, a separate
  program: it is executed, not linked) and returns the WAV it writes to stdout.
* :class:`AplayOutput` plays through ALSA's ``aplay`` on the device.
* :class:`FileOutput` (``--mock``) writes each utterance as a numbered WAV file
  and waits as long as playing it would take (divided by ``speed``), so a
  button can cut it off just as it would cut off the loudspeaker.

Sentences are spoken by :class:`device.speech.Speaker`.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Protocol

from device.audio import Audio, read_wav, wav_bytes, write_wav
from exo_core.errors import ConfigError, StorageError, UnsupportedError

__all__ = ["TextToSpeech", "EspeakTTS", "SilentTTS", "AudioOutput", "AplayOutput", "FileOutput", "open_tts"]


class TextToSpeech(Protocol):
    """Speaks text into audio."""

    name: str

    def synth(self, text: str) -> Audio:
        """``text`` as audio (blocking; run it in a worker thread)."""
        ...


class EspeakTTS:
    """espeak-ng with a voice and a rate in words per minute."""

    name = "espeak"

    def __init__(self, voice: str = "en-us", rate: int = 175, program: str = "espeak-ng") -> None:
        path = shutil.which(program)
        if path is None:
            raise UnsupportedError(f"{program} is not installed (Debian package espeak-ng)")
        self._program = path
        self.voice = voice
        self.rate = rate

    def synth(self, text: str) -> Audio:
        try:
            done = subprocess.run(
                [self._program, "-v", self.voice, "-s", str(self.rate), "--stdout", "--stdin"],
                input=text.encode("utf-8"),
                capture_output=True,
                timeout=60,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise UnsupportedError("espeak-ng took longer than 60 s") from exc
        if done.returncode != 0 or not done.stdout:
            raise ConfigError(
                f"espeak-ng failed ({done.returncode}): {done.stderr.decode(errors='replace')[:200]}", field="voice"
            )
        return read_wav(_fix_stream_header(done.stdout))


def _fix_stream_header(data: bytes) -> bytes:
    """espeak-ng writes a streaming WAV header (sizes 0xFFFFFFFF); set the real sizes."""
    if len(data) < 44 or data[:4] != b"RIFF":
        return data
    fixed = bytearray(data)
    fixed[4:8] = (len(data) - 8).to_bytes(4, "little")
    pos = 12
    while pos + 8 <= len(fixed):
        chunk, size = bytes(fixed[pos : pos + 4]), int.from_bytes(fixed[pos + 4 : pos + 8], "little")
        if chunk == b"data":
            fixed[pos + 4 : pos + 8] = (len(fixed) - pos - 8).to_bytes(4, "little")
            break
        pos += 8 + size
    return bytes(fixed)


class SilentTTS:
    """No voice: nothing is spoken (the screen still shows everything)."""

    name = "none"

    def synth(self, text: str) -> Audio:
        return Audio.silence()


class AudioOutput(Protocol):
    """Plays audio; cancelling ``play`` stops the sound at once."""

    async def play(self, audio: Audio, text: str) -> None:
        """Play ``audio`` (``text`` is what it says, for logs)."""
        ...


class AplayOutput:
    """ALSA playback through ``aplay`` (alsa-utils)."""

    def __init__(self, device: str = "default") -> None:
        path = shutil.which("aplay")
        if path is None:
            raise UnsupportedError("aplay is not installed (Debian package alsa-utils)")
        self._program = path
        self._device = device

    async def play(self, audio: Audio, text: str) -> None:
        if not len(audio.samples):
            return
        proc = await asyncio.create_subprocess_exec(
            self._program,
            "-q",
            "-D",
            self._device,
            "-",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            await proc.communicate(wav_bytes(audio))
        except asyncio.CancelledError:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise


class FileOutput:
    """Writes every utterance to ``folder/NNNNNN.wav`` and waits its playing time / ``speed``."""

    def __init__(self, folder: Path, speed: float = 1.0) -> None:
        self.folder = folder
        self.speed = speed
        self.count = 0
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the audio folder {folder}: {exc.strerror}") from exc
        self.written: list[Path] = []

    async def play(self, audio: Audio, text: str) -> None:
        self.count += 1
        path = write_wav(self.folder / f"{self.count:06d}.wav", audio)
        self.written.append(path)
        if self.speed > 0:
            await asyncio.sleep(audio.seconds / self.speed)


def open_tts(name: str, voice: str = "en-us", rate: int = 175) -> TextToSpeech:
    """The engine called ``name`` (``espeak`` or ``none``)."""
    if name == "espeak":
        return EspeakTTS(voice, rate)
    if name == "none":
        return SilentTTS()
    raise ConfigError(f"unknown text-to-speech engine {name!r}; choose espeak or none", field="tts")
