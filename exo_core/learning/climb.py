"""The greedy, conservative climb with a held-out gate (docs/learning.md §5).

1. Score the incumbent on dev several times; the spread is its run-to-run noise.
2. Score a candidate on dev; drop it unless it beats the incumbent by more
   than that noise.
3. Only then open the sealed held-out set: keep the candidate only if its
   held-out score does not drop, no domain drops by more than
   ``domain_drop`` (guarded domains by nothing at all), and every pinned
   item still passes.
4. A kept candidate becomes the incumbent. Every decision, with both scores,
   goes to the ledger as a ``decision`` entry (labels and numbers only).

The person outranks the eval: a candidate whose change the person ruled is
kept anyway and the decision says so. The nightly run is capped
(``max_candidates``, ``samples``) and stops when ``spent()`` reaches the
monthly ``ceiling``. A judge model scoring the items must come from a
different family than the model being tested (:func:`judge_scorer`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from exo_core.errors import ConfigError
from exo_core.learning.evalset import EvalItem, Scorer, Split
from exo_core.ledger.ledger import Ledger

__all__ = ["Candidate", "Decision", "climb", "judge_scorer", "MAX_CANDIDATES", "JUDGE_SAMPLES"]

MAX_CANDIDATES = 10
JUDGE_SAMPLES = 3
GUARDED_DOMAINS = frozenset({"actions"})


@dataclass(frozen=True, slots=True)
class Candidate:
    """The incumbent setup with one change (``change`` names it, e.g. a lesson target)."""

    setup: frozenset[str]
    change: str


@dataclass(frozen=True, slots=True)
class Decision:
    """One keep-or-drop with its scores; ``entry`` is its ledger entry id."""

    change: str
    kept: bool
    reason: str
    dev: float
    incumbent_dev: float
    noise: float
    held_out: float | None = None
    incumbent_held_out: float | None = None
    entry: str = ""


def _mean(scorer: Scorer, setup: frozenset[str], items: Sequence[EvalItem], sample: int) -> float:
    return sum(scorer(setup, i, sample) for i in items) / len(items) if items else 0.0


def _avg(scorer: Scorer, setup: frozenset[str], items: Sequence[EvalItem], samples: int) -> float:
    return sum(_mean(scorer, setup, items, k) for k in range(samples)) / samples


def _by_domain(scorer: Scorer, setup: frozenset[str], items: Sequence[EvalItem], samples: int) -> dict[str, float]:
    domains = sorted({i.domain for i in items})
    return {d: _avg(scorer, setup, [i for i in items if i.domain == d], samples) for d in domains}


def _label(text: str) -> str:
    return re.sub(r"\s+", "_", text.strip())[:128] or "-"


def _record(ledger: Ledger | None, d: Decision) -> Decision:
    if ledger is None:
        return d
    body = {
        "decider": "climb",
        "change": _label(d.change),
        "kept": "yes" if d.kept else "no",
        "reason": _label(d.reason),
        "dev": d.dev,
        "incumbent_dev": d.incumbent_dev,
        "noise": d.noise,
        "held_out": d.held_out if d.held_out is not None else -1.0,
        "incumbent_held_out": d.incumbent_held_out if d.incumbent_held_out is not None else -1.0,
    }
    return dataclasses.replace(d, entry=ledger.append("decision", {**body, "source": "learning"}).id)


def climb(
    incumbent: frozenset[str],
    candidates: Sequence[Candidate],
    data: Split,
    scorer: Scorer,
    *,
    samples: int = JUDGE_SAMPLES,
    max_candidates: int = MAX_CANDIDATES,
    domain_drop: float = 0.05,
    person_ruled: frozenset[str] = frozenset(),
    spent: Callable[[], float] = lambda: 0.0,
    ledger: Ledger | None = None,
    ceiling: float = float("inf"),
) -> tuple[frozenset[str], list[Decision]]:
    """Try each candidate in order against the current incumbent; returns the final incumbent and decisions."""
    decisions: list[Decision] = []
    dev = data.dev
    for cand in list(candidates)[:max_candidates]:
        if spent() >= ceiling:
            break
        runs = [_mean(scorer, incumbent, dev, k) for k in range(samples)]
        inc_dev, noise = sum(runs) / samples, max(runs) - min(runs)
        cand_dev = _avg(scorer, cand.setup, dev, samples)
        ruled = cand.change in person_ruled
        if cand_dev - inc_dev <= noise and not ruled:
            decisions.append(
                _record(ledger, Decision(cand.change, False, "no better than noise on dev", cand_dev, inc_dev, noise))
            )
            continue
        held = data.sealed()
        inc_dom, cand_dom = _by_domain(scorer, incumbent, held, samples), _by_domain(scorer, cand.setup, held, samples)
        inc_held, cand_held = _avg(scorer, incumbent, held, samples), _avg(scorer, cand.setup, held, samples)
        drops = {d: inc_dom[d] - cand_dom.get(d, 0.0) for d in inc_dom}
        pinned_fail = [i.id for i in held if i.pinned and scorer(cand.setup, i, 0) < 1.0]
        if cand_held < inc_held:
            reason = "held-out dropped"
        elif any(v > (0.0 if d in GUARDED_DOMAINS else domain_drop) for d, v in drops.items()):
            reason = "a domain dropped"
        elif pinned_fail:
            reason = "a pinned item failed"
        else:
            reason = ""
        kept = not reason or ruled
        if ruled and reason:
            reason = f"kept because the person ruled it; {reason}: those items may be stale"
        decisions.append(
            _record(
                ledger,
                Decision(
                    cand.change,
                    kept,
                    reason or "beats dev beyond noise, held-out holds",
                    cand_dev,
                    inc_dev,
                    noise,
                    cand_held,
                    inc_held,
                ),
            )
        )
        if kept:
            incumbent = cand.setup
    return incumbent, decisions


def judge_scorer(
    judge: Callable[[EvalItem, frozenset[str], int], float], *, judge_family: str, tested_family: str
) -> Scorer:
    """A scorer backed by a judge model; refused when the judge is the tested model's family."""
    if judge_family.strip().lower() == tested_family.strip().lower():
        raise ConfigError(
            f"the judge ({judge_family}) must come from a different family than the model "
            f"being tested ({tested_family})"
        )
    return lambda setup, item, sample: min(1.0, max(0.0, float(judge(item, setup, sample))))
