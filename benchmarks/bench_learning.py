"""The simulated person through a real exod, learning taste inside and outside the feature catalog.

    python benchmarks/bench_learning.py [--sessions 12] [--drafts 8] [--seeds 7,8,9] [--json]
    exo bench learning [same arguments]

Each seed runs ``tests/learning/exod_person.py``: a real exod (``exo serve``) whose ``main`` role is an
assistant server that drafts with style features on at random and follows the pack it is shown, whose
``[learning] route`` is the larger model's stand-in server (``tests/learning/larger_model.py``), and a
simulated person who asks for drafts and corrects them in chat messages ("No, that's wrong: drop the
TL;DR line."). Hidden rules: 8 catalog features and 5 lines the catalog does not know (one guarded:
offering to post to the team channel). The signal decision, the reviewer, the proposal queue and its
drainer are exod's own. Reported per seed and pooled: precision and recall of high-weight lessons
(weight >= 0.75) for catalog and non-catalog rules separately (goal >= 0.9 / >= 0.8), guarded lessons
promoted without the person (goal: none). Results go to benchmarks/results/learning.json with --json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT, ROOT / "tests", ROOT / "tests" / "learning"):
    sys.path.insert(0, str(extra))

from exod_person import run  # noqa: E402  # the simulation lives with the tests that run its small version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=12)
    parser.add_argument("--drafts", type=int, default=8)
    parser.add_argument("--seeds", default="7,8,9")
    parser.add_argument("--json", action="store_true", help="also write benchmarks/results/learning.json")
    args = parser.parse_args(argv)
    runs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            result = asyncio.run(run(Path(tmp), sessions=args.sessions, drafts=args.drafts, seed=seed))
        result.pop("lessons", None)
        runs.append(result)
        cat, non = result["catalog"], result["noncatalog"]
        print(
            f"seed {seed}: catalog P {cat['precision']:.2f} R {cat['recall']:.2f} | non-catalog P "
            f"{non['precision']:.2f} R {non['recall']:.2f} (strays {len(non['strays'])}) | guarded promoted "
            f"unasked {len(result['guarded_promoted_unasked'])} | larger-model calls {result['larger_model_calls']} "
            f"| corrected share {result['corrected_share_first_third']:.2f} -> "
            f"{result['corrected_share_last_third']:.2f} | {result['seconds']:.0f} s",
            flush=True,
        )
    pooled = {}
    for group in ("catalog", "noncatalog"):
        pooled[group] = {
            "precision": sum(r[group]["precision"] for r in runs) / len(runs),
            "recall": sum(r[group]["recall"] for r in runs) / len(runs),
        }
    guarded = sum(len(r["guarded_promoted_unasked"]) for r in runs)
    print(
        f"mean over {len(runs)} seeds: catalog P {pooled['catalog']['precision']:.2f} R "
        f"{pooled['catalog']['recall']:.2f}; non-catalog P {pooled['noncatalog']['precision']:.2f} R "
        f"{pooled['noncatalog']['recall']:.2f}; guarded promoted unasked: {guarded}"
    )
    if args.json:
        out = ROOT / "benchmarks" / "results" / "learning.json"
        out.write_text(json.dumps({"args": vars(args), "mean": pooled, "runs": runs}, indent=1) + "\n")
    goal = all(p["precision"] >= 0.9 and p["recall"] >= 0.8 for p in pooled.values()) and guarded == 0
    return 0 if goal else 1


if __name__ == "__main__":
    raise SystemExit(main())
