"""``--mock``: drive the device without hardware, from lines of text.

In mock mode the buttons sit on gpiozero's mock pin factory, the microphone
is a :class:`~device.mic.FileMicrophone`, the screen writes PNG frames and
speech goes to WAV files. :class:`MockControl` reads commands (from standard
input, one per line) on its own thread and drives the mock *pins* — so a
press travels the same path as on the device: pin edge, gpiozero callback
thread, ``call_soon_threadsafe``, gesture, action. Commands::

    say PATH            the next talk press "hears" this WAV file
    talk PATH [SEC]     say PATH, then hold talk for SEC seconds (default: just past a long press)
    press BUTTON        a short press (talk, allow, deny, next)
    hold BUTTON SEC     hold for SEC seconds
    double BUTTON       two quick presses
    down BUTTON | up BUTTON
    wait SEC
    quit

Unknown commands are reported on the journal and skipped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from device.mic import FileMicrophone
from device.settings import BUTTONS, DeviceConfig

__all__ = ["MockControl"]


class MockControl:
    """Runs mock commands against the pins of a running device."""

    def __init__(
        self,
        config: DeviceConfig,
        factory: Any,
        mic: FileMicrophone,
        *,
        journal: Callable[[dict[str, Any]], None],
        on_quit: Callable[[], None],
    ) -> None:
        self._config = config
        self._factory = factory
        self._mic = mic
        self._journal = journal
        self._on_quit = on_quit
        self._pins = dict(config.pins.items())

    def _pin(self, button: str) -> Any:
        if button not in self._pins:
            raise ValueError(f"unknown button {button!r}; buttons are {', '.join(BUTTONS)}")
        return self._factory.pin(self._pins[button])

    def _hold(self, button: str, seconds: float) -> None:
        pin = self._pin(button)
        pin.drive_low()
        time.sleep(seconds)
        pin.drive_high()

    def run_line(self, line: str) -> bool:
        """Run one command; returns ``False`` after ``quit``."""
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            return True
        verb, args = parts[0].lower(), parts[1:]
        try:
            if verb == "quit":
                self._on_quit()
                return False
            if verb == "say":
                self._mic.queue(Path(args[0]))
            elif verb == "talk":
                self._mic.queue(Path(args[0]))
                self._hold("talk", float(args[1]) if len(args) > 1 else self._config.long_press_seconds + 0.3)
            elif verb == "press":
                self._hold(args[0], 0.05)
            elif verb == "hold":
                self._hold(args[0], float(args[1]))
            elif verb == "double":
                self._hold(args[0], 0.04)
                time.sleep(min(0.08, self._config.double_press_seconds / 4))
                self._hold(args[0], 0.04)
            elif verb == "down":
                self._pin(args[0]).drive_low()
            elif verb == "up":
                self._pin(args[0]).drive_high()
            elif verb == "wait":
                time.sleep(float(args[0]))
            else:
                raise ValueError(f"unknown mock command {verb!r}")
        except (ValueError, IndexError) as exc:
            self._journal({"ev": "mock_error", "line": line, "error": str(exc)})
            return True
        self._journal({"ev": "mock_done", "line": line})
        return True

    def start(self, lines: Iterable[str]) -> threading.Thread:
        """Run ``lines`` on a daemon thread (quits the device at their end)."""

        def pump() -> None:
            for line in lines:
                if not self.run_line(line.strip()):
                    return
            self._on_quit()

        thread = threading.Thread(target=pump, name="device-mock-control", daemon=True)
        thread.start()
        return thread
