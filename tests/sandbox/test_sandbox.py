"""The sandbox's walls, one at a time, through the real ``bash`` tool: environment, network, limits, refusals."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from exo_core.sandbox import ExodFiles, Sandbox, SandboxLimits
from exo_core.tools import BashTool, ToolContext, ToolResult

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


async def _no_output(text: str, stream: str) -> None:
    return None


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "exohome"
    (home / "keys").mkdir(parents=True)
    (home / "token").write_text("tok-" + "x" * 40 + "\n")
    (home / "gate.toml").write_text("# the person's policy\n")
    return home


def _run(
    command: str,
    workspace: Path,
    sandbox: Sandbox,
    *,
    network: bool = False,
    timeout: float = 30,
) -> ToolResult:
    context = ToolContext(workspace=workspace, call_id="c", emit_output=_no_output, sandbox=sandbox, network=network)
    return asyncio.run(BashTool().run({"command": command, "timeout": timeout}, context))


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Path, Path, Sandbox]]:
    home = _home(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    yield home, ws, Sandbox(ExodFiles.of(home, stores=(home / "store",), workspaces=(ws,)))


@needs_bwrap
def test_the_workspace_is_writable_and_the_system_read_only(world: tuple[Path, Path, Sandbox]) -> None:
    home, ws, sandbox = world
    result = _run("echo made > made.txt && cat made.txt && touch /usr/x; echo rc=$?", ws, sandbox)
    assert "made" in result.content and "rc=1" in result.content, result.content
    assert (ws / "made.txt").read_text() == "made\n"


@needs_bwrap
def test_the_environment_is_an_allowlist(world: tuple[Path, Path, Sandbox], monkeypatch: pytest.MonkeyPatch) -> None:
    home, ws, sandbox = world
    monkeypatch.setenv("EXO_HOME", str(home))
    monkeypatch.setenv("EXO_TOKEN", "envtoken-should-not-pass")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-pass")
    result = _run("env; cat /proc/1/environ | tr '\\0' '\\n'", ws, sandbox)
    assert "EXO_" not in result.content and "should-not-pass" not in result.content, result.content
    assert "PATH=" in result.content


@needs_bwrap
def test_policy_files_cannot_be_written_or_read_after_an_allow(world: tuple[Path, Path, Sandbox]) -> None:
    """The issue's attack: one allowed ``printf ... > $EXO_HOME/gate.toml`` rewrote the policy."""
    home, ws, sandbox = world
    result = _run(f"printf 'denied = []\\n' > {home}/gate.toml; cat {home}/gate.toml {home}/token", ws, sandbox)
    assert (home / "gate.toml").read_text() == "# the person's policy\n"
    assert "tok-" not in result.content and result.is_error


@needs_bwrap
def test_the_network_is_off_unless_the_gate_allowed_it(world: tuple[Path, Path, Sandbox]) -> None:
    home, ws, sandbox = world
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    accepted: list[bool] = []

    def accept() -> None:
        listener.settimeout(20)
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        accepted.append(True)
        conn.close()

    probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3); print('connected')\""
    off = _run(probe, ws, sandbox)
    assert "connected" not in off.content and off.is_error
    thread = threading.Thread(target=accept)
    thread.start()
    on = _run(probe, ws, sandbox, network=True)
    thread.join()
    listener.close()
    assert "connected" in on.content and accepted, on.content


@needs_bwrap
def test_cpu_time_and_file_size_are_limited(tmp_path: Path) -> None:
    home = _home(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    limits = SandboxLimits(cpu_seconds=1, file_bytes=1 << 20)
    sandbox = Sandbox(ExodFiles.of(home, workspaces=(ws,)), limits=limits)
    spin = _run("while :; do :; done", ws, sandbox, timeout=60)
    assert spin.is_error and "timed out" not in spin.content, spin.content  # SIGXCPU, long before the timeout
    big = _run("head -c 3000000 /dev/zero > big; echo rc=$?", ws, sandbox)
    assert (ws / "big").stat().st_size <= 1 << 20 and "rc=0" not in big.content
    limited = _run("ulimit -t; ulimit -Hf; ulimit -Hu; ulimit -t 99999 2>&1", ws, sandbox)
    assert limited.content.split()[:3] == ["1", "1024", str(limits.processes)], limited.content
    assert "not permitted" in limited.content or "cannot modify" in limited.content


@needs_bwrap
@pytest.mark.skipif(os.geteuid() == 0, reason="root is exempt from RLIMIT_NPROC (systemd's TasksMax holds it)")
def test_processes_are_limited(tmp_path: Path) -> None:
    home = _home(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    sandbox = Sandbox(ExodFiles.of(home, workspaces=(ws,)), limits=SandboxLimits(processes=20))
    result = _run("for i in $(seq 60); do sleep 2 & done 2>&1; wait; echo done", ws, sandbox)
    assert "Resource temporarily unavailable" in result.content or "fork" in result.content, result.content


def test_without_bubblewrap_the_shell_refuses_and_says_why(world: tuple[Path, Path, Sandbox]) -> None:
    home, ws, _ = world
    sandbox = Sandbox(ExodFiles.of(home, workspaces=(ws,)), bwrap=str(ws / "no-bwrap-here"))
    result = _run(f"touch {ws}/ran", ws, sandbox)
    assert result.is_error and "bubblewrap" in result.content and "apt install bubblewrap" in result.content
    assert not (ws / "ran").exists()


def test_a_broken_sandbox_is_refused_not_bypassed(world: tuple[Path, Path, Sandbox]) -> None:
    """A bwrap that cannot make namespaces (a seccomp filter, no user namespaces) fails its check: nothing runs."""
    home, ws, _ = world
    fake = ws / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    sandbox = Sandbox(ExodFiles.of(home, workspaces=(ws,)), bwrap=str(fake))
    result = _run(f"touch {ws}/ran", ws, sandbox)
    assert result.is_error and "No permissions to create new namespace" in result.content
    assert not (ws / "ran").exists()


@needs_bwrap
def test_a_hard_link_to_a_secret_elsewhere_stops_every_command(world: tuple[Path, Path, Sandbox]) -> None:
    home, ws, sandbox = world
    os.link(home / "token", ws.parent / "token-copy")
    result = _run("cat ../token-copy", ws, sandbox)
    assert result.is_error and "hard link" in result.content and "tok-" not in result.content


@needs_bwrap
def test_the_home_itself_is_never_a_workspace(world: tuple[Path, Path, Sandbox]) -> None:
    home, ws, sandbox = world
    result = _run("cat token", home, sandbox)
    assert result.is_error and "tok-" not in result.content and "workspace" in result.content
