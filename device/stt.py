"""Speech-to-text for the device: :func:`open_stt` picks an engine by name.

The engines are in :mod:`device.stt_engines`; Whisper runs by default in a child process per
utterance (:class:`device.stt_worker.WhisperProcessSTT`), so its ~200 MB are held only while the
person speaks.
"""

from __future__ import annotations

from device.stt_engines import NoSTT, PocketSphinxSTT, SpeechToText, Transcript, WhisperSTT, stt_available
from device.stt_worker import WhisperProcessSTT
from exo_core.errors import ConfigError, UnsupportedError

__all__ = ["Transcript", "SpeechToText", "WhisperSTT", "PocketSphinxSTT", "NoSTT", "open_stt", "stt_available"]


def open_stt(name: str = "auto", *, keep_loaded: bool = False, threads: int = 1) -> SpeechToText:
    """The engine called ``name``; ``auto`` takes Whisper when installed, else PocketSphinx.

    Whisper runs in a child process per utterance unless ``keep_loaded``.
    """
    if name == "auto":
        name = next((n for n in ("whisper", "pocketsphinx") if stt_available(n)), "")
        if not name:
            raise UnsupportedError("no speech-to-text engine installed: pip install 'exo-edge[device]'")
    engines: dict[str, type[SpeechToText]] = {"whisper": WhisperSTT, "pocketsphinx": PocketSphinxSTT, "none": NoSTT}
    if name not in engines:
        raise ConfigError(f"unknown speech-to-text engine {name!r}; choose one of {sorted(engines)}", field="stt")
    if name == "whisper" and not keep_loaded:
        return WhisperProcessSTT(threads)
    if name == "whisper":
        return WhisperSTT(threads)
    return engines[name]()
