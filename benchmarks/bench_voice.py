"""Benchmark: speech-to-text accuracy and the latency of each stage of a spoken question.

Usage::

    python -m benchmarks.bench_voice [--quick] [--json] [--markdown] [--out PATH] [--engines whisper,pocketsphinx]

Part 1, **speech to text** (chooses the engine). 50 short questions of our own
(below) are spoken by espeak-ng with five voices and three speeds, wrapped in
0.5 s of low noise before and 0.8 s after, then trimmed by the device's
voice-activity step and recognised by each installed engine. Reported per
engine: word error rate over all words (edit distance / reference words),
share of questions recognised exactly, model load time, median and p90
recognition time per question, and the real-time factor (recognition time /
speech duration: the baseline is the speech itself).

Part 2, **stages of one spoken question**, through the real parts: exod with a
scripted model (streaming 6 characters every 20 ms) and ``exo device --mock``
as a subprocess. For each of ``--turns`` questions: talk button released ->
transcribed (trim + speech to text) -> ``turn.send`` accepted -> first
``message.delta`` on the device (first token) -> first sentence synthesised
and handed to the speaker (first spoken audio). The baseline for the voice
stage is espeak-ng synthesising the same sentence directly. *Retrieval* is
not a stage yet: the core on main has no retrieval step (its memory provider
is the null one), so it is reported as absent rather than invented.

``--quick`` runs 6 questions and 2 turns and writes results only to ``--out``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from devicekit import DeviceProc

import benchmarks._common as common
from benchmarks._common import bench_parser, child_env, machine_info, median, print_table, write_results

QUESTIONS = [
    "what is the weather like tomorrow",
    "remind me to call my sister at six",
    "how long does it take to boil an egg",
    "what time is my first meeting",
    "read me the last message from work",
    "set a timer for ten minutes",
    "what did I write in my notes yesterday",
    "how far is the train station",
    "turn the volume down please",
    "what is on my calendar this afternoon",
    "send a short reply saying I am late",
    "how do I say thank you in french",
    "what is the capital of australia",
    "add milk and bread to the shopping list",
    "when does the library close today",
    "play some quiet music",
    "what was the score of the game last night",
    "how many steps did I walk today",
    "delete the draft I wrote this morning",
    "who sent me the invoice",
    "what is twelve times fourteen",
    "book a table for two on friday",
    "is it going to rain this weekend",
    "summarize the report from the team",
    "what should I cook for dinner",
    "push the changes to the main branch",
    "when is the next bus into town",
    "how much did I spend on groceries this month",
    "what is the boiling point of water",
    "tell me a fun fact about octopuses",
    "open the door to the garage",
    "what did the doctor say about my knee",
    "how do I fix a flat tire",
    "schedule a call with the plumber next week",
    "what is the password hint for the router",
    "translate good morning into spanish",
    "give me three ideas for a birthday present",
    "how old is the eiffel tower",
    "pay the electricity bill",
    "what are my tasks for tomorrow",
    "where did I park the car",
    "start a new note called garden plans",
    "how many days until the holidays",
    "find the photo from the beach trip",
    "what does this error message mean",
    "cancel my dentist appointment",
    "how is the traffic on the way home",
    "what is the square root of one hundred",
    "lock the front door",
    "thank you that is all for now",
]
VOICES = ["en-us", "en-gb", "en-gb-x-rp", "en-gb-scotland", "en-029"]
SPEEDS = [140, 165, 190]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower().replace("-", " "))


def edit_distance(ref: list[str], hyp: list[str]) -> int:
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            cur = min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
            prev, row[j] = row[j], cur
    return row[len(hyp)]


def synthesize(folder: Path, count: int) -> list[dict[str, Any]]:
    """The spoken questions as WAV files (noise before and after), with their voice and speed."""
    from device.audio import Audio, read_wav, to_16k, write_wav

    rng = np.random.default_rng(7)
    items = []
    for n, text in enumerate(QUESTIONS[:count]):
        voice, speed = VOICES[n % len(VOICES)], SPEEDS[(n // len(VOICES)) % len(SPEEDS)]
        raw = folder / f"raw{n:02d}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(raw), text], check=True)
        speech = to_16k(read_wav(raw))
        noise = lambda s: rng.normal(0, 40, int(s * 16000)).astype(np.int16)
        padded = Audio(np.concatenate([noise(0.5), speech.samples, noise(0.8)]), 16000)
        path = write_wav(folder / f"q{n:02d}.wav", padded)
        items.append(
            {
                "text": text,
                "voice": voice,
                "speed": speed,
                "path": path,
                "speech_seconds": speech.seconds,
                "audio_seconds": padded.seconds,
            }
        )
    return items


def bench_stt(items: list[dict[str, Any]], engines: list[str]) -> dict[str, Any]:
    from device.audio import read_wav, to_16k, trim_silence
    from device.stt import open_stt, stt_available

    results: dict[str, Any] = {}
    trims = []
    for item in items:
        started = time.perf_counter()
        trimmed = trim_silence(to_16k(read_wav(item["path"])))
        trims.append(time.perf_counter() - started)
        item["trimmed"] = trimmed
    results["vad"] = {
        "median_ms": median(trims) * 1000,
        "kept_seconds_over_speech": median([i["trimmed"].seconds / i["speech_seconds"] for i in items]),
    }
    for engine in engines:
        if not stt_available(engine):
            results[engine] = {"skipped": "not installed"}
            continue
        stt = open_stt(engine, keep_loaded=True)  # the recogniser itself; bench_stt_memory.py times the child
        started = time.perf_counter()
        stt.warm()
        load = time.perf_counter() - started
        errors = words = exact = 0
        seconds, rtf, samples = [], [], []
        for item in items:
            out = stt.transcribe(item["trimmed"])
            ref, hyp = _words(item["text"]), _words(out.text)
            errors += edit_distance(ref, hyp)
            words += len(ref)
            exact += ref == hyp
            seconds.append(out.seconds)
            rtf.append(out.seconds / item["speech_seconds"])
            if len(samples) < 8:
                samples.append(
                    {"said": item["text"], "heard": out.text, "voice": item["voice"], "speed": item["speed"]}
                )
        results[engine] = {
            "questions": len(items),
            "wer": errors / max(1, words),
            "exact": exact / len(items),
            "load_seconds": load,
            "median_seconds": median(seconds),
            "p90_seconds": float(np.percentile(seconds, 90)),
            "median_rtf": median(rtf),
            "samples": samples,
        }
    return results


def bench_stages(items: list[dict[str, Any]], turns: int, engine: str, tmp: Path) -> dict[str, Any]:
    from device.tts import EspeakTTS

    answer = "Here is a short answer. It has a second sentence as well."
    home, ws, out = tmp / "home", tmp / "ws", tmp / "dev"
    for d in (home, ws, out):
        d.mkdir(parents=True, exist_ok=True)
    script = tmp / "script.json"
    script.write_text(json.dumps({"replies": [{"text": answer, "delay": 0.02, "chunk": 6}] * 1}))
    exod = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "exo_core.cli",
            "serve",
            "--home",
            str(home),
            "--model",
            f"scripted:{script}",
            "--workspace",
            str(ws),
            "--log-level",
            "WARNING",
        ],
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    device = None
    rows: list[dict[str, float]] = []
    try:
        deadline = time.monotonic() + 30
        while not (home / "run" / "exod.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        device = DeviceProc(home, out, size=None, extra=["--stt", engine], playback_speed=8)
        device.wait(lambda r: r.get("ev") == "link" and r.get("state") == "online")
        time.sleep(3)  # let the recogniser load before the first press
        for n in range(turns):
            mark = device.mark()
            device.send(f"talk {items[n]['path']} 1.0")
            release = device.wait(
                timeout=60, since=mark, predicate=lambda r: r.get("ev") == "button" and r.get("kind") == "release"
            )
            heard = device.wait(timeout=60, since=mark, predicate=lambda r: r.get("ev") == "heard")
            sent = device.wait(timeout=60, since=mark, predicate=lambda r: r.get("ev") == "sent")
            delta = device.wait(
                timeout=60,
                since=mark,
                predicate=lambda r: r.get("ev") == "event" and r.get("type") == "message.delta" and r.get("mine"),
            )
            spoken = device.wait(timeout=60, since=mark, predicate=lambda r: r.get("ev") == "spoken")
            device.wait(timeout=60, since=mark, predicate=lambda r: r.get("ev") == "answered")
            rows.append(
                {
                    "stt_seconds": heard["seconds"],
                    "send_seconds": sent["t"] - heard["t"],
                    "first_token_seconds": delta["t"] - sent["t"],
                    "first_audio_after_token_seconds": spoken["at"] - delta["t"],
                    "release_to_first_audio_seconds": spoken["at"] - release["t"],
                }
            )
            time.sleep(1.5)
    finally:
        if device is not None:
            device.quit()
        exod.terminate()
        exod.wait(20)
    tts = EspeakTTS()
    synth = []
    for _ in range(max(3, turns)):
        started = time.perf_counter()
        tts.synth("Here is a short answer.")
        synth.append(time.perf_counter() - started)
    stages = {k: median([r[k] for r in rows]) for k in rows[0]}
    stages["baseline_espeak_sentence_seconds"] = median(synth)
    stages["retrieval"] = "absent: the core on main has no retrieval stage yet"
    stages["turns"] = len(rows)
    stages["engine"] = engine
    return stages


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(
        "voice", __doc__.split("\n\n")[0], quick_help="6 questions, 2 turns; writes nothing unless --out"
    )
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--engines", default="whisper,pocketsphinx")
    parser.add_argument("--questions", type=int, default=None)
    parser.add_argument("--turns", type=int, default=None)
    args = parser.parse_args(argv)
    common.MARKDOWN = args.markdown
    if shutil.which("espeak-ng") is None:
        print("bench_voice: espeak-ng is not installed (scripts/install_system.sh)", file=sys.stderr)
        return 2
    count = args.questions or (6 if args.quick else len(QUESTIONS))
    turns = args.turns or (2 if args.quick else 5)
    engines = [e for e in args.engines.split(",") if e]
    with tempfile.TemporaryDirectory(prefix="bench-voice-") as tmp_name:
        tmp = Path(tmp_name)
        items = synthesize(tmp, count)
        stt = bench_stt(items, engines)
        chosen = next((e for e in engines if "wer" in stt.get(e, {})), "none")
        stages = bench_stages(items, turns, chosen, tmp / "stages")
    data = {"benchmark": "voice", "quick": args.quick, "machine": machine_info(), "stt": stt, "stages": stages}
    path = write_results("voice", data, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(data, indent=2, default=str))
        return 0
    rows = [
        [
            e,
            r["questions"],
            r["wer"] * 100,
            r["exact"] * 100,
            r["load_seconds"],
            r["median_seconds"],
            r["p90_seconds"],
            r["median_rtf"],
        ]
        for e, r in stt.items()
        if isinstance(r, dict) and "wer" in r
    ]
    print_table(
        f"Speech to text, {count} synthesized questions ({len(VOICES)} voices x {len(SPEEDS)} speeds)",
        ["engine", "questions", "WER %", "exact %", "load s", "median s", "p90 s", "RTF (vs speech)"],
        rows,
    )
    print_table(
        f"Stages of a spoken question (median of {stages['turns']}, {chosen})",
        ["stage", "seconds"],
        [
            ["voice activity trim (per question, ms)", stt["vad"]["median_ms"]],
            ["speech to text (trim + recognise)", stages["stt_seconds"]],
            ["retrieval", "absent on main"],
            ["turn.send accepted", stages["send_seconds"]],
            ["first token on the device (after send)", stages["first_token_seconds"]],
            ["first spoken audio (after first token)", stages["first_audio_after_token_seconds"]],
            ["release of talk -> first spoken audio", stages["release_to_first_audio_seconds"]],
            ["baseline: espeak-ng one sentence, direct", stages["baseline_espeak_sentence_seconds"]],
        ],
    )
    if path:
        print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    raise SystemExit(main())
