"""The footprint audit: the memory limit really holds, and ``exo bench footprint --json`` runs end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from imagekit import child_env

from exo_edge.footprint import choose_limit

ALLOC = "import sys; b = bytearray(int(sys.argv[1]) * 1024 * 1024); b[::4096] = b'x' * len(b[::4096]); print('ok')"


def test_the_chosen_limit_kills_what_exceeds_it_and_lets_the_rest_run() -> None:
    limit = choose_limit(256)
    try:
        if limit.method == "none":
            pytest.skip(limit.note)
        small = subprocess.run(
            [*limit.prefix, sys.executable, "-c", ALLOC, "64"], capture_output=True, text=True, timeout=60
        )
        assert small.returncode == 0 and small.stdout.strip() == "ok", small.stderr
        big = subprocess.run(
            [*limit.prefix, sys.executable, "-c", ALLOC, "400"], capture_output=True, text=True, timeout=60
        )
        assert big.returncode != 0 and "ok" not in big.stdout
        if limit.cgroup is not None:
            assert (limit.oom_kills() or 0) > 0
            assert (limit.peak_mb() or 0) <= 256 + 1
    finally:
        limit.remove()


def test_exo_bench_footprint_json(tmp_path: Path) -> None:
    out = tmp_path / "fp.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "exo_core.cli",
            "bench",
            "footprint",
            "--json",
            "--quick",
            "--model",
            "scripted",
            "--device",
            "off",
            "--nodes",
            "200",
            "--out",
            str(out),
            "--tmp",
            str(tmp_path),
        ],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert list(data)[:5] == ["completed", "idle_rss_mb", "peak_rss_mb", "startup_s", "model_loaded"]
    assert data["completed"] is True and data["model_loaded"] is False
    assert data["idle_rss_mb"] > 0 and data["peak_rss_mb"] >= data["idle_rss_mb"] and data["startup_s"] > 0
    assert data["device"]["included"] is False or data["device"]["why_not"] is None
    assert [s["ok"] for s in data["steps"]] == [True] * len(data["steps"])
    assert any(s["step"] == "approval requested and allowed" for s in data["steps"])
    assert data["store_disk"]["nodes"] == 200 and data["store_disk"]["files"] >= 200
    assert json.loads(out.read_text()) == data
    report = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "bench", "footprint", "--markdown", str(out)],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert report.returncode == 0 and "| completed | True |" in report.stdout


def test_exo_bench_refuses_an_unknown_benchmark() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "bench", "nonsense"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "invalid choice" in done.stderr
