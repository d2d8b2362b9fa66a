"""The wired uses: ``exo decide`` on the command line, and toolset narrowing in the agent loop."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from exo_testkit import ROOT

from exo_core.agent.scripted import ScriptedModel
from exo_core.decisions import Decider, signal
from exo_core.decisions.setup import DecisionSettings, ToolsetNarrowing, build_decider
from exo_core.engine.core import Core, CoreOptions
from exo_core.errors import ConfigError, ExoError
from exo_core.seams.home import ExoHome

from .conftest import Scripted


def _exo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args, "--home", str(home)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_exo_decide_prints_the_decision_as_json(tmp_path: Path) -> None:
    out = _exo(tmp_path, "decide", "signal", "No, I said Tuesday.", "--json", "--providers", "rules-only")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result["probabilities"]) == {"correction", "rule", "neither"}
    assert (result["chosen"], result["abstained"], result["provider"]) == ("correction", False, "rules")
    unsure = json.loads(_exo(tmp_path, "decide", "panel", "hmm", "--json", "--providers", "rules-only").stdout)
    assert unsure["provider"] == "rules-only" and unsure["abstained"] is True and unsure["chosen"] is None
    assert unsure["applied"] == "none"
    human = _exo(tmp_path, "decide", "toolset", "git push please", "--providers", "rules-only")
    assert human.returncode == 0 and "shell" in human.stdout


def test_exo_decide_refuses_bad_input_with_a_clear_error(tmp_path: Path) -> None:
    bad = _exo(tmp_path, "decide", "signal", "hello", "--providers", "oracle")
    assert bad.returncode == 2 and "decisions.providers" in bad.stderr
    empty = _exo(tmp_path, "decide", "signal", "   ")
    assert empty.returncode == 2 and "give the text" in empty.stderr
    unrecorded = _exo(tmp_path, "decide", "signal", "hi", "--record", "--providers", "rules-only")
    assert unrecorded.returncode == 2 and "no store" in unrecorded.stderr
    (tmp_path / "config.toml").write_text("[decisions]\nlocal_timeout = -1\n")
    assert "local_timeout" in _exo(tmp_path, "decide", "signal", "hi").stderr


def test_settings_come_from_config_toml() -> None:
    assert DecisionSettings.from_config({}).providers == ("rules-only",)
    custom = DecisionSettings.from_config(
        {"decisions": {"providers": ["hosted"], "hosted_timeout": 1, "toolsets": True}}
    )
    assert custom.providers == ("hosted",) and custom.hosted_timeout == 1.0 and custom.toolsets
    for bad in (
        {"decisions": []},
        {"decisions": {"colour": 1}},
        {"decisions": {"toolsets": "yes"}},
        {"decisions": {"providers": "local"}},
    ):
        with pytest.raises(ConfigError):
            DecisionSettings.from_config(bad)


async def test_the_learning_loop_calls_signal_with_a_decider(tmp_path: Path) -> None:
    decider = build_decider(ExoHome(tmp_path), providers=["rules-only"])
    assert (await signal(decider, "From now on, reply in Portuguese.")).applied == "rule"


class _Chooser:
    def __init__(self, answer: frozenset[str] | None | ExoError) -> None:
        self.answer = answer
        self.asked: list[tuple[str, Sequence[str]]] = []

    async def choose(self, text: str, toolsets: Sequence[str]) -> frozenset[str] | None:
        self.asked.append((text, tuple(toolsets)))
        if isinstance(self.answer, ExoError):
            raise self.answer
        return self.answer


async def _offered(tmp_path: Path, toolsets: object) -> tuple[list[str], object]:
    model = ScriptedModel([{"text": "done"}])
    core = Core.open(
        ExoHome(tmp_path / "home"),
        model=model,
        options=CoreOptions(workspace=tmp_path, synchronous="NORMAL", toolsets=toolsets),
    )  # type: ignore[arg-type]
    await core.__aenter__()
    try:
        session = (await core.engine.handle_raw({"id": "1", "type": "session.create", "body": {}})).to_wire()
        body = {"session": session["result"]["session"]["id"], "text": "commit and push this"}
        await core.engine.handle_raw({"id": "2", "type": "turn.send", "body": body})
        for _ in range(500):
            if model.requests:
                break
            await asyncio.sleep(0.01)
    finally:
        await core.__aexit__(None, None, None)
    return sorted(t["name"] for t in model.requests[0].tools), toolsets


async def test_the_toolset_decision_narrows_what_the_model_sees(tmp_path: Path) -> None:
    everything, _ = await _offered(tmp_path / "a", None)
    assert {"bash", "read_file", "recall", "ui"} <= set(everything)
    narrowed, chooser = await _offered(tmp_path / "b", _Chooser(frozenset({"shell"})))
    assert narrowed == ["bash"]
    assert chooser.asked[0][0] == "commit and push this"  # type: ignore[attr-defined]
    assert {"core", "shell", "memory", "ui"} <= set(chooser.asked[0][1])  # type: ignore[attr-defined]
    failing, _ = await _offered(tmp_path / "c", _Chooser(ExoError("decider broke")))
    assert failing == everything  # a failed decision offers every tool
    unsure, _ = await _offered(tmp_path / "d", _Chooser(None))
    assert unsure == everything


async def test_toolset_narrowing_over_a_decider(tmp_path: Path) -> None:
    narrowing = ToolsetNarrowing(Decider([Scripted("p", {"none": 0.05, "core": 0.9, "shell": 0.05})]))
    assert await narrowing.choose("tidy my notes", ["core", "shell"]) == frozenset({"core"})
    assert await narrowing.choose("thanks!", ["core", "shell", "ui"]) == frozenset()  # rule: small talk, no tools
    unsure = ToolsetNarrowing(Decider([Scripted("p", {"none": 0.4, "core": 0.3, "shell": 0.3})]))
    assert await unsure.choose("tidy my notes", ["core", "shell"]) is None
