"""``exo history import|status`` and ``exo search`` on the imported sessions, as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_importer import chatgpt_export

ROOT = Path(__file__).resolve().parents[2]


def exo(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EXO_HOME", "EXO_MODEL", "EXO_SUMMARIZER")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "exo_core.cli", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )


def test_import_summarize_search_and_status(tmp_path: Path) -> None:
    home = tmp_path / "home"
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps(chatgpt_export(50)))
    out = exo("history", "import", str(export), "--home", str(home), "--summarizer", "scripted-summary", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (report["imported"], report["messages"], report["summaries"]) == (1, 51, "done")
    status = json.loads(exo("history", "status", "--home", str(home), "--json").stdout)
    assert status == {"import.done": 4}
    hits = json.loads(exo("search", "zebra33", "--home", str(home), "--json").stdout)
    assert [h["session"] for h in hits] == report["sessions"]
    again = json.loads(
        exo("history", "import", str(export), "--home", str(home), "--json", "--summarizer", "scripted-summary").stdout
    )
    assert (again["imported"], again["skipped"]) == (0, 1)


def test_no_summarize_leaves_pending_work_and_summarize_runs_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    export = tmp_path / "h.jsonl"
    export.write_text(
        "\n".join(
            json.dumps({"conversation": "c", "role": "user" if k % 2 == 0 else "assistant", "content": f"line {k}"})
            for k in range(40)
        )
    )
    out = exo("history", "import", str(export), "--home", str(home), "--no-summarize", "--json")
    assert json.loads(out.stdout)["summaries"] == "pending", out.stderr
    assert json.loads(exo("history", "status", "--home", str(home), "--json").stdout) == {"import.pending": 3}
    out = exo("history", "summarize", "--home", str(home), "--summarizer", "scripted-summary", "--json")
    assert json.loads(out.stdout) == {"ran": 3, "failed": 0}, out.stderr
    assert json.loads(exo("history", "status", "--home", str(home), "--json").stdout) == {"import.done": 3}


def test_a_bad_export_is_a_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bad = tmp_path / "bad.json"
    bad.write_text('[{"title": "x"}]')
    out = exo("history", "import", str(bad), "--home", str(home), "--summarizer", "scripted-summary")
    assert out.returncode == 2
    assert "exo: error [bad_request]" in out.stderr and "no 'mapping'" in out.stderr
    assert not (home / "sessions.sqlite").exists()
