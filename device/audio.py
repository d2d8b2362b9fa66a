"""Audio as numbers: WAV files in and out, resampling, and voice-activity trimming.

Speech-to-text engines want 16 kHz mono; microphones and espeak-ng give other
rates, so :func:`to_16k` converts. :func:`trim_silence` is the voice-activity
step: it finds the frames whose energy stands clearly above the recording's
own noise floor and keeps them (with a little padding), so the recogniser
sees only speech and a press with nothing said is recognised as silence
instead of being sent to the model.
"""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from exo_core.errors import MalformedMessageError, StorageError

__all__ = ["Audio", "read_wav", "wav_bytes", "write_wav", "to_16k", "trim_silence", "STT_RATE"]

STT_RATE = 16_000


@dataclass(frozen=True, slots=True, eq=False)
class Audio:
    """Mono 16-bit samples at ``rate`` Hz."""

    samples: np.ndarray
    rate: int

    @property
    def seconds(self) -> float:
        """Duration in seconds."""
        return len(self.samples) / float(self.rate) if self.rate else 0.0

    def as_float(self) -> np.ndarray:
        """Samples as float32 in [-1, 1)."""
        return self.samples.astype(np.float32) / 32768.0

    @classmethod
    def silence(cls, seconds: float = 0.0, rate: int = STT_RATE) -> Audio:
        """Silence of ``seconds``."""
        return cls(np.zeros(int(seconds * rate), dtype=np.int16), rate)


def read_wav(source: Path | bytes) -> Audio:
    """A WAV file (path or bytes) as mono 16-bit :class:`Audio` (stereo is averaged)."""
    try:
        handle = wave.open(io.BytesIO(source) if isinstance(source, bytes) else str(source), "rb")
    except FileNotFoundError as exc:
        raise StorageError(f"no WAV file at {exc.filename}") from exc
    except (wave.Error, EOFError) as exc:
        raise MalformedMessageError(f"not a PCM WAV file: {exc}") from exc
    with handle:
        width, channels, rate = handle.getsampwidth(), handle.getnchannels(), handle.getframerate()
        frames = handle.readframes(handle.getnframes())
    if width == 2:
        data = np.frombuffer(frames, dtype="<i2").astype(np.int32)
    elif width == 1:
        data = (np.frombuffer(frames, dtype=np.uint8).astype(np.int32) - 128) << 8
    elif width == 4:
        data = np.frombuffer(frames, dtype="<i4").astype(np.int64) >> 16
    else:
        raise MalformedMessageError(f"unsupported WAV sample width: {width} bytes")
    if channels > 1:
        usable = len(data) - len(data) % channels
        data = data[:usable].reshape(-1, channels).mean(axis=1)
    return Audio(np.clip(data, -32768, 32767).astype(np.int16), rate)


def wav_bytes(audio: Audio) -> bytes:
    """``audio`` as the bytes of a mono 16-bit WAV file."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(audio.rate)
        handle.writeframes(audio.samples.astype("<i2").tobytes())
    return buffer.getvalue()


def write_wav(path: Path, audio: Audio) -> Path:
    """Write ``audio`` to ``path`` as a mono 16-bit WAV file."""
    try:
        path.write_bytes(wav_bytes(audio))
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror}") from exc
    return path


def to_16k(audio: Audio) -> Audio:
    """``audio`` resampled to 16 kHz (a short moving-average low-pass before decimating)."""
    if audio.rate == STT_RATE or len(audio.samples) == 0:
        return Audio(audio.samples, STT_RATE) if audio.rate == STT_RATE else Audio.silence()
    x = audio.samples.astype(np.float32)
    if audio.rate > STT_RATE:
        taps = max(1, int(round(audio.rate / STT_RATE)))
        if taps > 1:
            x = np.convolve(x, np.ones(taps, dtype=np.float32) / taps, mode="same").astype(np.float32, copy=False)
    n_out = int(round(len(x) * STT_RATE / audio.rate))
    positions = np.linspace(0, len(x) - 1, n_out, dtype=np.float64)
    y = np.interp(positions, np.arange(len(x)), x)
    return Audio(np.clip(np.round(y), -32768, 32767).astype(np.int16), STT_RATE)


def trim_silence(
    audio: Audio, *, frame_ms: int = 30, pad_ms: int = 200, ratio: float = 4.0, floor: float = 120.0
) -> Audio:
    """``audio`` without the leading and trailing non-speech (empty when nothing stands out).

    A frame is speech when its RMS is above ``ratio`` times the recording's
    noise floor (its 10th-percentile frame RMS) and above the absolute
    ``floor``. Speech is kept from the first to the last speech frame, padded
    by ``pad_ms`` on each side.
    """
    samples = audio.samples
    frame = max(1, audio.rate * frame_ms // 1000)
    count = len(samples) // frame
    if count == 0:
        return Audio(samples[:0], audio.rate)
    frames = samples[: count * frame].astype(np.float32).reshape(count, frame)
    rms = np.sqrt(np.mean(frames * frames, axis=1))
    noise = float(np.percentile(rms, 10))
    threshold = max(floor, noise * ratio)
    voiced = np.flatnonzero(rms > threshold)
    if len(voiced) == 0:
        return Audio(samples[:0], audio.rate)
    pad = audio.rate * pad_ms // 1000
    start = max(0, int(voiced[0]) * frame - pad)
    end = min(len(samples), (int(voiced[-1]) + 1) * frame + pad)
    return Audio(samples[start:end], audio.rate)
