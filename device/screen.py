"""The small screen: one interface, a virtual backend that writes PNG frames, and luma displays.

Everything the device shows is first drawn into a PIL image by
:mod:`device.layouts`; a :class:`Screen` only puts finished images on glass.

* :class:`VirtualScreen` writes every distinct frame as a numbered PNG
  (``000001-answer.png``), keeps ``latest.png``, and appends a line to
  ``frames.jsonl`` (frame number, layout, link and activity). Tests read the
  pixels back; ``--mock`` uses it.
* :class:`LumaScreen` drives an SSD1306/SH1106 OLED over I2C or an
  ST7789/ILI9341 LCD over SPI through luma.oled / luma.lcd, imported only when
  such a screen is configured.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from device.layouts import ScreenSpec
from device.settings import DeviceConfig
from exo_core.errors import ConfigError, StorageError, UnsupportedError

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["Screen", "VirtualScreen", "LumaScreen", "open_screen"]


class Screen(Protocol):
    """A display that shows finished frames."""

    spec: ScreenSpec

    def show(self, image: Image.Image, *, layout: str = "", meta: dict[str, Any] | None = None) -> None:
        """Put ``image`` (already ``spec``-sized, in ``spec.mode``) on the screen."""
        ...

    def close(self) -> None:
        """Blank the screen and release it."""
        ...


class VirtualScreen:
    """A screen that writes PNG frames to a folder (identical consecutive frames are skipped)."""

    def __init__(self, folder: Path, spec: ScreenSpec, *, keep: int = 10_000) -> None:
        self.spec = spec
        self.folder = folder
        self.keep = keep
        self.count = 0
        self._last: bytes | None = None
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the frame folder {folder}: {exc.strerror}") from exc
        self._index = folder / "frames.jsonl"

    def show(self, image: Image.Image, *, layout: str = "", meta: dict[str, Any] | None = None) -> None:
        raw = image.tobytes()
        if raw == self._last:
            return
        self._last = raw
        self.count += 1
        name = f"{self.count:06d}-{layout or 'frame'}.png"
        try:
            if self.count <= self.keep:
                image.save(self.folder / name)
            tmp = self.folder / "latest.png.tmp"
            image.save(tmp, format="PNG")
            os.replace(tmp, self.folder / "latest.png")
            with open(self._index, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"frame": self.count, "file": name, "layout": layout, **(meta or {})}) + "\n")
        except OSError as exc:
            raise StorageError(f"cannot write a screen frame to {self.folder}: {exc.strerror}") from exc

    def close(self) -> None:
        return None


class LumaScreen:
    """An SSD1306/SH1106 (I2C) or ST7789/ILI9341 (SPI) display through luma."""

    def __init__(self, config: DeviceConfig) -> None:
        self.spec = ScreenSpec(config.width, config.height, config.mono)
        try:
            if config.screen in ("ssd1306", "sh1106"):
                from luma.core.interface.serial import i2c
                from luma.oled import device as oled

                serial = i2c(port=config.i2c_port, address=config.i2c_address)
                cls = getattr(oled, config.screen)
                self._device: Any = cls(serial, width=config.width, height=config.height, rotate=config.rotate)
            else:
                from luma.core.interface.serial import spi
                from luma.lcd import device as lcd

                serial = spi(port=config.spi_port, device=config.spi_device, gpio_DC=24, gpio_RST=25)
                cls = getattr(lcd, config.screen)
                self._device = cls(serial, width=config.width, height=config.height, rotate=config.rotate)
        except ImportError as exc:
            raise UnsupportedError(
                f"screen {config.screen!r} needs luma.oled / luma.lcd: "
                f"pip install 'exo-edge[device]' ({exc.name} is missing)"
            ) from exc
        except (OSError, RuntimeError, _luma_error()) as exc:
            raise ConfigError(f"cannot open the {config.screen} display: {exc}") from exc

    @classmethod
    def on_device(cls, device: Any, spec: ScreenSpec) -> LumaScreen:
        """A screen around an already opened luma device (e.g. luma's ``dummy`` for tests)."""
        screen = cls.__new__(cls)
        screen.spec = spec
        screen._device = device
        return screen

    def show(self, image: Image.Image, *, layout: str = "", meta: dict[str, Any] | None = None) -> None:
        self._device.display(image.convert(self._device.mode))

    def close(self) -> None:
        self._device.cleanup()


def _luma_error() -> type[Exception]:
    """luma's own error base (its "device not found" is not an OSError)."""
    try:
        from luma.core.error import Error
    except ImportError:
        return OSError
    return Error


def open_screen(config: DeviceConfig, frames: Path | None) -> Screen:
    """The configured screen; ``frames`` (a folder) forces the virtual one."""
    spec = ScreenSpec(config.width, config.height, config.mono)
    if frames is not None or config.screen == "virtual":
        return VirtualScreen(frames or Path("device-frames"), spec)
    return LumaScreen(config)
