"""How right the signal rules are on messages they were not written from (issue 21): the rules' confidence.

A rule in code settles a signal decision outright. How sure that settlement is cannot be read off the
data the rules were written against: the current rules were changed while looking at the fit data, so
they look near-perfect on it. The honest estimate is how each *old* version of the rules did on the
labelled messages it never saw: those added to the repository *after* it, and those held out of its writing:

* the versions are the commits that changed ``exo_core/decisions/signal_rules.py`` (:data:`VERSIONS`);
* the messages are the fit data files (:data:`FILES`: the 172-message fit set with drafts and the 191
  messages of the fourth pass), each applied only to the versions older than the commit that added it
  (found with git). A version committed together with a file was changed while looking at it, so the file
  is not "after" it;
* and the four held-out files (:data:`HELDOUT_FILES`), each applied to every version up to the newest one
  written without it (:data:`BLIND_UNTIL`): ``decisions_heldout.jsonl`` (held out of rule writing since it was
  added in 67056d7) and ``decisions_heldout2.jsonl`` (added in c59837e) to the versions up to f07fccc; after
  they were scored they became fit data, and the four versions after 4d12265 (session 12, 66fca19 to fa13973)
  were written looking at them. ``decisions_heldout3.jsonl`` (added in c0d5148, after fa13973) is judged by
  every version up to fa13973; ``decisions_heldout4.jsonl`` (added in 00b8899, after 886a31c) by every
  version, 886a31c the newest (fc1e4fb and 886a31c were written looking at the first three, so they judge only
  the fourth); the changes after it (issue 21's ninth pass) were written looking at it, so they are not
  versions here (they saw every file);
* each old version runs as it was: its tree is extracted (``git archive``) into a scratch folder and a
  small script runs the old ``Decider`` (no providers) on the old ``SIGNAL`` question under that tree's
  ``PYTHONPATH``, in a subprocess. A message is *settled* when the decision came from the rules (every
  firing rule names the same option), *right* when that option is the message's label.

The labelled set's test part is not used (the fit check keeps the fit part of ``decisions.jsonl`` only).

Poolings of right/settled, reported side by side (``pooled``):

* ``newest_without``: each message once, judged by the newest version written without it (the rules
  closest to today's that never saw it). No settlement is counted twice, so its interval is honest: the
  number ``SIGNAL_RULE_CONFIDENCE`` (``exo_core/decisions/signal_rules.py``) is;
* ``all_versions``: every (version, unseen message) pair. The same message counts once per version, and
  a commit that only re-wrapped a line counts as much as one that changed what the rules do;
* ``distinct_versions``: every pair, but a version that settles every message as the one before does
  counted once.

Last, on the fit data only (``fit_check``; the promoted held-out files are fit data now): the current rules
then the calibrated cue words (``rules-only``, each leftover's cue calibration fitted on the other leftovers)
with the rules' settlements at probability 1 and at the measured confidence. The current rules were fitted to
this data, so this only shows what the number does to a table; the history above is the evidence.

    python -m benchmarks.bench_decisions_rule_history            # writes $EXO_HOME/bench/decisions_rule_history.json
    python -m benchmarks.bench_decisions_rule_history --markdown # tables from the saved results
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import REPO, bench_parser, machine_info, print_table, write_results
from benchmarks.bench_decisions import load_cases, split_by_time
from benchmarks.bench_decisions_signal import calibrate, rule_answer, score
from exo_core.decisions.providers import RulesOnlyProvider
from exo_core.decisions.uses import SIGNAL

RULES_FILE = "exo_core/decisions/signal_rules.py"
# The commits that changed the signal rules, oldest first (``git log -- exo_core/decisions/signal_rules.py``).
# 1d42189 and 04c3879 only re-wrapped a long pattern over two lines; they are run like the others, and
# ``distinct_versions`` shows what counting them once changes. f07fccc only added SIGNAL_RULE_CONFIDENCE; it is
# the newest version written without the first two held-out files. The four after it (66fca19 to fa13973, session
# 12) were written looking at every file below except the third held-out file; fa13973 only changed the confidence.
VERSIONS = (
    "43cb4b3",
    "1d42189",
    "851677d",
    "e2973fb",
    "20a8ea3",
    "04c3879",
    "e75aa20",
    "9edc618",
    "f07fccc",
    "66fca19",
    "692ad45",
    "7f716e2",
    "fa13973",
    "fc1e4fb",
    "886a31c",
)
# The labelled fit data added after some of the versions, by part name.
FILES = {
    "fit172": "benchmarks/data/decisions_signal_fit.jsonl",
    "more": "benchmarks/data/decisions_signal_more.jsonl",
}
# The held-out files, promoted to fit data after their scored runs, each with the newest version written without
# it: every version up to that one judges it (the first was held out of rule writing since 67056d7, the second
# added in c59837e, both read from 66fca19 on; the third, added before fa13973's pass was scored, read after it;
# the fourth, added after 886a31c, read by the ninth pass).
HELDOUT_FILES = {
    "heldout": "benchmarks/data/decisions_heldout.jsonl",
    "heldout2": "benchmarks/data/decisions_heldout2.jsonl",
    "heldout3": "benchmarks/data/decisions_heldout3.jsonl",
    "heldout4": "benchmarks/data/decisions_heldout4.jsonl",
}
BLIND_UNTIL = {"heldout": "f07fccc", "heldout2": "f07fccc", "heldout3": "fa13973", "heldout4": "886a31c"}
ALL_FILES = {**FILES, **HELDOUT_FILES}

# Runs inside an old tree: the old Decider with no providers on the old SIGNAL question.
_RUNNER = """
import asyncio, json, sys
import exo_core
from exo_core.decisions.decider import Decider
from exo_core.decisions.uses import SIGNAL

async def main():
    cases = json.load(sys.stdin)
    decider = Decider()
    out = {"exo_core": exo_core.__file__, "cases": {}}
    for case in cases:
        decision = await decider.decide(SIGNAL, case["text"], record=False)
        settled = decision.chosen if decision.via == "rule" else None
        fired = sorted(rule.name for rule in SIGNAL.rules if rule.matches(case["text"]))
        out["cases"][case["id"]] = {"settled": settled, "fired": fired}
    print(json.dumps(out))

asyncio.run(main())
"""


def git(*args: str) -> str:
    """``git ARGS`` in the checkout, its output stripped."""
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()


def is_before(older: str, newer: str) -> bool:
    """Whether commit ``older`` is a strict ancestor of ``newer``."""
    if git("rev-parse", older) == git("rev-parse", newer):
        return False
    found = subprocess.run(["git", "merge-base", "--is-ancestor", older, newer], cwd=REPO, capture_output=True)
    return found.returncode == 0


def added_in(path: str) -> str:
    """The commit that added ``path`` (its first appearance in history)."""
    found = git("log", "--diff-filter=A", "--format=%h", "--", path).splitlines()
    if not found:
        raise SystemExit(f"{path} is not in the history")
    return found[-1]


def load_part(path: str) -> list[dict[str, Any]]:
    """The labelled messages of one fit file, as the checkout holds them."""
    lines = (REPO / path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def run_version(commit: str, cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """What the rules of ``commit`` settle each case on, run from that commit's own tree."""
    with tempfile.TemporaryDirectory(prefix=f"rules-{commit}-") as tmp:
        archive = subprocess.run(["git", "archive", commit, "exo_core"], cwd=REPO, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EXO_HOME")}
        env["PYTHONPATH"] = tmp
        given = json.dumps([{"id": c["id"], "text": c["text"]} for c in cases])
        done = subprocess.run(
            [sys.executable, "-c", _RUNNER], cwd=tmp, env=env, input=given, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"the rules of {commit} did not run:\n{done.stderr}")
        found = json.loads(done.stdout)
        if not Path(found["exo_core"]).resolve().is_relative_to(Path(tmp).resolve()):
            raise SystemExit(f"the rules of {commit} imported {found['exo_core']}, not the old tree's")
        return found["cases"]


def tally(cases: list[dict[str, Any]], answers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Settled and right, overall, per option settled on and per firing rule."""
    out: dict[str, Any] = {"n": len(cases), "settled": 0, "right": 0, "by_option": {}, "by_rule": {}, "wrong": []}
    for case in cases:
        got = answers[case["id"]]
        option = got["settled"]
        if option is None:
            continue
        right = option == case["label"]
        out["settled"] += 1
        out["right"] += int(right)
        buckets = [out["by_option"].setdefault(option, {"settled": 0, "right": 0})]
        for name in got["fired"]:
            buckets.append(out["by_rule"].setdefault(name, {"settled": 0, "right": 0}))
        for bucket in buckets:
            bucket["settled"] += 1
            bucket["right"] += int(right)
        if not right:
            out["wrong"].append({"id": case["id"], "label": case["label"], "settled": option, "rules": got["fired"]})
    return out


def wilson(right: int, settled: int, z: float = 1.96) -> list[float] | None:
    """The 95 % Wilson interval of right/settled (None without settlements)."""
    if settled == 0:
        return None
    share = right / settled
    centre = (share + z * z / (2 * settled)) / (1 + z * z / settled)
    half = z * math.sqrt(share * (1 - share) / settled + z * z / (4 * settled * settled)) / (1 + z * z / settled)
    return [round(centre - half, 4), round(centre + half, 4)]


def pooled(pairs: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """Right/settled summed over ``(version, part, tally)`` pairs, with its Wilson interval."""
    settled = sum(found["settled"] for _v, _p, found in pairs)
    right = sum(found["right"] for _v, _p, found in pairs)
    return {
        "settled": settled,
        "right": right,
        "precision": right / settled if settled else None,
        "wilson95": wilson(right, settled),
        "pairs": [f"{version}:{part}" for version, part, _found in pairs],
    }


def history() -> dict[str, Any]:
    """Every version on every file it was written without, and the poolings."""
    parts = {name: load_part(path) for name, path in ALL_FILES.items()}
    added = {name: added_in(path) for name, path in ALL_FILES.items()}
    versions: list[dict[str, Any]] = []
    previous: dict[str, dict[str, Any]] | None = None
    for index, commit in enumerate(VERSIONS):
        after = [name for name in FILES if is_before(commit, added[name])]
        after += [name for name in HELDOUT_FILES if index <= VERSIONS.index(BLIND_UNTIL[name])]
        cases = [c for name in after for c in parts[name]]
        answers = run_version(commit, cases) if cases else {}
        # The same settlements as the version before on every message both judged (which rules fired may differ).
        same = previous is not None and all(previous[k]["settled"] == v["settled"] for k, v in answers.items())
        versions.append(
            {
                "commit": commit,
                "date": git("show", "-s", "--format=%cI", commit),
                "subject": git("show", "-s", "--format=%s", commit)[:160],
                "after": after,
                "same_as_previous": bool(answers) and same,
                "parts": {name: tally(parts[name], answers) for name in after},
            }
        )
        previous = answers
    pairs = [(v["commit"], part, found) for v in versions for part, found in v["parts"].items()]
    newest: list[tuple[str, str, dict[str, Any]]] = []
    for part in ALL_FILES:
        judged = [v for v in versions if part in v["parts"]]
        if judged:
            newest.append((judged[-1]["commit"], part, judged[-1]["parts"][part]))
    distinct = [
        (v["commit"], part, found) for v in versions if not v["same_as_previous"] for part, found in v["parts"].items()
    ]
    by_rule: dict[str, dict[str, int]] = {}
    for _commit, _part, found in newest:
        for name, got in found["by_rule"].items():
            bucket = by_rule.setdefault(name, {"settled": 0, "right": 0})
            bucket["settled"] += got["settled"]
            bucket["right"] += got["right"]
    return {
        "added_in": added,
        "cases": {name: len(found) for name, found in parts.items()},
        "versions": versions,
        "pooled": {
            "all_versions": pooled(pairs),
            "newest_without": pooled(newest),
            "distinct_versions": pooled(distinct),
        },
        "by_rule_newest_without": dict(sorted(by_rule.items())),
    }


def fit_check(confidence: float) -> dict[str, Any]:
    """Rules-only on the fit data with the rules' settlements at 1 and at ``confidence`` (fit data only)."""
    fit_part, _test_part = split_by_time(load_cases())  # the test part is never looked at
    sets = {"fit": [c for c in fit_part if c["use"] == "signal"]}
    for name, path in ALL_FILES.items():
        sets[name] = load_part(path)
    cases = [c for found in sets.values() for c in found]
    cue = RulesOnlyProvider()
    settled = {c["id"]: rule_answer(c["text"]) for c in cases}
    left = [c for c in cases if settled[c["id"]] is None]
    cues = {c["id"]: dict(_cues(cue, SIGNAL, c["text"])) for c in left}
    rows = [(cues[c["id"]], c["label"]) for c in left]
    held: dict[str, dict[str, float]] = {}
    for i, case in enumerate(left):  # each leftover calibrated on the other leftovers
        calibration = calibrate(rows[:i] + rows[i + 1 :])
        raw = cues[case["id"]]
        held[case["id"]] = raw if calibration is None else dict(calibration.apply(raw))
    out: dict[str, Any] = {"confidence": confidence, "cases": {k: len(v) for k, v in sets.items()}, "scores": {}}
    out["rules_today"] = {}  # what today's rules settle on the data they were fitted to
    for part, found in sets.items():
        hits = [settled[c["id"]] == c["label"] for c in found if settled[c["id"]] is not None]
        out["rules_today"][part] = {"settled": len(hits), "right": sum(hits)}
    for label, sure in (("probability 1", 1.0), ("measured", confidence)):
        got = {}
        for part, found in [*sets.items(), ("all", cases)]:
            scored = []
            for case in found:
                rule = settled[case["id"]]
                if rule is None:
                    scored.append((held[case["id"]], case["label"]))
                    continue
                rest = (1.0 - sure) / (len(SIGNAL.options) - 1)
                scored.append(({o: sure if o == rule else rest for o in SIGNAL.options}, case["label"]))
            got[part] = score(scored)
        out["scores"][label] = got
    return out


def _cues(provider: Any, question: Any, text: str) -> dict[str, float]:
    return dict(asyncio.run(provider.probabilities(question, text)))


def print_results(results: dict[str, Any]) -> None:
    """The tables for docs/benchmarks.md."""
    rows = []
    for version in results["versions"]:
        for part, found in version["parts"].items():
            share = found["right"] / found["settled"] if found["settled"] else None
            rows.append(
                [version["commit"], version["date"][:16], part, found["n"], found["settled"], found["right"], share]
            )
    print_table(
        "Each version of the rules on the messages it was written without",
        ["version", "date", "part", "n", "settled", "right", "right/settled"],
        rows,
    )
    rows = [
        [name, got["settled"], got["right"], got["precision"], got["wilson95"]]
        for name, got in results["pooled"].items()
    ]
    print_table("Pooled", ["pooling", "settled", "right", "precision", "95 % interval"], rows)
    check = results.get("fit_check")
    if check:
        rows = []
        for label, got in check["scores"].items():
            for part, found in got.items():
                rows.append([label, part, found["accuracy"], found["ece"], found["n"]])
        print_table(
            "Rules-only on the fit data (the rules were fitted to it)",
            ["rules at", "part", "accuracy", "ECE", "n"],
            rows,
        )


def write_rule_confidence(pooled: dict[str, Any]) -> None:
    """Write the data file exod reads ``SIGNAL_RULE_CONFIDENCE`` from (a developer's ``--update-results`` run)."""
    from exo_core.decisions.signal_rules import RULE_CONFIDENCE_FILE

    data = {
        "_generated": "by `exo bench decisions-rule-history --update-results` (benchmarks/bench_decisions_rule_history.py)"
        " from benchmarks/results/decisions_rule_history.json; regenerate it that way, never edit it by hand",
        "judged_by": "each message by the newest version of the signal rules written without it",
        "pairs": pooled["pairs"],
        "right": pooled["right"],
        "settled": pooled["settled"],
    }
    RULE_CONFIDENCE_FILE.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or print the saved results)."""
    ap = bench_parser(
        "decisions-rule-history",
        __doc__.split("\n")[0],
        quick_help="the same run (it takes seconds); writes nothing unless --out",
    )
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables of the saved results (or --out)")
    args = ap.parse_args(argv)
    if args.markdown:
        _common.MARKDOWN = True
        print_results(json.loads((args.out or _common.RESULTS_DIR / "decisions_rule_history.json").read_text()))
        return 0
    results: dict[str, Any] = {"benchmark": "decisions_rule_history", "machine": machine_info(), **history()}
    results["fit_check"] = fit_check(results["pooled"]["newest_without"]["precision"])
    updating = args.out == _common.RESULTS_DIR
    write_results("decisions_rule_history", results, out=args.out, quick=args.quick)
    if updating:
        write_rule_confidence(results["pooled"]["newest_without"])
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        print_results(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
