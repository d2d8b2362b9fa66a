"""The tool seam: a spec the model sees, a handler that runs, a result it reads.

A tool failure is an error *result* the model can read and react to, never an
exception out of the registry. Results longer than :data:`MAX_RESULT_CHARS`
are cut (and marked) so one tool cannot flood the context.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from exo_core.errors import ExoError

if TYPE_CHECKING:
    from exo_core.sandbox import Sandbox

__all__ = [
    "Risk",
    "ToolSpec",
    "ToolResult",
    "ToolContext",
    "Tool",
    "CheckedTool",
    "MAX_RESULT_CHARS",
    "object_schema",
    "abilities",
]

MAX_RESULT_CHARS = 100_000

Risk = Literal["low", "medium", "high"]
_RISK_ORDER = {"low": 0, "medium": 1, "high": 2}
# Toolsets in the order their abilities are named: what the assistant knows of the person first (what a
# person asking "what can you help me with?" came for), then files, commands, the screen; plugins' last.
_TOOLSET_ORDER = ("memory", "core", "shell", "ui")


def object_schema(required: tuple[str, ...], **properties: str | dict[str, Any]) -> dict[str, Any]:
    """A tool's argument schema: ``name="string"`` for a plain JSON type, a schema dict for anything more."""
    props = {name: {"type": schema} if isinstance(schema, str) else schema for name, schema in properties.items()}
    return {"type": "object", "properties": props, "required": list(required)}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about a tool. ``parameters`` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]
    risk: Risk = "low"
    toolset: str = "core"
    # What the tool does on the gate's axes: e.g. ("irreversible", "public", "affects") for a tool that
    # posts. The gate reads it for a tool its rules do not know; "irreversible" is also the prompt's fact.
    effects: tuple[str, ...] = ()
    # What the tool lets the assistant do, in a few words ("read files"): the store's generated
    # ``exo/abilities`` note names the offered tools' abilities (docs/store.md, "What this Exo can do").
    ability: str = ""
    # Whether a call changes the files the gate judged for it: the loop keeps what it replaces for undo
    # (exo_core.tools.snapshots) and asks before a change that removes lines the person did not name.
    changes_files: bool = False

    @property
    def irreversible(self) -> bool:
        """Whether every call undoes nothing once done (``delete_file``), whatever its arguments.

        A local model's prompt shows no worked example of such a tool: a small model copies examples
        (docs/gate.md; exo_edge/prompting.py).
        """
        return "irreversible" in self.effects

    def ability_text(self) -> str:
        """What the tool lets the assistant do, in a few words: ``ability``, else its description's first sentence.

        A plugin's tool that declares no ability is still named, by what its description says it does.
        """
        if self.ability.strip():
            return self.ability.strip()
        first = self.description.strip().split(". ", 1)[0].rstrip(".").strip()
        if not first:
            return ""
        return first[0].lower() + first[1:]

    def to_model(self) -> dict[str, Any]:
        """The description sent to a model (OpenAI function shape); ``irreversible`` only when it is.

        Transports send the model only the name, description and parameters; the mark is for the prompt code.
        """
        described: dict[str, Any] = {"name": self.name, "description": self.description, "parameters": self.parameters}
        if self.irreversible:
            described["irreversible"] = True
        return described


def abilities(specs: Iterable[ToolSpec]) -> list[str]:
    """What ``specs`` let the assistant do, in a few words each: by toolset, then the safest first, then by name."""

    def place(spec: ToolSpec) -> tuple[int, str, int, str]:
        known = _TOOLSET_ORDER.index(spec.toolset) if spec.toolset in _TOOLSET_ORDER else len(_TOOLSET_ORDER)
        return (known, spec.toolset, _RISK_ORDER.get(spec.risk, len(_RISK_ORDER)), spec.name)

    ordered = sorted(specs, key=place)
    texts = [spec.ability_text() for spec in ordered]
    return [text for text in texts if text]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The text the model reads back, and whether it is an error."""

    content: str
    is_error: bool = False
    truncated: bool = False

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=f"error: {message}", is_error=True)

    def cut(self, limit: int = MAX_RESULT_CHARS) -> ToolResult:
        """This result cut to ``limit`` characters, marked when it was cut."""
        if len(self.content) <= limit:
            return self
        note = f"\n[... cut: {len(self.content) - limit} more characters not shown]"
        return ToolResult(self.content[:limit] + note, self.is_error, True)


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool may use: its workspace and a way to stream output."""

    workspace: Path
    call_id: str
    emit_output: Callable[[str, str], Awaitable[None]]
    session_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # The resolved files the gate judged for this call; a file tool touches no other (None: no gate judged paths).
    checked_paths: frozenset[str] | None = None
    # The OS sandbox a tool's processes run in (None: one over the default Exo home, built by the tool).
    sandbox: Sandbox | None = None
    # Whether the gate allowed this call a network effect: its processes get the network only then.
    network: bool = False

    def confinement(self) -> Sandbox:
        """The sandbox for this call's processes and file checks: ``sandbox``, else one over the default Exo home.

        Without one given, exod's files are still those of ``$EXO_HOME`` (or ``~/.exo``) and its store:
        a tool never runs unconfined because nobody said where the home is.
        """
        if self.sandbox is not None:
            return self.sandbox
        from exo_core.seams.home import ExoHome  # the default is built only where no core passed its own

        home = ExoHome.from_env()
        try:
            store = home.store_path()
        except ExoError:
            store = home.root / "store"
        return _default_sandbox(home.root, store, self.workspace)


@functools.lru_cache(maxsize=8)
def _default_sandbox(home: Path, store: Path, workspace: Path) -> Sandbox:
    # Kept, so the sandbox's one start-up check is made once per home and workspace.
    from exo_core.sandbox import ExodFiles, Sandbox

    return Sandbox(ExodFiles.of(home, stores=(store,), workspaces=(workspace,)))


class Tool(Protocol):
    """A tool: a spec and an async ``run``. Blocking handlers must use a worker thread."""

    spec: ToolSpec

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Do the work; return a result (raise only for bugs — the registry turns them into results)."""
        ...


@runtime_checkable
class CheckedTool(Protocol):
    """An optional capability of a :class:`Tool`: whether it can run here now (the shell tool needs bash).

    The registry offers a tool that declares it only while ``available()`` is true.
    """

    def available(self) -> bool:
        """``True`` when the tool can run on this machine now."""
        ...
