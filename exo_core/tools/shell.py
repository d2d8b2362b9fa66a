"""The ``bash`` tool: a command in the OS sandbox, in its own process group, with a timeout and streamed output.

Every command runs in the sandbox (:mod:`exo_core.sandbox`): the workspace
read-write, the system read-only, nothing of exod's own files, a clean
environment, no network unless the gate allowed a network effect, CPU time
no longer than the timeout. Where no sandbox can be set up the tool refuses
and says why: a command never runs unconfined. The whole process group is
killed (SIGKILL) on timeout and on interrupt, so a command's children never
outlive it (the sandbox's processes die with it). Output streams as ``tool.output`` events
while the command runs; the model gets the combined output (cut at the
registry's limit) and the exit status.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import signal
from typing import Any

from exo_core.tools.spec import MAX_RESULT_CHARS, ToolContext, ToolResult, ToolSpec, object_schema

__all__ = ["BashTool"]

_DEFAULT_TIMEOUT = 120.0
_MAX_TIMEOUT = 3600.0


class BashTool:
    """Run a shell command in the workspace."""

    spec = ToolSpec(
        name="bash",
        ability="run commands",
        description="Run a bash command in the workspace. Optional 'timeout' in seconds (default 120).",
        parameters=object_schema(("command",), command="string", timeout="number"),
        risk="high",
        toolset="shell",
    )

    def available(self) -> bool:
        """Whether ``bash`` is on the PATH."""
        return shutil.which("bash") is not None

    async def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        command = arguments.get("command")
        if not isinstance(command, str) or not command.strip():
            return ToolResult.error("'command' must be a non-empty string")
        timeout = arguments.get("timeout", _DEFAULT_TIMEOUT)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            return ToolResult.error("'timeout' must be a positive number of seconds")
        timeout = min(float(timeout), _MAX_TIMEOUT)
        prepared = await asyncio.to_thread(_confined, command, context, math.ceil(timeout))
        if isinstance(prepared, ToolResult):
            return prepared
        argv, env = prepared
        try:
            # start_new_session: the command gets its own process group, so killpg reaches every child.
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=str(context.workspace),
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return ToolResult.error(f"cannot start the sandbox ({argv[0]}): {exc.strerror}")
        collected: list[str] = []
        size = [0]

        async def pump(stream: asyncio.StreamReader, name: str) -> None:
            while chunk := await stream.read(4096):
                text = chunk.decode("utf-8", errors="replace")
                if size[0] < MAX_RESULT_CHARS * 2:
                    collected.append(text)
                    size[0] += len(text)
                await context.emit_output(text, name)

        assert proc.stdout is not None and proc.stderr is not None
        pumps = asyncio.gather(pump(proc.stdout, "stdout"), pump(proc.stderr, "stderr"))
        try:
            await asyncio.wait_for(asyncio.shield(pumps), timeout)
            code = await proc.wait()
        except TimeoutError:
            _kill_group(proc.pid)
            await proc.wait()
            pumps.cancel()
            return ToolResult(
                "".join(collected) + f"\n[timed out after {timeout:g} s; process group killed]", is_error=True
            )
        except asyncio.CancelledError:
            _kill_group(proc.pid)
            pumps.cancel()
            raise
        return ToolResult("".join(collected) + f"\n[exit status {code}]", is_error=code != 0)


def _confined(command: str, context: ToolContext, cpu_seconds: int) -> tuple[list[str], dict[str, str]] | ToolResult:
    """The sandboxed command line and its environment, or the error result that says why it cannot run."""
    workspace = context.workspace
    if not workspace.is_dir():
        return ToolResult.error(f"the workspace {workspace} is not a folder; nothing was run")
    sandbox = context.confinement()
    problem = sandbox.problem()
    if problem:
        return ToolResult.error(f"commands run only in an OS sandbox and none can be set up here: {problem}")
    why = sandbox.files.why(workspace)
    if why:
        return ToolResult.error(
            f"the workspace {workspace} is {why}; commands run only in a workspace of the person's "
            "(exo serve --workspace DIR)"
        )
    argv = sandbox.argv(command, workspace, network=context.network, cpu_seconds=cpu_seconds)
    return argv, sandbox.environment(workspace)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone: nothing to kill
        os.killpg(pid, signal.SIGKILL)
