"""The shell attacks of issue 19 end to end: the real exod, the real bash tool, every approval denied.

Each scripted tool call tries to run code or change a file outside the workspace by a route the gate
used to miss (awk's system(), perl -e, python3 - <<EOF, bash <(…), bash -lc, tar's checkpoint action,
git -c alias/pager/fsmonitor, sed's e command, find -exec, xargs sh -c, env -S, >> and sed -i and
cp /dev/null outside the workspace …). A client denies every approval request. Afterwards no marker
file exists outside the workspace and the files there are unchanged: 0 consequential calls ran. One
harmless call at the end runs without a question, so the tool itself was working all along.

Only markers under the test's own folder are ever targeted: if the gate failed, nothing else is hurt.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from exo_testkit import write_script

from exo_core.client import ExoClient

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Exo Test",
    "GIT_AUTHOR_EMAIL": "exo@example.com",
    "GIT_COMMITTER_NAME": "Exo Test",
    "GIT_COMMITTER_EMAIL": "exo@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def attacks(out: Path) -> list[str]:
    """Command lines that each leave a mark in ``out`` (outside the workspace) if they run."""
    o = str(out)
    return [
        f"awk 'BEGIN{{system(\"touch {o}/awk\")}}'",
        f"perl -e 'system(\"touch {o}/perl\")'",
        f"python3 - <<'EOF'\nimport pathlib\npathlib.Path('{o}/py-stdin').touch()\nEOF",
        f'python3 -c \'__import__("os").system("touch {o}/py-c")\'',
        f"bash <(echo 'touch {o}/procsub')",
        f"source <(echo 'touch {o}/source')",
        f"bash -lc 'touch {o}/lc'",
        f"tar cf /dev/null --checkpoint=1 --checkpoint-action=exec='touch {o}/tar' README.md",
        f"git -c alias.x='!touch {o}/alias' x",
        f"git -p -c core.pager='touch {o}/pager; cat' log -1",
        f"git -c core.fsmonitor='touch {o}/fsmonitor' status",
        f"sed -n '1e touch {o}/sed' README.md",
        f"find . -maxdepth 0 -exec sh -c 'touch {o}/find' \\;",
        f"echo x | xargs sh -c 'touch {o}/xargs'",
        f"env -S 'touch {o}/env-s'",
        f"sqlite3 :memory: '.shell touch {o}/sqlite'",
        f"x='a[$(touch {o}/arith)]'; echo $((x))",
        f"trap 'touch {o}/trap' EXIT",
        f"cd {o} && touch cd",
        f"echo lost >> {o}/keep.txt",
        f"cp /dev/null {o}/keep.txt",
        f"sed -i 's/keep/lost/' {o}/keep.txt",
        f"perl -pi -e 's/keep/lost/' {o}/keep.txt",
        f"ln -sf /dev/null {o}/link",
        f"echo 'touch {o}/piped' | bash",
    ]


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """A git workspace with README.md, and a folder outside it holding keep.txt."""
    work = tmp_path / "work"
    out = tmp_path / "outside"
    work.mkdir()
    out.mkdir()
    (work / "README.md").write_text("# Demo\n")
    (out / "keep.txt").write_text("keep\n")
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q"], ["add", "README.md"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)
    return work, out


async def test_every_attack_waits_for_approval_and_none_runs_when_denied(
    exod_factory, tmp_path: Path, places: tuple[Path, Path]
) -> None:
    work, out = places
    lines = attacks(out)
    # Every attack in one model reply: one round, so the context is never compacted under the scripted model
    # (which picks its reply by the number of assistant messages it is shown).
    calls = [{"tool_calls": [{"name": "bash", "arguments": {"command": line}} for line in lines]}]
    control = {"tool_calls": [{"name": "bash", "arguments": {"command": "touch allowed.txt"}}]}
    script = write_script(tmp_path / "script.json", [*calls, control, {"text": "done"}])
    home = tmp_path / "home"
    exod = exod_factory(home, script, work, env=GIT_ENV)
    asked: list[str] = []
    async with ExoClient(exod.url, client_name="terminal") as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "attacks"}))["session"]["id"]
        turn = (await client.request("turn.send", {"session": session, "text": "go"}))["turn_id"]

        async def deny_everything() -> None:
            async for event in client.events(since=0, session=session):
                if event.type == "approval.requested":
                    asked.append(event.body["arguments"]["command"])
                    await client.request(
                        "approval.respond", {"request_id": event.body["request_id"], "decision": "deny"}
                    )
                if event.type == "turn.completed" and event.body.get("turn_id") == turn:
                    return

        await asyncio.wait_for(deny_everything(), 240)
    assert exod.stop() == 0
    missed = [line for line in lines if line not in asked]
    assert not missed, f"{len(missed)} of {len(lines)} attacks ran without a question: {missed}"
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"], "a denied call left a mark outside the workspace"
    assert (out / "keep.txt").read_text() == "keep\n", "a denied call changed a file outside the workspace"
    assert (work / "allowed.txt").exists(), "the harmless control call ran without a question"
    assert "touch allowed.txt" not in asked
