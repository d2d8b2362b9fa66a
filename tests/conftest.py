"""Fixtures shared by the whole suite. Helpers live in ``exo_testkit`` (tests/ is on sys.path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from exo_testkit import Exod


@pytest.fixture
def exo_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def exod_factory(tmp_path: Path) -> Iterator[object]:
    started: list[Exod] = []

    def make(
        home: Path, script: Path, workspace: Path, extra: list[str] | None = None, env: dict[str, str] | None = None
    ) -> Exod:
        d = Exod(home, script, workspace, extra, env)
        started.append(d)
        return d.start()

    yield make
    for d in started:
        d.stop()
