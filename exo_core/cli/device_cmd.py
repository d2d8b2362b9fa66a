"""``exo device``: the handheld client (buttons, small screen, voice) of exod.

Only argparse is imported here; the device package (and PIL, gpiozero, the
speech engines behind it) loads when the command runs.
"""

from __future__ import annotations

import argparse

from exo_core.cli.args import add_command


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo device``."""
    parser = add_command(sub, "device", _device, "run the device client (buttons, screen, voice)", home=True)
    parser.add_argument(
        "--connect",
        default=None,
        metavar="URL",
        help="core on another machine: http://HOST:PORT (default: this home's Unix socket)",
    )
    parser.add_argument("--token-file", default=None, help="file holding the remote core's bearer token")
    parser.add_argument(
        "--mock", action="store_true", help="mock pins driven by commands on stdin, PNG frames, WAV files for audio"
    )
    parser.add_argument("--frames", default=None, metavar="DIR", help="write screen frames as PNG files here")
    parser.add_argument("--audio-out", default=None, metavar="DIR", help="--mock: write spoken audio here")
    parser.add_argument("--size", default=None, metavar="WxH", help="screen size in pixels, e.g. 128x64 or 240x240")
    parser.add_argument("--screen", default=None, help="virtual | ssd1306 | sh1106 | st7789 | ili9341")
    parser.add_argument("--stt", default=None, help="speech-to-text: auto | whisper | pocketsphinx | none")
    parser.add_argument("--tts", default=None, help="text-to-speech: espeak | none")
    parser.add_argument("--session", default=None, help="continue this session")
    parser.add_argument(
        "--follow-up",
        type=float,
        default=None,
        metavar="SEC",
        help="a question within SEC seconds of the last answer continues its session",
    )
    parser.add_argument("--playback-speed", type=float, default=1.0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--journal",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="print what happens as JSON lines (default: on with --mock)",
    )
    parser.add_argument("--log-level", default="WARNING")


def _device(args: argparse.Namespace) -> int:
    import logging
    import sys

    from device.runner import DeviceOptions, run_device

    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s exo-device %(levelname)s %(name)s: %(message)s",
    )
    options = DeviceOptions(
        home=args.home,
        connect=args.connect,
        token_file=args.token_file,
        mock=args.mock,
        frames=args.frames,
        audio_out=args.audio_out,
        size=args.size,
        screen=args.screen,
        stt=args.stt,
        tts=args.tts,
        session=args.session,
        playback_speed=args.playback_speed,
        follow_up=args.follow_up,
        journal=args.journal,
    )
    return run_device(options)
