"""It learns and remembers from the conversation itself, with the real local model (issue 22).

    python benchmarks/bench_learning_e2e.py [--json] [--asks N] [--only taste|memory]
    exo bench learning-e2e --json

The longer version of ``tests/learning/test_learning_e2e_model.py``, on the standard board
(``exo init --board standard``: Qwen2.5-Coder 0.5B Instruct, one thread,
``OMP_WAIT_POLICY=PASSIVE``), through a real exod and piped ``exo chat`` sessions:

* **taste**: two fresh homes in the same run. The *learned* home has one teaching session
  (the issue's own words: a draft, "Too long. Make it shorter, and no exclamation marks.", a second
  draft, "No exclamation marks. Keep it shorter.", then "From now on, never use exclamation marks.");
  the *baseline* home has none. Then each home answers the same ``--asks`` requests for cheerful
  one-line messages, each in a fresh session. Reported per home: drafts with an exclamation mark,
  mean words per draft; and for the teaching session the verdicts and rules the signal decision
  recorded (the second correction is the issue's phrase the rules-only decision may abstain on).
* **memory**: five stated facts in one session, two replacing a belief already in the store; a new
  session per question (five questions); right = the expected word is in the answer. The same
  questions on a home with only the old beliefs are the baseline. Also: superseded nodes keep their
  history, ``exo store lint``'s exit code.

No pass/fail: numbers and their same-run baselines (docs/benchmarks.md, "How to read these numbers"). Results go to
``$EXO_HOME/bench/learning_e2e.json``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from e2e_kit import FACTS, QUESTIONS, Home, drafts_of, model_missing, write_belief

from benchmarks._common import bench_parser, machine_info, write_results

ROOT = Path(__file__).resolve().parents[1]


__all__ = ["main", "TEACH", "ASKS", "FACTS", "QUESTIONS"]

TEACH = (
    "Write a one-line cheerful birthday wish for my friend Sam.",
    "Too long. Make it shorter, and no exclamation marks.",
    "Write a one-line cheerful note to Ana saying the report is done.",
    "No exclamation marks. Keep it shorter.",
    "From now on, never use exclamation marks.",
)
ASKS = (
    "Write a one-line cheerful birthday wish for my friend Ana.",
    "Write a one-line cheerful note congratulating Tom on his new job.",
    "Write a one-line cheerful welcome message for our new neighbour Lea.",
    "Write a one-line cheerful thank-you note to Priya for the flowers.",
    "Write a one-line cheerful note telling the team the launch went well.",
    "Write a one-line cheerful good-luck message for Sam's exam.",
)


def _drafts_stats(drafts: list[str]) -> dict[str, Any]:
    words = [len(d.split()) for d in drafts]
    return {
        "drafts": len(drafts),
        "with_exclamation": sum("!" in d for d in drafts),
        "mean_words": round(sum(words) / len(words), 1) if words else 0.0,
        "texts": drafts,
    }


def _ask_each(home: Home, asks: list[str]) -> list[str]:
    """Each request in its own session; the drafts in order."""
    before = set(drafts_of(home))
    for ask in asks:
        home.chat([ask])
    return [texts[0] for session, texts in drafts_of(home).items() if session not in before and texts]


def _taste(tmp: Path, asks: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("baseline", "learned"):
        home = Home.create(tmp / name).start()
        try:
            started = time.monotonic()
            if name == "learned":
                home.chat(list(TEACH))
                review = json.loads(home.exo("learn", "review", "--json").stdout)
                out["teaching"] = {
                    "verdicts": len(home.entries("verdict")),
                    "corrections_typed": 2,
                    "rules": [e.body["text"] for e in home.entries("rule")],
                    "lessons": [
                        (row["target"], row["promoted_by"], round(row["weight"], 2)) for row in review["lessons"]
                    ],
                    "in_pack": "[[taste/exclamation]]" in (home.store / "pack.md").read_text(),
                }
            out[name] = _drafts_stats(_ask_each(home, asks))
            out[name]["seconds"] = round(time.monotonic() - started, 1)
        finally:
            home.stop()
    return out


def _memory(tmp: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("baseline", "stated"):
        home = Home.create(tmp / name)
        write_belief(
            home.store, "people/sister", "Sister", "Your sister lives in Lisbon.", "My sister lives in Lisbon."
        )
        write_belief(
            home.store, "health/dentist", "Dentist", "Your dentist is on Tuesday.", "The dentist is on Tuesday."
        )
        home.start()
        try:
            started = time.monotonic()
            told = home.chat(list(FACTS)) if name == "stated" else ""
            answers = _ask_each(home, [q for q, _ in QUESTIONS])
        finally:
            home.stop()
        right = [want in answer.lower() for (_, want), answer in zip(QUESTIONS, answers, strict=False)]
        out[name] = {
            "saved": told.count("Saved:"),
            "right": sum(right),
            "questions": len(QUESTIONS),
            "answers": answers,
            "seconds": round(time.monotonic() - started, 1),
        }
        if name == "stated":
            from exo_core.store import Store

            store = Store.open(home.store)
            out[name]["history_kept"] = all(
                store.read_node(old).valid_until is not None for old in ("people/sister", "health/dentist")
            )
            out[name]["lint_exit"] = home.lint().returncode
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table (or ``--json``); a full run writes $EXO_HOME/bench/learning_e2e.json."""
    parser = bench_parser(
        "learning-e2e", __doc__.splitlines()[0], quick_help="one draft request per home; writes nothing unless --out"
    )
    parser.add_argument("--asks", type=int, default=len(ASKS), help=f"draft requests per home (max {len(ASKS)})")
    parser.add_argument("--only", choices=("taste", "memory"), default=None)
    args = parser.parse_args(argv)
    why = model_missing()
    if why:
        print(f"skipped: {why}", file=sys.stderr)
        return 2
    results: dict[str, Any] = {"machine": machine_info(), "model": "qwen2.5-coder-0.5b-instruct", "board": "standard"}
    asks = max(1, args.asks)
    if args.quick:
        asks = 1
    with tempfile.TemporaryDirectory(prefix="exo-learn-e2e-") as tmp:
        if args.only in (None, "taste"):
            results["taste"] = _taste(Path(tmp) / "taste", list(ASKS[:asks]))
            taste = results["taste"]
            for name in ("baseline", "learned"):
                row = taste[name]
                marked = f"{row['with_exclamation']}/{row['drafts']}"
                print(f"taste {name}: {marked} drafts with '!', {row['mean_words']} words")
            print(f"teaching: {taste['teaching']}")
        if args.only in (None, "memory"):
            results["memory"] = _memory(Path(tmp) / "memory")
            for name, row in results["memory"].items():
                print(f"memory {name}: {row['right']}/{row['questions']} right, saved {row['saved']}")
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    write_results("learning_e2e", results, out=args.out, quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
