"""The larger model's reflection on corrections outside the catalog, asked of a real model on its engine.

    python -m benchmarks.bench_learning --engine qwen2.5-coder-1.5b-instruct [--cases dev,heldout,old] [--json]
    exo bench learning --engine MODEL [same]

Starts ``python -m llama_cpp.server`` for MODEL as ``exo models serve`` does (1 thread,
``OMP_WAIT_POLICY=PASSIVE``) and asks it, through the router and the queue's own request
(:func:`exo_edge.proposal_queue.prompt_for`: the numbered candidate lines and a required ``pick_line``
tool), which line each correction is about; the learner's own reading
(:func:`exo_core.learning.reflected.read_reflection`, what the drain records) turns the answer into a
kept lesson or a dropped one. The cases:

* ``dev`` and ``heldout``: ``benchmarks/data/reflection_cases.json`` (its README says who wrote them, when,
  and the split rule, fixed before any run; only ``dev`` answers were looked at while changing anything);
* ``old``: the 5 non-catalog corrections of ``tests/learning/exod_person.py``, seen while the earlier
  generation prompt was changed, so not held-out.

Each case is scored against its expected lesson: ``right`` (kept, about the expected line, its marker
containing an expected word by stem, guarded as expected), ``wrong`` (kept, anything else: a lesson the
person did not mean), ``missed`` (dropped though a lesson was expected), ``right_none`` (dropped when the
person asked for something missing). The same cases are scored for the rules-only stand-in
(``tests/learning/larger_model.py``: the line sharing the most stems with the person's words), which
needs no model, as the baseline. Results: ``$EXO_HOME/bench/learning_engine_<model>.json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "benchmarks" / "data" / "reflection_cases.json"
SPLITS = ("dev", "heldout", "old")
# The expected lessons of exod_person's five hidden lines outside the catalog (its NONCATALOG and GUARDED).
_OLD_EXPECT = {
    "tldr": (["TL;DR"], False),
    "disclaimer": (["AI", "assistant"], False),
    "recap": (["recap"], False),
    "synergy": (["synergy"], False),
    "post": (["post"], True),
}

__all__ = [
    "CASES",
    "SPLITS",
    "load_cases",
    "inputs_for",
    "score",
    "summarise",
    "rules_only",
    "serving",
    "engine_check",
]


def load_cases(splits: tuple[str, ...]) -> list[dict[str, Any]]:
    """The cases of ``splits`` with the draft and the person's version as text and the expected line's text."""
    out = []
    data = json.loads(CASES.read_text(encoding="utf-8"))
    for case in data["cases"]:
        if case["split"] not in splits:
            continue
        line = case["expect"]["line"]
        out.append(
            {
                "id": case["id"],
                "split": case["split"],
                "kind": case["kind"],
                "verdict": case["verdict"],
                "draft": "\n".join(case["draft"]),
                "after": "\n".join(case.get("after", [])),
                "reason": case.get("reason", ""),
                "line": case["draft"][line - 1] if line else None,
                "words": case["expect"]["words"],
                "guarded": case["expect"]["guarded"],
            }
        )
    if "old" in splits:
        from exod_person import GUARDED, NONCATALOG
        from simperson import render

        for key, (line, said) in {**NONCATALOG, **GUARDED}.items():
            words, guarded = _OLD_EXPECT[key]
            draft = render("answer", frozenset({"preamble"})) + "\n\n" + line
            out.append(
                {
                    "id": key,
                    "split": "old",
                    "kind": "exod_person",
                    "verdict": "reject",
                    "draft": draft,
                    "after": "",
                    "reason": said,
                    "line": line,
                    "words": words,
                    "guarded": guarded,
                }
            )
    return out


def inputs_for(case: dict[str, Any]) -> dict[str, Any]:
    """The ``reflect`` job's inputs as the learner queues them (``Learner._explain``)."""
    from exo_core.learning.reflected import EXPLAIN, unexplained_lines

    removed = unexplained_lines(case["draft"], case["after"], [])
    return {
        EXPLAIN: case["id"],
        "verdict": case["verdict"],
        "draft": case["draft"][:1200],
        "after": case["after"][:1200],
        "removed": [line[:300] for line in removed[:6]],
        "reason": case["reason"][:300],
    }


def score(case: dict[str, Any], inputs: dict[str, Any], text: str) -> dict[str, Any]:
    """The learner's reading of ``text`` and how it compares with the case's expected lesson."""
    from exo_core.learning.features import stems
    from exo_core.learning.reflected import Reflection, choices, guarded_by, read_reflection

    offered = choices(inputs)
    # The learner queues nothing when no line is named (Learner._explain): no call, nothing kept.
    read = read_reflection(text, inputs) if offered else Reflection(why="not_queued")
    chosen = offered[read.line - 1] if read.line else None
    answered = None if read.why == "not_a_line_choice" else read.line
    kept = not read.why
    if case["line"] is None:
        outcome = "wrong" if kept else "right_none"
    elif not kept:
        outcome = "missed"
    else:
        named = stems(" ".join(case["words"])) & stems(read.marker)
        same = chosen == case["line"] and bool(named) and guarded_by(read.claim, read.marker) == case["guarded"]
        outcome = "right" if same else "wrong"
    return {
        "id": case["id"],
        "split": case["split"],
        "outcome": outcome,
        "why": read.why or "kept",
        "chosen": answered,
        "expected": offered.index(case["line"]) + 1 if case["line"] in offered else 0,
        "lesson_expected": case["line"] is not None,
        "marker": read.marker,
        "answer": text[:200],
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Counts per split: cases, lessons expected, right, wrong kept, missed, right drops of none-cases."""
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        counts = out.setdefault(
            row["split"],
            {"cases": 0, "lessons_expected": 0, "right": 0, "wrong": 0, "missed": 0, "right_none": 0, "picked": 0},
        )
        counts["cases"] += 1
        counts["lessons_expected"] += int(row["lesson_expected"])
        counts[row["outcome"]] += 1
        counts["picked"] += int(row["chosen"] == row["expected"])
    return out


def rules_only(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same cases answered by the rules-only stand-in (no model): the baseline."""
    from larger_model import answer_for

    from exo_core.learning.reflected import choices
    from exo_edge.proposal_queue import Job, prompt_for

    rows = []
    for case in cases:
        inputs = inputs_for(case)
        if not choices(inputs):
            rows.append(score(case, inputs, ""))
            continue
        request = prompt_for(Job(0, case["id"], "reflect", inputs, "queued", 0))
        rows.append(score(case, inputs, answer_for(request.messages[-1].content)))
    return rows


async def _ask(router: Any, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from exo_core.learning.reflected import choices
    from exo_core.seams.model import TextDelta, ToolCallChunk
    from exo_edge.proposal_queue import Job, prompt_for

    rows = []
    for case in cases:
        inputs = inputs_for(case)
        parts: list[str] = []
        if not choices(inputs):
            rows.append({**score(case, inputs, ""), "seconds": 0.0})
            continue
        started = time.monotonic()
        # Collected as the drain collects them (exo_edge.proposal_queue.drain): text, or the required call.
        async for chunk in router.stream(prompt_for(Job(0, case["id"], "reflect", inputs, "queued", 0))):
            if isinstance(chunk, TextDelta):
                parts.append(chunk.text)
            elif isinstance(chunk, ToolCallChunk):
                parts.append(json.dumps(chunk.call.arguments))
        row = score(case, inputs, "".join(parts))
        row["seconds"] = round(time.monotonic() - started, 1)
        rows.append(row)
        print(
            f"{row['split']:8} {row['id']:18} {row['outcome']:10} chose {row['chosen']} (expected {row['expected']}) "
            f"{row['why']} marker={row['marker']!r} | {row['answer'][:60]!r} {row['seconds']} s",
            flush=True,
        )
    await router.aclose()
    return rows


@contextlib.contextmanager
def serving(name: str) -> Iterator[tuple[int, str, str]]:
    """``python -m llama_cpp.server`` for MODEL as ``exo models serve`` starts it, 1 thread: (port, alias, base URL)."""
    from exo_edge.laptop_server import ServeSettings, resolve_model, start_server, wait_ready

    path, alias = resolve_model(name)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    settings = ServeSettings(path, alias, port=port, threads=1, n_ctx=2048)
    proc = start_server(settings, log=Path(tempfile.gettempdir()) / f"bench-learning-{alias}.log")
    try:
        wait_ready(settings.base_url, proc=proc, timeout=600)
        yield port, alias, settings.base_url
    finally:
        proc.terminate()
        proc.wait(30)


def engine_check(name: str, splits: tuple[str, ...]) -> dict[str, Any]:
    """Ask MODEL on llama_cpp.server the reflection of every case of ``splits``; the rules-only baseline too."""
    from exo_core.models import load_catalog
    from exo_core.models.router import ModelRouter

    cases = load_cases(splits)
    baseline = rules_only(cases)
    with serving(name) as (_port, alias, base_url):
        config = {"providers": {"laptop": {"kind": "openai", "base_url": base_url, "key_env": []}}}
        router = ModelRouter(load_catalog({"models": {**config, "roles": {"main": [f"laptop:{alias}"]}}}, env={}))
        rows = asyncio.run(_ask(router, cases))
    summary = summarise(rows)
    for split, counts in summary.items():
        print(f"{alias} {split}: {counts}")
    return {
        "model": alias,
        "splits": list(splits),
        "threads": 1,
        "summary": summary,
        "rules_only": summarise(baseline),
        "rows": rows,
        "rules_only_rows": baseline,
    }
