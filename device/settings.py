"""The device's settings: pin map, screen, voice engines and timings.

They live in the ``[device]`` table of ``$EXO_HOME/config.toml``; every key
has a default, so an empty file works on the reference wiring::

    [device]
    screen = "ssd1306"          # virtual | ssd1306 | sh1106 | st7789 | ili9341
    width = 128
    height = 64
    stt = "auto"                # auto | whisper | pocketsphinx
    stt_keep_loaded = false     # Whisper: keep the model in the client (else a child per utterance)
    stt_threads = 1             # recognition threads
    tts = "espeak"              # espeak | none
    voice = "en-us"
    follow_up_seconds = 45

    [device.pins]               # BCM numbers; buttons pull the pin to ground
    talk = 17
    allow = 27
    deny = 22
    next = 23

Unknown keys and wrong types are refused with a :class:`ConfigError` naming
the key, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from exo_core.errors import ConfigError

__all__ = ["BUTTONS", "PinMap", "DeviceConfig", "config_from_mapping"]

BUTTONS: tuple[str, ...] = ("talk", "allow", "deny", "next")


@dataclass(frozen=True, slots=True)
class PinMap:
    """GPIO pin (BCM numbering) of each button."""

    talk: int = 17
    allow: int = 27
    deny: int = 22
    next: int = 23

    def items(self) -> list[tuple[str, int]]:
        """``(button, pin)`` pairs in the fixed button order."""
        return [(name, getattr(self, name)) for name in BUTTONS]


@dataclass(frozen=True, slots=True)
class DeviceConfig:
    """Everything the device client can be told; see the module docstring."""

    pins: PinMap = field(default_factory=PinMap)
    screen: str = "virtual"
    width: int = 128
    height: int = 64
    rotate: int = 0
    spi_port: int = 0
    spi_device: int = 0
    i2c_port: int = 1
    i2c_address: int = 0x3C
    stt: str = "auto"
    stt_keep_loaded: bool = False
    stt_threads: int = 1
    tts: str = "espeak"
    voice: str = "en-us"
    speech_rate: int = 175
    alsa_capture: str = "default"
    alsa_playback: str = "default"
    follow_up_seconds: float = 45.0
    long_press_seconds: float = 0.8
    double_press_seconds: float = 0.35
    notice_seconds: float = 6.0
    outbox_limit: int = 16
    outbox_max_age_seconds: float = 600.0
    speak_answers: bool = True
    speak_notices: bool = True

    @property
    def mono(self) -> bool:
        """Whether the screen is one-bit (OLEDs are; the virtual screen is when its height is small)."""
        if self.screen in ("ssd1306", "sh1106"):
            return True
        if self.screen == "virtual":
            return self.width * self.height <= 128 * 64
        return False

    def replace(self, **changes: Any) -> DeviceConfig:
        """A copy with ``changes`` applied (validated like the file)."""
        return config_from_mapping({**_as_mapping(self), **changes})


_SCREENS = {"virtual", "ssd1306", "sh1106", "st7789", "ili9341"}
_STT = {"auto", "whisper", "pocketsphinx", "none"}
_TTS = {"espeak", "none"}


def _as_mapping(config: DeviceConfig) -> dict[str, Any]:
    out = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    out["pins"] = {name: pin for name, pin in config.pins.items()}
    return out


def config_from_mapping(table: dict[str, Any]) -> DeviceConfig:
    """A validated :class:`DeviceConfig` from a ``[device]`` table."""
    if not isinstance(table, dict):
        raise ConfigError("[device] must be a table")
    known = {f.name: f for f in dataclasses.fields(DeviceConfig)}
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise ConfigError(f"unknown device setting {key!r}; known: {', '.join(sorted(known))}", field=key)
        if key == "pins":
            values["pins"] = _pins(value)
            continue
        default = known[key].default
        values[key] = _typed(key, value, type(default))
    config = DeviceConfig(**values)
    _check(config)
    return config


def _pins(value: Any) -> PinMap:
    if isinstance(value, PinMap):
        return value
    if not isinstance(value, dict):
        raise ConfigError("[device.pins] must be a table of button = pin", field="pins")
    unknown = set(value) - set(BUTTONS)
    if unknown:
        raise ConfigError(f"unknown button {sorted(unknown)[0]!r}; buttons are {', '.join(BUTTONS)}", field="pins")
    pins = {k: _typed(f"pins.{k}", v, int) for k, v in value.items()}
    if any(not 0 <= p <= 53 for p in pins.values()):
        raise ConfigError("a GPIO pin number must be between 0 and 53", field="pins")
    result = PinMap(**pins)
    numbers = [p for _, p in result.items()]
    if len(set(numbers)) != len(numbers):
        raise ConfigError("two buttons share one pin", field="pins")
    return result


def _typed(key: str, value: Any, kind: type) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise ConfigError(f"device setting {key!r} must be {kind.__name__}, not {type(value).__name__}", field=key)
    return value


def _check(config: DeviceConfig) -> None:
    if config.screen not in _SCREENS:
        raise ConfigError(f"screen must be one of {sorted(_SCREENS)}", field="screen")
    if config.stt not in _STT:
        raise ConfigError(f"stt must be one of {sorted(_STT)}", field="stt")
    if config.tts not in _TTS:
        raise ConfigError(f"tts must be one of {sorted(_TTS)}", field="tts")
    if not (64 <= config.width <= 1024 and 32 <= config.height <= 1024):
        raise ConfigError("screen size must be between 64x32 and 1024x1024 pixels", field="width")
    if config.rotate not in (0, 1, 2, 3):
        raise ConfigError("rotate is 0 to 3 (quarter turns)", field="rotate")
    for key in (
        "long_press_seconds",
        "double_press_seconds",
        "follow_up_seconds",
        "notice_seconds",
        "outbox_max_age_seconds",
    ):
        if getattr(config, key) <= 0:
            raise ConfigError(f"{key} must be positive", field=key)
    if not 1 <= config.stt_threads <= 8:
        raise ConfigError("stt_threads must be between 1 and 8", field="stt_threads")
    if not 1 <= config.outbox_limit <= 256:
        raise ConfigError("outbox_limit must be between 1 and 256", field="outbox_limit")
