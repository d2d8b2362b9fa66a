"""Every generated secret-reading shell form, run through the real ``bash`` tool against a home with real secrets.

The forms (``tests/sandbox_attacks.py``: over 400 of them) build the paths of the token, the signing key,
the policy files, the trust anchor and the store's ledger at run time, read them plain or encoded, copy
them into the workspace, or look for them in the environment, other processes and exod's socket. The
tool is called directly, with no gate in front and no workspace rule: only the sandbox stands between a
form and a secret. ``EXO_HOME`` and ``EXO_TOKEN`` are set in the environment the tool inherits, as
``exod.service`` sets them. Twice: a workspace beside the home, and one inside it (the device's layout).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from sandbox_attacks import Home, forms, leaked, make_home

from exo_core.tools import BashTool, ToolContext

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


async def _run_all(home: Home, workspace: Path) -> tuple[int, list[tuple[str, str, list[str]]]]:
    tool = BashTool()
    gate = asyncio.Semaphore(4)
    found: list[tuple[str, str, list[str]]] = []
    ran = 0

    async def one(category: str, command: str) -> None:
        nonlocal ran
        streamed: list[str] = []

        async def emit(text: str, stream: str) -> None:
            streamed.append(text)

        context = ToolContext(workspace=workspace, call_id="attack", emit_output=emit)
        async with gate:
            result = await tool.run({"command": command, "timeout": 30}, context)
        ran += 1
        secrets_seen = leaked(home, result.content + "".join(streamed))
        if secrets_seen:
            found.append((category, command, secrets_seen))

    await asyncio.gather(*(one(form.category, form.command) for form in forms(home)))
    return ran, found


@pytest.mark.parametrize("layout", ["beside the home", "inside the home"])
def test_no_form_reads_a_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    home = make_home(tmp_path)
    workspace = tmp_path / "ws" if layout == "beside the home" else home.root / "workspace"
    workspace.mkdir()
    monkeypatch.setenv("EXO_HOME", str(home.root))
    monkeypatch.setenv("EXO_TOKEN", home.env_token)
    before = {path: path.read_bytes() for path in home.root.rglob("*") if path.is_file()}
    ran, found = asyncio.run(_run_all(home, workspace))
    assert ran == len(forms(home)) >= 300
    assert found == [], f"{len(found)} of {ran} forms read a secret: {found[:5]}"
    assert leaked(home, b"", workspace) == [], "a secret reached a file in the workspace"
    changed = [path for path, data in before.items() if path.read_bytes() != data]
    assert changed == [], f"exod's files were changed: {changed}"
