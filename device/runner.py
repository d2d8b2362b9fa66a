"""Assembling and running the device client (what ``exo device`` calls).

:func:`build_device` picks the parts from the configuration and the command
line: real pins, the configured display, ALSA capture and playback on the
device; mock pins, PNG frames and WAV files with ``--mock``. :func:`run_device`
runs it until SIGINT/SIGTERM, ``quit`` on the mock control, or a fatal link
error.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from device.app import DeviceApp, capabilities_for
from device.buttons import mock_factory
from device.layouts import ScreenSpec
from device.mic import AlsaMicrophone, FileMicrophone, Microphone
from device.mock import MockControl
from device.screen import open_screen
from device.settings import DeviceConfig, config_from_mapping
from device.stt import open_stt
from device.tts import AplayOutput, AudioOutput, FileOutput, open_tts
from exo_core.client import ExoClient
from exo_core.errors import ConfigError
from exo_core.seams.home import ExoHome

__all__ = ["DeviceOptions", "load_config", "build_device", "run_device", "JsonJournal"]


@dataclass(frozen=True, slots=True)
class DeviceOptions:
    """Command-line choices that override the configuration."""

    home: str | None = None
    connect: str | None = None
    token_file: str | None = None
    mock: bool = False
    frames: str | None = None
    audio_out: str | None = None
    size: str | None = None
    screen: str | None = None
    stt: str | None = None
    tts: str | None = None
    session: str | None = None
    playback_speed: float = 1.0
    follow_up: float | None = None
    journal: bool | None = None


class JsonJournal:
    """Writes journal records as JSON lines (thread-safe)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def __call__(self, record: dict[str, Any]) -> None:
        # CLOCK_MONOTONIC is one clock for every process on the machine: timings line up across processes.
        line = json.dumps({**record, "t": round(time.monotonic(), 4)}, default=str)
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()


def load_config(home: ExoHome, options: DeviceOptions) -> DeviceConfig:
    """The ``[device]`` table of the home's config.toml with the command line applied."""
    table = home.config().get("device", {})
    if not isinstance(table, dict):
        raise ConfigError("[device] in config.toml must be a table")
    changes: dict[str, Any] = dict(table)
    if options.mock:
        changes["screen"] = "virtual"
    if options.screen:
        changes["screen"] = options.screen
    if options.size:
        try:
            width, height = (int(v) for v in options.size.lower().split("x"))
        except ValueError as exc:
            raise ConfigError(f"--size must look like 128x64, not {options.size!r}", field="size") from exc
        changes.update(width=width, height=height)
    if options.stt:
        changes["stt"] = options.stt
    if options.tts:
        changes["tts"] = options.tts
    if options.follow_up is not None:
        changes["follow_up_seconds"] = options.follow_up
    return config_from_mapping(changes)


def _url_and_token(home: ExoHome, options: DeviceOptions) -> tuple[str, str | None]:
    if not options.connect:
        return f"unix://{home.socket_path}", None
    token = None
    if options.token_file:
        try:
            token = Path(options.token_file).read_text(encoding="ascii").strip()
        except OSError as exc:
            raise ConfigError(f"cannot read token file {options.token_file}: {exc.strerror}") from exc
    return options.connect, token


def build_device(options: DeviceOptions, journal: Any = None) -> tuple[DeviceApp, MockControl | None, ExoClient]:
    """The device app (not yet running), its mock control (with ``--mock``) and its client."""
    home = ExoHome.from_env(options.home)
    config = load_config(home, options)
    url, token = _url_and_token(home, options)
    frames: Path | None = None
    if options.frames:
        frames = Path(options.frames)
    elif options.mock:
        frames = home.root / "device" / "frames"
    screen = open_screen(config, frames)
    spec: ScreenSpec = screen.spec
    if options.mock:
        factory: Any = mock_factory()
        mic: Microphone = FileMicrophone()
        output: AudioOutput = FileOutput(
            Path(options.audio_out) if options.audio_out else home.root / "device" / "spoken", options.playback_speed
        )
    else:
        factory = None
        mic = AlsaMicrophone(config.alsa_capture)
        output = AplayOutput(config.alsa_playback)
    stt = open_stt(config.stt, keep_loaded=config.stt_keep_loaded, threads=config.stt_threads)
    tts = open_tts(config.tts, config.voice, config.speech_rate)
    caps = capabilities_for(spec, voice_in=config.stt != "none", voice_out=config.tts != "none")
    client = ExoClient(url, token=token, client_name="exo-device", capabilities=caps)
    app = DeviceApp(
        config,
        client,
        screen=screen,
        mic=mic,
        stt=stt,
        tts=tts,
        output=output,
        pin_factory=factory,
        session=options.session,
        journal=journal,
    )
    control = None
    if options.mock:
        assert isinstance(mic, FileMicrophone)
        control = MockControl(config, factory, mic, journal=journal or (lambda r: None), on_quit=lambda: None)
    return app, control, client


def run_device(options: DeviceOptions, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Run the device client until stopped; returns the exit status."""
    show_journal = options.journal if options.journal is not None else options.mock
    journal = JsonJournal(stdout or sys.stdout) if show_journal else None

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        app, control, client = build_device(options, journal)
        if control is not None:

            def quit_soon() -> None:  # called from the control thread
                loop.call_soon_threadsafe(stop.set)

            control._on_quit = quit_soon
        async with client:
            if control is not None:
                # Commands start once the buttons exist (the app creates them as it starts).
                async def start_control() -> None:
                    while app.buttons is None:
                        await asyncio.sleep(0.01)
                    control.start(stdin or sys.stdin)

                starter = asyncio.create_task(start_control())
            await app.run(stop)
            if control is not None:
                starter.cancel()
        return 0

    return asyncio.run(main())
