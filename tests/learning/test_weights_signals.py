"""The strength table, the category guard, and the weight function (no ledger needed)."""

from __future__ import annotations

import pytest

from exo_core.ledger.entry import StoredEntry
from exo_core.learning.features import CATALOG, feature, match_words, stance
from exo_core.learning.signals import STRENGTHS, category_of, signed_strength
from exo_core.learning.weights import DAY_MS, HIGH, MEDIUM, Evidence, label, weight


def ev(i: int, strength: float, ts: int = 0, fades: bool = True, session: str = "s") -> Evidence:
    return Evidence(f"{i:064x}", ts, strength, fades, session, "edit")


def entry(kind: str, body: dict, scope: str = "person") -> StoredEntry:
    return StoredEntry(
        n=1,
        seg=0,
        pos=1,
        id="0" * 64,
        prev="0" * 64,
        chain="0" * 64,
        author="a",
        sig=b"",
        kind=kind,
        scope=scope,
        ts=0,
        idem=None,
        refs=(),
        body=body,
        content=b"",
    )


@pytest.mark.parametrize("category", sorted(STRENGTHS))
@pytest.mark.parametrize("score", [None, -1.0, -0.5, 0.0, 0.3, 1.0, 7.0])
def test_a_model_score_never_contradicts_its_category(category: str, score: float | None) -> None:
    band = STRENGTHS[category]
    value = signed_strength(category, score)
    if band.default:
        assert (value > 0) == (band.sign > 0), "the category's sign wins over the model's"
    assert band.low <= abs(value) <= band.high


def test_reject_with_a_positive_score_stays_negative() -> None:
    assert signed_strength("reject", 0.95) == -0.6
    assert signed_strength("accept", -1.0) == 0.3
    assert signed_strength("edit") == -0.55


def test_only_the_person_channel_teaches() -> None:
    assert category_of(entry("verdict", {"verdict": "edit", "judged": "0" * 64})) == "edit"
    assert category_of(entry("rule", {"text": "no em dashes"})) == "rule"
    assert category_of(entry("utterance", {"text": "hi"})) == "utterance"  # exposure: strength 0
    assert STRENGTHS["utterance"].default == 0.0
    # imported history, tool output, another scope: never a signal
    assert category_of(entry("utterance", {"text": "no em dashes", "source": "chat-import"})) is None
    assert category_of(entry("action", {"tool": "web_fetch", "outcome": "allow", "result": "never use dashes"})) is None
    assert category_of(entry("rule", {"text": "no em dashes"}, scope="agent:helper")) is None


def test_noisy_or_and_labels() -> None:
    assert weight([ev(1, 0.5), ev(2, 0.5)], 0) == pytest.approx(0.75)
    assert label(0.75) == "high" and label(0.5) == "medium" and label(0.44) == "low"
    assert (HIGH, MEDIUM) == (0.75, 0.45)
    assert weight([ev(1, 0.5), ev(1, 0.5)], 0) == pytest.approx(0.5), "one entry counts once"
    assert weight([], 0) == 0.0 and weight([ev(1, -0.4)], 0) == 0.0


def test_half_life_without_sleeping() -> None:
    pref = [ev(1, 0.5, ts=0)]
    assert weight(pref, 30 * DAY_MS) == pytest.approx(0.25)
    assert weight(pref, 60 * DAY_MS) == pytest.approx(0.125)
    rule = [Evidence("r" * 64, 0, 0.9, False, "s", "rule")]
    assert weight(rule, 3650 * DAY_MS) == pytest.approx(0.9), "rules never fade"
    assert weight(pref, -DAY_MS) == pytest.approx(0.5), "evidence from the future does not grow"


def test_a_later_correction_lowers_the_weight() -> None:
    support = [ev(1, 0.5), ev(2, 0.5), ev(3, 0.7)]
    alone = weight(support, 0)
    against = weight(support + [ev(4, -0.2)], 0)
    assert against < alone
    assert weight(support + [ev(i, -0.2) for i in range(10, 40)], 0) < MEDIUM


def test_stance_of_edits_accepts_and_rejections() -> None:
    dash = feature("em_dash")
    assert dash is not None
    assert stance(dash, "edit", "a \u2014 b", "a. b") == +1
    assert stance(dash, "edit", "a \u2014 b", "a \u2014 c") == -1, "kept in an edit: the person let it stand"
    assert stance(dash, "edit", "a. b", "a. c") is None
    assert stance(dash, "accept", "a \u2014 b", None) == -1
    assert stance(dash, "accept", "a. b", None) is None, "silence about a feature is not evidence"
    assert stance(dash, "reject", "a \u2014 b", None, "no em dashes please") == +1
    assert stance(dash, "reject", "a \u2014 b", None, "") is None, "an unexplained rejection is ambiguous"
    assert dash in match_words("Please, no em-dash in anything") and len({f.key for f in CATALOG}) == len(CATALOG)
