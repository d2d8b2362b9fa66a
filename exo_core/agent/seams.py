"""The loop's smaller seams: memory provider, context engine and gate, with defaults.

Each is a small ``typing.Protocol`` the core owns; implementations (the store's
retrieval, the summary-tree context engine, the consequence gate) plug in
without the loop importing them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from exo_core.seams.model import INTERRUPTED_MARK, ChatMessage, Role, ToolCall
from exo_core.sessions.session_store import MessageRecord
from exo_core.tools.spec import Tool, ToolSpec

__all__ = [
    "DraftStyle",
    "TextFix",
    "FactTaker",
    "MemoryProvider",
    "MemoryParts",
    "PartedMemory",
    "PackedMemory",
    "NullMemory",
    "ContextEngine",
    "HistoryView",
    "ViewingContextEngine",
    "StartingContextEngine",
    "ClosingContextEngine",
    "ResumingContextEngine",
    "ToolingMemory",
    "VerbatimContext",
    "to_chat_messages",
    "GateOutcome",
    "Gate",
    "RiskGate",
    "ToolsetChooser",
]


class MemoryProvider(Protocol):
    """Supplies the pack block and recall for a message; hears each finished exchange."""

    async def system_block(self, session_id: str, text: str) -> str:
        """Text for the system prompt: the pack and what is recalled for ``text``."""
        ...

    async def on_exchange(self, session_id: str, user_text: str, answer: str) -> None:
        """Told about each finished exchange."""
        ...


@dataclass(frozen=True, slots=True)
class MemoryParts:
    """The memory block in parts, so a small window can keep the pack and drop recalled notes first.

    ``recalled`` holds the retrieved blocks best first, each one line or
    paragraph of the rendered block; ``heading`` introduces them.
    """

    pack: str = ""
    recalled: tuple[str, ...] = ()
    heading: str = ""


@runtime_checkable
class PartedMemory(Protocol):
    """An optional capability of a :class:`MemoryProvider`: its block in parts (docs/context.md)."""

    async def system_parts(self, session_id: str, text: str) -> MemoryParts:
        """The pack and the blocks retrieved for ``text``, separately."""
        ...


@runtime_checkable
class PackedMemory(Protocol):
    """An optional capability of a :class:`MemoryProvider`: the pack alone, with no retrieval.

    The part of :meth:`PartedMemory.system_parts` that is the same for every
    message: the prompt's fixed head is read ahead from it (exo_core.agent.warmup).
    """

    async def pack_block(self) -> str:
        """The pack as :meth:`PartedMemory.system_parts` gives it."""
        ...


class NullMemory:
    """No memory: an empty block and nothing learned."""

    async def system_block(self, session_id: str, text: str) -> str:
        return ""

    async def on_exchange(self, session_id: str, user_text: str, answer: str) -> None:
        return None


# A stored message's role (text) as the model seam's literal type.
_ROLES: dict[str, Role] = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


def to_chat_messages(messages: Sequence[MessageRecord]) -> list[ChatMessage]:
    """Stored messages as model messages (tool calls and results kept paired)."""
    out = []
    for m in messages:
        calls = tuple(ToolCall(c["id"], c["name"], c.get("arguments", {})) for c in m.tool_calls)
        content = m.content + (INTERRUPTED_MARK if m.status == "interrupted" and m.role == "assistant" else "")
        role = _ROLES[m.role]  # the store keeps the role as text
        out.append(ChatMessage(role=role, content=content, tool_calls=calls, tool_call_id=m.tool_call_id))
    return out


class ContextEngine(Protocol):
    """Builds a fresh, complete, bounded model input for one model call."""

    async def build(self, session_id: str, system_prompt: str, messages: Sequence[MessageRecord]) -> list[ChatMessage]:
        """The messages to send: system prompt, history view, verbatim tail."""
        ...


@dataclass(frozen=True, slots=True)
class HistoryView:
    """An engine's input for one call before it is fitted to a window.

    ``elements`` are the rendered parts of older history (summaries, or
    messages not yet summarized), oldest first; the messages from position
    ``tail_start`` on are sent verbatim.
    """

    elements: tuple[str, ...] = ()
    tail_start: int = 0


@runtime_checkable
class ViewingContextEngine(Protocol):
    """An optional capability of a :class:`ContextEngine`: its view in parts, for fitting to a window.

    The loop fits the parts to the model's window (``exo_core.context.fit``);
    an engine without it has its built input fitted as a whole.
    """

    async def history_view(self, session_id: str, system_prompt: str, messages: Sequence[MessageRecord]) -> HistoryView:
        """The history elements and where the verbatim tail starts, for one model call."""
        ...


@runtime_checkable
class StartingContextEngine(Protocol):
    """An optional capability of a :class:`ContextEngine`: work to start with the core.

    The summary-tree engine restarts the summaries a crash left pending (docs/context.md).
    """

    async def start(self) -> None:
        """Start the engine's background work."""
        ...


@runtime_checkable
class ClosingContextEngine(Protocol):
    """An optional capability of a :class:`ContextEngine`: work to stop before the database closes."""

    async def close(self) -> None:
        """Stop the engine's background work."""
        ...


@runtime_checkable
class ResumingContextEngine(Protocol):
    """An optional capability of a :class:`ContextEngine`: restart a session's summaries when it resumes."""

    async def on_resume(self, session_id: str) -> None:
        """Restart ``session_id``'s pending and failed summaries."""
        ...


@runtime_checkable
class ToolingMemory(Protocol):
    """An optional capability of a :class:`MemoryProvider`: tools of its own, registered with it."""

    def tools(self) -> Sequence[Tool]:
        """The provider's tools (a plugin's memory provider registers them with its slot)."""
        ...


class VerbatimContext:
    """The whole conversation verbatim (the summary-tree engine replaces this)."""

    async def history_view(self, session_id: str, system_prompt: str, messages: Sequence[MessageRecord]) -> HistoryView:
        """No history view: every message is in the tail."""
        return HistoryView()

    async def build(self, session_id: str, system_prompt: str, messages: Sequence[MessageRecord]) -> list[ChatMessage]:
        head = [ChatMessage(role="system", content=system_prompt)] if system_prompt else []
        return head + to_chat_messages(messages)


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """The gate's verdict on one tool call: allow, log (run and note it), ask the person, or deny.

    ``axes`` is the action's cell (reversibility, exposure, cost, third_party)
    and ``keys`` the kinds of action found, when the gate classifies; both go
    into the ledger's action entry. ``targets`` holds the resolved files a file
    tool was judged on; the tool touches no other (``None``: not judged by path).
    """

    action: Literal["allow", "log", "ask", "deny"]
    summary: str
    risk: str
    reason: str = ""
    rule_key: str = ""
    axes: Mapping[str, str] = field(default_factory=dict)
    keys: tuple[str, ...] = ()
    targets: tuple[str, ...] | None = None


class Gate(Protocol):
    """Decides whether a tool call may run; remembers ``allow_always`` answers for the run."""

    def check(self, spec: ToolSpec, arguments: dict[str, Any]) -> GateOutcome:
        """The outcome for calling ``spec`` with ``arguments``."""
        ...

    def allow_always(self, rule_key: str) -> None:
        """Stop asking for calls with ``rule_key`` for the rest of this run."""
        ...


class FactTaker(Protocol):
    """Reads a person message for a fact they state and stores it (exo_core.learning.facts)."""

    async def take(self, session_id: str, text: str) -> str | None:
        """What the person hears when ``text`` stated a fact that was handled; None when it stated none."""
        ...


class TextFix(Protocol):
    """Rewrites a reply as it streams: ``feed`` each piece (what may be shown now), then ``flush``."""

    def feed(self, piece: str) -> str:
        """The rewritten text that can be shown now."""
        ...

    def flush(self) -> str:
        """What is still held back at the end of the reply."""
        ...


class DraftStyle(Protocol):
    """The person's enforced taste applied to each model reply (exo_core.learning.enforce)."""

    async def fix(self) -> TextFix | None:
        """A fixer for one model call's text; None leaves the text as the model wrote it."""
        ...


class ToolsetChooser(Protocol):
    """Picks the toolsets a turn needs from its text (a decision model); ``None`` offers them all."""

    async def choose(self, text: str, toolsets: Sequence[str]) -> frozenset[str] | None:
        """The toolsets to offer for a turn that starts with ``text``."""
        ...


class RiskGate:
    """The minimal gate: ask for high-risk tools, allow the rest; remembers allow_always per run."""

    def __init__(self) -> None:
        self._always: set[str] = set()

    def check(self, spec: ToolSpec, arguments: dict[str, Any]) -> GateOutcome:
        detail = arguments.get("command") or arguments.get("path") or ""
        summary = " ".join((f"{spec.name}: {detail}" if detail else spec.name).split())
        summary = summary if len(summary) <= 80 else summary[:77] + "..."  # one short line
        if spec.risk == "high" and spec.name not in self._always:
            return GateOutcome("ask", summary, spec.risk, "high-risk tool", rule_key=spec.name)
        return GateOutcome("allow", summary, spec.risk, rule_key=spec.name)

    def allow_always(self, rule_key: str) -> None:
        """Stop asking for ``rule_key`` for the rest of this run."""
        self._always.add(rule_key)
