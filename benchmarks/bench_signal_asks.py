"""How often the learning question ("Should I learn from ...?") interrupts, and what it still catches.

``exo bench signal-asks`` runs this. Every labelled signal message in ``benchmarks/data/`` is read as if
it answered a draft (the case where exod may ask), by the decider a board without a model runs
(``rules-only``: the rules, then the cue words; the board that asks most, since nothing else settles a
message). For each message:

* **before**: asked when the decider leaves it open (exod before the question was gated);
* **after**: asked only when, besides, it may teach (``exo_core.decisions.signal_ask.worth_asking``).

Reported per set, each against its own baseline (the same messages, the same run):

* questions per 100 *ordinary turns* (messages labelled ``neither``: requests, questions, greetings,
  thanks), before and after;
* the share of real corrections and rules still *caught*: settled as a correction or rule by the decider,
  or asked about (the person's answer labels it);
* the share of corrections and rules asked about (before, after).

The sets: the *fit* files (read while ``signal_ask`` was written: ``decisions.jsonl``'s signal cases,
``decisions_signal_fit.jsonl``, ``decisions_signal_more.jsonl``) and the *held-out* files
(``decisions_heldout*.jsonl``, not read to write it).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks._common import bench_parser, machine_info, print_table, write_results

DATA = Path(__file__).resolve().parent / "data"
FIT = ("decisions.jsonl", "decisions_signal_fit.jsonl", "decisions_signal_more.jsonl")
HELDOUT = tuple(sorted(p.name for p in DATA.glob("decisions_heldout*.jsonl")))
TEACHING = ("correction", "rule")


def load(names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The signal messages of ``names`` (a file's cases with ``use`` other than ``signal`` left out)."""
    cases: list[dict[str, Any]] = []
    for name in names:
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            case = json.loads(line)
            if case.get("use", "signal") == "signal" and case.get("label") in (*TEACHING, "neither"):
                cases.append(case)
    return cases


async def measure(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Questions before and after on ``cases``, and what is caught."""
    from exo_core.decisions.decider import Decider
    from exo_core.decisions.setup import DecisionSettings, build_providers
    from exo_core.decisions.signal_ask import worth_asking
    from exo_core.decisions.uses import SIGNAL
    from exo_core.seams.home import ExoHome

    home = ExoHome(Path("/nonexistent-exo-home"))
    decider = Decider(build_providers(home, DecisionSettings(providers=("rules-only",))))
    counts = {
        key: 0
        for key in (
            "ordinary",
            "teaching",
            "asked_before",
            "asked_after",
            "caught_before",
            "caught_after",
            "teaching_asked_before",
            "teaching_asked_after",
            "settled_teaching",
        )
    }
    for case in cases:
        text = str(case["text"])
        decision = await decider.decide(SIGNAL, text, draft=case.get("draft"))
        open_ = decision.chosen is None and decision.escalate is not None
        before = open_
        after = open_ and worth_asking(text)
        label = case["label"]
        if label == "neither":
            counts["ordinary"] += 1
            counts["asked_before"] += before
            counts["asked_after"] += after
            continue
        counts["teaching"] += 1
        settled = decision.chosen in TEACHING
        counts["settled_teaching"] += settled
        counts["caught_before"] += settled or before
        counts["caught_after"] += settled or after
        counts["teaching_asked_before"] += before
        counts["teaching_asked_after"] += after
    ordinary = max(1, counts["ordinary"])
    teaching = max(1, counts["teaching"])
    return {
        **counts,
        "questions_per_100_ordinary_before": round(100 * counts["asked_before"] / ordinary, 1),
        "questions_per_100_ordinary_after": round(100 * counts["asked_after"] / ordinary, 1),
        "caught_share_before": round(counts["caught_before"] / teaching, 3),
        "caught_share_after": round(counts["caught_after"] / teaching, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser("signal-asks", __doc__.splitlines()[0] if __doc__ else "")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    sets = {"fit": FIT, "held-out": HELDOUT}
    if args.quick:
        sets = {"held-out": HELDOUT[:1]}
    results: dict[str, Any] = {"machine": machine_info(), "decider": "rules-only", "sets": {}}
    for name, files in sets.items():
        results["sets"][name] = {"files": list(files), **asyncio.run(measure(load(files)))}
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        rows = [
            [
                name,
                got["ordinary"],
                got["questions_per_100_ordinary_before"],
                got["questions_per_100_ordinary_after"],
                got["teaching"],
                got["caught_share_before"],
                got["caught_share_after"],
                f"{got['teaching_asked_before']} / {got['teaching_asked_after']}",
            ]
            for name, got in results["sets"].items()
        ]
        print_table(
            "The learning question: asks per 100 ordinary turns, and corrections and rules still caught (rules-only)",
            [
                "set",
                "ordinary",
                "asks/100 before",
                "asks/100 after",
                "teaching",
                "caught before",
                "caught after",
                "teaching asked before / after",
            ],
            rows,
        )
    write_results("signal_asks", results, out=args.out, quick=args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
