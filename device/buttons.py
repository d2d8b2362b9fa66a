"""The four buttons (gpiozero) and what pressing them means.

========  ======================  ==========================  ========================
button    press                   long press (hold)           double press
========  ======================  ==========================  ========================
talk      stop speaking           hold to speak, release      --
                                  to send
allow     allow / pick the        allow always (approvals)    --
          highlighted option
deny      deny / dismiss notice   interrupt the running turn  --
next      scroll down / next      scroll back to the top      say the last answer again
          option
========  ======================  ==========================  ========================

Any press also stops speech at once. gpiozero calls back on its own threads
(the pin's edge thread, its hold timer); :class:`ButtonBoard` hands every edge
to the event loop with ``loop.call_soon_threadsafe`` into a bounded queue (an
edge arriving while the queue is full is counted and dropped, never blocks
the pin thread). :class:`GestureDecoder` turns edges into gestures on the loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from device.settings import BUTTONS, DeviceConfig
from exo_core.errors import ConfigError, UnsupportedError

__all__ = ["Edge", "Gesture", "ButtonBoard", "GestureDecoder", "mock_factory"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Edge:
    """A raw change of one button: ``down``, ``up`` or ``held`` (held past the long-press time)."""

    button: str
    kind: str
    at: float


@dataclass(frozen=True, slots=True)
class Gesture:
    """What the person did: ``down``, ``press``, ``long``, ``double`` or ``release`` (after a long press)."""

    button: str
    kind: str


def mock_factory() -> Any:
    """gpiozero's mock pin factory (pins are driven from code: ``factory.pin(17).drive_low()``)."""
    try:
        from gpiozero.pins.mock import MockFactory
    except ImportError as exc:
        raise UnsupportedError("buttons need PyPI gpiozero: pip install 'exo-edge[device]'") from exc
    return MockFactory()


class ButtonBoard:
    """gpiozero buttons on the configured pins, feeding edges into an asyncio queue."""

    def __init__(
        self,
        config: DeviceConfig,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue[Edge],
        *,
        factory: Any = None,
    ) -> None:
        try:
            from gpiozero import Button
            from gpiozero.exc import GPIOZeroError
        except ImportError as exc:
            raise UnsupportedError("buttons need PyPI gpiozero: pip install 'exo-edge[device]'") from exc
        self.factory = factory
        self.dropped = 0
        self._loop = loop
        self._queue = queue
        self._buttons: dict[str, Any] = {}
        try:
            for name, pin in config.pins.items():
                button = Button(
                    pin, pull_up=True, bounce_time=None, hold_time=config.long_press_seconds, pin_factory=factory
                )
                button.when_pressed = self._handler(name, "down")
                button.when_released = self._handler(name, "up")
                button.when_held = self._handler(name, "held")
                self._buttons[name] = button
        except GPIOZeroError as exc:
            self.close()
            raise ConfigError(f"cannot open the button pins: {exc}", field="pins") from exc

    def _handler(self, name: str, kind: str) -> Callable[[], None]:
        def on_edge() -> None:  # runs on a gpiozero thread
            edge = Edge(name, kind, time.monotonic())
            try:
                self._loop.call_soon_threadsafe(self._deliver, edge)
            except RuntimeError:  # the loop is closed: the device is shutting down
                log.debug("button %s %s after shutdown", name, kind)

        return on_edge

    def _deliver(self, edge: Edge) -> None:  # runs on the loop
        try:
            self._queue.put_nowait(edge)
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("button queue full; dropped %s %s", edge.button, edge.kind)

    def pin(self, button: str) -> Any:
        """The gpiozero pin object of ``button`` (mock pins can be driven)."""
        return self._buttons[button].pin

    def close(self) -> None:
        """Release the pins."""
        for button in self._buttons.values():
            button.close()
        self._buttons.clear()


class GestureDecoder:
    """Turns edges into gestures; a single press of a button with a double meaning waits out the double window."""

    def __init__(
        self,
        emit: Callable[[Gesture], None],
        *,
        double_seconds: float = 0.35,
        double_buttons: tuple[str, ...] = ("next",),
    ) -> None:
        self._emit = emit
        self._double = double_seconds
        self._double_buttons = set(double_buttons)
        self._held: dict[str, bool] = {name: False for name in BUTTONS}
        self._waiting: dict[str, asyncio.TimerHandle] = {}

    def feed(self, edge: Edge) -> None:
        """Handle one edge (on the loop)."""
        name = edge.button
        if edge.kind == "down":
            self._held[name] = False
            self._emit(Gesture(name, "down"))
        elif edge.kind == "held":
            self._held[name] = True
            self._emit(Gesture(name, "long"))
        elif edge.kind == "up":
            if self._held.get(name):
                self._held[name] = False
                self._emit(Gesture(name, "release"))
                return
            if name not in self._double_buttons:
                self._emit(Gesture(name, "press"))
                return
            pending = self._waiting.pop(name, None)
            if pending is not None:
                pending.cancel()
                self._emit(Gesture(name, "double"))
                return
            loop = asyncio.get_running_loop()
            self._waiting[name] = loop.call_later(self._double, self._single, name)

    def _single(self, name: str) -> None:
        self._waiting.pop(name, None)
        self._emit(Gesture(name, "press"))

    def cancel(self) -> None:
        """Forget presses still waiting for a possible second press."""
        for handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
