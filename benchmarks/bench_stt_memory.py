"""Benchmark: the device client's memory for speech to text, resident Whisper against a child per utterance.

Usage::

    python -m benchmarks.bench_stt_memory [--questions 15] [--json] [--out PATH]

The same WAVs (``bench_voice.synthesize``: our questions spoken by espeak-ng
with five voices and three speeds, trimmed by the device's voice-activity
step) are recognised by

* ``resident`` (the baseline, the device before the footprint work): Whisper
  tiny.en loaded in the client at start-up, 2 threads, kept for good;
* ``child`` (the default now): ``WhisperProcessSTT``, one child process per
  utterance, 1 thread, started before the audio is ready as TALK would.

Each engine runs in a fresh process that reports its own peak RSS (``VmHWM``)
and its RSS after the questions; for ``child`` the children's peaks come back
in their replies. Word error rate and exact-match share use the same scoring
as ``bench_voice.py``; the time per question includes the child's start-up.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

from benchmarks._common import bench_parser, write_results

REPO = Path(__file__).resolve().parent.parent


def _status() -> dict[str, float]:
    with open("/proc/self/status", encoding="ascii") as fh:
        return {
            k: round(int(v.split()[0]) / 1024, 1)
            for k, _, v in (line.partition(":") for line in fh)
            if k in ("VmHWM", "VmRSS")
        }


def _child(engine: str, folder: Path, count: int) -> dict[str, Any]:
    from benchmarks.bench_voice import _words, edit_distance, synthesize
    from device.audio import read_wav, to_16k, trim_silence
    from device.stt import WhisperSTT
    from device.stt_worker import WhisperProcessSTT

    items = synthesize(folder, count)
    audio = [trim_silence(to_16k(read_wav(i["path"]))) for i in items]
    start = _status()
    stt: Any = WhisperSTT(threads=2) if engine == "resident" else WhisperProcessSTT(threads=1)
    stt.warm()
    errors = words = exact = 0
    seconds, child_peaks = [], []
    for item, clip in zip(items, audio):
        stt.prepare()
        started = time.perf_counter()
        out = stt.transcribe(clip)
        seconds.append(time.perf_counter() - started)
        if engine == "child":
            child_peaks.append(stt.last_peak_rss_mb)
        ref, hyp = _words(item["text"]), _words(out.text)
        errors += edit_distance(ref, hyp)
        words += len(ref)
        exact += ref == hyp
    stt.close()
    end = _status()
    return {
        "engine": engine,
        "questions": len(items),
        "wer": round(errors / max(1, words), 4),
        "exact": round(exact / len(items), 4),
        "median_seconds": round(median(seconds), 3),
        "client_rss_before_mb": start["VmRSS"],
        "client_peak_rss_mb": end["VmHWM"],
        "client_rss_after_mb": end["VmRSS"],
        "child_peak_rss_mb": max(child_peaks) if child_peaks else None,
    }


def main(argv: list[str] | None = None) -> int:
    """Run both engines in fresh processes on the same WAVs and compare."""
    parser = bench_parser(
        "stt-memory",
        __doc__.split("\n\n")[0],
        quick_help="3 questions; writes nothing unless --out",
        json_help="print the results JSON on one line",
    )
    parser.add_argument("--questions", type=int, default=15)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.folder, args.questions)))
        return 0
    questions = args.questions
    if args.quick:
        questions = 3
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="exo-stt-mem-") as tmp:
        for engine in ("resident", "child"):
            folder = Path(tmp) / engine
            folder.mkdir()
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.bench_stt_memory",
                    "--child",
                    engine,
                    "--folder",
                    str(folder),
                    "--questions",
                    str(questions),
                ],
                capture_output=True,
                text=True,
                timeout=3600,
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                return 1
            results[engine] = json.loads(done.stdout.strip().splitlines()[-1])
    base, new = results["resident"], results["child"]
    results["comparison"] = {
        "client_peak_rss_ratio": round(new["client_peak_rss_mb"] / base["client_peak_rss_mb"], 3),
        "wer_delta": round(new["wer"] - base["wer"], 4),
        "seconds_ratio": round(new["median_seconds"] / base["median_seconds"], 3),
    }
    results["machine"] = {
        "nproc": os.cpu_count(),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_results("stt_memory", results, out=args.out, quick=args.quick)
    print(json.dumps(results, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
