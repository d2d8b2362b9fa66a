"""Helpers for the image tests: scratch roots, unit files, shims for the exo command."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from exo_testkit import ROOT

IMAGE = ROOT / "image"
UNITS = ("exod.service", "exo-device.service", "exo-firstboot.service")
SYSTEM_UNITS = Path("/usr/lib/systemd/system")


def exo_command() -> str:
    """The exo command of this checkout (what ``EXO_BIN`` is set to)."""
    return f"{sys.executable} -m exo_core.cli"


def child_env(**extra: str) -> dict[str, str]:
    """Environment in which ``python -m exo_core.cli`` imports this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_HOME", "EXO_TOKEN", "EXO_MODEL")}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


def write_exec(path: Path, text: str) -> Path:
    """Write an executable script."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def exo_shim(path: Path) -> Path:
    """An ``exo`` executable at ``path`` that runs this checkout's CLI."""
    return write_exec(path, f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m exo_core.cli "$@"\n')


@dataclass(frozen=True, slots=True)
class ScratchRoot:
    """A directory laid out like the device's root for ``systemd-analyze --root``."""

    root: Path

    @property
    def unit_dir(self) -> Path:
        return self.root / "etc" / "systemd" / "system"

    def unit(self, name: str) -> Path:
        return self.unit_dir / name


def make_scratch_root(root: Path) -> ScratchRoot:
    """The system's unit files (targets the units refer to), our units, and the programs they run."""
    (root / "usr" / "lib" / "systemd").mkdir(parents=True)
    shutil.copytree(SYSTEM_UNITS, root / "usr" / "lib" / "systemd" / "system", symlinks=True)
    scratch = ScratchRoot(root)
    scratch.unit_dir.mkdir(parents=True)
    for name in UNITS:
        shutil.copy2(IMAGE / "systemd" / name, scratch.unit(name))
    exo_shim(root / "opt" / "exo" / "venv" / "bin" / "exo")
    (root / "opt" / "exo" / "image").mkdir(parents=True)
    shutil.copy2(IMAGE / "firstboot.sh", root / "opt" / "exo" / "image" / "firstboot.sh")
    return scratch


def unit_settings(path: Path) -> dict[str, list[str]]:
    """``Section.Key`` -> every value it is given (unit files repeat keys; configparser cannot)."""
    out: dict[str, list[str]] = {}
    section = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, _, value = line.partition("=")
        out.setdefault(f"{section}.{key.strip()}", []).append(value.strip())
    return out
