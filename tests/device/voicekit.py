"""Helpers for voice tests: spoken WAVs from espeak-ng, sox measurements."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

HAVE_ESPEAK = shutil.which("espeak-ng") is not None
HAVE_SOX = shutil.which("sox") is not None
needs_espeak = pytest.mark.skipif(not HAVE_ESPEAK, reason="espeak-ng is not installed (scripts/install_system.sh)")
needs_sox = pytest.mark.skipif(not HAVE_SOX, reason="sox is not installed (scripts/install_system.sh)")


def speak(path: Path, text: str, voice: str = "en-us", speed: int = 160) -> Path:
    """``text`` spoken by espeak-ng into ``path`` (a WAV file)."""
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(path), text], check=True)
    return path


def sox_stat(path: Path) -> dict[str, float]:
    """``sox PATH -n stat`` as numbers (length in seconds, RMS amplitude, ...)."""
    out = subprocess.run(["sox", str(path), "-n", "stat"], capture_output=True, text=True, check=True).stderr
    stats = {}
    for line in out.splitlines():
        name, _, value = line.partition(":")
        try:
            stats[re.sub(r"\s+", " ", name.strip())] = float(value.strip())
        except ValueError:
            continue
    return stats


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate: word-level edit distance over the reference length."""
    ref, hyp = words(reference), words(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            cur = min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
            prev, row[j] = row[j], cur
    return row[len(hyp)] / max(1, len(ref))
