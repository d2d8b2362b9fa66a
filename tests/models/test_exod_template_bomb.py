"""A real Qwen GGUF whose chat template hides a bomb: exod stops it by its limits and honours SIGTERM.

The copy carries the real template plus a loop that runs only when a message
says the trigger, so ``exo models add`` (which renders sample conversations)
accepts it, as it would a file crafted to pass. At a turn the render runs
under the limits (exo_edge/template_limits.py): the turn ends with a typed
error naming the template, and a SIGTERM sent while the bomb renders ends exod
within seconds (it used to spin on, ignoring SIGTERM for 30 s).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from exo_edge.gguf import read_gguf_header
from exo_edge.manifest import find_manifest
from exo_edge.paths import locate_model_file

ROOT = Path(__file__).resolve().parents[2]
TRIGGER = "RUN THE TEMPLATE BOMB"
# Allowed work per step (a 900,000-character replace), so the time limit, not the step count, stops it.
BOMB = (
    "{% for m in messages %}{% if m['content'] is string and '" + TRIGGER + "' in m['content'] %}"
    "{% set s = 'x' * 900000 %}{% for i in range(100000) %}{% for j in range(100000) %}"
    "{% set t = s|replace('x', 'y') %}{% endfor %}{% endfor %}{% endif %}{% endfor %}"
)
_KEY = b"tokenizer.chat_template"
_STRING = 8


def with_template(source: Path, dest: Path, template: str) -> None:
    """Copy the GGUF ``source`` to ``dest`` with its chat template replaced (tensor data moved, not changed)."""
    header = read_gguf_header(source)
    with source.open("rb") as fh:
        head = fh.read(header.header_bytes)
    key_at = head.index(struct.pack("<Q", len(_KEY)) + _KEY)
    value_at = key_at + 8 + len(_KEY)
    vtype, length = struct.unpack_from("<IQ", head, value_at)
    assert vtype == _STRING
    end = value_at + 12 + length
    encoded = template.encode("utf-8")
    new_head = head[:value_at] + struct.pack("<IQ", _STRING, len(encoded)) + encoded + head[end:]
    alignment = int(header.metadata.get("general.alignment", 32))
    padding = -len(new_head) % alignment
    with source.open("rb") as src, dest.open("wb") as out:
        out.write(new_head + b"\0" * padding)
        src.seek(header.data_offset)
        shutil.copyfileobj(src, out, 1 << 20)


def exo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_MODEL")}
    env.update({"EXO_HOME": str(home), "PYTHONPATH": str(ROOT)})
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


async def _turn(client: Any, session: str, text: str, started: asyncio.Event | None = None) -> dict[str, Any]:
    turn = (await client.request("turn.send", {"session": session, "text": text}))["turn_id"]
    async for event in client.events(session=session):
        if event.type == "turn.started" and started is not None:
            started.set()
        if event.type == "turn.completed" and event.body.get("turn_id", turn) == turn:
            return dict(event.body)
    raise AssertionError("event stream ended before turn.completed")


@pytest.mark.model
@pytest.mark.slow
async def test_a_template_bomb_is_stopped_and_exod_honours_sigterm_while_it_runs(tmp_path: Path) -> None:
    for module in ("llama_cpp", "exo_testkit"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (scripts/setup.sh)")
    qwen = locate_model_file(find_manifest("qwen2.5-coder-0.5b-instruct").primary_file.name)
    if qwen is None:
        pytest.skip("the Qwen 0.5B model is not fetched on this machine (run `exo models fetch`)")
    from exo_core.client.client import ExoClient
    from exo_testkit import Exod, write_script

    real = read_gguf_header(qwen).chat_template
    assert real is not None
    bombed = tmp_path / "qwen-bomb.gguf"
    with_template(qwen, bombed, real + BOMB)
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    home.mkdir()
    added = exo(home, "models", "add", str(bombed), "--name", "qwen-bomb")
    assert added.returncode == 0, added.stdout + added.stderr  # the samples never say the trigger
    (home / "config.toml").write_text('[models.roles]\nmain = ["local:qwen-bomb"]\n\n[models.local]\nn_ctx = 2048\n')
    exod = Exod(home, write_script(tmp_path / "unused.json", []), ws, extra=["--model", "local"]).start(timeout=120)
    try:
        async with ExoClient(exod.url) as client:
            await client.hello()
            session = (await client.request("session.create", {"title": "bomb"}))["session"]["id"]
            # The bomb (the first turn also loads the model): stopped by the render's time limit, the
            # turn ends with a typed error naming the template, and exod serves the next turn.
            stopped = await asyncio.wait_for(_turn(client, session, TRIGGER), 600)
            assert stopped.get("error", "").startswith("template_limit: the model's chat template"), stopped
            begun = time.monotonic()
            again = await asyncio.wait_for(_turn(client, session, TRIGGER), 600)
            took = time.monotonic() - begun
            assert again.get("error", "").startswith("template_limit"), again
            # Once more, and SIGTERM while the bomb renders: exod exits within seconds.
            second = (await client.request("session.create", {"title": "again"}))["session"]["id"]
            started = asyncio.Event()
            running = asyncio.ensure_future(_turn(client, second, TRIGGER, started))
            await asyncio.wait_for(started.wait(), 120)
            await asyncio.sleep(max(took - 2.0, 0.5))  # a render is under way by then
            assert exod.proc is not None and exod.proc.poll() is None
            sent = time.monotonic()
            exod.proc.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(exod.proc.wait, 30)
            exited = time.monotonic() - sent
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
    finally:
        exod.stop()
    print(f"a bomb turn ended after {took:.2f} s; exod exited {exited:.2f} s after SIGTERM (code {code})")
    # The product's bound is 5 s: measured 2.7-2.8 s mid-render beside 1.9-2.3 s for an idle exod (load 35 on
    # 2 cores). The test allows 10 s because that machine's load alone has stretched a shutdown past 5 s;
    # an unbounded render never ended at all (exod ignored SIGTERM for 30 s and more).
    assert exited <= 10.0, f"exod took {exited:.1f} s to exit after SIGTERM"
