"""What a decision is asked and what it answers (docs/decisions.md §1).

A :class:`Question` is typed: ``choice`` (one of N options), ``score`` (a
level on an ordered scale) or ``predicate`` (``yes`` or ``no``). A provider
answers with a probability for every option, never with text; a
:class:`Decision` is what the caller gets back: the probabilities used (after
calibration), the raw ones, the chosen option or an abstention, and who
answered.

Rules in code ride on the question (:class:`Rule`: a pattern that settles the
answer outright); so do the cue words the rules-only provider scores with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from exo_core.errors import ConfigError, ModelError

__all__ = [
    "KINDS",
    "FALLBACKS",
    "Rule",
    "Question",
    "Decision",
    "DecisionProvider",
    "DraftReadingProvider",
    "WarmingProvider",
    "ClosingProvider",
    "BadProviderOutput",
    "normalise",
]

KINDS = ("choice", "score", "predicate")
# Below the threshold: a safe default, or escalate to the main model or the person (docs/decisions.md §2).
FALLBACKS = ("default", "main", "person")
_LABEL = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")


class BadProviderOutput(ModelError):
    """A provider answered with something that is not a probability per option."""

    code = "bad_decision_output"


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule in code: when ``pattern`` matches the state, the answer is ``option``."""

    name: str
    pattern: str
    option: str

    def matches(self, state: str) -> bool:
        """Whether the rule fires on ``state`` (case-insensitive search)."""
        return re.search(self.pattern, state, re.IGNORECASE) is not None


@dataclass(frozen=True, slots=True)
class Question:
    """One typed question about a short state text.

    ``mechanism`` names the use (``signal``, ``toolset``, ``panel``); it keys
    calibration and the ledger. ``descriptions`` give each option one line for
    a model. ``threshold`` applies to the calibrated probability of the chosen
    option; below it ``fallback`` applies (``default`` takes ``default``, which
    may be ``None`` for "do nothing special"). ``example_drafts``, when given, is the draft each
    worked example answers, shown to a provider that reads drafts (:class:`DraftReadingProvider`).
    ``rule_confidence`` is the probability a settlement by the rules gives its option
    (:meth:`rule_probabilities`): how often the rules are right when they settle, measured on messages
    written after them (the signal question's, docs/studies/signal-decisions.md); 1 for a question whose rules'
    precision was never measured.
    """

    mechanism: str
    kind: str
    text: str
    options: tuple[str, ...]
    descriptions: tuple[str, ...] = ()
    threshold: float = 0.6
    fallback: str = "default"
    default: str | None = None
    rules: tuple[Rule, ...] = ()
    cues: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    examples: tuple[tuple[str, str], ...] = ()
    example_drafts: tuple[str, ...] = ()
    rule_confidence: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"question kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if not _LABEL.fullmatch(self.mechanism):
            raise ConfigError(f"mechanism {self.mechanism!r}: use lower-case letters, digits, '_', '.' or '-'")
        if len(self.options) < 2 or len(set(self.options)) != len(self.options):
            raise ConfigError(f"{self.mechanism}: a question needs at least two distinct options")
        if self.kind == "predicate" and self.options != ("yes", "no"):
            raise ConfigError(f"{self.mechanism}: a predicate's options are ('yes', 'no')")
        for option in self.options:
            if not _LABEL.fullmatch(option):
                raise ConfigError(f"{self.mechanism}: option {option!r} is not a label (lower-case, no spaces)")
        if self.descriptions and len(self.descriptions) != len(self.options):
            raise ConfigError(f"{self.mechanism}: give one description per option or none")
        if not 0.0 < self.threshold <= 1.0:
            raise ConfigError(f"{self.mechanism}: threshold must be in (0, 1], not {self.threshold}")
        if self.fallback not in FALLBACKS:
            raise ConfigError(f"{self.mechanism}: fallback must be one of {', '.join(FALLBACKS)}")
        if self.example_drafts and len(self.example_drafts) != len(self.examples):
            raise ConfigError(f"{self.mechanism}: give one example draft per example or none")
        self._check_rule_confidence()
        named = [self.default, *(r.option for r in self.rules), *self.cues, *(e[1] for e in self.examples)]
        for name in named:
            if name is not None and name not in self.options:
                raise ConfigError(f"{self.mechanism}: {name!r} is not one of the options")

    def _check_rule_confidence(self) -> None:
        sure = self.rule_confidence
        if isinstance(sure, bool) or not isinstance(sure, (int, float)) or not math.isfinite(sure):
            raise ConfigError(f"{self.mechanism}: rule_confidence must be a number in (0, 1], not {sure!r}")
        if not 0.0 < sure <= 1.0:
            raise ConfigError(f"{self.mechanism}: rule_confidence must be in (0, 1], not {sure}")
        if not self.rules:  # nothing will settle at it (a queued question is asked without its rules)
            return
        # A settlement by the rules is a decision like any other: its option must reach the threshold and
        # stay the most probable, or the rule would settle on an option the question itself would not choose.
        if sure < self.threshold:
            raise ConfigError(
                f"{self.mechanism}: rule_confidence {sure} is below the threshold {self.threshold}, so a rule could "
                "not decide; raise rule_confidence to at least the threshold, or lower the threshold, or drop the "
                "rules that are right less often than that"
            )
        if sure <= 1.0 / len(self.options):
            raise ConfigError(
                f"{self.mechanism}: rule_confidence {sure} leaves the rule's option no more probable than the others "
                f"(an even split is {1.0 / len(self.options):.3f}); raise it above that"
            )

    def describe(self, option: str) -> str:
        """The one-line description of ``option`` (its name when there is none)."""
        return self.descriptions[self.options.index(option)] if self.descriptions else option

    def rule_probabilities(self, option: str) -> dict[str, float]:
        """The probabilities of a settlement by the rules on ``option``: ``rule_confidence`` for it, the rest
        split evenly among the other options (the rules say nothing about which of them it would be)."""
        if option not in self.options:
            raise ConfigError(f"{self.mechanism}: {option!r} is not one of the options")
        rest = (1.0 - self.rule_confidence) / (len(self.options) - 1)
        return {o: self.rule_confidence if o == option else rest for o in self.options}


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer to one question.

    ``probabilities`` are the ones used (calibrated when a calibration exists);
    ``raw`` is what the provider said. ``chosen`` is ``None`` when the decision
    abstained; ``applied`` is what the caller should do (the chosen option,
    else the safe default, else ``None``), and ``escalate`` names who should
    decide instead (``main`` or ``person``) when the question says so.
    ``via`` is ``rule``, ``provider`` or ``fallback``; ``failures`` lists the
    providers that failed, as ``(name, reason)``.
    """

    mechanism: str
    options: tuple[str, ...]
    probabilities: Mapping[str, float]
    raw: Mapping[str, float]
    chosen: str | None
    provider: str
    via: str
    calibrated: bool = False
    applied: str | None = None
    escalate: str | None = None
    rule: str = ""
    failures: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0
    entry_id: str | None = None

    @property
    def abstained(self) -> bool:
        """Whether no option was confident enough to act on."""
        return self.chosen is None

    def to_json(self) -> dict[str, Any]:
        """What ``exo decide ... --json`` prints."""
        return {
            "probabilities": {k: round(v, 4) for k, v in self.probabilities.items()},
            "chosen": self.chosen,
            "abstained": self.abstained,
            "provider": self.provider,
            "via": self.via,
            "calibrated": self.calibrated,
            "applied": self.applied,
            "escalate": self.escalate,
            "raw": {k: round(v, 4) for k, v in self.raw.items()},
            "failures": [list(f) for f in self.failures],
            "entry_id": self.entry_id,
        }


class DecisionProvider(Protocol):
    """Answers a question with a probability per option (any mapping; it is normalised).

    ``name`` identifies the provider in the ledger and in calibration;
    ``timeout`` is its budget in seconds (0.5 local, 2 hosted by default).
    Failing means raising :class:`~exo_core.errors.ExoError` (or timing out).
    """

    name: str
    timeout: float

    async def probabilities(self, question: Question, state: str) -> Mapping[str, float]:
        """A probability for each of ``question.options`` given ``state``."""
        ...


@runtime_checkable
class DraftReadingProvider(Protocol):
    """An optional capability of a :class:`DecisionProvider`: it reads the draft the message answers.

    A message like "Is that the right date?" is a correction only next to the draft it is about
    (docs/decisions.md §3, "The draft as context"). The decider calls this instead of
    ``probabilities`` when the caller knows the draft.
    """

    async def probabilities_after(self, question: Question, state: str, draft: str) -> Mapping[str, float]:
        """A probability for each of ``question.options`` given ``state``, which answers ``draft``."""
        ...


@runtime_checkable
class WarmingProvider(Protocol):
    """An optional capability of a :class:`DecisionProvider`: load its model and read a question's head ahead."""

    async def warm(self, question: Question) -> None:
        """Do once per process what every later call for ``question`` would otherwise wait for."""
        ...


@runtime_checkable
class ClosingProvider(Protocol):
    """An optional capability of a :class:`DecisionProvider`: resources to release when done (an HTTP session)."""

    async def aclose(self) -> None:
        """Release what the provider holds."""
        ...


def normalise(question: Question, raw: object, provider: str = "provider") -> dict[str, float]:
    """``raw`` as a probability for every option, summing to 1; :class:`BadProviderOutput` if it is not one.

    Missing options count as 0; unknown options, non-numbers, negatives,
    NaN or infinities, and an all-zero answer are refused.
    """
    if not isinstance(raw, Mapping):
        raise BadProviderOutput(f"{provider} answered {type(raw).__name__}, not a mapping of option to probability")
    out: dict[str, float] = {}
    for option, value in raw.items():
        if option not in question.options:
            raise BadProviderOutput(f"{provider} answered unknown option {option!r} for {question.mechanism}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise BadProviderOutput(f"{provider} gave {option!r} the probability {value!r}")
        out[option] = float(value)
    top = max(out.values(), default=0.0)
    if top > 0:
        out = {o: v / top for o, v in out.items()}  # no overflow when summing huge numbers
    total = sum(out.values())
    if total <= 0:
        raise BadProviderOutput(f"{provider} gave every option probability 0")
    return {o: out.get(o, 0.0) / total for o in question.options}
