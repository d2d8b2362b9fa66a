"""Device settings: defaults, the [device] table, and typed errors for bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from device.runner import DeviceOptions, load_config
from device.settings import DeviceConfig, PinMap, config_from_mapping
from exo_core.errors import ConfigError
from exo_core.seams.home import ExoHome


def test_defaults_and_a_full_table() -> None:
    assert config_from_mapping({}) == DeviceConfig()
    config = config_from_mapping(
        {"screen": "st7789", "width": 240, "height": 240, "follow_up_seconds": 30, "pins": {"talk": 5, "next": 6}}
    )
    assert config.pins == PinMap(talk=5, allow=27, deny=22, next=6)
    assert config.follow_up_seconds == 30.0 and not config.mono
    assert DeviceConfig(screen="ssd1306").mono and DeviceConfig(width=240, height=240).mono is False


@pytest.mark.parametrize(
    "table, field",
    [
        ({"scren": "virtual"}, "scren"),
        ({"width": "128"}, "width"),
        ({"width": True}, "width"),
        ({"screen": "crt"}, "screen"),
        ({"stt": "cloud"}, "stt"),
        ({"pins": {"talk": 17, "allow": 17}}, "pins"),
        ({"pins": {"shout": 4}}, "pins"),
        ({"pins": {"talk": 99}}, "pins"),
        ({"pins": [17]}, "pins"),
        ({"long_press_seconds": 0}, "long_press_seconds"),
        ({"width": 10}, "width"),
    ],
)
def test_bad_settings_name_their_key(table: dict, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_mapping(table)
    assert err.value.field == field


def test_config_toml_and_command_line(tmp_path: Path) -> None:
    home = ExoHome(tmp_path)
    (tmp_path / "config.toml").write_text(
        '[device]\nscreen = "ssd1306"\nstt = "pocketsphinx"\n[device.pins]\ntalk = 4\n'
    )
    config = load_config(home, DeviceOptions(mock=True, size="240x240", stt="none"))
    assert (config.screen, config.width, config.height, config.stt, config.pins.talk) == (
        "virtual",
        240,
        240,
        "none",
        4,
    )
    with pytest.raises(ConfigError, match="--size"):
        load_config(home, DeviceOptions(size="big"))
    (tmp_path / "config.toml").write_text("device = 3\n")
    with pytest.raises(ConfigError):
        load_config(home, DeviceOptions())
