"""Configuration of the context engine, with the design's defaults (docs/context.md).

Every number the summary tree, the lanes and settling use lives here, in one
frozen dataclass, so tests and ``config.toml`` change them in one place::

    [context]
    tail = 12              # messages always sent verbatim
    leaf_size = 8          # messages per leaf summary
    view_budget = 6000     # tokens of summaries in the view before merging
    live_limit = 8         # live-lane summaries at once
    import_limit = 2       # import-lane summaries at once
    settle_seconds = 60    # how long a turn waits for pending live summaries
    summarizer = ""        # model spec for summaries ('' = the core's model, aux role)

Tokens are *estimated* as characters / 4 (rounded up): good enough to budget
with, free to compute, and the same on every machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from exo_core.errors import ConfigError

__all__ = ["ContextConfig", "estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: characters divided by four, rounded up."""
    return (len(text) + 3) // 4


@dataclass(frozen=True, slots=True)
class ContextConfig:
    """Tunables of the summary-tree context engine (defaults from the design paper)."""

    tail: int = 12
    leaf_size: int = 8
    view_budget: int = 6000
    live_limit: int = 8
    import_limit: int = 2
    settle_seconds: float = 60.0
    # Bounded in-memory queues: work that does not fit stays 'pending' in the
    # database (the durable queue) and is loaded when the lane drains.
    live_queue_limit: int = 1024
    import_queue_limit: int = 256
    # A job failing this many times is left 'failed' (its leaf stays verbatim)
    # instead of costing a model call on every turn.
    max_attempts: int = 5
    # One summarizer call may take this long before it counts as failed (a
    # 270M model on one slow core needs tens of seconds for a leaf).
    job_timeout: float = 600.0
    # The summarizer is asked for at most this many tokens, and the stored text
    # is cut at four times as many characters, so the view's budget holds even
    # against a model that ignores max_tokens.
    summary_tokens: int = 300
    # Text of one message given to the summarizer is cut (head and end kept):
    # a megabyte of tool output must not become a megabyte prompt.
    message_chars: int = 4000
    # While live work is queued or running, the import lane starts no new job:
    # both lanes usually share one local model, and live chat comes first.
    import_yields: bool = True
    # Model spec of the summarizer ('' = the core's model on the aux role);
    # e.g. 'scripted-summary' for tests and demos.
    summarizer: str = ""
    # How each model input is laid out (exo_core.context.fit.LAYOUTS): "reuse" keeps what never changes
    # first so a prompt cache reuses it; "system" puts the retrieved beliefs inside the system message, far
    # from the question. "system" is the default until the quality checks pass with "reuse": with the beliefs
    # just before the question the 0.5B copied a weak match into a general answer (docs/context.md).
    layout: str = "system"

    def __post_init__(self) -> None:
        if self.layout not in ("reuse", "system"):
            raise ConfigError(f"context.layout must be 'reuse' or 'system', not {self.layout!r}")
        # Checked by declared type (annotations are strings here), so a new field cannot be left unchecked.
        for f in fields(self):
            value = getattr(self, f.name)
            number = not isinstance(value, bool)  # bool is an int subclass but never a number here
            if f.type == "int" and not (number and isinstance(value, int) and value >= 1):
                raise ConfigError(f"context.{f.name} must be a positive integer, not {value!r}")
            if f.type == "float" and not (number and isinstance(value, (int, float)) and value >= 0):
                raise ConfigError(f"context.{f.name} must be a number of seconds >= 0, not {value!r}")
            if f.type == "str" and not isinstance(value, str):
                raise ConfigError(f"context.{f.name} must be a model spec string")
            if f.type == "bool" and not isinstance(value, bool):
                raise ConfigError(f"context.{f.name} must be true or false")

    @property
    def summary_chars(self) -> int:
        """The hard cap on one stored summary's length in characters."""
        return self.summary_tokens * 4

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any]) -> ContextConfig:
        """A config from a ``[context]`` table; unknown keys are a :class:`ConfigError`."""
        if not isinstance(table, Mapping):
            raise ConfigError("config.toml: [context] must be a table")
        known = {f.name for f in fields(cls)}
        if unknown := sorted(set(table) - known):
            raise ConfigError(
                f"config.toml: [context] has unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return replace(cls(), **dict(table))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ContextConfig:
        """The ``[context]`` table of a parsed ``config.toml`` (defaults when absent)."""
        table = config.get("context", {})
        return cls.from_mapping(table if table is not None else {})
