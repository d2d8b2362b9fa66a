"""The four axes an action is placed on, the four outcomes, and one classified part.

Each axis is an ordered scale, worst last, so combining the parts of one
command line is a per-axis maximum:

* ``reversibility``: ``none`` (changes nothing: a read) < ``reversible``
  (undone at once: a file edit in the workspace) < ``recoverable`` (undone with
  effort: a local commit rewritten, a package installed) < ``irreversible``
  (cannot be taken back: mail sent, data deleted outside the workspace);
* ``exposure``: ``private`` (stays on this machine) < ``leaves`` (data goes to
  another machine or service) < ``public`` (written where others read);
* ``cost``: ``free`` < ``paid`` (spends money);
* ``third_party``: ``none`` < ``affects`` (touches someone other than the person).

Outcomes are ordered too: ``allow`` < ``log`` < ``ask`` < ``deny``. Raising
an outcome is always safe; lowering one is what the operator floor limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from exo_core.errors import ConfigError

__all__ = ["AXES", "OUTCOMES", "Axes", "Finding", "outcome_rank", "strictest"]

AXES: Mapping[str, tuple[str, ...]] = {
    "reversibility": ("none", "reversible", "recoverable", "irreversible"),
    "exposure": ("private", "leaves", "public"),
    "cost": ("free", "paid"),
    "third_party": ("none", "affects"),
}

OUTCOMES: tuple[str, ...] = ("allow", "log", "ask", "deny")


def outcome_rank(outcome: str) -> int:
    """Position of ``outcome`` on the allow < log < ask < deny scale."""
    try:
        return OUTCOMES.index(outcome)
    except ValueError as exc:
        raise ConfigError(f"unknown gate outcome {outcome!r}; use one of {', '.join(OUTCOMES)}") from exc


def strictest(outcomes: Iterable[str]) -> str:
    """The strictest of ``outcomes`` (``allow`` when there are none)."""
    return max(outcomes, key=outcome_rank, default="allow")


@dataclass(frozen=True, slots=True)
class Axes:
    """One cell of the gate: a value on each of the four axes."""

    reversibility: str = "none"
    exposure: str = "private"
    cost: str = "free"
    third_party: str = "none"

    def __post_init__(self) -> None:
        for name, scale in AXES.items():
            value = getattr(self, name)
            if value not in scale:
                raise ConfigError(f"{name} must be one of {', '.join(scale)}, not {value!r}")

    def worst(self, other: Axes) -> Axes:
        """The per-axis maximum of ``self`` and ``other``."""
        return Axes(**{name: max(getattr(self, name), getattr(other, name), key=AXES[name].index) for name in AXES})

    def at_least(self, **floor: str) -> Axes:
        """``self`` raised to at least the given values (``at_least(reversibility='recoverable')``)."""
        return self.worst(Axes(**floor))

    def as_dict(self) -> dict[str, str]:
        """The cell as a plain mapping (JSON output, ledger entries)."""
        return {name: getattr(self, name) for name in AXES}

    @property
    def guarded(self) -> bool:
        """Irreversible, public, paid or third-party: never decided by a model (docs/decisions.md)."""
        return (
            self.reversibility == "irreversible"
            or self.exposure == "public"
            or self.cost == "paid"
            or self.third_party == "affects"
        )


@dataclass(frozen=True, slots=True)
class Finding:
    """One classified part of an action: what it is (``key``), its cell, and why.

    ``key`` names the kind of action (``git.push``, ``file.edit``,
    ``http.post``, ``shell.opaque``); policies, overrides and ``allow_always``
    refer to it. ``summary`` is the one line a person reads in an approval card;
    ``destination`` names where the effect lands (a remote, a host), for
    posting checks.
    """

    key: str
    axes: Axes
    summary: str
    reason: str = ""
    destination: str = ""
    command: str = ""

    def as_dict(self) -> dict[str, object]:
        """The finding as a plain mapping."""
        out: dict[str, object] = {"key": self.key, "axes": self.axes.as_dict(), "summary": self.summary}
        extra = (("reason", self.reason), ("destination", self.destination), ("command", self.command))
        return {**out, **{name: value for name, value in extra if value}}
