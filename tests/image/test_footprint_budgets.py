"""The footprint audit's board budgets and page-fault accounting (issue 18): real /proc, real files."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
from pathlib import Path

import pytest
from imagekit import child_env

from exo_edge.footprint.budgets import BUDGETS, budget_for, file_cached_mb, major_faults, thrashing
from exo_edge.footprint.cli import report
from exo_edge.footprint.run import page_faults, private_model_copy, within_budgets
from exo_edge.footprint.scenario import home_model_name


def test_budgets_are_the_design_s_board_budgets() -> None:
    assert BUDGETS["standard"].peak_mb <= 1.2 * 1024 and BUDGETS["small"].peak_mb <= 480
    assert all(b.idle_mb <= 50 for b in BUDGETS.values())
    with pytest.raises(SystemExit, match="standard"):
        budget_for("laptop")


def test_major_faults_are_read_from_proc_and_grow_when_a_dropped_file_is_read(tmp_path: Path) -> None:
    big = tmp_path / "pages.bin"
    big.write_bytes(os.urandom(4 * 1024 * 1024))
    fd = os.open(big, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the next touch of each page is a major fault
        dropped = file_cached_mb(big) == 0.0  # tmpfs keeps its pages: no faults to see there
        before = major_faults(os.getpid())
        assert before is not None and before >= 0
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped:
            touched = sum(mapped[i] for i in range(0, len(mapped), mmap.PAGESIZE))
        after = major_faults(os.getpid())
    finally:
        os.close(fd)
    assert touched >= 0 and after is not None
    if dropped:
        assert after > before
    else:
        assert after >= before
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert major_faults(dead.pid) is None


def test_thrashing_is_faults_over_a_tenth_of_the_model_s_pages(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"\0" * (400 * 4096))  # 400 pages: thrashing above 40 faults
    assert thrashing(40, model) is False
    assert thrashing(41, model) is True
    assert thrashing(None, model) is None and thrashing(5, None) is None


def _mark(after: str, exod: int | None, cgroup: int | None = None) -> dict[str, object]:
    return {"after": after, "exod_major_faults": exod, "cgroup_major_faults": cgroup, "model_cached_mb": None}


def test_page_faults_count_from_the_first_answer(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"\0" * (1000 * 4096))
    marks = [_mark("idle", 3, 10), _mark("answer 1", 900, 2000), _mark("answer 2", 930, 2100), _mark("answer 3", 1010)]
    out = page_faults(marks, model)
    assert out["exod_after_warmup"] == 1010 - 900
    assert out["exod_per_answer_after_warmup"] == [30, 80]
    assert out["thrashing"] is True  # 110 faults > 100 (10 % of 1000 pages)
    assert "cgroup_after_warmup" not in out  # the last mark could not read the cgroup
    one = page_faults([_mark("idle", 1), _mark("answer 1", 5)], model)
    assert one["exod_after_warmup"] is None and one["thrashing"] is None and "two answers" in one["note"]


def test_every_figure_over_its_budget_is_flagged_in_json_and_report() -> None:
    details = {
        "cgroup_peak_mb": 470.0,
        "peak_rss_concurrent_mb": 520.0,
        "oom_kills": 0,
        "page_faults": {"thrashing": True, "exod_after_warmup": 9000, "exod_per_answer_after_warmup": [9000]},
    }
    ok = within_budgets(details, idle=51.0, peak=700.0, peak_budget=480.0, idle_budget=50.0)
    assert ok == {
        "idle": False,
        "peak": False,
        "cgroup_peak": True,
        "concurrent_rss": False,
        "no_oom_kill": True,
        "no_thrashing": False,
    }
    data = {
        "completed": True,
        "startup_s": 1.0,
        "idle_rss_mb": 51.0,
        "peak_rss_mb": 700.0,
        "model_loaded": True,
        "board": "small",
        "limit": {"method": "cgroup1", "memory_mb": 480, "note": "a cgroup"},
        "cpu": {"how": "taskset -c 0"},
        "budgets": {"board": "small", "idle_rss_mb": 50.0, "peak_mb": 480.0},
        "within_budgets": ok,
        **details,
    }
    text = report(data)
    assert text.count("**OVER**") == 3 and "**THRASHING**" in text


def test_the_home_s_local_model_is_read_from_its_roles(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[models.roles]\nmain = ["laptop:big", "local:qwen2.5-coder-0.5b-instruct"]\n')
    assert home_model_name(home) == "qwen2.5-coder-0.5b-instruct"
    (home / "config.toml").write_text('[models.roles]\nmain = ["laptop:big"]\n')
    assert home_model_name(home) is None


def test_exo_bench_footprint_refuses_a_board_without_a_budget() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "bench", "footprint", "--board", "laptop", "--quick"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "invalid choice" in done.stderr and "laptop" in done.stderr


def test_a_model_another_process_keeps_cached_is_copied_and_the_copy_is_not_cached(tmp_path: Path) -> None:
    model = tmp_path / "shared" / "m.gguf"
    model.parent.mkdir()
    model.write_bytes(os.urandom(2 * 1024 * 1024))
    evicted = {"evicted": [{"file": "m.gguf", "still_cached_mb": 2.0}]}
    done = private_model_copy(model, evicted, tmp_path / "home" / "models")
    assert done is not None and Path(done["copy"]).read_bytes() == model.read_bytes()
    assert "stayed cached" in done["why"]
    assert private_model_copy(model, {"evicted": [{"file": "m.gguf", "still_cached_mb": 0.0}]}, tmp_path) is None
    assert private_model_copy(None, evicted, tmp_path) is None
