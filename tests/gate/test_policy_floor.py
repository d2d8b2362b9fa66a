"""Policies, the operator floor no policy can lower, tighten-only decision models, the shell reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.agent.seams import GateOutcome
from exo_core.errors import ConfigError
from exo_core.gate import AXES, OUTCOMES, Axes, ConsequenceGate, Policy, classify, decide, evaluate, parse_shell
from exo_core.gate.axes import outcome_rank
from exo_core.gate.floor import floor_for, tighten
from exo_core.tools.spec import ToolSpec

WS = Path("/srv/ws")
FLOOR_ACTIONS: list[tuple[str, dict[str, Any]]] = [
    ("bash", {"command": "git push --force origin main"}),
    ("bash", {"command": "git push origin :release"}),
    ("bash", {"command": "gh pr comment 1 -b 'shipping it'"}),
    ("bash", {"command": "npm publish"}),
    ("bash", {"command": "GIT_TRACE=1 sudo git push -f"}),
    ("post_status", {"text": "hello"}),
    ("bash", {"command": "echo ok && gh release create v2"}),
]
KEYS = [
    "git.push",
    "git.push.*",
    "git.push.force",
    "gh.*",
    "gh.pr.comment",
    "package.publish",
    "post.public",
    "shell.read",
    "file.edit",
    "http.post",
    "mail.send",
    "tool.*",
    "*",
]

outcomes = st.sampled_from(OUTCOMES)
policies = st.fixed_dictionaries(
    {},
    optional={
        "matrix": st.dictionaries(
            st.sampled_from(AXES["reversibility"]), st.dictionaries(st.sampled_from(AXES["exposure"]), outcomes)
        ),
        "paid": outcomes,
        "third_party": outcomes,
        "overrides": st.dictionaries(st.sampled_from(KEYS), outcomes),
        "reserved": st.lists(st.sampled_from(KEYS)),
        "denied": st.lists(st.sampled_from(KEYS)),
        "scopes": st.fixed_dictionaries(
            {},
            optional={
                "private_remotes": st.lists(st.sampled_from(["backup", "mine"])),
                "local_hosts": st.lists(st.sampled_from(["nas", "box"])),
            },
        ),
        "budget": st.fixed_dictionaries({"max_amount": st.floats(0, 1000)}),
    },
)


@settings(max_examples=300, deadline=None)
@given(policy=policies, action=st.sampled_from(FLOOR_ACTIONS), always=st.booleans())
def test_no_policy_lowers_the_operator_floor(
    policy: dict[str, Any], action: tuple[str, dict[str, Any]], always: bool
) -> None:
    tool, arguments = action
    parsed = Policy.from_mapping(policy, workspace=WS)
    first = evaluate(tool, arguments, parsed)
    assert first.classification.axes.reversibility == "irreversible"
    assert first.classification.axes.exposure == "public" and first.classification.axes.third_party == "affects"
    keys = frozenset({first.rule_key}) if always else frozenset()
    decision = evaluate(tool, arguments, parsed, always=keys)
    assert outcome_rank(decision.outcome) >= outcome_rank("ask"), decision.as_dict()
    assert decision.floor
    # Through the loop's seam as well, allow_always included.
    gate = ConsequenceGate(parsed, workspace=WS)
    spec = ToolSpec(tool, "", {"type": "object"}, risk="high")
    if always:
        gate.allow_always(gate.check(spec, arguments).rule_key)
    assert gate.check(spec, arguments).action in ("ask", "deny")


@settings(max_examples=200, deadline=None)
@given(
    rev=st.sampled_from(AXES["reversibility"]),
    exp=st.sampled_from(AXES["exposure"]),
    third=st.sampled_from(AXES["third_party"]),
    base=outcomes,
    proposed=st.one_of(st.none(), outcomes),
)
def test_floor_and_tighten_only_raise(rev: str, exp: str, third: str, base: str, proposed: str | None) -> None:
    minimum, rule = floor_for(Axes(rev, exp, "free", third))
    assert bool(rule) == (rev == "irreversible" and exp == "public" and third == "affects")
    assert outcome_rank(tighten(base, proposed)) >= outcome_rank(base)
    if proposed is not None:
        assert outcome_rank(tighten(base, proposed)) >= outcome_rank(proposed)


class Loosener:
    """A decision model that always says allow: it must change nothing."""

    def advise(self, classification: Any, arguments: Any) -> str:
        return "allow"


class Tightener:
    def advise(self, classification: Any, arguments: Any) -> str:
        return "ask"


def test_a_decision_model_may_only_tighten() -> None:
    spec = ToolSpec("bash", "", {"type": "object"}, risk="high")
    loose = ConsequenceGate(workspace=WS, advisor=Loosener())
    assert loose.check(spec, {"command": "git push"}).action == "ask"
    assert loose.check(spec, {"command": "ls"}).action == "allow"
    tight = ConsequenceGate(workspace=WS, advisor=Tightener())
    outcome = tight.check(spec, {"command": "ls"})
    assert isinstance(outcome, GateOutcome) and outcome.action == "ask" and "decision model" in outcome.reason


def test_policy_overrides_scopes_reserved_denied_budget_posting(tmp_path: Path) -> None:
    path = tmp_path / "gate.toml"
    path.write_text("""
paid = "ask"
reserved = ["mail.send", "file.delete"]
denied = ["disk.*"]
[matrix.reversible]
private = "allow"
[scopes]
private_remotes = ["backup"]
local_hosts = ["nas"]
[overrides]
"git.push" = "log"
"git.push.force" = "allow"
[budget]
max_amount = 20
[posting]
denied = ["upstream"]
""")
    policy = Policy.load(path, workspace=WS)
    assert evaluate("edit_file", {"path": "a.txt"}, policy).outcome == "allow"
    assert evaluate("bash", {"command": "git push origin main"}, policy).outcome == "log"
    # An override cannot lower the floor, and it covers only its own part of a line.
    assert evaluate("bash", {"command": "git push -f origin main"}, policy).outcome == "ask"
    assert evaluate("bash", {"command": "git push && rm -rf /etc"}, policy).outcome == "ask"
    assert evaluate("bash", {"command": "git push upstream main"}, policy).outcome == "deny"
    pushed_home = evaluate("bash", {"command": "git push backup main"}, policy)
    assert pushed_home.classification.axes.exposure == "private"
    assert evaluate("bash", {"command": "curl -d x http://nas/api"}, policy).outcome == "log"
    assert evaluate("bash", {"command": "mkfs.ext4 /dev/sdb"}, policy).outcome == "deny"
    assert evaluate("pay_invoice", {"amount": 25}, policy).outcome == "deny"
    assert evaluate("pay_invoice", {"amount": 5}, policy).outcome == "ask"
    assert evaluate("pay_invoice", {}, policy).outcome == "ask"
    assert Policy.load(tmp_path / "missing.toml").reserved == Policy().reserved


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"nonsense": 1}, "unknown gate policy key"),
        ({"matrix": {"sometimes": {"private": "allow"}}}, "matrix.sometimes"),
        ({"matrix": {"reversible": {"galaxy": "allow"}}}, "matrix.reversible.galaxy"),
        ({"matrix": {"reversible": {"private": "maybe"}}}, "allow, log, ask, deny"),
        ({"overrides": {"git.push": "yes"}}, "overrides.git.push"),
        ({"reserved": "mail.send"}, "list of action keys"),
        ({"budget": {"max_amount": "lots"}}, "budget.max_amount"),
        ({"scopes": {"homes": []}}, "scopes.homes"),
        ({"posting": {"allowed": []}}, "posting"),
    ],
)
def test_bad_policies_are_clear_config_errors(data: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        Policy.from_mapping(data)
    assert fragment in err.value.message


def test_bad_toml_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "gate.toml"
    bad.write_text("[matrix\n")
    with pytest.raises(ConfigError, match="fix or delete"):
        Policy.load(bad)


def test_allow_always_stops_asking_for_that_kind_only() -> None:
    gate = ConsequenceGate(workspace=WS)
    spec = ToolSpec("bash", "", {"type": "object"}, risk="high")
    first = gate.check(spec, {"command": "git push origin main"})
    assert first.action == "ask" and first.rule_key == "bash:git.push"
    gate.allow_always(first.rule_key)
    assert gate.check(spec, {"command": "git push origin feature"}).action == "allow"
    assert gate.check(spec, {"command": "curl -d x https://api.example.com"}).action == "ask"


@pytest.mark.parametrize(
    ("line", "argvs"),
    [
        ("a | b && c; d & e || f", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]]),
        ("echo 'a b' \"c $X\" d\\ e", [["echo", "a b", "c $X", "d e"]]),
        ("FOO=1 BAR=2 cmd x", [["cmd", "x"]]),
        ("(a; (b | c))", [["a"], ["b"], ["c"]]),
        ("x $(y $(z))", [["x", "$(y $(z))"], ["y", "$(z)"], ["z"]]),
        ("cat <<EOF\nhello $(not run)\nEOF\nls", [["cat"], ["ls"]]),
        # a script given to bash -c is read by the classifier, which knows which word is a script
        ("bash -c 'a && b'", [["bash", "-c", "a && b"]]),
        ("echo $'a\\tb'", [["echo", "a\tb"]]),
        ("diff <(ls a) <(ls b)", [["diff", "<(ls a)", "<(ls b)"], ["ls", "a"], ["ls", "b"]]),
        ("echo a # git push", [["echo", "a"]]),
        ("a \\\n b", [["a", "b"]]),
    ],
)
def test_the_shell_reader(line: str, argvs: list[list[str]]) -> None:
    parsed = parse_shell(line)
    assert not parsed.error
    assert sorted(list(c.argv) for c in parsed.commands) == sorted(argvs)


@pytest.mark.parametrize("line", ["echo 'x", 'echo "x', "echo $(x", "(a", "a )", "echo `x", "cat <", "f() { a; }"])
def test_unreadable_lines_are_errors_and_ask(line: str) -> None:
    assert parse_shell(line).error
    assert evaluate("bash", {"command": line}, Policy()).outcome == "ask"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab $'\"`()|&;<>\\\n#{}=*-")), max_size=40))
def test_the_reader_never_raises_and_classify_is_total(line: str) -> None:
    parse_shell(line)
    cell = classify("bash", {"command": line})
    assert decide(cell, Policy()).outcome in OUTCOMES


def test_deep_nesting_is_refused() -> None:
    line = "x"
    for _ in range(12):
        line = f"echo $({line})"
    assert "deeper" in parse_shell(line).error
