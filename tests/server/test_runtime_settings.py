"""models.set, config.get and config.set against a real exod whose model is the router over scripted routes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from exo_core.client import ExoClient
from exo_core.engine.settings import set_toml_value
from exo_core.errors import BadBodyError, ConfigError, ExoError, NotFoundError
from exo_testkit import write_script

CONFIG = """# written by the person; the comment must survive
[models.providers.scripted]
kind = "scripted"   # route model part = a script file

[models.roles]
main = [
    "scripted:{a}",
]
"""


async def turn(client: ExoClient, session: str, text: str, on_first_delta: Any = None) -> str:
    """Send a turn; the assistant's final text. ``on_first_delta`` runs while the reply streams."""
    since = (await client.request("events.subscribe", {"since": 0, "limit": 1}))["head"]
    await client.request("turn.send", {"session": session, "text": text})
    reply = ""
    async for event in client.events(since=since, session=session):
        if event.type == "message.delta" and on_first_delta is not None:
            await on_first_delta()
            on_first_delta = None
        if event.type == "message.completed" and event.body["role"] == "assistant":
            reply = event.body["content"]
        if event.type == "turn.completed":
            return reply
    raise AssertionError("the event stream ended before the turn completed")


async def refused(client: ExoClient, command: str, body: dict[str, Any]) -> ExoError:
    with pytest.raises(ExoError) as info:
        await client.request(command, body)
    return info.value


async def switch_and_break(url: str, b: Path, config: Path) -> dict[str, Any]:
    async with ExoClient(url, client_name="laptop") as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "routes"}))["session"]["id"]
        head = (await client.request("events.subscribe", {"since": 0, "limit": 1}))["head"]
        out: dict[str, Any] = {}

        async def switch() -> None:  # while script A's reply is streaming
            out["set"] = await client.request("models.set", {"role": "main", "routes": [f"scripted:{b}"]})

        out["first"] = await turn(client, session, "hello", switch)
        page = await client.request("events.subscribe", {"since": head})
        out["notices"] = [e["body"]["text"] for e in page["events"] if e["type"] == "notice"]
        out["second"] = await turn(client, session, "again")
        before = config.read_bytes()
        out["errors"] = [
            await refused(client, "models.set", {"role": "boss", "routes": [f"scripted:{b}"]}),
            await refused(client, "models.set", {"role": "main", "routes": ["no-colon"]}),
            await refused(client, "models.set", {"role": "aux", "routes": ["nosuch:model"]}),
            await refused(client, "models.set", {"role": "main", "routes": []}),
            await refused(client, "config.set", {"key": "context.nope", "value": 1}),
            await refused(client, "config.set", {"key": "context.tail", "value": "many"}),
            await refused(client, "config.set", {"key": "decisions.toolsets", "value": 1}),
            await refused(client, "config.get", {"key": "nope"}),
        ]
        out["unchanged"] = config.read_bytes() == before
        out["third"] = await turn(client, session, "still B?")
        out["settle"] = await client.request("config.set", {"key": "context.settle_seconds", "value": 2.5})
        out["toolsets"] = await client.request("config.set", {"key": "decisions.toolsets", "value": True})
        out["all"] = await client.request("config.get", {})
        return out


async def after_restart(url: str) -> dict[str, Any]:
    async with ExoClient(url, client_name="laptop") as client:
        await client.hello()
        session = (await client.request("session.create", {"title": "after"}))["session"]["id"]
        return {
            "reply": await turn(client, session, "who answers?"),
            "settings": (await client.request("config.get", {}))["settings"],
        }


def test_models_set_switches_the_route_persists_and_refuses_bad_input(tmp_path: Path, exod_factory: Any) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    a = write_script(tmp_path / "a.json", [{"text": "from A, slowly", "delay": 0.1, "chunk": 2}] * 4)
    b = write_script(tmp_path / "b.json", [{"text": "from B"}] * 4)
    config = home / "config.toml"
    config.write_text(CONFIG.format(a=a), encoding="utf-8")
    exod = exod_factory(home, a, ws, extra=["--model", "local"])  # the router, reading [models.roles]
    out = asyncio.run(switch_and_break(exod.url, b, config))

    assert out["first"] == "from A, slowly", "a reply already streaming is not switched"
    assert out["second"] == "from B" and out["third"] == "from B"
    assert out["set"] == {"role": "main", "routes": [f"scripted:{b}"], "chain": [f"scripted:{b}"]}
    assert out["notices"] == [f"model role main now routes to scripted:{b}"]
    codes = [(e.code, e.field) for e in out["errors"]]
    assert codes == [
        ("bad_body", "role"),
        ("bad_body", "routes"),
        ("bad_body", "routes"),
        ("bad_body", "routes"),
        ("not_found", "key"),
        ("bad_body", "value"),
        ("bad_body", "value"),
        ("not_found", "key"),
    ]
    assert "context.settle_seconds" in out["errors"][4].message and "nosuch" in out["errors"][2].message
    assert out["unchanged"], "a refused change writes nothing"
    assert out["settle"] == {"key": "context.settle_seconds", "value": 2.5, "previous": 60.0, "applies": "now"}
    assert out["toolsets"]["applies"] == "restart" and out["toolsets"]["previous"] is False
    assert out["all"]["settings"]["context.settle_seconds"] == {"value": 2.5, "applies": "now"}
    text = config.read_text(encoding="utf-8")
    assert text.startswith("# written by the person") and 'kind = "scripted"   # route' in text
    assert f'main = ["scripted:{b}"]' in text and str(a) not in text

    assert exod.stop() == 0
    again = exod_factory(home, a, ws, extra=["--model", "local"])
    restarted = asyncio.run(after_restart(again.url))
    assert restarted["reply"] == "from B", "the route chosen over the protocol survives a restart"
    assert restarted["settings"]["context.settle_seconds"] == {"value": 2.5, "applies": "now"}
    assert restarted["settings"]["decisions.toolsets"] == {"value": True, "applies": "restart"}


def test_models_set_needs_the_router(tmp_path: Path, exod_factory: Any) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    exod = exod_factory(home, write_script(tmp_path / "s.json", []), ws)  # --model scripted:PATH: no router

    async def go() -> ExoError:
        async with ExoClient(exod.url, client_name="laptop") as client:
            return await refused(client, "models.set", {"role": "main", "routes": ["local:gemma-3-270m"]})

    error = asyncio.run(go())
    assert error.code == "unsupported" and "router" in error.message
    assert not (home / "config.toml").exists()


def test_set_toml_value_keeps_the_file_and_refuses_layouts_it_cannot_edit() -> None:
    text = 'store = "s"\n\n[context]\n# why\ntail = 12\nview_budget = 6000\n'
    out = set_toml_value(text, "context", "tail", 20)
    assert out == 'store = "s"\n\n[context]\n# why\ntail = 20\nview_budget = 6000\n'
    assert set_toml_value("", "models.roles", "aux", ["a:b"]) == '[models.roles]\naux = ["a:b"]\n'
    assert set_toml_value(out, "decisions", "toolsets", True).endswith("\n[decisions]\ntoolsets = true\n")
    with pytest.raises(ConfigError, match="by hand"):
        set_toml_value('[models]\nroles = {main = ["a:b"]}\n', "models.roles", "main", ["c:d"])
    assert issubclass(NotFoundError, ExoError) and issubclass(BadBodyError, ExoError)
