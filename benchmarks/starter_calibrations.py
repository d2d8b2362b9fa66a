"""Fit the calibrations that ship with Exo (``exo_core/decisions/data/starter_calibrations.json``) from the sixth
pass's fit-data raws, or check the shipped file against them (docs/decisions.md §4).

The raws are ``benchmarks/results/decisions_sources.json`` (``bench_decisions_sources.py``): the local 0.5B
in-process and the laptop's 1.5B over HTTP, each with the fixed examples and with chosen ones, on every
fit-data signal message the rules leave (the labelled set's fit part, the 172 and the 191; never the test
part or the held-out messages). Each model and prompt is fitted on all of them at once, with the same ``fit``
exod fits a home's labels with. The chosen-examples prompts were asked with neighbours from the other sources
only; exod's chosen examples come from the whole pool, so their starters are a little conservative.

    python benchmarks/starter_calibrations.py            # write the file
    python benchmarks/starter_calibrations.py --check    # exit 1 when the shipped file differs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import RESULTS_DIR  # noqa: E402

from exo_core.decisions.calibration import fit  # noqa: E402
from exo_core.decisions.starters import DEFAULT_STARTERS  # noqa: E402
from exo_core.decisions.uses import SIGNAL  # noqa: E402

SOURCE = RESULTS_DIR / "decisions_sources.json"
# The study's jobs, and the model names exod gives them: the local provider is named after the model's
# manifest, or the GGUF file's stem when it is loaded by file; the laptop's route after the served alias.
JOBS = {
    "local:fixed": (["qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m"], "chat"),
    "local:nn": (["qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m"], "chat:nn"),
    "larger:fixed": (["qwen2.5-coder-1.5b-instruct"], "chat"),
    "larger:nn": (["qwen2.5-coder-1.5b-instruct"], "chat:nn"),
}
ABOUT = (
    "Starter calibrations for the signal decision (docs/decisions.md §4), used until a home has 30 labels of its "
    "own for a provider. Fitted by benchmarks/starter_calibrations.py on the rules' leftovers of the fit data in "
    "benchmarks/results/decisions_sources.json (never the test part or the held-out messages)."
)


def starters(results: dict[str, Any]) -> dict[str, Any]:
    """The file's content, fitted from ``results`` (the study's results file)."""
    labels = {case: found["label"] for case, found in results["cases"].items()}
    out = []
    for job, (models, style) in JOBS.items():
        raws = results["raws"].get(job)
        if not raws:
            raise SystemExit(f"{SOURCE} holds no raws of {job}: run bench_decisions_sources.py first")
        rows = [(probs, labels[case]) for case, probs in sorted(raws.items())]
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
                "fitted_on": f"decisions_sources.json {job}",
            }
        )
    return {"about": ABOUT, "starters": out}


def main(argv: list[str] | None = None) -> int:
    """Write the shipped file, or ``--check`` it."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the shipped file is not what the raws give")
    args = ap.parse_args(argv)
    wanted = json.dumps(starters(json.loads(SOURCE.read_text(encoding="utf-8"))), indent=2) + "\n"
    if args.check:
        shipped = DEFAULT_STARTERS.read_text(encoding="utf-8") if DEFAULT_STARTERS.is_file() else ""
        if shipped != wanted:
            print(f"{DEFAULT_STARTERS} is not what {SOURCE} gives: run benchmarks/starter_calibrations.py")
            return 1
        return 0
    DEFAULT_STARTERS.write_text(wanted, encoding="utf-8")
    print(f"wrote {DEFAULT_STARTERS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
