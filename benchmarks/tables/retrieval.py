"""§5 of docs/benchmarks.md: retrieval quality on LoCoMo and LongMemEval, latency and memory at scale.

From ``retrieval.json`` (``bench_retrieval.py``). Quality numbers are shown with three decimals; a bold
cell is the best of its column (ties at the shown digits all bold) among the systems the page compares:
every LoCoMo system but ``rrf`` (the plain lists and the lists with the neighbouring-turn stage), and
the three LongMemEval systems the issue compares (``bm25``, ``embed``, ``fused``). ``rrf`` is shown for
comparison, never bold.
"""

from __future__ import annotations

from typing import Any

from benchmarks.tables._cells import md_table

__all__ = ["locomo_holdout", "longmemeval_holdout", "tune_half", "scale", "throughput"]

_LOCOMO_METRICS = ("hit@5", "hit@10", "recall@5", "recall@10")
_LME_METRICS = ("any@1", "any@5", "any@10", "all@5", "all@10")
_LME_COMPARED = ("bm25", "embed", "fused")
_NOT_COMPARED = ("rrf",)
_ORDER = ("bm25", "embed", "fused", "bm25+context", "embed+context", "rrf")  # the page's order: parts, then stages


def _ordered(metrics: dict[str, Any]) -> list[str]:
    """The systems of a results block in the page's order (the file sorts them by name)."""
    known = [system for system in _ORDER if system in metrics]
    others = sorted(system for system in metrics if system not in _ORDER)
    return known + others


def _q(value: float) -> str:
    return f"{value:.3f}"


def _best(values: dict[str, float], compared: list[str]) -> str:
    """The best shown value of a column among the compared systems."""
    return max(_q(values[system]) for system in compared)


def _cell(value: float, best: str, bold: bool) -> str:
    shown = _q(value)
    if bold and shown == best:
        return f"**{shown}**"
    return shown


def _system(name: str) -> str:
    if name == "fused":
        return "**fused**"
    return name


def _locomo_compared(metrics: dict[str, Any]) -> list[str]:
    return [system for system in _ordered(metrics) if system not in _NOT_COMPARED]


def locomo_holdout(data: dict[str, Any]) -> list[str]:
    """§5: LoCoMo, held-out half, every system by category."""
    metrics = data["quality"]["holdout"]["locomo"]["metrics"]
    compared = _locomo_compared(metrics)
    categories = list(metrics["fused"])
    rows = []
    for category in categories:
        for system in _ordered(metrics):
            cells = [_system(system), category]
            for metric in _LOCOMO_METRICS:
                column = {name: metrics[name][category][metric] for name in metrics}
                best = _best(column, compared)
                cells.append(_cell(metrics[system][category][metric], best, system in compared))
            rows.append(cells)
    return md_table(["system", "category", *_LOCOMO_METRICS], rows)


def longmemeval_holdout(data: dict[str, Any]) -> list[str]:
    """§5: LongMemEval_S, held-out half, session level."""
    metrics = data["quality"]["holdout"]["longmemeval"]["metrics"]
    compared = [system for system in _LME_COMPARED if system in metrics]
    rows = []
    for system in _ordered(metrics):
        cells = [_system(system)]
        for metric in _LME_METRICS:
            column = {name: metrics[name][metric] for name in metrics}
            cells.append(_cell(metrics[system][metric], _best(column, compared), system in compared))
        rows.append(cells)
    return md_table(["system", *_LME_METRICS], rows)


def _slashed(by_system: dict[str, dict[str, float]], metric: str, compared: list[str]) -> str:
    """``hit@5 0.594 / 0.510 / **0.658**``: one metric of every system, in the page's order."""
    column = {name: values[metric] for name, values in by_system.items()}
    best = _best(column, compared)
    shown = [_cell(column[name], best, name in compared) for name in _ordered(by_system)]
    return f"{metric} " + " / ".join(shown)


def _tune_row(
    label: str, by_system: dict[str, dict[str, float]], compared: list[str], keys: tuple[str, ...]
) -> list[str]:
    systems = " / ".join(_system(name) for name in _ordered(by_system))
    numbers = "; ".join(_slashed(by_system, metric, compared) for metric in keys)
    return [label, systems, numbers]


def tune_half(data: dict[str, Any]) -> list[str]:
    """§5: the tune half, where the settings were chosen: every system's numbers in one cell per data set."""
    tune = data["quality"]["tune"]
    locomo = tune["locomo"]
    metrics = locomo["metrics"]
    compared = _locomo_compared(metrics)
    rows = []
    for category in metrics["fused"]:
        by_system = {name: metrics[name][category] for name in metrics}
        label = f"LoCoMo {category} ({locomo['questions'][category]} q.)"
        rows.append(_tune_row(label, by_system, compared, _LOCOMO_METRICS))
    lme = tune["longmemeval"]
    lme_compared = [system for system in _LME_COMPARED if system in lme["metrics"]]
    label = f"LongMemEval ({lme['questions']} q.)"
    rows.append(_tune_row(label, lme["metrics"], lme_compared, _LME_METRICS))
    return md_table(["data", "system", "numbers"], rows, align="lll")


def _latency(measure: dict[str, float]) -> str:
    return f"{measure['p50_ms']:.2f} / {measure['p95_ms']:.2f}"


def _ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2g}"


def scale(data: dict[str, Any]) -> list[str]:
    """§5: query latency p50 / p95 (ms) and memory at 1,000 to 100,000 texts, ours against plain baselines."""
    headers = [
        "texts",
        "bm25",
        "plain FTS5",
        "int8 scan",
        "numpy fp32 scan",
        "fused",
        "bm25 / plain",
        "int8 / fp32",
        "int8 matrix KiB",
        "fp32 matrix KiB",
        "our index KiB",
        "plain FTS5 KiB",
    ]
    rows = []
    for size in data["scale"]:
        memory = size["memory"]
        rows.append(
            [
                size["texts"],
                _latency(size["bm25"]),
                _latency(size["plain_fts5"]),
                _latency(size["int8_scan"]),
                _latency(size["numpy_fp32_scan"]),
                _latency(size["fused"]),
                _ratio(size["bm25"]["p50_ms"], size["plain_fts5"]["p50_ms"]),
                _ratio(size["int8_scan"]["p50_ms"], size["numpy_fp32_scan"]["p50_ms"]),
                memory["int8_bytes"] // 1024,
                memory["fp32_bytes"] // 1024,
                memory["fts_db_kb"],
                memory["plain_fts_db_kb"],
            ]
        )
    return md_table(headers, rows)


def throughput(data: dict[str, Any]) -> list[str]:
    """§5: embedding throughput during import, int8 against fp32."""
    rates = data["throughput"]
    rows = [
        [precision, rates[precision]["texts_per_s"], rates[precision]["model_mb"]] for precision in ("int8", "fp32")
    ]
    return md_table(["model", "texts/s", "file MB"], rows)
