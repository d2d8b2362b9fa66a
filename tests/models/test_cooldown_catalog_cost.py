"""Cooldown rules, catalog loading and overrides, Retry-After parsing, cost totals."""

from __future__ import annotations

import email.utils

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exo_core.errors import ConfigError
from exo_core.models import load_catalog, parse_route, usage_cost
from exo_core.models.catalog import ModelPrice, Route
from exo_core.models.cooldown import CooldownBook, probe_delay
from exo_core.seams.failures import FailureKind
from exo_core.seams.model import UsageChunk
from exo_edge.hosted.http import kind_for_status, parse_retry_after

from .fake_provider import FakeClock


@pytest.mark.parametrize(
    "kind,seconds",
    [
        (FailureKind.RATE_LIMIT, 60),
        (FailureKind.SERVER, 30),
        (FailureKind.NETWORK, 15),
        (FailureKind.AUTH, 3600),
        (FailureKind.BILLING, 3600),
        (FailureKind.NOT_FOUND, 600),
        (FailureKind.UNAVAILABLE, 300),
    ],
)
def test_cooldown_by_kind(clock: FakeClock, kind: FailureKind, seconds: float) -> None:
    book = CooldownBook(clock)
    book.fail("c", kind)
    assert book.remaining("c") == seconds
    clock.advance(seconds)
    assert book.remaining("c") == 0


def test_bad_request_does_not_cool(clock: FakeClock) -> None:
    book = CooldownBook(clock)
    book.fail("c", FailureKind.BAD_REQUEST)
    assert book.remaining("c") == 0 and book.get("c") is None


def test_rate_limit_with_retry_after_honoured_for_shared_credentials(clock: FakeClock) -> None:
    book = CooldownBook(clock)
    book.fail("c", FailureKind.RATE_LIMIT, retry_after=6 * 3600, lone=False)
    assert book.remaining("c") == 6 * 3600


def test_lone_probe_never_later_than_stated_reset(clock: FakeClock) -> None:
    book = CooldownBook(clock)
    book.fail("c", FailureKind.RATE_LIMIT, retry_after=30, lone=True)
    assert book.remaining("c") == 30  # max(60, ..) capped at the 30 s reset
    book.fail("d", FailureKind.RATE_LIMIT, retry_after=600, lone=True)
    assert book.remaining("d") == 60


def test_failed_probes_restamp_shorter_windows(clock: FakeClock) -> None:
    book = CooldownBook(clock)
    window = 10 * 3600.0
    book.fail("c", FailureKind.RATE_LIMIT, retry_after=window, lone=True)
    reset = clock() + window
    waits = []
    while book.remaining("c") > 0:
        wait = book.remaining("c")
        waits.append(wait)
        clock.advance(wait)
        if clock() >= reset:
            break
        book.fail("c", FailureKind.RATE_LIMIT, lone=True)  # the probe fails, no new statement
    assert waits[0] == pytest.approx(0.02 * window)
    assert all(b <= a + 1e-9 for a, b in zip(waits, waits[1:]))  # never longer
    assert clock() == pytest.approx(reset)  # the last probe lands exactly on the reset


@given(st.floats(min_value=0.001, max_value=1e7, allow_nan=False))
def test_probe_delay_bounds(remaining: float) -> None:
    d = probe_delay(remaining)
    assert 0 < d <= remaining
    assert d == pytest.approx(min(remaining, max(60.0, 0.02 * remaining)))


def test_retry_after_forms() -> None:
    assert parse_retry_after("120") == 120
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 90, usegmt=True)
    assert parse_retry_after(date, now=now) == pytest.approx(90)
    assert parse_retry_after(email.utils.formatdate(now - 90, usegmt=True), now=now) == 0


def test_status_kinds() -> None:
    assert {kind_for_status(s) for s in (400, 413, 422)} == {FailureKind.BAD_REQUEST}
    assert kind_for_status(401) is FailureKind.AUTH and kind_for_status(403) is FailureKind.AUTH
    assert kind_for_status(429) is FailureKind.RATE_LIMIT
    assert kind_for_status(529) is FailureKind.RATE_LIMIT
    assert kind_for_status(502) is FailureKind.SERVER


def test_packaged_catalog_defaults() -> None:
    cat = load_catalog({}, env={})
    # the standard board profile's model (exo_core/models/boards.py), free like every local model
    assert [str(r) for r in cat.roles["main"]] == ["local:qwen2.5-coder-0.5b-instruct"]
    assert cat.price(Route("local", "qwen2.5-coder-0.5b-instruct")) == ModelPrice(0.0, 0.0)
    assert cat.provider("openai").key_env[0] == "OPENAI_API_KEY"
    assert cat.price(Route("anthropic", "claude-sonnet-4-0")) is not None


def test_user_config_overrides_catalog() -> None:
    config = {
        "models": {
            "providers": {
                "laptop": {"kind": "openai", "base_url": "https://10.0.0.2:8080/v1/", "api_key": "k" * 32},
                "openai": {"models": {"gpt-4o-mini": {"input": 9.0}}},
            },
            "roles": {"main": ["laptop:qwen", "local:gemma-3-270m"], "aux": "openai:gpt-4o-mini"},
            "timeouts": {"first_byte": 2},
        }
    }
    cat = load_catalog(config, env={})
    assert [str(r) for r in cat.roles["main"]] == ["laptop:qwen", "local:gemma-3-270m"]
    assert [str(r) for r in cat.roles["aux"]] == ["openai:gpt-4o-mini"]
    assert cat.provider("laptop").base_url == "https://10.0.0.2:8080/v1"
    assert cat.price(Route("openai", "gpt-4o-mini")).input == 9.0  # type: ignore[union-attr]
    assert cat.price(Route("openai", "gpt-4o-mini")).output == 0.60  # type: ignore[union-attr]
    assert cat.timeouts.first_byte == 2.0
    env_cat = load_catalog(config, env={"EXO_MODELS_MAIN": "openai:gpt-4o, local:gemma-3-270m"})
    assert [str(r) for r in env_cat.roles["main"]] == ["openai:gpt-4o", "local:gemma-3-270m"]


def test_every_key_variable_is_a_credential() -> None:
    cat = load_catalog({}, env={})
    creds = cat.credentials("openai", {"OPENAI_API_KEY": "sk-secret", "OPENAI_API_KEY_3": "c"})
    assert [c.id for c in creds] == ["openai#OPENAI_API_KEY", "openai#OPENAI_API_KEY_3"]
    assert "sk-secret" not in repr(creds[0])  # keys never printed
    assert cat.credentials("openai", {}) == ()
    assert [c.id for c in cat.credentials("ollama", {})] == ["ollama"]


@pytest.mark.parametrize(
    "config,needle",
    [
        ({"models": {"roles": {"main": ["nocolon"]}}}, "provider:model"),
        ({"models": {"roles": {"main": ["ghost:m"]}}}, "unknown model provider 'ghost'"),
        ({"models": {"roles": {"boss": []}}}, "unknown roles"),
        ({"models": {"providers": {"x": {"kind": "grpc"}}}}, "kind"),
        ({"models": {"providers": {"x": {"kind": "openai", "base_url": "ftp://h"}}}}, "base_url"),
        ({"models": {"providers": {"openai": {"models": {"m": {"input": -1}}}}}}, "non-negative"),
        ({"models": "yes"}, "[models] must be a table"),
    ],
)
def test_bad_config_is_a_clear_config_error(config: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_catalog(config, env={})
    assert needle in info.value.message


def test_parse_route_keeps_colons_in_model() -> None:
    assert parse_route("ollama:qwen2.5:0.5b") == Route("ollama", "qwen2.5:0.5b")


def test_cost_without_cache_rates_counts_cache_at_the_input_rate() -> None:
    price = ModelPrice(input=2.0, output=8.0)
    u = UsageChunk(input_tokens=1000, output_tokens=500, cache_read_tokens=200)
    assert usage_cost(price, u) == pytest.approx((1000 * 2.0 + 500 * 8.0) / 1e6)
