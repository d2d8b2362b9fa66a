"""The router's window: the serving route's, a provider's configured one, and a refit when it falls back."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from exo_core.errors import ConfigError
from exo_core.models.catalog import load_catalog
from exo_core.models.router import DEFAULT_HOSTED_WINDOW, ModelRouter
from exo_core.seams.model import ChatMessage, ModelChunk, ModelRequest, TextDelta, WindowedTransport


def script(path: Path, n_ctx: int, replies: list[dict]) -> Path:
    path.write_text(json.dumps({"n_ctx": n_ctx, "replies": replies}), encoding="utf-8")
    return path


def router(tmp_path: Path, big: Path, small: Path) -> ModelRouter:
    config = {
        "models": {
            "providers": {"big": {"kind": "scripted"}, "small": {"kind": "scripted"}},
            "roles": {"main": [f"big:{big}", f"small:{small}"]},
        }
    }
    return ModelRouter(load_catalog(config, env={}), env={})


async def test_the_window_is_the_serving_routes_and_a_fallback_is_refitted(tmp_path: Path) -> None:
    big = script(tmp_path / "big.json", 4096, [{"error": "fatal", "times": 1, "then": {"text": "big"}}] * 3)
    small = script(tmp_path / "small.json", 512, [{"text": "small answered"}] * 3)
    r = router(tmp_path, big, small)
    assert isinstance(r, WindowedTransport)
    window = await r.context_window("main")
    assert window is not None and window.n_ctx == 4096 and window.where == "n_ctx in the model script"
    # An input sized for the big window; the big route fails before output and the small one answers.
    long = ModelRequest(messages=(ChatMessage(role="user", content="word " * 2000),), max_tokens=512)
    text = "".join([c.text async for c in r.stream(long) if isinstance(c, TextDelta)])
    assert text == "small answered"
    small_model = r._transports[(f"small:{small}", "small")]
    sent = small_model.requests[-1]  # type: ignore[attr-defined]
    assert small_model.overflows == 0 and sent.max_tokens == 128  # type: ignore[attr-defined]
    assert sent.messages[-1].content.startswith("word") and "left out to fit" in sent.messages[-1].content
    # While the big route cools down, the window is the small route's.
    window = await r.context_window("main")
    assert window is not None and window.n_ctx == 512


class _Plain:
    """A hosted transport with no window of its own."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        yield TextDelta("ok")


class _Hosted:
    def transport(
        self,
        kind: str,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        provider: str,
        judge_calls: bool = False,
        tls_cert: str = "",
        serial: bool = False,
    ) -> _Plain:
        return _Plain()

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize(("configured", "expected"), [(32768, 32768), (None, DEFAULT_HOSTED_WINDOW)])
async def test_a_hosted_route_has_its_providers_configured_window_or_the_default(
    configured: int | None, expected: int
) -> None:
    provider: dict[str, object] = {"kind": "openai", "base_url": "http://127.0.0.1:9/v1"}
    if configured is not None:
        provider["context_window"] = configured
    config = {"models": {"providers": {"lan": provider}, "roles": {"main": ["lan:qwen"]}}}
    r = ModelRouter(load_catalog(config, env={}), env={}, hosted=_Hosted())
    window = await r.context_window("main")
    assert window is not None and window.n_ctx == expected and not window.exact
    assert window.where == "[models.providers.lan] context_window in config.toml"


def test_a_bad_context_window_is_a_config_error() -> None:
    for bad in (-1, "big", True):
        config = {
            "models": {"providers": {"lan": {"kind": "openai", "base_url": "http://x/v1", "context_window": bad}}}
        }
        with pytest.raises(ConfigError, match="context_window"):
            load_catalog(config, env={})


def test_a_bad_script_window_is_a_config_error(tmp_path: Path) -> None:
    from exo_core.agent.scripted import ScriptedModel

    with pytest.raises(ConfigError, match="n_ctx"):
        ScriptedModel.from_file(script(tmp_path / "s.json", 3, []))
