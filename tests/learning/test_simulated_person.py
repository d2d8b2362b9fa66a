"""The simulated person over 24 sessions: learned taste matches hidden taste, corrections fall,
nothing guarded is promoted automatically, and every weight and the pack rebuild from the ledger alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from exo_core.ledger.views import ViewRegistry, render_views
from exo_core.learning import Learner, TastePackView, TasteView
from exo_core.learning.pack import BEGIN, END, enforced, hints
from exo_core.learning.weights import HIGH
from exo_testkit import ROOT
from learnkit import Env, make_env
from simperson import GUARDED_HIDDEN, HIDDEN, Simulation, feature_of

SEED = int(os.environ.get("EXO_SIM_SEED", "7"))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Env, Simulation]:
    env = make_env(tmp_path_factory.mktemp("sim"))
    sim = Simulation(env, seed=SEED)
    sim.run(sessions=24, drafts=5)
    env.learner.review(asked=True)  # a last pass so the pack reflects every entry
    yield env, sim
    env.close()


def test_high_weight_taste_matches_the_hidden_rules(run: tuple[Env, Simulation]) -> None:
    env, sim = run
    book = env.learner.book
    now = book.last_ts
    high = {feature_of(t) for t, l in book.lessons.items() if l.weight(now) >= HIGH and feature_of(t)}
    hidden = set(HIDDEN) | set(GUARDED_HIDDEN)
    true_pos = len(high & hidden)
    precision, recall = true_pos / max(1, len(high)), true_pos / len(hidden)
    first, last = sim.stats.per_accept(slice(0, 6)), sim.stats.per_accept(slice(-6, None))
    shown = {l.feature for l in enforced(book, now) + hints(book, now) if l.feature}
    ever = {feature_of(e.body["target"]) for e in env.ledger.entries(kind="promotion")} - hidden
    print(
        f"\nsimulated person (seed {SEED}): precision {precision:.2f} recall {recall:.2f} "
        f"({true_pos} of {len(hidden)} hidden rules high, {len(high)} high lessons); shown in the pack "
        f"(enforced or hint) {len(shown & hidden)} of {len(HIDDEN)} writing rules and {len(shown - hidden)} others; "
        f"distractors promoted at some point: {sorted(ever) or 'none'}; corrections per accepted output "
        f"{first:.2f} in sessions 1-6 -> {last:.2f} in sessions 19-24; questions answered "
        f"{sim.stats.questions_answered}"
    )
    assert precision >= 0.85 and recall >= 0.75
    assert set(HIDDEN) <= shown, "every writing rule is enforced or, after fading in silence, a hint"
    assert last < first / 2, "corrections per accepted output fall as the pack learns"


def test_nothing_guarded_was_promoted_automatically(run: tuple[Env, Simulation]) -> None:
    env, _ = run
    book = env.learner.book
    push = book.lessons["rules/ask-before-push"]
    assert push.weight(book.last_ts) >= HIGH, "the evidence is strong"
    for promotion in env.ledger.entries(kind="promotion"):
        lesson = book.lessons[promotion.body["target"]]
        if lesson.guarded:
            assert promotion.body["by"] == "person", f"{lesson.target} was promoted without the person"
    assert not push.promoted_by, "the person never answered the question, so it waits"
    assert any(
        l.home == "question" and "rules/ask-before-push" in str(env.ledger.get(l.proposals[0]).body)
        for l in book.lessons.values()
    ), "and Exo asked"


def test_rebuilding_weights_and_pack_from_the_ledger_alone_is_identical(run: tuple[Env, Simulation]) -> None:
    env, _ = run
    live_book = env.learner.book
    live = {t: l.to_json(live_book.last_ts) for t, l in live_book.lessons.items()}
    pack = env.store.pack_text()
    section = pack[pack.index(BEGIN) : pack.index(END) + len(END)]
    # A fresh learner rebuilds its book from the ledger.
    again = Learner(env.store, env.ledger)
    again.refresh()
    assert {t: l.to_json(again.book.last_ts) for t, l in again.book.lessons.items()} == live
    # The registered views give the same weights and the same pack section.
    views = render_views(env.ledger, registry=ViewRegistry([TasteView(), TastePackView()]))
    assert json.loads(views["taste_pack"])["markdown"] == section
    assert json.loads(views["taste"])["lessons"] == json.loads(json.dumps(live))
    # `exo ledger rebuild` writes them, and deleting and rebuilding gives the same bytes.
    out = env.store.root / "indexes" / "ledger"
    env.ledger.close()
    try:
        cmd = [sys.executable, "-m", "exo_core.cli", "ledger", "rebuild", "--store", str(env.store.root)]
        args = {"cwd": ROOT, "capture_output": True, "text": True, "env": {**os.environ, "PYTHONPATH": str(ROOT)}}
        first = subprocess.run(cmd, **args)
        assert first.returncode == 0, first.stderr
        rebuilt = {p.name: p.read_bytes() for p in out.glob("taste*.json")}
        assert rebuilt == {"taste.json": views["taste"], "taste_pack.json": views["taste_pack"]}
        for path in out.glob("*.json"):
            path.unlink()
        assert subprocess.run(cmd, **args).returncode == 0
        assert {p.name: p.read_bytes() for p in out.glob("taste*.json")} == rebuilt
    finally:
        from exo_core.ledger import Ledger

        env.ledger = Ledger.open_store(env.store.root, signer=env.signer, clock=env.clock)
        env.reopen()
