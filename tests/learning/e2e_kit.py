"""A real exod with the standard board's local model, and a person typing into a piped ``exo chat``.

Shared by the issue-22 end-to-end tests (``test_learning_e2e_model.py``) and their
benchmark (``benchmarks/bench_learning_e2e.py``). One thread, ``OMP_WAIT_POLICY=PASSIVE``
(a busy 2-core machine). :func:`need_model` skips with the reason when the runtime or
the model file is absent.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exo_testkit import ROOT, Exod, write_script

__all__ = [
    "MODEL",
    "FACTS",
    "QUESTIONS",
    "Home",
    "need_model",
    "model_missing",
    "drafts_of",
    "answers_by_session",
    "write_belief",
]

MODEL = "qwen2.5-coder-0.5b-instruct"
_ENV_DROP = ("EXO_HOME", "EXO_MODEL", "EXO_TOKEN")

# The memory scenario: five facts (the first two replace a belief written before the session), and a
# question with the word its right answer holds for each.
FACTS = (
    "My sister moved to Porto.",
    "My dentist is now on Friday.",
    "Remember that my boss is Maria.",
    "Remember that my gym is on Elm Street.",
    "Remember that my cat is called Miso.",
)
QUESTIONS = (
    ("Where does my sister live?", "porto"),
    ("What day is my dentist?", "friday"),
    ("Who is my boss?", "maria"),
    ("Where is my gym?", "elm"),
    ("What is my cat called?", "miso"),
)


def model_missing() -> str:
    """Why the real model cannot run here ("" when it can)."""
    from exo_edge.manifest import find_manifest
    from exo_edge.paths import locate_model_file

    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (scripts/install_edge.sh)"
    if locate_model_file(find_manifest(MODEL).primary_file.name) is None:
        return f"{MODEL} is not fetched on this machine (run `exo models fetch {MODEL}`)"
    return ""


def need_model() -> None:
    """Skip the calling test, with the reason, when the model cannot run."""
    import pytest

    why = model_missing()
    if why:
        pytest.skip(why)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _ENV_DROP}
    return env | {"PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE"}


@dataclass
class Home:
    """An Exo home made by ``exo init --board standard`` and its exod (``start``/``stop``)."""

    root: Path
    workspace: Path
    exod: Exod | None = None

    @classmethod
    def create(cls, tmp: Path) -> Home:
        """``exo init --board standard`` in ``tmp/home``; checks the board's main model is the one named."""
        home = cls(tmp / "home", tmp / "ws")
        home.workspace.mkdir(parents=True, exist_ok=True)
        done = home.exo("init", "--board", "standard")
        assert done.returncode == 0, done.stderr
        assert f'main = ["local:{MODEL}"]' in (home.root / "config.toml").read_text()
        return home

    @property
    def store(self) -> Path:
        """The home's store folder."""
        return self.root / "store"

    def exo(self, *args: str, stdin: str | None = None, timeout: float = 3600.0) -> subprocess.CompletedProcess[str]:
        """Run ``exo ARGS --home HOME`` from this tree."""
        return subprocess.run(
            [sys.executable, "-m", "exo_core.cli", *args, "--home", str(self.root)],
            input=stdin,
            capture_output=True,
            text=True,
            env=_env(),
            cwd=str(self.workspace),
            timeout=timeout,
        )

    def start(self) -> Home:
        """Start exod over the local model (the board's main role)."""
        unused = write_script(self.root.parent / "unused.json", [])
        extra = ["--model", "local"]
        self.exod = Exod(self.root, unused, self.workspace, extra=extra, env={"OMP_WAIT_POLICY": "PASSIVE"})
        self.exod.start(timeout=180)
        return self

    def stop(self) -> None:
        """Stop exod (SIGTERM, a clean exit)."""
        if self.exod is not None:
            assert self.exod.stop() == 0, self.exod.log.read_text()[-4000:]
            self.exod = None

    def lint(self) -> subprocess.CompletedProcess[str]:
        """``exo store lint --strict STORE`` (it names the store folder, it takes no ``--home``)."""
        return subprocess.run(
            [sys.executable, "-m", "exo_core.cli", "store", "lint", "--strict", str(self.store)],
            capture_output=True,
            text=True,
            env=_env(),
            cwd=str(self.workspace),
            timeout=600,
        )

    def chat(self, lines: list[str]) -> str:
        """One session: ``lines`` typed into a piped ``exo chat``; what it printed."""
        done = self.exo("chat", "--no-spawn", stdin="\n".join(lines) + "\n")
        assert done.returncode == 0, done.stderr[-4000:]
        return done.stdout

    def entries(self, kind: str | None = None) -> list[Any]:
        """The store ledger's entries (of ``kind``)."""
        from exo_core.ledger import Ledger

        with Ledger.open_store(self.store) as ledger:
            return list(ledger.entries(kind=kind) if kind else ledger.entries())


def drafts_of(home: Home) -> dict[str, list[str]]:
    """The assistant's drafts (``action`` entries of tool ``reply``) by session, in order."""
    out: dict[str, list[str]] = {}
    for entry in home.entries("action"):
        if entry.body.get("tool") == "reply":
            out.setdefault(str(entry.body.get("session")), []).append(str(entry.body.get("text", "")))
    return out


def answers_by_session(home: Home) -> list[list[str]]:
    """The drafts grouped by session, sessions in the order they first answered."""
    return list(drafts_of(home).values())


def write_belief(store: Path, node_id: str, title: str, summary: str, body: str) -> None:
    """An older belief already in the store (valid since 2024), as onboarding would leave it."""
    from exo_core.store import Node, Store

    opened = Store.open(store)
    domain = node_id.split("/", 1)[0]
    if domain not in {n.domain for n in opened.nodes()}:
        opened.ensure_domain(domain)
    node = Node(
        id=node_id,
        title=title,
        type="fact",
        domain=domain,
        summary=summary,
        load_when="",
        confidence="high",
        stability="durable",
        valid_from="2024-01-01",
        body=f"\n# {title}\n\n{body}\n",
    )
    opened.write_node(node)
