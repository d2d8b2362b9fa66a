"""``exo pair``: pair a laptop with the core without putting the token in a URL.

On the device: ``exo pair`` asks the running exod (over its owner-only Unix
socket) for a short single-use code and prints it with the addresses to open.
On the laptop: ``exo pair --connect http://HOST:PORT`` takes that code and
stores the bearer token it is exchanged for in a 0600 file under
``~/.config/exo/tokens/`` (``exo chat --connect`` finds it there). A browser
pairs on the page itself and gets a cookie instead.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from exo_core.cli.args import add_command, home_of

__all__ = ["register", "saved_token_path"]


def saved_token_path(url: str) -> Path:
    """Where the token for the core at ``url`` is kept on this machine."""
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "exo" / "tokens"
    name = url.split("://", 1)[-1].rstrip("/").replace("[", "").replace("]", "").replace(":", "_").replace("/", "_")
    return base / name


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo pair``."""
    parser = add_command(sub, "pair", _pair, "pair a laptop: show a code (device) or redeem one (laptop)", home=True)
    parser.add_argument("--connect", default=None, metavar="URL", help="on the laptop: the core's http://HOST:PORT")
    parser.add_argument("--code", default=None, help="the code shown on the device (asked for when omitted)")
    parser.add_argument("--token-file", default=None, help="where to store the token (default ~/.config/exo/tokens/)")


def _pair(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_redeem(args) if args.connect else _issue(args))


async def _issue(args: argparse.Namespace) -> int:
    from exo_core.client import ExoClient
    from exo_core.errors import BrokenResourceError

    home = home_of(args)
    if not home.socket_path.exists():
        raise BrokenResourceError(
            f"no exod is running at {home.socket_path}; start it with `exo serve --tcp HOST:PORT`"
        )
    async with ExoClient(f"unix://{home.socket_path}", client_name="exo-pair") as client:
        data = await client.post("/pair/new", {})
    addresses = [str(a) for a in data.get("addresses", [])]
    minutes = float(str(data.get("expires_in", 300))) / 60
    print(f"pairing code: {data['code']}  (single use, valid {minutes:.0f} min)")
    for address in addresses:
        print(f"  browser:  open {address}/ and enter the code")
    if addresses:
        print(f"  terminal: exo pair --connect {addresses[0]}   then: exo chat --connect {addresses[0]}")
    return 0


async def _redeem(args: argparse.Namespace) -> int:
    from exo_core.atomic import atomic_write_text
    from exo_core.client import ExoClient
    from exo_core.errors import ConfigError

    url = str(args.connect).rstrip("/")
    if not url.startswith("http://"):
        raise ConfigError(f"--connect wants http://HOST:PORT, not {url!r}")
    code = args.code or input("pairing code shown on the device: ")
    async with ExoClient(url, client_name="exo-pair") as client:
        data = await client.post("/pair", {"code": code.strip(), "want": "token"})
    path = Path(args.token_file) if args.token_file else saved_token_path(url)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write_text(path, str(data["token"]) + "\n", mode=0o600)
    print(f"paired: token stored in {path} (mode 0600)")
    print(f"chat:   exo chat --connect {url}")
    return 0
