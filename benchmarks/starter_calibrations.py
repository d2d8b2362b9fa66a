"""Fit the calibrations that ship with Exo (``exo_core/decisions/data/starter_calibrations.json``) from the
fit-data raws of issue 21's studies, or check the shipped file against them (docs/decisions.md §4).

* **The fixed examples** (style ``chat``, exod's default prompt): ``benchmarks/results/decisions_prompt.json``
  (``bench_decisions_prompt.py``, the latest pass's study): the local 0.5B in-process and the laptop's 1.5B over
  HTTP with the prompt that study chose (``choice.prompt``), on every message of its fit sources (the labelled
  set's fit part, the 172, the 191 and the held-out sets already scored; never the test part or the held-out
  set still held out) that the rules of the study's results leave.
* **The chosen examples** (style ``chat:nn``): ``benchmarks/results/decisions_sources.json``
  (``bench_decisions_sources.py``, the sixth pass), on the three older sources' leftovers. They were asked with
  the sixth pass's option descriptions and examples and with neighbours from the other sources only; exod's chosen examples
  come from the whole pool, so these starters are a little conservative, and they were not refitted for the
  later prompts' descriptions (the chosen examples are not exod's default; docs/studies/signal-decisions.md).

Each model and prompt is fitted on all its rows at once, with the same ``fit`` exod fits a home's labels with.

    python -m benchmarks.starter_calibrations            # write the file
    python -m benchmarks.starter_calibrations --check    # exit 1 when the shipped file differs
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks._common import RESULTS_DIR
from exo_core.decisions.calibration import fit
from exo_core.decisions.starters import DEFAULT_STARTERS
from exo_core.decisions.uses import SIGNAL

PROMPT_STUDY = RESULTS_DIR / "decisions_prompt.json"
SOURCES_STUDY = RESULTS_DIR / "decisions_sources.json"
LOCAL = ["qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m"]
LARGER = ["qwen2.5-coder-1.5b-instruct"]
# Each starter: the study's results file, its job (``{prompt}`` is the prompt study's choice), and the model
# names exod gives it: the local provider is named after the model's manifest, or the GGUF file's stem when it
# is loaded by file; the laptop's route after the served alias.
JOBS = (
    (PROMPT_STUDY, "local:{prompt}", LOCAL, "chat"),
    (SOURCES_STUDY, "local:nn", LOCAL, "chat:nn"),
    (PROMPT_STUDY, "larger:{prompt}", LARGER, "chat"),
    (SOURCES_STUDY, "larger:nn", LARGER, "chat:nn"),
)
ABOUT = (
    "Starter calibrations for the signal decision (docs/decisions.md §4), used until a home has 30 labels of its "
    "own for a provider. Fitted by benchmarks/starter_calibrations.py on the rules' leftovers of the fit data in "
    "benchmarks/results/decisions_prompt.json and decisions_sources.json (never the test part or a held-out set "
    "still held out)."
)


def _leftovers(results: dict[str, Any], job: str) -> list[tuple[dict[str, float], str]]:
    """``job``'s raws on the fit messages the rules left when the study was scored, with their labels."""
    raws = results["raws"].get(job)
    if not raws:
        raise SystemExit(f"the study's results hold no raws of {job}: run it first")
    rows = []
    for case, probs in sorted(raws.items()):
        found = results["cases"].get(case)
        if found is None or found.get("rule") is not None:
            continue
        rows.append((probs, found["label"]))
    return rows


def starters(studies: dict[Path, dict[str, Any]]) -> dict[str, Any]:
    """The file's content, fitted from ``studies`` (each results file's content, by path)."""
    prompt = studies[PROMPT_STUDY]["choice"]["prompt"]
    out = []
    for path, pattern, models, style in JOBS:
        job = pattern.format(prompt=prompt)
        rows = _leftovers(studies[path], job)
        found = fit(SIGNAL.options, rows)
        if found is None:
            raise SystemExit(f"{job}: too few rows to fit ({len(rows)})")
        out.append(
            {
                "mechanism": SIGNAL.mechanism,
                "models": models,
                "style": style,
                "slope": round(found.slope, 6),
                "offsets": {o: round(b, 6) for o, b in zip(found.options, found.offsets, strict=True)},
                "samples": found.samples,
                "fitted_on": f"{path.name} {job}",
            }
        )
    return {"about": ABOUT, "starters": out}


def main(argv: list[str] | None = None) -> int:
    """Write the shipped file, or ``--check`` it."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the shipped file is not what the raws give")
    args = ap.parse_args(argv)
    studies = {path: json.loads(path.read_text(encoding="utf-8")) for path in (PROMPT_STUDY, SOURCES_STUDY)}
    wanted = json.dumps(starters(studies), indent=2) + "\n"
    if args.check:
        shipped = DEFAULT_STARTERS.read_text(encoding="utf-8") if DEFAULT_STARTERS.is_file() else ""
        if shipped != wanted:
            print(f"{DEFAULT_STARTERS} is not what the studies' raws give: run benchmarks/starter_calibrations.py")
            return 1
        return 0
    DEFAULT_STARTERS.write_text(wanted, encoding="utf-8")
    print(f"wrote {DEFAULT_STARTERS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
