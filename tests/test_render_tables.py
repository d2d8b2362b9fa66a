"""Each family of docs/benchmarks.md's table renderers (``benchmarks/tables/``) on a small results file.

The inputs are made up for the test, shaped as the benchmark writes them; each test checks the lines a
renderer makes from them: the columns, the digits the page shows, the bold marks and the derived
ratios. ``tests/test_bench_harness.py`` checks the committed page against the committed results.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.tables import (
    RENDERERS,
    conditions,
    decisions,
    footprint,
    ledger_store,
    models,
    people,
    retrieval,
    speech,
    system,
)
from benchmarks.tables._cells import fixed, md_table, row, times


def test_cells_round_halves_up_and_keep_empty_cells_tight() -> None:
    assert fixed(1.295, 2) == "1.30"
    assert fixed(4.25, 1) == "4.3"
    assert fixed(2847.8, 0) == "2,848"
    assert times(1.0) == "1.0" and times(0.7827) == "0.78" and times(1.467) == "1.5"
    assert row(["a", "", "3"]) == "| a | | 3 |"
    assert md_table(["x", "y"], [["a", 0.5]]) == ["| x | y |", "|---|---:|", "| a | 0.500 |"]
    with pytest.raises(ValueError, match="2 headers"):
        md_table(["x", "y"], [["a"]])


def test_every_registered_table_names_its_files() -> None:
    for name, table in RENDERERS.items():
        assert table.files, name
        assert all(file and not file.endswith(".json") for file in table.files), name


def _hub() -> dict[str, Any]:
    live = {
        "durability": "full",
        "mode": "sequential",
        "subscribers": 1,
        "events": 3000,
        "appended_per_s": 575.11,
        "delivered_per_s": 575.07,
        "baseline": "per_row",
        "baseline_per_s": 298.09,
        "append_ratio": 1.929,
        "deliver_ratio": 1.929,
        "server_cpu_us_per_event": 509.29,
        "server_cpu_share": 0.2929,
        "subscriber_cpu_share": 0.0818,
        "lag_recoveries": 0,
        "all_received_in_order": False,
    }
    baseline = {
        "batch": 256,
        "batched_events": 20000,
        "batched_per_s": 21725.9,
        "per_row_events": 3000,
        "per_row_per_s": 298.09,
    }
    replay = {
        "baseline_select_s": 1.1268,
        "baseline_select_per_s": 88747.7,
        "client_s": 11.83,
        "client_per_s": 8451.8,
        "client_ratio": 10.5,
        "raw_sse_s": 0.6117,
        "raw_sse_per_s": 163485.1,
        "raw_sse_ratio": 0.5428,
    }
    return {"live": [live], "baseline_inserts": {"full": baseline}, "replay": replay}


def test_system_tables_hub_startup_and_context() -> None:
    hub = _hub()
    live = system.hub_live(hub)
    assert live[2] == (
        "| full | sequential | 1 | 3,000 | 575.1 | 575.1 | per_row | 298.1 | 1.9 | 1.9 | 509.3 | 0.293 | 0.082 | 0 "
        "| NO |"
    )
    assert system.hub_baseline(hub)[3] == "| full | 256 rows / txn | 20,000 | 21,726 |"
    assert system.hub_replay(hub)[4] == "| raw SSE bytes | 0.612 | 163,485 | 0.543 |"

    startup = {
        "baseline": {"python_pass_s": 0.025, "python_idle_vmrss_kb": 10240.0, "python_idle_vmhwm_kb": 10240.0},
        "exod": {
            "healthy_fresh_home_s": 0.5,
            "healthy_restart_s": 0.55,
            "idle_vmrss_kb": 40960.0,
            "idle_vmhwm_kb": 41984.0,
            "rss_ratio": 4.0,
            "budget_used": 0.5,
        },
        "cli": {"help_s": 0.05, "help_ratio": 2.0},
        "imports": [
            {
                "module": "exo_core.cli.main",
                "cumulative_us": 3100,
                "heaviest": [{"module": "argparse", "cumulative_us": 2124}],
            }
        ],
    }
    assert system.startup_time(startup)[3] == "| exod, fresh home | 500.0 | 20.0 |"
    assert system.startup_memory(startup)[3] == "| exod (no models) | 40.0 | 41.0 | 4.0 | 50% |"
    assert system.startup_imports(startup)[2] == "| import exo_core.cli.main | 3.1 | argparse 2 |"

    tokens = {
        "last_turn_tree": 100,
        "last_turn_full": 1000,
        "last_turn_ratio": 0.1,
        "all_turns_tree": 2000,
        "all_turns_full": 8000,
        "all_turns_ratio": 0.25,
        "max_turn_tree": 250,
    }
    build = {"tree_median": 2.0, "full_median": 0.5, "tree_p95": 30.0, "full_p95": 1.5}
    context = {
        "result": {
            "tokens": tokens,
            "build_ms_per_turn": build,
            "steady_build_ms": {"repeat": 20, "tree_median": 6.0, "full_median": 1.2, "ratio": 5.0},
        }
    }
    assert system.context_tokens(context)[4] == "| largest turn | 250 | 1,000 | 0.250 |"
    assert system.context_build(context)[4] == "| steady, median of 20 | 6.0 | 1.2 | 5.0 |"

    window = {
        "result": {
            "calls": 10,
            "overflows": 0,
            "unfitted_overflows": 10,
            "tokens_per_call": {
                "median": 1490.5,
                "p95": 1525,
                "max": 1528,
                "last": 1521,
                "unfitted_median": 11731.0,
                "unfitted_max": 17736,
            },
        }
    }
    lines = system.context_window(window)
    assert lines[3] == "| calls over the window | **0** | 10 |"
    assert lines[5] == "| prompt tokens per call, p95 | 1,525 | |"


def _locomo(fused: float, bm25: float, rrf: float) -> dict[str, Any]:
    metrics = {"hit@5": fused, "hit@10": fused, "recall@5": fused, "recall@10": fused}
    return {
        "bm25": {"cat5": {key: bm25 for key in metrics}},
        "fused": {"cat5": metrics},
        "rrf": {"cat5": {key: rrf for key in metrics}},
    }


def test_retrieval_bolds_the_best_compared_system_and_never_rrf() -> None:
    lme = {
        "bm25": {"any@1": 0.8, "any@5": 0.9, "any@10": 0.95, "all@5": 0.7, "all@10": 0.9},
        "embed": {"any@1": 0.85, "any@5": 0.9, "any@10": 0.95, "all@5": 0.8, "all@10": 0.9},
        "fused": {"any@1": 0.86, "any@5": 0.8, "any@10": 0.95, "all@5": 0.8, "all@10": 0.91},
        "rrf": {"any@1": 0.9, "any@5": 0.9, "any@10": 0.95, "all@5": 0.8, "all@10": 0.91},
    }
    half = {
        "locomo": {"metrics": _locomo(0.7, 0.6, 0.9), "questions": {"cat5": 85}},
        "longmemeval": {"metrics": lme, "questions": 116},
    }
    data = {"quality": {"holdout": half, "tune": half}}

    locomo = retrieval.locomo_holdout(data)
    assert locomo[2] == "| bm25 | cat5 | 0.600 | 0.600 | 0.600 | 0.600 |"
    assert locomo[3] == "| **fused** | cat5 | **0.700** | **0.700** | **0.700** | **0.700** |"
    assert locomo[4] == "| rrf | cat5 | 0.900 | 0.900 | 0.900 | 0.900 |"
    longmemeval = retrieval.longmemeval_holdout(data)
    assert longmemeval[2] == "| bm25 | 0.800 | **0.900** | **0.950** | 0.700 | 0.900 |"
    assert longmemeval[4] == "| **fused** | **0.860** | 0.800 | **0.950** | **0.800** | **0.910** |"
    assert longmemeval[5] == "| rrf | 0.900 | 0.900 | 0.950 | 0.800 | 0.910 |"
    tune = retrieval.tune_half(data)
    assert tune[1] == "|---|---|---|"
    assert tune[2].startswith(
        "| LoCoMo cat5 (85 q.) | bm25 / **fused** / rrf | hit@5 0.600 / **0.700** / 0.900; hit@10"
    )
    assert tune[3].startswith(
        "| LongMemEval (116 q.) | bm25 / embed / **fused** / rrf | any@1 0.800 / 0.850 / **0.860** / 0.900;"
    )

    size = {
        "texts": 1000,
        "bm25": {"p50_ms": 0.308, "p95_ms": 0.952},
        "plain_fts5": {"p50_ms": 0.21, "p95_ms": 0.901},
        "int8_scan": {"p50_ms": 15.566, "p95_ms": 23.289},
        "numpy_fp32_scan": {"p50_ms": 16.32, "p95_ms": 26.142},
        "fused": {"p50_ms": 0.932, "p95_ms": 5.665},
        "memory": {"int8_bytes": 384000, "fp32_bytes": 1536000, "fts_db_kb": 684, "plain_fts_db_kb": 308},
    }
    assert retrieval.scale({"scale": [size]})[2] == (
        "| 1,000 | 0.31 / 0.95 | 0.21 / 0.90 | 15.57 / 23.29 | 16.32 / 26.14 | 0.93 / 5.67 "
        "| 1.5 | 0.95 | 375 | 1,500 | 684 | 308 |"
    )
    rates = {
        "throughput": {
            "int8": {"texts_per_s": 182.7, "model_mb": 17.4},
            "fp32": {"texts_per_s": 79.7, "model_mb": 69.1},
        }
    }
    assert retrieval.throughput(rates)[3] == "| fp32 | 79.7 | 69.1 |"


def test_speech_tables_voice_and_memory() -> None:
    engine = {
        "questions": 50,
        "wer": 0.18619,
        "exact": 0.54,
        "load_seconds": 0.833,
        "median_seconds": 1.88,
        "p90_seconds": 2.45,
        "median_rtf": 0.864,
    }
    stages = {
        "stt_seconds": 2.671,
        "retrieval": "absent",
        "send_seconds": 0.0636,
        "first_token_seconds": 0.0288,
        "first_audio_after_token_seconds": 0.1255,
        "release_to_first_audio_seconds": 2.854,
        "baseline_espeak_sentence_seconds": 0.0158,
    }
    voice = {"stt": {"whisper": engine, "pocketsphinx": engine, "vad": {"median_ms": 0.3508}}, "stages": stages}
    assert voice_line(speech.voice_engines(voice), 2).endswith("| 50 | 18.6 | 54.0 | 0.8 | 1.9 | 2.5 | 0.86 |")
    staged = speech.voice_stages(voice)
    assert staged[2] == "| voice-activity trim of one recording | 0.00035 |"
    assert staged[4] == "| retrieval | absent |"
    assert staged[5] == "| `turn.send` accepted | 0.064 |"

    run = {
        "questions": 15,
        "wer": 0.1538,
        "exact": 0.5333,
        "median_seconds": 0.501,
        "client_peak_rss_mb": 266.2,
        "child_peak_rss_mb": None,
    }
    child = dict(run, median_seconds=2.25, client_peak_rss_mb=40.6, child_peak_rss_mb=256.3)
    lines = speech.stt_memory({"resident": run, "child": child})
    assert lines[2].endswith("| 266.2 | — | 15.4 | 53.3 | 0.50 |")
    assert lines[3].endswith("| **40.6** | 256.3 | 15.4 | 53.3 | 2.25 |")

    call = {"call": {"name": "ask_person"}, "text": ""}
    other = {"call": {"name": "edit_file"}, "text": ""}
    base = {"peak_rss_mb": 577, "peak_anon_mb": 313, "prompt_tps": 147.2, "call_tps": 7.1, "outputs": [call, call]}
    data = {
        "baseline": base,
        "defaults": dict(base, peak_rss_mb=412, call_tps=18.35),
        "ubatch64": dict(base, peak_rss_mb=405),
        "q8_kv": dict(base, peak_rss_mb=395, outputs=[call, other]),
    }
    llama = speech.llama_memory(data)
    assert llama[2].endswith("| 577 | 313 | 147 | 7.1 | — |")
    assert llama[3].endswith("| **412** | **313** | 147 | **18.4** | yes |")
    assert llama[5].endswith("| 395 | 313 | 147 | 7.1 | **no** (1 of 2 calls differs) |")


def voice_line(lines: list[str], index: int) -> str:
    return lines[index]


def _board(board: str, limit: int, cgroup_peak: float, idle_within: bool) -> dict[str, Any]:
    processes = [
        {
            "cmd": "python -m exo_core.cli serve --home H",
            "peak_rss_mb": 500.0,
            "peak_anon_mb": 200.0,
            "peak_file_mb": 300.0,
        },
        {
            "cmd": "python -m exo_core.cli device --home H",
            "peak_rss_mb": 68.5,
            "peak_anon_mb": 37.8,
            "peak_file_mb": 29.3,
        },
        {"cmd": "python -m device.stt_worker", "peak_rss_mb": 280.0, "peak_anon_mb": 200.0, "peak_file_mb": 80.0},
        {"cmd": "python -m device.stt_worker", "peak_rss_mb": 286.7, "peak_anon_mb": 207.2, "peak_file_mb": 79.9},
    ]
    marks = [{"after": "idle", "model_cached_mb": 0.0}, {"after": "answer 1", "model_cached_mb": 241.4}]
    return {
        "board": board,
        "completed": True,
        "approvals": 1 if board == "small" else 0,
        "questions": 1,
        "limit": {"memory_mb": limit},
        "cgroup_peak_mb": cgroup_peak,
        "oom_kills": 0,
        "page_faults": {
            "marks": marks,
            "exod_after_warmup": 3,
            "exod_per_answer_after_warmup": [0, 3],
            "cgroup_after_warmup": 3,
        },
        "model": {"file": "/cache/model.gguf"},
        "page_cache": {"evicted": [{"file": "model.gguf", "still_cached_mb": 0.0}]},
        "processes": processes,
        "idle_rss_mb": 50.2,
        "budgets": {"idle_rss_mb": 50.0, "peak_mb": float(limit)},
        "within_budgets": {"idle": idle_within, "peak": False, "concurrent_rss": True},
        "peak_rss_mb": 863.0,
        "peak_rss_concurrent_mb": 460.4,
        "startup_s": 17.472,
    }


def test_footprint_board_columns_mark_what_is_over_its_budget() -> None:
    lines = footprint.board_profiles(_board("standard", 1200, 1007.7, True), _board("small", 480, 480.0, False))
    assert lines[0] == "| measure | `standard` (Qwen2.5-Coder 0.5B) | `small` (Gemma 3 270M) |"
    by_measure = {line.split(" | ")[0]: line for line in lines[2:]}
    assert by_measure["| **cgroup peak, page cache included**"].endswith(
        "| **1007.7 MB** (within) | **480.0 MB** (= the limit: the kernel reclaimed) |"
    )
    assert by_measure["| **exod major faults after warm-up** (per answer after it)"].endswith(
        "| **3** ([0, 3]) | **3** ([0, 3]) |"
    )
    assert by_measure["| model read through the cgroup"].endswith(
        "| shared file, evicted to 0 MB first | shared file, evicted to 0 MB first |"
    )
    assert by_measure["| Whisper child peak RSS (anonymous), while transcribing"].endswith(
        "| 286.7 (207.2) | 286.7 (207.2) |"
    )
    assert by_measure["| idle exod RSS"].endswith("| 50.2 MB (within 50) | **50.2 MB: OVER** the 50 MB budget |")
    assert by_measure["| peak RSS of the processes alive together (summed VmHWM)"].endswith(
        "| 863.0: **OVER** 1200 | 863.0: **OVER** 480 |"
    )
    assert by_measure["| sampled simultaneous RSS"].endswith("| 460.4 (within 1200) | 460.4 (within 480) |")
    assert by_measure["| answered by button: approvals / questions (the model chooses which it asks)"].endswith(
        "| 0 / 1 | 1 / 1 |"
    )


def _score(accuracy: float, ece: float) -> dict[str, Any]:
    return {"accuracy": accuracy, "ece": ece, "coverage": 0.5, "accuracy_acting": None}


def test_decision_tables() -> None:
    entry = {
        "all": _score(0.704, 0.0691),
        "signal": _score(0.66, 0.046),
        "toolset": _score(0.78, 0.116),
        "panel": _score(0.658, 0.123),
    }
    data = {
        "scores": {"rules-only": entry, "not a listed system": entry},
        "latency": {
            "decision_cached_ms": 67.48,
            "decision_cached_p90_ms": 78.0517,
            "cached_over_step": 2.477,
            "n_cached": 105,
            "decision_restored_ms": 69.39,
            "decision_restored_p90_ms": 83.61,
            "restored_over_step": 2.547,
            "n_restored": 229,
            "decision_first_ms": 524.9,
            "decision_first_p90_ms": 526.1,
            "first_over_step": 19.27,
            "n_first": 3,
            "generation_step_ms": 27.24,
            "n_steps": 29,
        },
    }
    accuracy = decisions.decisions_accuracy(data)
    assert accuracy[0].startswith("| system | acc | ECE | signal acc | signal ECE |")
    assert accuracy[2:] == ["| rules-only | 70.4% | 0.069 | 66.0% | 0.046 | 78.0% | 0.116 | 65.8% | 0.123 |"]
    assert decisions.decisions_thresholds(data)[0].endswith("| panel acts @0.7 | panel right @0.7 |")
    assert decisions.decisions_thresholds(data)[2] == "| rules-only | 50.0% | - | 50.0% | - | 50.0% | - |"
    latency = decisions.decisions_latency(data)
    assert latency[2] == "| decision, question head in the cache | 67.5 | 78.1 | 2.5 | 105 |"
    assert latency[5] == "| one plain generation step (1 token) | 27.2 | - | 1.0 | 29 |"

    part = {"accuracy": 0.9149, "ece": 0.0874, "abstention": 0.0426, "top_accuracy": 0.9362, "n": 47}
    signal = {
        "scores": {"rules + laptop": {"test": part, "heldout": dict(part, n=72)}},
        "models": {
            "local": {
                "latency": {
                    "decision_median_ms": 3600.06,
                    "decision_p95_ms": 7391.2,
                    "median_over_step": 6.2997,
                    "p95_over_step": 12.934,
                    "n_decisions": 199,
                    "generation_step_median_ms": 571.47,
                    "generation_step_p95_ms": 1006.07,
                    "n_steps": 160,
                }
            }
        },
    }
    assert decisions.signal_test(signal)[2] == "| rules + laptop | 91.5% | 0.087 | 4.3% | 93.6% | 47 |"
    assert decisions.signal_heldout(signal)[2].endswith("| 72 |")
    assert decisions.signal_latency(signal)[2:] == [
        "| one signal decision | 3,600 | 7,391 | 6.3 | 12.9 | 199 |",
        "| one generation step (1 token) | 571.5 | 1,006 | 1.0 | - | 160 |",
    ]
    local = signal["models"]["local"]
    local["latency_draft"] = dict(local["latency"], decision_median_ms=5012.4, median_over_step=8.771, n_decisions=109)
    assert (
        decisions.signal_latency(signal)[3]
        == "| one signal decision, shown the draft | 5,012 | 7,391 | 8.8 | 12.9 | 109 |"
    )
    draft = {"top_accuracy_raw": 0.6514, "accuracy": 0.5505, "ece": 0.0712, "abstention": 0.2018, "n": 109}
    signal["draft"] = {"local": draft, "laptop+draft": dict(draft, top_accuracy_raw=0.8)}
    assert decisions.signal_draft(signal)[2:] == [
        "| local model, message alone | 65.1% | 55.0% | 0.071 | 20.2% | 109 |",
        "| laptop model, shown the draft | 80.0% | 55.0% | 0.071 | 20.2% | 109 |",
    ]


def test_pool_and_http_decision_tables() -> None:
    part = {"accuracy": 0.9149, "ece": 0.0874, "abstention": 0.0426, "top_accuracy": 0.9362, "n": 47}
    pool = {"scores": {"test:all": {"rules + laptop:nn+": part, "_rules": {"settled": 0.6}}}}
    assert decisions.pool_test_all(pool)[2:] == ["| rules + laptop:nn+ | 91.5% | 0.087 | 4.3% | 93.6% | 47 |"]
    seconds = {"median_s": 6.512, "p95_s": 9.87, "over_timeout": 1, "n": 19}
    http = {
        "summary": {
            "http:nn": {"top_right": 0.7368, "failed": 1, "seconds": seconds},
            "in-process:nn": {"top_right": 0.8421, "failed": 0, "seconds": seconds},
            "http:nn = in-process:nn": {"agree": 0.6842},
            "n": 19,
        }
    }
    assert decisions.http_paths(http)[2:] == [
        "| in-process:nn | 84.2% | 0 | 6.5 | 9.9 | 1 | 19 |",
        "| http:nn | 73.7% | 1 | 6.5 | 9.9 | 1 | 19 |",
    ]
    assert decisions.http_agree(http)[2:] == ["| http:nn = in-process:nn | 68.4% |", "| n | 19 |"]


def test_ledger_and_store_keep_the_files_digits() -> None:
    ledger = {
        "single_append": {
            "count": 1000,
            "ledger_per_s": 4321.5,
            "raw_sqlite_per_s": 148.4,
            "ratio_ledger_to_raw": 0.89,
        },
        "batched_append_100": {
            "count": 10000,
            "ledger_per_s": 4574.1,
            "raw_sqlite_per_s": 13522.1,
            "ratio_ledger_to_raw": 0.338,
        },
        "verify": {
            "entries": 10000,
            "verify_per_s": 9344.5,
            "ed25519_only_per_s": 18992.1,
            "ratio_verify_to_ed25519_only": 0.492,
            "raw_read_per_s": 1216706.2,
            "ratio_verify_to_raw_read": 0.0077,
        },
        "size_per_10k": {
            "ledger_bytes": 8916992,
            "bytes_per_entry": 891.7,
            "mean_content_bytes": 283.3,
            "raw_content_bytes": 3739648,
            "ratio_ledger_to_raw": 2.384,
        },
    }
    lines = ledger_store.ledger(ledger)
    assert (
        lines[2] == "| single durable signed append (per s) | 1,000 | 4,321.5 | raw INSERT of the same bytes | 148.4 "
        "| **0.89** |"
    )
    assert lines[5].endswith("| raw read of every row | 1,216,706.2 | 0.0077 |")
    store = {
        "nodes": 50,
        "lint_nodes_per_s": 2073.3,
        "lint_vs_plain_read": 31.27,
        "export_s": 1.919,
        "export_vs_copytree": 23.97,
        "items_per_s": 27.7,
        "items_vs_raw_sqlite_full_sync": 7.25,
    }
    assert (
        ledger_store.store(store)[2]
        == "| `lint_store` over 50 nodes | 2,073.3 nodes/s | reading the same files | 31.27 |"
    )


def _path(tok_s: float, ttft: float) -> dict[str, float]:
    return {"tok_s": tok_s, "ttft": ttft}


def test_model_tables() -> None:
    run = {
        "threads": 2,
        "median": {
            "direct": _path(5.979, 0.5227),
            "transport": _path(7.54, 0.3213),
            "router": _path(7.15, 0.395),
            "sse": _path(7.84, 0.3912),
        },
        "ratio_to_direct": {
            "direct": _path(1.0, 1.0),
            "transport": _path(1.261, 0.615),
            "router": _path(1.196, 0.756),
            "sse": _path(1.311, 0.748),
        },
        "load_s": 2.829,
        "rss_mb_loaded": 387.4,
        "rss_mb_end": 419.9,
        "rss_mb_with_int8_embedder": 476.4,
        "prefix_reuse": {
            "cold_prompt_s": 5.5192,
            "warm_prompt_s": 0.3143,
            "prompt_tokens": 310,
            "reused_tokens": 301,
            "speedup": 17.56,
        },
        "interrupt_ms": 131.89,
    }
    assert (
        models.models_paths({"runs": [run]})[2]
        == "| 2 | direct llama-cpp-python (baseline) | 6.0 | 522.7 | 1.000 | 1.000 |"
    )
    assert models.models_memory({"runs": [run]})[2] == (
        "| 2 | 2.8 | 387.4 | 419.9 | 476.4 | 5,519 → 314 ms (301 of 310 tokens reused), ×17.56 | 131.9 |"
    )

    counts = {"correct": 30, "of": 50, "flawed": 7}
    sets = {
        "plain": {"before": counts, "after": counts},
        "tools_offered": {"before": counts, "after": dict(counts, flawed=0)},
    }
    answers = models.answers_cleanup({"sets": {"tuning": sets, "heldout": sets}})
    assert answers[3] == "| tuning (50) | tools offered | 30 → 30 | 7 → 0 |"

    def laptop_model(right: int, tokens: float, rss: float) -> dict[str, Any]:
        return {
            "general_right": 5,
            "general_total": 10,
            "tool_calls_right": right,
            "tool_calls_total": 8,
            "stays_text": 1,
            "stays_text_total": 6,
            "first_piece_cold_s": 376.588,
            "first_piece_s_median": 4.887,
            "tokens_per_s_median": tokens,
            "server_peak_rss_mb": rss,
        }

    laptop = models.laptop_models(
        {"models": {"0.5b": laptop_model(4, 2.9, 1607.1), "1.5b": laptop_model(8, 2.27, 2847.8)}}
    )
    assert laptop[2] == "| Qwen2.5-Coder 1.5B Instruct | 5/10 | **8/8** | 1/6 | 376.6 | 4.9 | 2.3 | 0.78 | 2,848 MB |"
    assert laptop[3] == "| Qwen2.5-Coder 0.5B Instruct | 5/10 | 4/8 | 1/6 | 376.6 | 4.9 | 2.9 | 1.0 | 1,607 MB |"

    part = {"right_call": 6, "of_requests": 8, "any_call": 7, "stayed_text": 6, "of_questions": 6}
    parts = {key: part for key in ("dev", "exod all", "exod core+shell", "exod shell", "bench")}
    tools = models.exod_tools_parts({"parts": parts})
    assert tools[3] == "| **exod all (held out)** | **6/8** | 7 | **6/6** |"
    rerun = models.exod_tools_rerun({"parts": parts}, {"parts": {"dev": part, "exod all": dict(part, right_call=7)}})
    assert rerun[3] == "| **exod all (held out): right call / stayed text** | **6/8, 6/6** | **7/8, 6/6** |"

    speed = {
        "threads": 2,
        "direct": {"tokens_per_s": 4.7, "first_token_s": 1.295},
        "exod": {"tokens_per_s": 4.5, "first_token_s": 2.071},
        "exod_over_direct_tokens_per_s": 0.957,
    }
    assert models.generation({"runs": [speed]})[2] == "| 2 | 4.70 | 4.50 | **0.96** | 1.30 s | 2.07 s |"

    first = {"threads": 1, "omp": "PASSIVE", "n_batch": 256, "tokens_per_s": 0.98, "tokens_per_s_x_baseline": 1.0}
    first.update({"first_token_s": 62.392, "first_token_s_x_baseline": 1.0, "loadavg_1m": 14.3486})
    other = dict(first, threads=2, tokens_per_s=3.32, tokens_per_s_x_baseline=3.388, first_token_s_x_baseline=0.716)
    again = dict(
        first, tokens_per_s=3.97, tokens_per_s_x_baseline=4.051, first_token_s=18.699, first_token_s_x_baseline=0.3
    )
    matrix = models.generation_matrix({"runs": [first, other, again]})
    assert matrix[2] == "| 1 | PASSIVE | 256 | 0.98 | 1.0 | 62.4 s | 1.0 | 14.3 |"
    assert matrix[3] == "| 2 | PASSIVE | 256 | 3.32 | 3.39 | 62.4 s | 0.72 | 14.3 |"
    assert matrix[4] == "| 1 | PASSIVE | 256 (again, last) | 3.97 | 4.05 | 18.7 s | 0.30 | 14.3 |"


def test_stress_and_learning_tables() -> None:
    kill = {"acknowledged_events": 100, "ledger_entries_seen": 40, "seconds": 1234.5}
    total = {"cycles": 7, "acknowledged_events": 200, "ledger_entries_seen": 80}
    total.update({"events_lost": 0, "events_changed": 0, "seq_holes": 0, "ledger_lost": 1, "ledger_changed": 0})
    fuzz_tcp = {"sent": 1000, "status_5xx": 0, "untyped": 0, "crashes": 0, "exod_alive": True, "seconds": 10.2}
    fuzz_stdio = {"sent": 900, "skipped": 100, "untyped": 0, "crashes": 0, "exit_code": 0, "seconds": 5.0}
    data = {
        "kill_runs": [dict(kill, cycles_checked=4), dict(kill, cycles=3)],
        "kill_total": total,
        "fuzz": {"tcp": fuzz_tcp, "stdio": fuzz_stdio},
        "fuzz_topup": {"tcp": fuzz_tcp, "stdio": fuzz_stdio},
        "idle": {
            "connections_attempted": 60,
            "opening_s": 3.2,
            "connect_failed": 0,
            "held_open_by_exod": 60,
            "health_probes": 30,
            "health_max_s": 0.1187,
            "health_over_1s": 0,
            "baseline_health_max_s": 0.0329,
        },
        "stall": {
            "big_posts": 1,
            "big_post_statuses": [413],
            "health_max_during_s": 0.0436,
            "health_max_quiet_s": 0.0093,
            "ratio_max": 4.7,
        },
    }
    lines = people.stress(data)
    assert lines[2].startswith("| kill: **7 SIGKILL cycles** mid-stream (4 + 3, 2 homes) | 200 events")
    assert "**1 lost, 0 changed, 0 holes in `seq`** (1,234 s + 1,234 s)" in lines[2]
    assert "**1,800 lines answered** (900 + 900; 200 generated lines skipped" in lines[4]
    assert lines[6] == (
        "| stall: 1 arrays of 7.8 MB | refused `too_large` (413) before parsing; `/health` meanwhile at most"
        " 0.044 s (quiet 0.009 s, 4.7x) |"
    )

    def seed(number: int, recall: float, unasked: list[str]) -> dict[str, Any]:
        return {
            "seed": number,
            "catalog": {"precision": 1.0, "recall": recall},
            "noncatalog": {"precision": 1.0, "recall": 1.0},
            "guarded_promoted_unasked": unasked,
            "larger_model_calls": 13,
            "corrected_share_first_third": 0.84375,
            "corrected_share_last_third": 0.3125,
        }

    mean = {"catalog": {"precision": 1.0, "recall": 0.875}, "noncatalog": {"precision": 1.0, "recall": 1.0}}
    learning = people.learning({"runs": [seed(7, 0.75, []), seed(8, 1.0, ["rules/post"])], "mean": mean})
    assert learning[2] == "| 7 | 1.00 | 0.75 | 1.00 | 1.00 | 0 | 13 | 0.84 → 0.31 |"
    assert learning[4] == "| mean | **1.00** | **0.88** | **1.00** | **1.00** | **1** | | |"


def test_learning_reflection_table_counts_right_wrong_and_missed_per_split() -> None:
    def counts(right: int, wrong: int, missed: int, none_right: int) -> dict[str, int]:
        return {
            "cases": 9,
            "lessons_expected": 8,
            "right": right,
            "wrong": wrong,
            "missed": missed,
            "right_none": none_right,
            "picked": 0,
        }

    def model(name: str, right: int) -> dict[str, Any]:
        summary = {"dev": counts(right, 1, 8 - right - 1, 1), "heldout": counts(right - 1, 2, 8 - right - 1, 0)}
        return {"model": name, "splits": ["dev", "heldout"], "summary": summary, "rules_only": summary}

    lines = people.learning_reflection(model("big", 6), model("small", 4))
    assert lines[2] == "| big | dev (9) | 6/8 | 1 | 1 | 1/1 |"
    assert lines[3] == "| big | held-out (9) | 5/8 | 2 | 1 | 0/1 |"
    assert lines[6] == "| rules only (no model) | dev (9) | 6/8 | 1 | 1 | 1/1 |" and len(lines) == 8


def test_learning_route_table_names_the_route_of_each_file() -> None:
    run = {
        "seed": 7,
        "catalog": {"precision": 1.0, "recall": 0.875},
        "noncatalog": {"precision": 1.0, "recall": 0.8, "hidden": ["a", "b", "c", "d", "e"]},
        "guarded_promoted_unasked": [],
        "larger_model_calls": 13,
        "reflections_dropped": ["wants_something_added"],
        "seconds": 1349.6,
    }
    data = {"args": {"route": "big", "sessions": 12, "drafts": 8}, "runs": [run]}
    lines = people.learning_route(data, {**data, "args": {**data["args"], "route": "small", "noncatalog": "heldout"}})
    assert lines[2] == "| big | the simulation's 5 | 7 | 12 x 8 | 1.00 | 0.88 | 1.00 | 0.80 | 0 | 13 | 1 | 1,350 |"
    assert lines[3].startswith("| small | 5 from the heldout cases | 7 |") and len(lines) == 4


def test_conditions_read_each_files_machine_block() -> None:
    datas = []
    for _section, name in conditions.FILES:
        if name == "hub":
            datas.append(
                {"machine": {"date": "2026-11-30T09:50:08Z", "loadavg_before": [6.45], "loadavg_1_5_15": [8.8]}}
            )
        elif name == "retrieval":
            datas.append(
                {"machine": {"date": "2026-11-30T13:16:03Z", "loadavg_1_5_15": [4.41], "loadavg_after": [4.25]}}
            )
        elif name == "models":
            datas.append(
                {
                    "machine": {"loadavg_1m_before": 8.62},
                    "runs": [{"loadavg_1m_after": 10.99}, {"loadavg_1m_after": 9.6}],
                }
            )
        else:
            datas.append({})
    lines = conditions.conditions(*datas)
    assert lines[2] == "| 1 | `hub.json` | 2026-11-30 09:50 | 6.5 before, 8.8 after |"
    assert lines[7] == "| 5 | `retrieval.json` | 2026-11-30 13:16 | 4.4 before, 4.3 after |"
    assert lines[3] == "| 2 | `startup.json` | no date in the file | not in the file |"
    assert lines[-1] == "| 10 | `models.json` | no date in the file | 8.6 before, 11.0 / 9.6 after |"


def test_rule_history_tables() -> None:
    counts = {"n": 191, "settled": 65, "right": 56}
    versions = [
        {"commit": "e75aa20", "date": "2026-12-02T07:11:55+00:00", "parts": {"more": counts}, "same_as_previous": True}
    ]
    pooled = {
        "newest_without": {"settled": 130, "right": 119, "precision": 119 / 130, "wilson95": [0.8548, 0.9521]},
        "all_versions": {"settled": 821, "right": 748, "precision": 748 / 821, "wilson95": [0.8897, 0.9287]},
        "distinct_versions": {"settled": 248, "right": 227, "precision": 227 / 248, "wilson95": [0.874, 0.944]},
    }
    part = {"accuracy": 0.6072, "ece": 0.0423, "abstention": 0.345, "n": 443}
    check = {
        "confidence": 119 / 130,
        "scores": {
            label: {p: part for p in ("all", "fit", "fit172", "more")} for label in ("measured", "probability 1")
        },
    }
    by_rule = {"i-said": {"settled": 19, "right": 19}, "plain-question": {"settled": 28, "right": 25}}
    data = {"versions": versions, "pooled": pooled, "fit_check": check, "by_rule_newest_without": by_rule}
    assert (
        decisions.rule_history_versions(data)[2]
        == "| e75aa20 | 2026-12-02 07:11 | more | 191 | 65 | 56 | 86.2% | yes |"
    )
    assert decisions.rule_history_pooled(data)[2].endswith("| 119/130 | 0.915 | 0.855-0.952 |")
    assert decisions.rule_history_by_rule(data)[2:] == ["| plain-question | 28 | 25 |", "| i-said | 19 | 19 |"]
    fit = decisions.rule_history_fit_check(data)
    assert fit[2] == "| 1 | labelled set, fit part | 60.7% | 0.042 | 34.5% | 443 |"
    assert fit[-1] == "| 0.915 | all of it | 60.7% | 0.042 | 34.5% | 443 |"
