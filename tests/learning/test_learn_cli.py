"""``exo learn`` end to end on a fresh home: review, metrics, climb, reject, rebuild, queue; bad input is typed."""

from __future__ import annotations

import json
from pathlib import Path

from exo_core.ledger import Ledger, load_signing_key
from exod_kit import exo, store_lint


def test_learn_commands(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert exo(home, "init").returncode == 0
    with Ledger.open_store(home / "store", signer=load_signing_key(home / "keys")) as ledger:
        for session in ("a", "b", "c"):
            draft = ledger.append(
                "action",
                {"tool": "reply", "outcome": "log", "session": session, "text": "Sure, here it is \u2014 done."},
            )
            ledger.append(
                "verdict",
                {"verdict": "edit", "judged": draft.id, "session": session, "text": "Done."},
                refs=(draft.id,),
            )
    review = exo(home, "learn", "review", "--json")
    assert review.returncode == 0, review.stderr
    assert sorted(json.loads(review.stdout)["promoted"]) == ["taste/em-dash", "taste/preamble"]
    metrics = json.loads(exo(home, "learn", "metrics", "--json").stdout)
    assert metrics["windows"][0]["verdicts"] == {"edit": 3} and metrics["promotions"] == 2
    climb = exo(home, "learn", "climb", "--json")
    assert climb.returncode == 0 and json.loads(climb.stdout)["incumbent"] == ["em_dash", "preamble"]
    reject = exo(home, "learn", "reject", "taste/em-dash", "--reason", "dashes are fine")
    assert reject.returncode == 0, reject.stderr
    assert "[[taste/em-dash]]" not in (home / "store" / "pack.md").read_text()
    (home / "store" / "taste" / "preamble.md").unlink()
    rebuilt = exo(home, "learn", "rebuild", "--json")
    assert rebuilt.returncode == 0 and (home / "store" / "taste" / "preamble.md").is_file()
    queue = json.loads(exo(home, "learn", "queue", "--json").stdout)
    assert queue["route"] is None and queue["jobs"] == {}
    drain = exo(home, "learn", "drain")
    assert drain.returncode == 2 and "no route to a larger model" in drain.stderr
    (home / "config.toml").write_text((home / "config.toml").read_text() + '\n[learning]\nroute = "nocolon"\n')
    bad = exo(home, "learn", "queue")
    assert bad.returncode == 2 and "[learning] route" in bad.stderr
    lint = store_lint(home)
    assert lint.returncode == 0 and "0 error(s), 0 warning(s)" in lint.stdout, lint.stdout
