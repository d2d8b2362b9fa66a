"""The results tables of docs/benchmarks.md, each rendered from the results files its benchmark writes.

``RENDERERS`` maps a table's name, the ``NAME`` of its ``<!-- results:NAME -->`` markers in the page, to a
:class:`Table`: the results files it reads (``benchmarks/results/<file>.json``, in order) and the function
that turns their JSON into the table's lines. A table is one function in the module of its part of the
page; adding one is a function there and an entry here (docs/benchmarks.md, "How to reproduce").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.tables import conditions, decisions, footprint, ledger_store, models, people, retrieval, speech, system

__all__ = ["RENDERERS", "Table"]


@dataclass(frozen=True, slots=True)
class Table:
    """A rendered table: the results files it reads, by name without ``.json``, and its renderer."""

    files: tuple[str, ...]
    render: Callable[..., list[str]]


def _one(file: str, render: Callable[[dict[str, Any]], list[str]]) -> Table:
    return Table(files=(file,), render=render)


_QWEN_TOOLS = "exod_tools_qwen2.5-coder-0.5b-instruct"

RENDERERS: dict[str, Table] = {
    "conditions": Table(files=tuple(name for _section, name in conditions.FILES), render=conditions.conditions),
    "hub.live": _one("hub", system.hub_live),
    "hub.baseline": _one("hub", system.hub_baseline),
    "hub.replay": _one("hub", system.hub_replay),
    "startup.time": _one("startup", system.startup_time),
    "sandbox.cost": _one("sandbox", system.sandbox_cost),
    "sandbox.walls": _one("sandbox", system.sandbox_walls),
    "startup.memory": _one("startup", system.startup_memory),
    "startup.imports": _one("startup", system.startup_imports),
    "context.tokens": _one("context", system.context_tokens),
    "context.build": _one("context", system.context_build),
    "context_window": _one("context_window", system.context_window),
    "voice.engines": _one("voice", speech.voice_engines),
    "voice.stages": _one("voice", speech.voice_stages),
    "retrieval.locomo_holdout": _one("retrieval", retrieval.locomo_holdout),
    "retrieval.longmemeval_holdout": _one("retrieval", retrieval.longmemeval_holdout),
    "retrieval.tune": _one("retrieval", retrieval.tune_half),
    "retrieval.scale": _one("retrieval", retrieval.scale),
    "retrieval.throughput": _one("retrieval", retrieval.throughput),
    "llama_memory": _one("llama_memory", speech.llama_memory),
    "stt_memory": _one("stt_memory", speech.stt_memory),
    "footprint.boards": Table(files=("footprint_standard", "footprint_small"), render=footprint.board_profiles),
    "decisions.accuracy": _one("decisions", decisions.decisions_accuracy),
    "decisions.thresholds": _one("decisions", decisions.decisions_thresholds),
    "decisions.latency": _one("decisions", decisions.decisions_latency),
    "decisions_signal.test": _one("decisions_signal", decisions.signal_test),
    "signal_asks": _one("signal_asks", decisions.signal_asks),
    "decisions_signal.heldout": _one("decisions_signal", decisions.signal_heldout),
    "decisions_signal.latency": _one("decisions_signal", decisions.signal_latency),
    "decisions_http.test": _one("decisions_http", decisions.http_scored_test),
    "decisions_http.heldout": _one("decisions_http", decisions.http_scored_heldout),
    "decisions_rule_history.pooled": _one("decisions_rule_history", decisions.rule_history_pooled),
    "ledger": _one("ledger", ledger_store.ledger),
    "store": _one("store", ledger_store.store),
    "models.paths": _one("models", models.models_paths),
    "models.memory": _one("models", models.models_memory),
    "answers": _one("answers", models.answers_cleanup),
    "stress": _one("stress", people.stress),
    "laptop": _one("laptop", models.laptop_models),
    "exod_tools_qwen": _one(_QWEN_TOOLS, models.exod_tools_parts),
    "exod_tools_qwen.asked": Table(
        files=(f"{_QWEN_TOOLS}_asked_before", f"{_QWEN_TOOLS}_asked_after_dev", f"{_QWEN_TOOLS}_asked_after"),
        render=models.exod_tools_asked,
    ),
    "latency": _one("latency", models.latency),
    "store_answers_standard": _one("store_answers_standard", models.store_answers),
    "store_answers_small": _one("store_answers_small", models.store_answers),
    "generation": _one("generation", models.generation),
    "generation_matrix": _one("generation_matrix", models.generation_matrix),
    "learning": _one("learning", people.learning),
    "learning.route": Table(
        files=(
            "learning_route_qwen2.5-coder-1.5b-instruct",
            "learning_route_qwen2.5-coder-0.5b-instruct",
            "learning_route_qwen2.5-coder-1.5b-instruct_heldout",
            "learning_route_qwen2.5-coder-0.5b-instruct_heldout",
        ),
        render=people.learning_route,
    ),
    "learning.reflection": Table(
        files=("learning_engine_qwen2.5-coder-1.5b-instruct", "learning_engine_qwen2.5-coder-0.5b-instruct"),
        render=people.learning_reflection,
    ),
}
