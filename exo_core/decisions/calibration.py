"""Calibration per provider and per mechanism, fitted on the person's own labels (docs/decisions.md §4).

The method is Platt scaling in its multi-option form: the calibrated logit of
option *k* is ``slope · log p_k + offset_k`` (one shared slope fixes over- or
under-confidence; one offset per option fixes a provider's bias toward an
option, such as a small model's liking for the letter A). For a yes/no
predicate this is exactly Platt scaling. It is fitted by Newton's method on
the log loss, with a small ridge pulling toward "no change". How much is
fitted depends on how many labelled decisions there are (a fit on
7 cases left the raw numbers in place, which were overconfident):

* from ``MIN_SAMPLES`` (30) up: the slope and the offsets;
* from ``MIN_TEMPERATURE`` (10) up: the slope alone (temperature scaling: one
  number, which a few cases can pin down; the offsets stay 0, so the raw
  ranking of the options is kept);
* below that the raw numbers are used and the decision says it is uncalibrated.

:func:`expected_calibration_error` is the measure the benchmark reports.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "MIN_SAMPLES",
    "MIN_TEMPERATURE",
    "Calibration",
    "CalibrationBook",
    "Sample",
    "fit",
    "expected_calibration_error",
    "softmax",
    "starter_key",
]

MIN_SAMPLES = 30  # from here up, the slope and one offset per option
MIN_TEMPERATURE = 10  # from here up to MIN_SAMPLES, the slope alone (docs/decisions.md §4)
_FLOOR = 1e-6  # raw probabilities are clipped here before the log

# One labelled decision: the raw probabilities the provider gave, and the right option.
Sample = tuple[Mapping[str, float], str]


def softmax(scores: Mapping[str, float]) -> dict[str, float]:
    """Probabilities proportional to ``exp(score)`` (shifted by the top score, so nothing overflows)."""
    top = max(scores.values())
    weights = {o: math.exp(s - top) for o, s in scores.items()}
    total = sum(weights.values())
    return {o: w / total for o, w in weights.items()}


@dataclass(frozen=True, slots=True)
class Calibration:
    """A fitted correction for one (provider, mechanism)."""

    options: tuple[str, ...]
    slope: float
    offsets: tuple[float, ...]
    samples: int

    def apply(self, raw: Mapping[str, float]) -> dict[str, float]:
        """Calibrated probabilities for ``raw`` (a probability per option)."""
        return softmax(
            {
                o: self.slope * math.log(max(raw.get(o, 0.0), _FLOOR)) + b
                for o, b in zip(self.options, self.offsets, strict=True)
            }
        )

    def to_json(self) -> dict[str, object]:
        """As plain data (benchmarks and ``docs``)."""
        return {
            "slope": round(self.slope, 4),
            "samples": self.samples,
            "offsets": {o: round(b, 4) for o, b in zip(self.options, self.offsets, strict=True)},
        }


def fit(
    options: Sequence[str],
    samples: Iterable[Sample],
    *,
    min_samples: int = MIN_SAMPLES,
    min_temperature: int = MIN_TEMPERATURE,
    ridge: float = 1.0,
    iterations: int = 50,
) -> Calibration | None:
    """Fit a :class:`Calibration` on labelled ``samples``.

    From ``min_samples`` samples up the slope and the offsets are fitted; from ``min_temperature`` up
    (when fewer than ``min_samples``) the slope alone; below both, ``None``. Samples whose label is
    not one of ``options`` are skipped.
    """
    import numpy as np

    options = tuple(options)
    rows = [(raw, options.index(label)) for raw, label in samples if label in options]
    if len(rows) >= max(1, min_samples):
        free = len(options) + 1
    elif len(rows) >= max(1, min_temperature):
        free = 1  # temperature scaling: the slope only
    else:
        return None
    x = np.log(np.clip(np.array([[raw.get(o, 0.0) for o in options] for raw, _ in rows], dtype=float), _FLOOR, 1.0))
    y = np.zeros_like(x)
    y[np.arange(len(rows)), [k for _, k in rows]] = 1.0
    k = len(options)
    theta = np.concatenate([[1.0], np.zeros(k)])  # slope, offsets
    prior = theta.copy()

    def loss(t: np.ndarray) -> float:
        z = t[0] * x + t[1:]
        z = z - z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return float(-(y * logp).sum() + ridge * ((t - prior) ** 2).sum())

    current = loss(theta)
    for _ in range(iterations):
        z = theta[0] * x + theta[1:]
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        # Features of option j in row i: (x_ij, e_j). Gradient and Hessian of the log loss.
        r = p - y
        grad = np.concatenate([[(r * x).sum()], r.sum(axis=0)]) + 2 * ridge * (theta - prior)
        mean_x = (p * x).sum(axis=1)
        hess = np.zeros((k + 1, k + 1))
        hess[0, 0] = ((p * x * x).sum(axis=1) - mean_x**2).sum()
        hess[0, 1:] = hess[1:, 0] = (p * x - p * mean_x[:, None]).sum(axis=0)
        hess[1:, 1:] = np.diag(p.sum(axis=0)) - p.T @ p
        hess += 2 * ridge * np.eye(k + 1)
        step = np.zeros(k + 1)
        step[:free] = np.linalg.solve(hess[:free, :free], grad[:free])  # fixed parameters stay at the prior
        scale = 1.0
        while scale > 1e-4:
            candidate = theta - scale * step
            new = loss(candidate)
            if new <= current:
                break
            scale /= 2
        else:
            break
        theta, improvement, current = candidate, current - new, new
        if improvement < 1e-9:
            break
    return Calibration(options, float(theta[0]), tuple(float(b) for b in theta[1:]), len(rows))


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], *, bins: int = 10) -> float:
    """ECE: the gap between confidence and accuracy, averaged over equal-width bins weighted by size."""
    if not confidences:
        return 0.0
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, c in enumerate(confidences) if (lo < c <= hi) or (b == 0 and c == 0.0)]
        if idx:
            conf = sum(confidences[i] for i in idx) / len(idx)
            total += len(idx) * abs(conf - sum(1 for i in idx if correct[i]) / len(idx))
    return total / len(confidences)


def starter_key(provider: str) -> str:
    """The part of a provider's name a shipped starter calibration is keyed by: the name without its first part
    (``laptop:qwen2.5-coder-1.5b-instruct:chat`` -> ``qwen2.5-coder-1.5b-instruct:chat``; docs/decisions.md §4)."""
    _first, separator, rest = provider.partition(":")
    if not separator:
        return provider
    return rest


@dataclass(frozen=True, slots=True)
class CalibrationBook:
    """Calibrations by ``(provider, mechanism)``, fitted on the home's labels; ``starters`` (keyed by
    ``(starter_key(provider), mechanism)``, :mod:`exo_core.decisions.starters`) stand in for a provider whose
    own calibration has fewer than :data:`MIN_SAMPLES` labels. Neither: raw numbers are used."""

    entries: Mapping[tuple[str, str], Calibration] = field(default_factory=dict)
    starters: Mapping[tuple[str, str], Calibration] = field(default_factory=dict)

    def apply(self, provider: str, mechanism: str, raw: Mapping[str, float]) -> tuple[dict[str, float], bool]:
        """The probabilities to use and whether they are calibrated."""
        found = self._for(provider, mechanism)
        if found is None or set(found.options) != set(raw):
            return dict(raw), False
        return found.apply(raw), True

    def _for(self, provider: str, mechanism: str) -> Calibration | None:
        own = self.entries.get((provider, mechanism))
        if own is not None and own.samples >= MIN_SAMPLES:
            return own
        # A slope fitted on a few labels would drop a starter's per-option offsets: the starter stays until then.
        starter = self.starters.get((starter_key(provider), mechanism))
        if starter is not None:
            return starter
        return own

    @classmethod
    def fitted(
        cls,
        samples: Mapping[tuple[str, str], tuple[Sequence[str], Sequence[Sample]]],
        *,
        min_samples: int = MIN_SAMPLES,
        starters: Mapping[tuple[str, str], Calibration] | None = None,
    ) -> CalibrationBook:
        """Fit each ``(provider, mechanism) -> (options, samples)`` that has enough labels (``starters``: the
        shipped calibrations that stand in until then)."""
        fitted = {key: fit(options, rows, min_samples=min_samples) for key, (options, rows) in samples.items()}
        return cls({key: found for key, found in fitted.items() if found is not None}, starters or {})
