"""``classify``: place a tool call on the four axes (the first of the gate's two pure steps).

Shell commands are split into their simple commands (:mod:`exo_core.gate.shell`)
and each is judged (:mod:`exo_core.gate.commands`); file tools are judged by
where their resolved paths land (:mod:`exo_core.gate.paths`: the workspace,
outside it, a credentials file, or exod's own files); other tools by what their spec
declares (``ToolSpec.effects``), then by their name (``send_email`` sends
mail, ``post_*`` publishes, ``pay`` spends), then by their risk hint. The
action's cell is the per-axis maximum over its parts.

The shell rules (:mod:`exo_core.gate.commands` and the tables under it, ~1 MB
of compiled patterns) are imported with the first shell command, not with
exod: the gate is built at start-up, and idle exod has a 50 MB budget
(docs/benchmarks.md §2; ``tests/models/test_lazy_imports.py``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exo_core.gate.axes import AXES, Axes, Finding
from exo_core.gate.paths import place
from exo_core.gate.scope import Scope
from exo_core.gate.vcs import finding

__all__ = ["Classification", "classify", "SHELL_TOOLS"]

SHELL_TOOLS = frozenset({"bash", "shell", "sh", "terminal", "run_command"})
# File tools whose "path" is read (judged by exo_core.gate.paths), and the ones that change files.
_FILE_READERS = frozenset({"read_file", "list_files", "grep", "glob"})
_FILE_CHANGERS = {"write_file": "write", "append_file": "write", "edit_file": "edit", "delete_file": "delete"}
_READ_TOOLS = {
    "read_file": "file.read",
    "search": "session.search",
    "recall": "store.recall",
    "ui": "ui.panel",
    "list_files": "file.read",
    "grep": "file.read",
    "glob": "file.read",
    "web_search": "http.get",
    "web_fetch": "http.get",
    "memory_search": "store.recall",
}
_NAME_RULES: tuple[tuple[re.Pattern[str], Finding], ...] = tuple(
    (re.compile(pattern), Finding(key, Axes(*cell), summary, reason))
    for pattern, key, cell, summary, reason in (
        (
            r"(^|_)(send_)?(e?mail|sms|message|dm|text)(_|$)|^send",
            "mail.send",
            ("irreversible", "leaves", "free", "affects"),
            "send a message",
            "reaches another person",
        ),
        (
            r"(^|_)(post|publish|tweet|toot|comment|share|reply)(_|$)",
            "post.public",
            ("irreversible", "public", "free", "affects"),
            "post where others read",
            "others read it at once",
        ),
        (
            r"(^|_)(pay|payment|purchase|buy|order|transfer|donate|checkout|invoice)(_|$)",
            "payment",
            ("irreversible", "leaves", "paid", "affects"),
            "spend money",
            "money leaves and goes to someone",
        ),
        (
            r"(^|_)(delete|remove|drop|erase|destroy|wipe|purge)(_|$)",
            "data.delete",
            ("irreversible", "private", "free", "none"),
            "delete data",
            "a deletion without a copy",
        ),
    )
)
_RISK_LEVEL = {"low": "none", "medium": "reversible", "high": "recoverable"}


@dataclass(frozen=True, slots=True)
class Classification:
    """The cell of one tool call, the parts it is made of, and a one-line summary."""

    tool: str
    axes: Axes
    findings: tuple[Finding, ...]
    error: str = ""
    # The resolved files a file tool may touch (the tool refuses any other); None for other tools.
    targets: tuple[str, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        """As plain data (``exo gate check`` prints this)."""
        out: dict[str, Any] = {
            "tool": self.tool,
            "axes": self.axes.as_dict(),
            "parts": [f.as_dict() for f in self.findings],
        }
        if self.error:
            out["parse_error"] = self.error
        return out


def classify(
    tool: str,
    arguments: Mapping[str, Any],
    *,
    scope: Scope | None = None,
    risk: str = "low",
    effects: Sequence[str] = (),
) -> Classification:
    """Place calling ``tool`` with ``arguments`` on the four axes. Pure; never raises for bad input."""
    scope = scope or Scope()
    error = ""
    targets: list[str] | None = None
    if tool in SHELL_TOOLS:
        findings, error = _shell(arguments.get("command"), scope)
    elif tool in _FILE_CHANGERS or tool in _FILE_READERS and isinstance(arguments.get("path"), str):
        targets = []
        findings = [_file(_FILE_CHANGERS.get(tool, "read"), arguments.get("path"), scope, targets)]
    elif tool == "apply_patch":
        targets = []
        findings = _patch(arguments.get("patch"), scope, targets)
    elif tool in _READ_TOOLS:
        findings = [finding(_READ_TOOLS[tool], tool)]
    else:
        findings = [_other(tool, arguments, risk, effects)]
    findings = findings or [finding("shell.read", "nothing to run")]
    cell = functools.reduce(Axes.worst, (f.axes for f in findings), Axes())
    return Classification(tool, cell, tuple(findings), error, None if targets is None else tuple(targets))


def _shell(command: Any, scope: Scope) -> tuple[list[Finding], str]:
    if not isinstance(command, str) or not command.strip():
        return [finding("shell.read", "empty command")], ""
    from exo_core.gate.command_line import classify_line  # on first use: see the module docstring

    return classify_line(command, scope)


# verb -> (key stem, reversibility inside the workspace, reversibility elsewhere)
_FILE_VERBS = {
    "read": ("file.read", "none", "none"),
    "write": ("file.write", "reversible", "irreversible"),
    "edit": ("file.edit", "reversible", "irreversible"),
    "patch": ("file.write", "reversible", "irreversible"),
    "delete": ("file.delete", "irreversible", "irreversible"),
}


def _file(verb: str, path: Any, scope: Scope, targets: list[str]) -> Finding:
    """One file a tool reads, writes, edits or deletes, judged where it resolves (exo_core.gate.paths).

    Outside the workspace a write replaces content nothing keeps a copy of
    (irreversible: asked); a read outside is ``file.read.outside``, which the
    default policy reserves (asked); exod's own files are ``file.protected``
    (denied, whatever the policy says).
    """
    stem, inside_level, outside_level = _FILE_VERBS[verb]
    if not isinstance(path, str) or not path:
        return finding(stem, f"{verb} a file (no path)", inside_level)
    judged = place(path, scope, writing=verb != "read", follow=verb != "delete")
    targets.append(str(judged.path))
    shown = f"{path} -> {judged.path}" if judged.linked else path
    if judged.place == "protected":
        return finding("file.protected", f"{verb} exod's own file {shown}", outside_level, reason=judged.why)
    if judged.place == "inside":
        return finding(stem, f"{verb} {shown}", inside_level, reason=judged.why)
    if judged.place == "sensitive":
        return finding(f"{stem}.sensitive", f"{verb} a sensitive file {shown}", outside_level, reason=judged.why)
    return finding(f"{stem}.outside", f"{verb} outside the workspace: {shown}", outside_level, reason=judged.why)


def _patch(patch: Any, scope: Scope, targets: list[str]) -> list[Finding]:
    if not isinstance(patch, str):
        return [finding("file.write", "apply a patch", "reversible")]
    out = []
    lines = patch.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("+++ "):
            continue
        new = _patch_path(line[4:])
        old = _patch_path(lines[i - 1][4:]) if i and lines[i - 1].startswith("--- ") else new
        if new == "/dev/null":
            out.append(_file("delete", old, scope, targets))
            continue
        if old != "/dev/null":
            out.append(_file("read", old, scope, targets))  # the old text is read: a patch can copy a file
        out.append(_file("patch", new, scope, targets))
    return out or [finding("file.write", "apply a patch", "reversible")]


def _patch_path(raw: str) -> str:
    path = raw.split("\t", 1)[0].strip()
    return path[2:] if path.startswith(("a/", "b/")) else path


def _other(tool: str, arguments: Mapping[str, Any], risk: str, effects: Sequence[str]) -> Finding:
    if effects:
        # A value names its axis ("paid": cost); "none" is on two scales, and the lowest on both.
        values = {axis: value for value in effects for axis, scale in AXES.items() if value in scale}
        return Finding(f"tool.{tool}", Axes().at_least(**values), f"{tool}", "declared by the tool")
    lowered = tool.lower()
    for pattern, template in _NAME_RULES:
        if pattern.search(lowered):
            return Finding(template.key, template.axes, f"{tool}: {template.summary}", template.reason)
    if lowered in ("http_request", "fetch", "request") or "url" in arguments:
        host_method = str(arguments.get("method", "GET")).upper()
        if host_method != "GET":
            return finding(f"http.{host_method.lower()}", f"{tool}: HTTP {host_method}", "irreversible", "leaves")
        return finding("http.get", f"{tool}: fetch")
    return finding(
        f"tool.{tool}",
        tool,
        _RISK_LEVEL.get(risk, "recoverable"),
        reason=f"a tool the gate does not know (risk hint {risk})",
    )
