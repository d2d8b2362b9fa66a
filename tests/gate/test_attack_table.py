"""The shell attack table (issue 19): every row gets its outcome, benign rows included (a false ask is wrong too).

The rows are in ``tests/gate/attack_table.py``; each is judged by the real gate (``evaluate``) under the
default policy with the workspace at ``/srv/ws``. ``test_the_whole_table`` reports the count of wrong rows
by category, so a failure shows how far off the gate is rather than only the first miss.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from attack_table import ROWS

from exo_core.gate import Policy, evaluate

WS = Path("/srv/ws")
POLICY = Policy().with_workspace(WS)


def _judge(command: str, axes: dict[str, str]) -> tuple[str, list[str]]:
    decision = evaluate("bash", {"command": command}, POLICY, risk="high")
    got = decision.classification.axes.as_dict()
    wrong_axes = [f"{name}={got[name]} (want {value})" for name, value in axes.items() if got[name] != value]
    return decision.outcome, wrong_axes


@pytest.mark.parametrize(("category", "command", "outcome", "axes"), ROWS, ids=[r[1][:70] for r in ROWS])
def test_row(category: str, command: str, outcome: str, axes: dict[str, str]) -> None:
    got, wrong_axes = _judge(command, axes)
    detail = evaluate("bash", {"command": command}, POLICY, risk="high").as_dict()
    assert got == outcome, detail
    assert not wrong_axes, (wrong_axes, detail)


def test_the_whole_table() -> None:
    wrong: Counter[str] = Counter()
    false_asks = 0
    for category, command, outcome, axes in ROWS:
        got, wrong_axes = _judge(command, axes)
        if got != outcome or wrong_axes:
            wrong[category] += 1
            if category == "benign" and got in ("ask", "deny"):
                false_asks += 1
    shell_forms = len(ROWS)
    benign = sum(1 for r in ROWS if r[0] == "benign")
    assert shell_forms >= 200 and benign >= 40, (shell_forms, benign)
    assert len({r[1] for r in ROWS}) == shell_forms, "a row is listed twice"
    assert not wrong, f"{sum(wrong.values())} wrong of {shell_forms} ({dict(wrong)}); false asks: {false_asks}"
