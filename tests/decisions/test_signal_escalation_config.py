"""``[decisions]`` escalation settings: which route is the larger model, and bad values as typed errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.decisions import Decider
from exo_core.decisions.setup import DecisionSettings
from exo_core.decisions.signal_escalation import MAX_QUOTED, build_signal_settler, larger_route, signal_wording
from exo_core.decisions.uses import SIGNAL
from exo_core.errors import ConfigError
from exo_core.seams.home import ExoHome

LAPTOP = {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "key_env": []}


def _config(main: list[str], decisions: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"models": {"providers": {"laptop": LAPTOP}, "roles": {"main": main}}, "decisions": decisions or {}}


@pytest.mark.parametrize(
    ("main", "decisions", "route"),
    [
        (["laptop:big", "local:qwen2.5-coder-0.5b-instruct"], {}, "laptop:big"),
        (["local:qwen2.5-coder-0.5b-instruct", "laptop:big"], {}, "laptop:big"),  # the first one off the device
        (["local:qwen2.5-coder-0.5b-instruct"], {}, None),  # nothing larger is configured: no larger model
        (["laptop:big"], {"larger": "none"}, None),
        (["local:qwen2.5-coder-0.5b-instruct"], {"larger": "laptop:other"}, "laptop:other"),
    ],
)
def test_the_larger_model_is_the_first_main_route_off_the_device(
    main: list[str], decisions: dict[str, Any], route: str | None
) -> None:
    config = _config(main, decisions)
    assert larger_route(config, DecisionSettings.from_config(config), env={}) == route


def test_a_larger_route_the_catalog_does_not_know_is_a_config_error_naming_the_key() -> None:
    config = _config(["laptop:big"], {"larger": "nowhere:big"})
    with pytest.raises(ConfigError, match="decisions.larger"):
        larger_route(config, DecisionSettings.from_config(config), env={})


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"larger": 5}, "decisions.larger"),
        ({"ask_person": "yes"}, "decisions.ask_person"),
        ({"show_draft": 1}, "decisions.show_draft"),
        ({"larger_timeout": 0}, "decisions.larger_timeout"),
        ({"larger_timeout": 301}, "decisions.larger_timeout"),
        ({"ask_timeout": True}, "decisions.ask_timeout"),
        ({"ask_timeout": 3601}, "decisions.ask_timeout"),
        ({"defer_below": 1.5}, "decisions.defer_below"),
        ({"defer_below": -0.1}, "decisions.defer_below"),
        ({"defer_below": True}, "decisions.defer_below"),
        ({"defer_below": "0.9"}, "decisions.defer_below"),
        ({"defer_below": float("nan")}, "decisions.defer_below"),
    ],
)
def test_bad_escalation_settings_are_refused_by_name(table: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        DecisionSettings.from_config({"decisions": table})


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["larger", "larger_timeout", "ask_person", "ask_timeout", "show_draft", "defer_below"]),
        st.one_of(st.none(), st.booleans(), st.integers(-10, 5000), st.floats(allow_nan=True), st.text(max_size=20)),
    )
)
def test_any_escalation_table_is_settings_or_a_config_error(table: dict[str, Any]) -> None:
    try:
        found = DecisionSettings.from_config({"decisions": table})
    except ConfigError:
        return
    assert 0 < found.larger_timeout <= 300 and 0 < found.ask_timeout <= 3600
    assert isinstance(found.larger, str) and isinstance(found.ask_person, bool)
    assert isinstance(found.show_draft, bool)
    assert 0 <= found.defer_below <= 1


def test_the_person_is_asked_in_their_own_words_and_one_line_per_option() -> None:
    long = "Please " + "really " * 100 + "shorter."
    wording = signal_wording(long)
    assert len(wording.options) == len(SIGNAL.options)
    assert wording.text.startswith('Should I learn from "Please really') and len(wording.text) < MAX_QUOTED + 40
    assert signal_wording("No exclamation  marks.\nKeep it shorter.").text == (
        'Should I learn from "No exclamation marks. Keep it shorter."?'
    )


async def test_exods_settler_defers_below_the_configured_bar(tmp_path: Path) -> None:
    """``defer_below`` reaches the settler exod builds: 0.9 by default, the home's own value when it sets one."""
    fresh = ExoHome(tmp_path / "fresh")
    settler = build_signal_settler(fresh, Decider([]))
    assert settler.escalation.defer_below == 0.9
    await settler.aclose()
    tuned = ExoHome(tmp_path / "tuned")
    tuned.root.mkdir(parents=True)
    (tuned.root / "config.toml").write_text("[decisions]\ndefer_below = 0.75\n", encoding="utf-8")
    settler = build_signal_settler(tuned, Decider([]))
    assert settler.escalation.defer_below == 0.75
    await settler.aclose()
