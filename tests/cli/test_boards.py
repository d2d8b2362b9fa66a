"""Board profiles: ``exo init`` picks small, standard or laptop and writes what the profile needs."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from exo_testkit import ROOT

from exo_core.bootstrap import init_home
from exo_core.errors import ConfigError
from exo_core.models.boards import (
    BOARDS,
    DEFAULT_BOARD,
    SMALL_BELOW_MIB,
    STANDARD_BELOW_MIB,
    detect_board,
    pick_board,
    profile_threads,
    read_memtotal_mib,
)
from exo_core.models.catalog import default_catalog_path, load_catalog
from exo_core.seams.home import ExoHome


def exo(*args: str, home: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("EXO_TOKEN", "EXO_MODEL", "EXO_BOARD", "EXO_MODELS_MAIN")}
    base.update({"PYTHONPATH": str(ROOT), "EXO_HOME": str(home), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args], capture_output=True, text=True, env=base, timeout=120
    )


@pytest.mark.parametrize(
    "board,model,n_ctx",
    [
        ("small", "gemma-3-270m", 2048),
        ("standard", "qwen2.5-coder-0.5b-instruct", 4096),
        ("laptop", "qwen2.5-coder-1.5b-instruct", 8192),
    ],
)
def test_init_board_writes_the_profile(tmp_path: Path, board: str, model: str, n_ctx: int) -> None:
    home = tmp_path / "h"
    result = exo("init", "--board", board, home=home)
    assert result.returncode == 0, result.stderr
    assert f"board profile {board} (chosen with --board)" in result.stdout
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["board"] == board
    assert config["store"] == str((home / "store").resolve())
    assert config["models"]["roles"]["main"] == [f"local:{model}"]
    assert config["models"]["local"] == {"n_ctx": n_ctx, "n_threads": profile_threads(BOARDS[board], os.cpu_count())}
    # what the router and the local provider will read
    catalog = load_catalog(config, env={})
    assert [str(r) for r in catalog.roles["main"]] == [f"local:{model}"]
    assert model in BOARDS[board].fetch


def test_exo_board_environment_chooses_and_the_flag_wins(tmp_path: Path) -> None:
    by_env = exo("init", home=tmp_path / "a", env={"EXO_BOARD": "small"})
    assert by_env.returncode == 0 and "chosen by $EXO_BOARD" in by_env.stdout
    assert tomllib.loads((tmp_path / "a" / "config.toml").read_text())["board"] == "small"
    flag = exo("init", "--board", "laptop", home=tmp_path / "b", env={"EXO_BOARD": "small"})
    assert flag.returncode == 0
    assert tomllib.loads((tmp_path / "b" / "config.toml").read_text())["board"] == "laptop"
    unknown = exo("init", home=tmp_path / "c", env={"EXO_BOARD": "huge"})
    assert unknown.returncode == 2 and "unknown board profile 'huge'" in unknown.stderr
    assert not (tmp_path / "c").exists()


def test_init_without_a_choice_picks_by_this_machines_memory(tmp_path: Path) -> None:
    result = exo("init", home=tmp_path / "h")
    assert result.returncode == 0, result.stderr
    expected = pick_board(read_memtotal_mib())
    assert tomllib.loads((tmp_path / "h" / "config.toml").read_text())["board"] == expected.name


@pytest.mark.parametrize(
    "mib,board",
    [
        (427, "small"),  # Pi Zero 2 W (512 MB)
        (906, "small"),  # Pi 3 (1 GB)
        (SMALL_BELOW_MIB - 1, "small"),
        (SMALL_BELOW_MIB, "standard"),
        (1848, "standard"),  # Pi 4 (2 GB)
        (7809, "standard"),  # Pi 5 (8 GB)
        (STANDARD_BELOW_MIB - 1, "standard"),
        (STANDARD_BELOW_MIB, "laptop"),
        (15_800, "laptop"),
        (24_105, "laptop"),
    ],
)
def test_pick_by_memtotal_through_the_injected_reader(mib: int, board: str) -> None:
    profile, why = detect_board(env={}, memtotal=lambda: mib)
    assert profile.name == board and f"{mib} MiB" in why


def test_unknown_memory_gets_the_default_and_explicit_choices_win() -> None:
    assert detect_board(env={}, memtotal=lambda: None)[0].name == DEFAULT_BOARD == "standard"
    assert detect_board("small", env={"EXO_BOARD": "laptop"}, memtotal=lambda: 99_999)[0].name == "small"
    assert detect_board(env={"EXO_BOARD": "laptop"}, memtotal=lambda: 500)[0].name == "laptop"
    with pytest.raises(ConfigError) as info:
        detect_board("medium", env={})
    assert "small, standard, laptop" in info.value.message


@pytest.mark.parametrize(
    "text,mib",
    [
        ("MemTotal:        1917292 kB\nMemFree:          123 kB\n", 1872),
        ("MemFree: 5 kB\nMemTotal: 8000000 kB\n", 7812),
        ("MemFree: 5 kB\n", None),
        ("MemTotal: lots\n", None),
        ("MemTotal: 1000 MB\n", None),
        ("", None),
    ],
)
def test_read_memtotal(tmp_path: Path, text: str, mib: int | None) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(text)
    assert read_memtotal_mib(meminfo) == mib
    assert read_memtotal_mib(tmp_path / "absent") is None


def test_threads_leave_a_core_for_the_rest_except_on_two_cores_and_respect_the_cap() -> None:
    standard = BOARDS["standard"]
    assert [profile_threads(standard, n) for n in (None, 1, 2, 3, 4, 16)] == [1, 1, 2, 2, 3, 4]
    assert profile_threads(BOARDS["laptop"], 16) == 8


def test_an_existing_config_keeps_its_settings_and_an_old_one_gets_the_profile(tmp_path: Path) -> None:
    home = ExoHome(tmp_path / "h")
    home.root.mkdir()
    # an older home: store and a model spec only
    home.config_path.write_text('store = "s"\nmodel = "local"\n\n[context]\nsummarizer = "none"\n')
    report = init_home(home, board=BOARDS["standard"], explicit_board=True)
    assert any("added board standard" in line for line in report)
    config = home.config()
    assert config["board"] == "standard" and config["store"] == "s" and config["model"] == "local"
    assert config["context"] == {"summarizer": "none"}
    assert config["models"]["local"]["n_ctx"] == 4096  # type: ignore[index]
    # a second init with the same board changes nothing
    before = home.config_path.read_bytes()
    assert any("kept board standard" in line for line in init_home(home, board=BOARDS["standard"]))
    assert home.config_path.read_bytes() == before
    # asking for another board explicitly is an error naming what to edit; auto-picked, a note
    with pytest.raises(ConfigError) as info:
        init_home(home, board=BOARDS["small"], explicit_board=True)
    assert "board = 'standard'" in info.value.message
    assert any("kept board standard" in line for line in init_home(home, board=BOARDS["small"]))
    assert home.config_path.read_bytes() == before


def test_a_config_with_its_own_models_tables_is_left_alone(tmp_path: Path) -> None:
    home = ExoHome(tmp_path / "h")
    home.root.mkdir()
    own = '[models.roles]\nmain = ["laptop:big", "local:gemma-3-270m"]\n'
    home.config_path.write_text(own)
    report = init_home(home, board=BOARDS["laptop"])
    assert any("own [models] settings" in line for line in report)
    assert home.config_path.read_text() == own


def test_the_catalog_default_main_is_the_standard_profiles_model() -> None:
    default = tomllib.loads(default_catalog_path().read_text())["roles"]["main"]
    assert default == list(BOARDS["standard"].main)


def test_the_cli_choices_are_the_profiles() -> None:
    import argparse

    from exo_core.cli import init_cmd

    parser = argparse.ArgumentParser()
    init_cmd.register(parser.add_subparsers())
    for name in BOARDS:
        assert parser.parse_args(["init", "--board", name]).board == name
    with pytest.raises(SystemExit):
        parser.parse_args(["init", "--board", "huge"])
