"""A built, non-editable wheel carries store_template/ and ``exo init`` finds it there.

The wheel is built from a copy of the source (the repository's own ``build/``
is left alone), installed with ``pip --target`` into a temp folder and run
with ``python -S``: no site processing, so the venv's editable install of
this checkout cannot answer the imports; only the wheel's files can.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "exo_core", "exo_edge", "device", "store_template")


@pytest.mark.slow
def test_a_non_editable_install_ships_the_template_and_inits_a_store(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(
                REPO / name, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        else:
            shutil.copy2(REPO / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    built = subprocess.run(
        [*pip, "wheel", str(src), "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n.removeprefix("exo_core/store/template/") for n in names if n.startswith("exo_core/store/template/")}
    expected = {
        p.relative_to(REPO / "store_template").as_posix() for p in (REPO / "store_template").rglob("*") if p.is_file()
    }
    assert shipped == expected and "STORE.toml" in shipped and ".gitignore" in shipped

    target = tmp_path / "installed"
    subprocess.run(
        [*pip, "install", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(target), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
        ),
    }
    env.pop("EXO_HOME", None)
    home = tmp_path / "home"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-S", *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
        )

    where = run("-c", "import exo_core.store as s; print(s.__file__); print(s.template_path())")
    assert where.returncode == 0, where.stderr
    module, template = where.stdout.split()
    assert Path(module).is_relative_to(target) and Path(template).is_relative_to(target)
    assert not Path(template).is_symlink()
    init = run("-m", "exo_core.cli", "init", "--home", str(home))
    assert init.returncode == 0, init.stderr
    assert (home / "store" / "STORE.toml").is_file() and (home / "store" / "taste" / "INDEX.md").is_file()
    lint = run("-m", "exo_core.cli", "store", "lint", "--strict", str(home / "store"))
    assert lint.returncode == 0, lint.stdout + lint.stderr
