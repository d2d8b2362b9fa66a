"""The device's systemd units, checked by the real systemd-analyze in a scratch root."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from imagekit import IMAGE, UNITS, ScratchRoot, make_scratch_root, unit_settings

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None or not Path("/usr/lib/systemd/system").is_dir(),
    reason="systemd-analyze is not installed (Debian package systemd; scripts/install_system.sh)",
)

HOME = "/var/lib/exo/home"
STORE = "/var/lib/exo/store"


@pytest.fixture
def scratch(tmp_path: Path) -> ScratchRoot:
    return make_scratch_root(tmp_path / "root")


def verify(scratch: ScratchRoot, *names: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["systemd-analyze", f"--root={scratch.root}", "verify", *(str(scratch.unit(n)) for n in names)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_every_unit_verifies_without_a_word(scratch: ScratchRoot) -> None:
    done = verify(scratch, *UNITS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "" and done.stderr.strip() == "", done.stdout + done.stderr


def test_verify_does_catch_a_broken_unit(scratch: ScratchRoot) -> None:
    """The negative control: the same check fails on a misspelt key and on a missing program."""
    unit = scratch.unit("exod.service")
    unit.write_text(unit.read_text().replace("Restart=on-failure", "Restartt=on-failure"))
    assert "Unknown key 'Restartt'" in verify(scratch, "exod.service").stderr
    (scratch.root / "opt" / "exo" / "venv" / "bin" / "exo").unlink()
    done = verify(scratch, "exo-device.service")
    assert done.returncode != 0 and "/opt/exo/venv/bin/exo" in done.stderr


@pytest.mark.parametrize("name,writable", [("exod.service", {HOME, STORE}), ("exo-device.service", {HOME})])
def test_long_running_units_restart_are_limited_and_hardened(name: str, writable: set[str]) -> None:
    s = unit_settings(IMAGE / "systemd" / name)
    assert s["Service.Restart"] == ["on-failure"]
    assert s["Service.User"] == ["exo"]
    assert re.fullmatch(r"\d+M", s["Service.MemoryMax"][0])
    assert re.fullmatch(r"\d+%", s["Service.CPUQuota"][0])
    for key, value in (
        ("NoNewPrivileges", "yes"),
        ("PrivateTmp", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
    ):
        assert s[f"Service.{key}"] == [value], key
    paths = {p for line in s["Service.ReadWritePaths"] for p in line.split()}
    assert paths == writable
    assert "Service.StateDirectory" not in s  # would make more of /var/lib writable
    home_env = [e for e in s["Service.Environment"] if e.startswith("EXO_HOME=")]
    assert home_env == [f"EXO_HOME={HOME}"]


def test_exod_budget_is_the_design_budget() -> None:
    """The budget of docs/benchmarks.md ("Budgets at a glance"): core + local model + embedder under 512 MB."""
    assert unit_settings(IMAGE / "systemd" / "exod.service")["Service.MemoryMax"] == ["512M"]


def exposure(scratch: ScratchRoot, name: str) -> float:
    done = subprocess.run(
        ["systemd-analyze", f"--root={scratch.root}", "security", "--offline=true", str(scratch.unit(name))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", done.stdout)
    assert match, done.stdout + done.stderr
    return float(match.group(1))


@pytest.mark.parametrize(
    "name,ceiling", [("exod.service", 2.5), ("exo-device.service", 2.5), ("exo-firstboot.service", 5.0)]
)
def test_systemd_rates_the_units_well_exposed_little(scratch: ScratchRoot, name: str, ceiling: float) -> None:
    """``systemd-analyze security`` scores 0 (locked down) to 10 (exposed); "OK" is under 5."""
    assert exposure(scratch, name) <= ceiling


def test_firstboot_runs_once_and_exod_waits_for_it() -> None:
    first = unit_settings(IMAGE / "systemd" / "exo-firstboot.service")
    assert first["Service.Type"] == ["oneshot"]
    assert first["Unit.ConditionPathExists"] == ["!/var/lib/exo/.firstboot-done"]
    exod = unit_settings(IMAGE / "systemd" / "exod.service")
    assert "exo-firstboot.service" in exod["Unit.After"][0] and exod["Unit.Requires"] == ["exo-firstboot.service"]
    device = unit_settings(IMAGE / "systemd" / "exo-device.service")
    assert "exod.service" in device["Unit.After"][0]


@pytest.mark.skipif(shutil.which("systemd-sysusers") is None, reason="systemd-sysusers is not installed")
def test_the_service_user_is_created_by_sysusers(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "group").write_text("root:x:0:\naudio:x:29:\n")
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    done = subprocess.run(
        ["systemd-sysusers", f"--root={tmp_path}", str(IMAGE / "rootfs" / "exo.sysusers.conf")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    passwd = {line.split(":")[0]: line.split(":") for line in (etc / "passwd").read_text().splitlines()}
    assert passwd["exo"][5] == "/var/lib/exo/home" and passwd["exo"][6] == "/usr/sbin/nologin"
    groups = {line.split(":")[0]: line.split(":") for line in (etc / "group").read_text().splitlines()}
    for group in ("gpio", "spi", "i2c", "audio"):
        assert "exo" in groups[group][3].split(","), group


def test_journald_limits_parse(scratch: ScratchRoot) -> None:
    """The journald drop-in is what systemd reads (cat-config) and bounds the journal's size."""
    dropin = scratch.root / "etc" / "systemd" / "journald.conf.d" / "exo.conf"
    dropin.parent.mkdir(parents=True)
    shutil.copy2(IMAGE / "rootfs" / "journald-exo.conf", dropin)
    done = subprocess.run(
        ["systemd-analyze", f"--root={scratch.root}", "cat-config", "systemd/journald.conf"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "SystemMaxUse=64M" in done.stdout and str(dropin.relative_to(scratch.root)) in done.stdout
