"""The exam and the climb: a candidate fitted to dev quirks wins on dev and is refused by held-out;
an honest candidate is kept; noise, caps, the judge's family, the person's ruling; decisions in the ledger."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from exo_core.errors import ConfigError
from exo_core.learning.climb import Candidate, climb, judge_scorer
from exo_core.learning.evalset import EvalItem, Split, items_from, rules_score, split
from exo_core.learning.reviewer import LEARNING_SOURCE, question_for
from learnkit import Env, make_env
from simperson import Simulation

DASH = "\u2014"


def exam(n: int = 60) -> Split:
    """Half the items: the person removed an em dash (everywhere). The other half: in train and dev the
    rejected reply happens to mention Tuesday; in held-out it is the chosen one that does."""
    skeleton = [EvalItem(f"pair:{i:03d}", "pair", 1000 + i, "writing", {}) for i in range(n)]
    parts = split(skeleton)
    held = {i.id for i in parts.sealed()}

    def fill(item: EvalItem) -> EvalItem:
        if int(item.id[-3:]) % 2 == 0:
            data = {"rejected": f"We ship it {DASH} soon.", "chosen": "We ship it soon."}
        elif item.id in held:
            data = {"rejected": "We ship it soon.", "chosen": "We ship it on Tuesday."}
        else:
            data = {"rejected": "We ship it on Tuesday.", "chosen": "We ship it soon."}
        return EvalItem(item.id, item.part, item.ts, item.domain, data)

    return Split(tuple(map(fill, parts.train)), tuple(map(fill, parts.dev)), tuple(map(fill, parts.sealed())))


QUIRK = Candidate(frozenset({r"re:\btuesday\b"}), "taste/no-tuesday")
HONEST = Candidate(frozenset({"em_dash"}), "taste/em-dash")


def test_the_split_is_by_time_with_a_fixed_sample() -> None:
    items = [EvalItem(f"replay:{i}", "replay", i, "writing", {}) for i in range(100)]
    parts = split(items)
    held = parts.sealed()
    assert {i.ts for i in held} >= set(range(80, 100)), "the newest fifth is held out"
    assert len(held) > 20, "plus a fixed sample of the rest"
    assert split(list(reversed(items))).sealed() == held, "the sample never moves"
    assert max(i.ts for i in parts.train) < min(i.ts for i in parts.dev)
    assert not {i.id for i in held} & {i.id for i in parts.train + parts.dev}


def test_a_dev_fitted_candidate_is_refused_and_an_honest_one_kept(tmp_path: Path) -> None:
    env = make_env(tmp_path)
    data = exam()
    opened = []

    class Watched(Split):
        def sealed(self) -> tuple[EvalItem, ...]:
            opened.append(True)
            return Split.sealed(self)

    watched = Watched(data.train, data.dev, data.sealed())
    incumbent, decisions = climb(frozenset(), [QUIRK, HONEST], watched, rules_score, ledger=env.ledger)
    quirk, honest = decisions
    assert quirk.dev > quirk.incumbent_dev + quirk.noise, "the quirk wins on dev"
    assert not quirk.kept and quirk.reason == "held-out dropped"
    assert quirk.held_out is not None and quirk.incumbent_held_out is not None
    assert quirk.held_out < quirk.incumbent_held_out
    assert honest.kept and honest.held_out >= honest.incumbent_held_out
    assert incumbent == HONEST.setup
    entries = list(env.ledger.entries(kind="decision"))
    assert [e.body["kept"] for e in entries] == ["no", "yes"]
    assert entries[0].body["change"] == "taste/no-tuesday" and entries[0].body["held_out"] == quirk.held_out
    assert len(opened) == 2
    # A candidate that does not beat dev never opens held-out.
    opened.clear()
    _, again = climb(incumbent, [HONEST], watched, rules_score)
    assert not again[0].kept and again[0].reason == "no better than noise on dev" and not opened
    env.close()


def test_noise_of_a_judge_drops_small_gains_and_the_family_rule() -> None:
    data = exam()

    def noisy(item: EvalItem, setup: frozenset[str], sample: int) -> float:
        jitter = random.Random(f"{item.id}:{sample}").uniform(-0.3, 0.3)
        return rules_score(setup, item) + jitter

    scorer = judge_scorer(noisy, judge_family="qwen", tested_family="gemma")
    tiny = Candidate(frozenset({"emoji"}), "taste/emoji")  # changes nothing on this exam
    _, decisions = climb(frozenset(), [tiny, HONEST], data, scorer, samples=3)
    assert decisions[0].noise > 0 and not decisions[0].kept
    assert decisions[1].kept
    with pytest.raises(ConfigError):
        judge_scorer(noisy, judge_family="Gemma", tested_family="gemma")


def test_caps_ceiling_and_the_person_outranks_the_eval() -> None:
    data = exam()
    many = [Candidate(frozenset({"emoji", f"re:x{i}"}), f"c{i}") for i in range(15)]
    _, decisions = climb(frozenset(), many, data, rules_score)
    assert len(decisions) == 10, "ten candidates a night"
    spend = iter([0.0, 0.5, 1.0, 1.5])
    _, capped = climb(frozenset(), many, data, rules_score, spent=lambda: next(spend), ceiling=1.0)
    assert len(capped) == 2, "stops at the monthly ceiling"
    incumbent, ruled = climb(frozenset(), [QUIRK], data, rules_score, person_ruled=frozenset({QUIRK.change}))
    assert ruled[0].kept and "person ruled" in ruled[0].reason and incumbent == QUIRK.setup


def test_eval_items_come_from_the_persons_own_verdicts(tmp_path: Path) -> None:
    env: Env = make_env(tmp_path)
    Simulation(env, seed=3).run(sessions=6, drafts=4)
    items = items_from(env.learner.book)
    parts = {i.part for i in items}
    assert {"pair", "replay"} <= parts
    pairs = [i for i in items if i.part == "pair"]
    assert all(i.data["rejected"] != i.data["chosen"] for i in pairs)
    learned = frozenset(l.feature for l in env.learner.book.lessons.values() if l.promoted_by and l.feature)
    data = split(items)
    dev_learned = sum(rules_score(learned, i) for i in data.dev)
    dev_empty = sum(rules_score(frozenset(), i) for i in data.dev)
    assert dev_learned > dev_empty, "the learned taste predicts the person better than no taste"
    env.close()


def test_the_persons_answers_about_lessons_outside_the_catalog_are_exam_items(tmp_path: Path) -> None:
    """Lessons outside the feature catalog must be learnable (issue 22 item 4), so the person's answer about
    one is a qa item like any other: its rule is the lesson's target, its domain "actions" when it guards
    something (it may drop by nothing) and "writing" otherwise. Commit e4cc419 had skipped them."""
    env: Env = make_env(tmp_path)
    lessons = {
        "taste/sign-with-initials": ("Signs messages with initials only.", {}),
        "rules/ask-before-mailing-the-club": ("Asks before mailing the club list.", {"guarded": "third-party"}),
    }
    for target, (claim, extra) in lessons.items():  # as a larger model's reflection proposes them
        env.ledger.append(
            "proposal",
            {"target": target, "source": LEARNING_SOURCE, "home": "pack", "claim": claim, "domain": "taste", **extra},
        )
    answers = {"taste/sign-with-initials": 1, "rules/ask-before-mailing-the-club": 2}  # option 1 "Yes", 2 "No"
    for target, option in answers.items():
        env.learner.refresh()
        assert env.learner.book.lessons[target].feature == "", "the lesson is outside the catalog"
        question = question_for(env.learner.book, target=target)
        assert question is not None
        asked = env.ledger.append("proposal", question.body, refs=question.refs)
        env.ledger.append(
            "utterance", {"text": "ok", "answer_to": asked.id, "option": option, "session": "s1"}, refs=(asked.id,)
        )
    env.learner.refresh()
    qa = {i.data["rule"]: i for i in items_from(env.learner.book) if i.part == "qa"}
    assert set(qa) == set(answers)
    signed, guarded = qa["taste/sign-with-initials"], qa["rules/ask-before-mailing-the-club"]
    assert (signed.domain, signed.data["answer"]) == ("writing", "yes")
    assert (guarded.domain, guarded.data["answer"]) == ("actions", "no")
    with_it = frozenset({"taste/sign-with-initials"})
    assert rules_score(with_it, signed) == 1.0 and rules_score(frozenset(), signed) == 0.0
    assert rules_score(frozenset(), guarded) == 1.0, "the person said no: a setup without it predicts them"
    env.close()


def test_longitudinal_metrics_and_the_stale_eval_flag(tmp_path: Path) -> None:
    from exo_core.learning.metrics import Window, metrics, stale

    env: Env = make_env(tmp_path)
    Simulation(env, seed=7).run(sessions=14, drafts=4)
    m = metrics(env.ledger, days=7, spent=0.42)
    assert len(m.windows) == 2
    assert m.windows[-1].corrections_per_accept < m.windows[0].corrections_per_accept
    assert sum(w.verdicts.get("accept", 0) for w in m.windows) > 0 and m.promotions >= 4
    assert m.cost_per_lesson == pytest.approx(0.42 / m.promotions) and not m.stale
    rising = [Window(i, {"edit": 2 + i, "accept": 5}, eval_scores=[0.5 + i / 10]) for i in range(3)]
    assert stale(rising), "corrections rise while eval scores rise: the eval is stale"
    assert not stale([Window(i, {"edit": 5 - i, "accept": 5}, eval_scores=[0.5 + i / 10]) for i in range(3)])
    env.close()
