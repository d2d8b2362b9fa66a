"""The ``@`` and ``!`` prefixes: attach a file or line range, run a shell command here.

``@notes.md`` attaches a file, ``@notes.md:10-20`` lines 10 to 20,
``@notes.md:7`` one line; the text goes with the next message, labelled so the
core treats it as data. ``!cmd`` runs ``cmd`` on *this* machine (where the
person sits, which may not be the device), shows its output, and attaches it
to the next message.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

from exo_core.terminal.transcript import ATTACH_MARK

__all__ = ["expand_refs", "attachment", "run_shell", "MAX_ATTACH_CHARS"]

MAX_ATTACH_CHARS = 100_000
_REF = re.compile(r"(?<!\S)@([^\s:]+)(?::(\d+)(?:-(\d+))?)?")


def attachment(label: str, text: str) -> str:
    """One attachment block, as it is appended to a message."""
    if len(text) > MAX_ATTACH_CHARS:
        text = text[:MAX_ATTACH_CHARS] + f"\n[... cut: {len(text) - MAX_ATTACH_CHARS} more characters]"
    return f"{ATTACH_MARK}{label}]\n```\n{text.rstrip()}\n```"


def expand_refs(text: str, cwd: Path) -> tuple[str, list[str]]:
    """``text`` with every ``@file[:a[-b]]`` that names a readable file attached; and the problems found."""
    blocks: list[str] = []
    problems: list[str] = []
    for match in _REF.finditer(text):
        name, first, last = match.group(1), match.group(2), match.group(3)
        if not (cwd / name).is_file():
            name = name.rstrip(",.;!?)'\"")  # "see @notes.md, then": the comma is prose
        path = (cwd / name).expanduser()
        if not path.is_file():
            problems.append(f"@{name}: no such file here")
            continue
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        except OSError as exc:
            problems.append(f"@{name}: {exc.strerror}")
            continue
        if first:
            a = max(1, int(first))
            b = min(len(lines), int(last) if last else a)
            if b < a:
                problems.append(f"@{name}:{first}-{last}: the range is empty")
                continue
            blocks.append(attachment(f"{name} lines {a}-{b}", "\n".join(lines[a - 1 : b])))
        else:
            blocks.append(attachment(name, "\n".join(lines)))
    return text + "".join(blocks), problems


async def run_shell(command: str, cwd: Path, timeout: float = 60.0) -> tuple[int, str]:
    """Run ``command`` with bash in its own process group; returns (exit status, combined output)."""
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command,
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        await _kill(proc)
        return -9, f"[killed after {timeout:g} s]"
    except asyncio.CancelledError:
        await _kill(proc)
        raise
    return proc.returncode or 0, out.decode("utf-8", "replace")


async def _kill(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it ended on its own meanwhile
    await proc.wait()
