"""What a turn is given: the loop's injected parts (:class:`LoopDeps`) and its limits (:class:`LoopSettings`).

Declared apart from the loop so the steps it calls (``toolrun``) take the same parts without importing
the loop back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from exo_core.agent.approvals import ApprovalBroker
from exo_core.agent.redaction import Redactor, SecretRedactor
from exo_core.agent.seams import (
    ContextEngine,
    DraftStyle,
    FactTaker,
    Gate,
    MemoryProvider,
    NullMemory,
    RiskGate,
    ToolsetChooser,
    VerbatimContext,
)
from exo_core.clock import Clock, SystemClock
from exo_core.events.hub import Hub
from exo_core.hooks import HookRegistry
from exo_core.seams.model import ModelTransport
from exo_core.seams.recorder import NullRecorder, Recorder
from exo_core.sessions.facade import AsyncSessions
from exo_core.tools.registry import ToolRegistry

__all__ = ["LoopDeps", "LoopSettings", "BASE_PROMPT"]

# The wording every model reads first (docs/models.md, "The base prompt"): answer in words unless the
# request needs a file or a command; answer questions about the person from the notes below it (which
# address the person as "you": exo_core.retrieval.second_person).
BASE_PROMPT = (
    "You are Exo, the person's own assistant. Answer briefly and plainly, in your own words. "
    "When a question is about the person, their people, places or plans, answer from the notes about them below. "
    "Use a tool only when the request needs a file or a command; otherwise answer in words. "
    "Ask before doing anything irreversible or public."
)


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """Tunable limits of the loop."""

    max_iterations: int = 24
    max_retries: int = 3
    backoff_base: float = 0.5
    max_retry_wait: float = 30.0
    base_prompt: str = BASE_PROMPT
    max_tokens: int = 512


@dataclass(slots=True)
class LoopDeps:
    """Everything a turn needs, injected."""

    hub: Hub
    # The sessions store, each call one job on the database thread (exo_core.sessions.facade).
    sessions: AsyncSessions
    model: ModelTransport
    tools: ToolRegistry
    approvals: ApprovalBroker
    gate: Gate = field(default_factory=RiskGate)
    memory: MemoryProvider = field(default_factory=NullMemory)
    context: ContextEngine = field(default_factory=VerbatimContext)
    recorder: Recorder = field(default_factory=NullRecorder)
    hooks: HookRegistry = field(default_factory=HookRegistry)
    clock: Clock = field(default_factory=SystemClock)
    settings: LoopSettings = field(default_factory=LoopSettings)
    workspace: Path = field(default_factory=Path.cwd)
    # A decision model narrowing the tools offered to the model each turn; None offers every tool.
    toolsets: ToolsetChooser | None = None
    # Secrets out of every tool result, before the model, an event or the ledger sees it (docs/security.md).
    redactor: Redactor = field(default_factory=SecretRedactor)
    # Facts the person states ("Remember that ...") become store beliefs before the model runs.
    facts: FactTaker | None = None
    # The person's enforced taste applied to each reply as it streams (exo_core.learning.enforce).
    style: DraftStyle | None = None
