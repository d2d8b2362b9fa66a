"""The link check: a route beyond this machine without TLS or a key is refused when the config is read.

Every case here is decided by reading the config: nothing connects anywhere (the addresses are
documentation ranges and names that resolve nowhere).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from exo_core.errors import ConfigError
from exo_core.models import load_catalog
from exo_core.seams.link import is_loopback_host
from exo_testkit import ROOT

KEY = "k" * 32


def _laptop(**fields: Any) -> dict[str, Any]:
    return {"models": {"providers": {"laptop": {"kind": "openai", **fields}}, "roles": {"main": ["laptop:m"]}}}


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"base_url": "http://192.0.2.7:8080/v1", "api_key": KEY}, "it is plain HTTP (no TLS)"),
        ({"base_url": "https://192.0.2.7:8080/v1"}, "it has no key (api_key or key_env)"),
        ({"base_url": "http://laptop.local:8080/v1"}, "plain HTTP (no TLS) and it has no key"),
        ({"base_url": "http://[2001:db8::1]:8080/v1", "key_env": ["LAPTOP_KEY"]}, "plain HTTP"),
        # 0.0.0.0 is not loopback: it is whatever answers
        ({"base_url": "http://0.0.0.0:8080/v1", "api_key": KEY}, "plain HTTP"),
    ],
    ids=["lan-plain", "tls-no-key", "mdns-neither", "ipv6-plain", "wildcard"],
)
def test_a_route_beyond_loopback_without_tls_or_a_key_is_refused(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_catalog(_laptop(**fields), env={})
    assert says in info.value.message and "allow_insecure" in info.value.message, info.value.message


@pytest.mark.parametrize(
    "fields",
    [
        {"base_url": "https://192.0.2.7:8080/v1", "api_key": KEY},
        {"base_url": "https://laptop.local:8080/v1", "key_env": ["LAPTOP_KEY"]},
        {"base_url": "http://192.0.2.7:8080/v1", "api_key": KEY, "allow_insecure": ["plain-http"]},
        {"base_url": "http://192.0.2.7:8080/v1", "allow_insecure": ["plain-http", "no-key"]},
        {"base_url": "http://127.0.0.1:8080/v1"},
        {"base_url": "http://127.8.9.10:8080/v1"},
        {"base_url": "http://localhost:11434/v1"},
        {"base_url": "http://[::1]:8080/v1"},
    ],
    ids=["tls-key", "tls-key-env", "opted-plain", "opted-both", "loopback", "loopback-8", "localhost", "ipv6-loop"],
)
def test_tls_and_a_key_or_loopback_or_a_named_opt_in_pass(fields: dict[str, Any]) -> None:
    catalog = load_catalog(_laptop(**fields), env={})
    assert catalog.provider("laptop").base_url == fields["base_url"].rstrip("/")


def test_an_opt_in_covers_only_the_risk_it_names() -> None:
    with pytest.raises(ConfigError, match='allow_insecure = \\["no-key"\\]'):
        load_catalog(_laptop(base_url="http://192.0.2.7/v1", allow_insecure=["plain-http"]), env={})
    with pytest.raises(ConfigError, match="unknown \\['everything'\\]"):
        load_catalog(_laptop(base_url="http://192.0.2.7/v1", allow_insecure=["everything"]), env={})
    with pytest.raises(ConfigError, match="list of names"):
        load_catalog(_laptop(base_url="http://192.0.2.7/v1", allow_insecure="plain-http"), env={})


def test_a_pinned_certificate_needs_https_and_must_be_one() -> None:
    with pytest.raises(ConfigError, match="must start with https"):
        load_catalog(_laptop(base_url="http://127.0.0.1:8080/v1", tls_cert="-----BEGIN CERTIFICATE-----"), env={})
    with pytest.raises(ConfigError, match="tls_cert: the pinned engine certificate is not a PEM certificate"):
        load_catalog(_laptop(base_url="https://192.0.2.7/v1", api_key=KEY, tls_cert="not a certificate"), env={})


def test_the_key_in_config_is_the_routes_credential_and_never_in_a_repr() -> None:
    catalog = load_catalog(_laptop(base_url="https://192.0.2.7/v1", api_key=KEY), env={})
    (credential,) = catalog.credentials("laptop", {})
    assert credential.key == KEY
    assert KEY not in repr(catalog.provider("laptop")) and KEY not in repr(credential)


def test_loopback_is_this_machine_only() -> None:
    assert all(is_loopback_host(h) for h in ("localhost", "LOCALHOST", "127.0.0.1", "127.255.0.1", "::1", "[::1]"))
    assert not any(is_loopback_host(h) for h in ("0.0.0.0", "192.168.1.2", "laptop.local", "localhost.evil", "::"))


def test_exod_and_the_cli_refuse_such_a_config_before_connecting(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        '[models.providers.laptop]\nkind = "openai"\nbase_url = "http://192.0.2.7:8080/v1"\nkey_env = []\n\n'
        '[models.roles]\nmain = ["laptop:m"]\n',
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EXO_HOME", None)
    for args in (["models", "list"], ["serve", "--stdio"]):
        done = subprocess.run(
            [sys.executable, "-m", "exo_core.cli", *args, "--home", str(home)],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        assert done.returncode != 0 and "192.0.2.7 is beyond this machine" in done.stderr, (args, done.stderr)


def _tls_server_context(files: Any) -> Any:
    import ssl

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(files.cert, files.key)
    return context


async def test_the_pinned_certificate_and_the_key_reach_the_engine_and_nothing_else_is_trusted(
    tmp_path: Path,
) -> None:
    """A real HTTPS server on loopback with the certificate `exo models serve` makes: the device trusts it
    when pinned and sends the key; pinned to another certificate, or to none, it refuses the same server."""
    from exo_core.seams.model import ChatMessage, ModelRequest, TextDelta
    from exo_core.seams.home import ExoHome
    from exo_core.models import ModelRouter, RoutesExhaustedError
    from exo_edge.laptop_server import engine_tls

    from .fake_provider import FakeProvider, Reply, openai_chunks

    ours = engine_tls(ExoHome(tmp_path / "laptop"), ["localhost", "127.0.0.1"])
    other = engine_tls(ExoHome(tmp_path / "elsewhere"), ["localhost", "127.0.0.1"])
    server = FakeProvider()
    await server.start(ssl_context=_tls_server_context(ours))
    request = ModelRequest(messages=(ChatMessage("user", "hi"),))

    async def ask(pem: str) -> str:
        fields: dict[str, Any] = {"base_url": server.base_url("laptop"), "api_key": KEY}
        if pem:
            fields["tls_cert"] = pem
        router = ModelRouter(load_catalog(_laptop(**fields), env={}), env={})
        try:
            return "".join([c.text async for c in router.stream(request) if isinstance(c, TextDelta)])
        finally:
            await router.aclose()

    try:
        server.script("laptop", Reply(events=openai_chunks("Paris.")))
        assert await ask(ours.cert_pem()) == "Paris."
        assert server.seen[-1].headers["Authorization"] == f"Bearer {KEY}"
        for pem in (other.cert_pem(), ""):
            with pytest.raises(RoutesExhaustedError, match="cannot reach"):
                await ask(pem)
        assert server.count("laptop") == 1  # the refused handshakes sent nothing
    finally:
        await server.stop()
