"""``decide``: map a classified action through the person's policy (the gate's second pure step).

A :class:`Policy` holds

* ``matrix``: the outcome for each (reversibility, exposure) cell, with
  ``paid`` and ``third_party`` raising it further;
* ``scope``: the workspace, local hosts and private remotes (used by ``classify``);
* ``overrides``: outcomes for action keys (``git.push = "allow"``; a trailing
  ``.*`` matches a family), which may lower the matrix but not the floor;
* ``reserved``: keys that always ask (by default ``file.delete``: a deletion in
  the workspace is recoverable only when git kept a copy; and reading a file
  outside the workspace or one that holds credentials, ``file.read.outside``
  and ``file.read.sensitive``: its text goes to the model); ``denied``: keys
  that are refused;
* ``budget``: the largest ``amount`` a paid action may carry (above it: deny);
* ``posting_denied``: destinations (remotes, hosts) where public writes are refused.

Each part of an action is decided on its own, so an override for ``git.push``
cannot hide an ``rm -rf`` in the same line; the action's outcome is the
strictest part, raised to the operator floor. ``file.protected`` (exod's own
keys, token, sockets, policy and ledger: :mod:`exo_core.gate.paths`) is refused
whatever the policy says. Policies are written as TOML
(``$EXO_HOME/gate.toml``; see ``docs/gate.md``) and validated strictly.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exo_core.errors import ConfigError
from exo_core.gate.axes import AXES, OUTCOMES, Finding, outcome_rank, strictest
from exo_core.gate.classify import Classification
from exo_core.gate.floor import apply_floor, floor_for
from exo_core.gate.scope import Scope

__all__ = ["Policy", "PartDecision", "Decision", "decide", "DEFAULT_MATRIX", "DEFAULT_RESERVED", "ALWAYS_DENIED"]

DEFAULT_MATRIX: Mapping[tuple[str, str], str] = {
    ("none", "private"): "allow",
    ("none", "leaves"): "log",
    ("none", "public"): "ask",
    ("reversible", "private"): "log",
    ("reversible", "leaves"): "ask",
    ("reversible", "public"): "ask",
    ("recoverable", "private"): "log",
    ("recoverable", "leaves"): "ask",
    ("recoverable", "public"): "ask",
    ("irreversible", "private"): "ask",
    ("irreversible", "leaves"): "ask",
    ("irreversible", "public"): "ask",
}
DEFAULT_RESERVED: frozenset[str] = frozenset({"file.delete", "file.read.outside", "file.read.sensitive"})
# Refused under every policy, override and answer: the agent never reads exod's secrets or rewrites its own rules.
ALWAYS_DENIED: frozenset[str] = frozenset({"file.protected"})
_TOP_KEYS = {"matrix", "paid", "third_party", "scopes", "overrides", "reserved", "denied", "budget", "posting"}


@dataclass(frozen=True, slots=True)
class Policy:
    """The person's gate policy. ``Policy()`` is the default policy."""

    matrix: Mapping[tuple[str, str], str] = field(default_factory=lambda: dict(DEFAULT_MATRIX))
    paid: str = "ask"
    third_party: str = "ask"
    scope: Scope = field(default_factory=Scope)
    overrides: Mapping[str, str] = field(default_factory=dict)
    # Deleting in the workspace is recoverable only if something (git) kept a copy: asked by default.
    reserved: frozenset[str] = DEFAULT_RESERVED
    denied: frozenset[str] = frozenset()
    budget: float | None = None
    posting_denied: frozenset[str] = frozenset()

    @classmethod
    def load(cls, path: Path, *, workspace: Path | None = None) -> Policy:
        """Read a TOML policy file; a missing file is the default policy."""
        if not path.exists():
            return cls(scope=Scope.from_mapping({}, workspace=workspace))
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read gate policy {path}: {exc}; fix or delete the file") from exc
        return cls.from_mapping(data, workspace=workspace)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, workspace: Path | None = None) -> Policy:
        """A policy from parsed TOML/JSON; unknown keys and bad outcomes are :class:`ConfigError`."""
        unknown = set(data) - _TOP_KEYS
        if unknown:
            raise ConfigError(f"unknown gate policy key(s) {sorted(unknown)}; known: {sorted(_TOP_KEYS)}")
        matrix = dict(DEFAULT_MATRIX)
        rows = _table(data, "matrix", "a table of reversibility rows, e.g. matrix.reversible.private = 'log'")
        for rev, row in rows.items():
            if rev not in AXES["reversibility"] or not isinstance(row, Mapping):
                raise ConfigError(f"matrix.{rev}: rows are {', '.join(AXES['reversibility'])}, each a table")
            for exp, outcome in row.items():
                if exp not in AXES["exposure"]:
                    raise ConfigError(f"matrix.{rev}.{exp}: columns are {', '.join(AXES['exposure'])}")
                matrix[(rev, exp)] = _outcome(outcome, f"matrix.{rev}.{exp}")
        overrides = _table(data, "overrides", "a table of action key = outcome")
        max_amount = _table(data, "budget", "a table with 'max_amount'", {"max_amount"}).get("max_amount")
        if max_amount is not None and (isinstance(max_amount, bool) or not isinstance(max_amount, (int, float))):
            raise ConfigError("budget.max_amount must be a number")
        posting = _table(data, "posting", "a table with 'denied' (a list of remotes or hosts)", {"denied"})
        return cls(
            matrix=matrix,
            paid=_outcome(data.get("paid", "ask"), "paid"),
            third_party=_outcome(data.get("third_party", "ask"), "third_party"),
            scope=Scope.from_mapping(_table(data, "scopes", "a table"), workspace=workspace),
            overrides={str(k): _outcome(v, f"overrides.{k}") for k, v in overrides.items()},
            reserved=frozenset(_keys(data, "reserved")) if "reserved" in data else DEFAULT_RESERVED,
            denied=frozenset(_keys(data, "denied")),
            posting_denied=frozenset(_keys(posting, "denied")),
            budget=float(max_amount) if max_amount is not None else None,
        )

    def with_workspace(self, workspace: Path) -> Policy:
        """This policy with ``workspace`` added to its scope."""
        return dataclasses.replace(self, scope=self.scope.with_workspace(workspace))

    def with_exo(self, home: Path | None, stores: tuple[Path, ...] = ()) -> Policy:
        """This policy guarding the Exo home and the stores from the file tools (exo_core.gate.paths)."""
        return dataclasses.replace(self, scope=self.scope.with_exo(home, stores))


@dataclass(frozen=True, slots=True)
class PartDecision:
    """The outcome for one part of an action and why."""

    finding: Finding
    outcome: str
    why: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Decision:
    """The gate's outcome for a whole action, the parts, and the floor rule that raised it (if any)."""

    outcome: str
    classification: Classification
    parts: tuple[PartDecision, ...]
    floor: str = ""

    @property
    def deciding(self) -> tuple[PartDecision, ...]:
        """The parts whose outcome is the action's outcome (they name the approval card)."""
        return tuple(p for p in self.parts if p.outcome == self.outcome) or self.parts

    @property
    def rule_key(self) -> str:
        """What ``allow_always`` remembers: the tool and the keys of the deciding parts."""
        keys = sorted({p.finding.key for p in self.deciding})
        return f"{self.classification.tool}:{'+'.join(keys)}"

    @property
    def summary(self) -> str:
        """A one-line summary of what needs deciding."""
        text = "; ".join(dict.fromkeys(p.finding.summary for p in self.deciding))
        return text if len(text) <= 100 else text[:97] + "..."

    def as_dict(self) -> dict[str, Any]:
        """As plain data (``exo gate check`` prints this)."""
        out = self.classification.as_dict()
        out.update(outcome=self.outcome, summary=self.summary, rule_key=self.rule_key)
        for part, wire in zip(self.parts, out["parts"], strict=True):
            wire["outcome"] = part.outcome
            wire["why"] = list(part.why)
        if self.floor:
            out["floor"] = self.floor
        return out


def decide(
    classification: Classification, policy: Policy, *, amount: float | None = None, always: frozenset[str] = frozenset()
) -> Decision:
    """The outcome for ``classification`` under ``policy``; ``always`` holds ``allow_always`` rule keys."""
    parts = tuple(_part(f, policy, amount) for f in classification.findings)
    outcome = strictest(p.outcome for p in parts)
    # ask or log: no part is denied, so every part may be allowed.
    if outcome in ("ask", "log") and Decision(outcome, classification, parts).rule_key in always:
        outcome = "allow"
        parts = tuple(PartDecision(p.finding, "allow", (*p.why, "allowed always in this run")) for p in parts)
    minimum, floor_rule = floor_for(classification.axes)
    if outcome_rank(minimum) > outcome_rank(outcome):
        outcome = minimum
        parts = tuple(
            PartDecision(p.finding, strictest((p.outcome, minimum)), (*p.why, f"operator floor: {floor_rule}"))
            for p in parts
        )
    # The floor is reported whenever it applies: the outcome cannot go below it, whatever the policy says.
    return Decision(outcome, classification, parts, floor_rule)


def _part(f: Finding, policy: Policy, amount: float | None) -> PartDecision:
    a = f.axes
    if f.key in ALWAYS_DENIED:
        return PartDecision(f, "deny", (f"{f.reason or f.key}: never allowed (docs/security.md)",))
    if _entry(f.key, policy.denied) is not None:
        return PartDecision(f, "deny", (f"{f.key} is denied by policy",))
    outcome = policy.matrix.get((a.reversibility, a.exposure), "ask")
    why = [f"matrix {a.reversibility}/{a.exposure}: {outcome}"]
    for applies, raised, label in (
        (a.cost == "paid", policy.paid, "paid"),
        (a.third_party == "affects", policy.third_party, "third party"),
    ):
        if applies and outcome_rank(raised) > outcome_rank(outcome):
            outcome = raised
            why.append(f"{label}: {outcome}")
    override = _entry(f.key, policy.overrides)
    if override is not None:
        outcome = policy.overrides[override]
        why.append(f"override {f.key}: {outcome}")
    if _entry(f.key, policy.reserved) is not None and outcome_rank(outcome) < outcome_rank("ask"):
        outcome = "ask"
        why.append(f"{f.key} is reserved: ask")
    if a.exposure == "public" and f.destination and f.destination in policy.posting_denied:
        return PartDecision(f, "deny", (*why, f"posting to {f.destination} is denied by policy"))
    if a.cost == "paid" and policy.budget is not None:
        if amount is None:
            outcome = strictest((outcome, "ask"))
            why.append("paid with no amount given: ask")
        elif amount > policy.budget:
            return PartDecision(f, "deny", (*why, f"amount {amount:g} is over the budget of {policy.budget:g}"))
    part_floor, rule = apply_floor(outcome, a)
    if part_floor != outcome:
        why.append(f"operator floor: {rule}")
    return PartDecision(f, part_floor, tuple(why))


def _entry(key: str, keys: Collection[str]) -> str | None:
    """The entry of ``keys`` covering ``key``: the key itself, else its longest ``family.*``."""
    if key in keys:
        return key
    return max(
        (k for k in keys if k.endswith(".*") and (key == k[:-2] or key.startswith(k[:-1]))), key=len, default=None
    )


def _outcome(value: Any, where: str) -> str:
    if value not in OUTCOMES:
        raise ConfigError(f"{where} must be one of {', '.join(OUTCOMES)}, not {value!r}")
    return str(value)


def _table(data: Mapping[str, Any], key: str, what: str, keys: set[str] | None = None) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping) or keys is not None and set(value) - keys:
        raise ConfigError(f"{key} must be {what}")
    return value


def _keys(data: Mapping[str, Any], key: str) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{key} must be a list of action keys (strings)")
    return value
