"""Helpers for the web and pairing tests: a home with a store and taste, free ports, `exo pair`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from exo_testkit import ROOT

from exo_core.bootstrap import init_home
from exo_core.seams.home import ExoHome
from exo_core.store.node import Link, Node
from exo_core.store.store import Store


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def home_with_taste(home: Path) -> Path:
    """An initialised Exo home whose store holds two taste rows and one fact they cite; returns the store."""
    init_home(ExoHome(home))
    store = Store.open(home / "store")
    store.write_node(
        Node(
            id="work/commit-log",
            title="Commit log habits",
            type="fact",
            domain="work",
            summary="Commit messages in this repository are one short line.",
            load_when="git commit",
            confidence="medium",
            stability="durable",
            valid_from="2025-01-01",
        )
    )
    store.write_node(
        Node(
            id="taste/commit-style",
            title="Commit style",
            type="preference",
            domain="taste",
            summary="Commit messages are long and chatty.",
            load_when="commit message",
            confidence="high",
            stability="durable",
            valid_from="2025-01-01",
            sources=("ses_demo#12",),
            links=(Link("evidence-for", "work/commit-log"),),
        )
    )
    store.write_node(
        Node(
            id="taste/greeting",
            title="Greeting",
            type="preference",
            domain="taste",
            summary="Greet briefly, no small talk.",
            load_when="greeting",
            confidence="low",
            stability="volatile",
            valid_from="2025-01-01",
        )
    )
    return home / "store"


def exo(
    *args: str, home: Path, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_MODEL")}
    full.update({"PYTHONPATH": str(ROOT), "EXO_HOME": str(home), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def pair_code(home: Path) -> str:
    """A fresh pairing code from `exo pair` on the device (over the Unix socket)."""
    out = exo("pair", home=home)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("pairing code: ")
    return first.split()[2]
