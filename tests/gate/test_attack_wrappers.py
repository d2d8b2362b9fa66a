"""Wrapping an attack never hides it: Hypothesis wraps the attack table's rows and checks they still ask.

An attacker's first move against a reader of command lines is to put the command somewhere else: behind
``sudo``/``env``/``nice``/``timeout``/``xargs``/``busybox``, inside ``bash -c``/``bash -lc``/``sh -s``
heredocs/``eval``, after a harmless command, in a subshell or a ``$( )``. Every row of
``attack_table.py`` that must ask (or be denied), wrapped in any of these, must still ask or be denied.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from attack_table import ROWS
from hypothesis import given, settings
from hypothesis import strategies as st

from exo_core.gate import Policy, evaluate
from exo_core.gate.axes import outcome_rank

POLICY = Policy().with_workspace(Path("/srv/ws"))
ATTACKS = [command for category, command, outcome, _axes in ROWS if outcome in ("ask", "deny")]
# A prefix only makes sense before a program (sudo cannot run a builtin, a keyword or an assignment).
_NOT_PROGRAMS = ("cd ", "pushd ", "export ", "alias ", "hash ", "enable ", "trap ", "source ", ". ", "eval ", "exec ")
_NOT_PROGRAMS += ("builtin ", "command ", "coproc ", "function ", "if ", "{ ", "f()", "x=", "a=", "!", "$", "`", '"')
PROGRAMS = [c for c in ATTACKS if not c.startswith(_NOT_PROGRAMS) and "\n" not in c and "=" not in c.split(" ")[0]]

PREFIXES = [
    "sudo ",
    "sudo -u root ",
    "env ",
    "env A=1 ",
    "nice -n 5 ",
    "timeout 10 ",
    "nohup ",
    "time ",
    "command ",
    "busybox ",
    "stdbuf -o0 ",
    "setsid ",
    "ionice -c 3 ",
    "strace -f -o /dev/null ",
    "chroot / ",
    "/usr/bin/env ",
]


def _script_wrappers(line: str) -> list[str]:
    quoted = shlex.quote(line)
    return [
        f"bash -c {quoted}",
        f"bash -lc {quoted}",
        f"sh -ec {quoted}",
        f"sudo bash -c {quoted}",
        f"eval {quoted}",
        f"bash <<'EOF'\n{line}\nEOF",
        f"sh -s <<< {quoted}",
        f"true && {line}",
        f"ls; {line}",
        f"({line})",
        f"echo $({line})",
        f"echo start\n{line}",
        f"watch {quoted}",
        f"find . -maxdepth 0 -exec sh -c {quoted} \\;",
    ]


def _asks(command: str) -> bool:
    return outcome_rank(evaluate("bash", {"command": command}, POLICY).outcome) >= outcome_rank("ask")


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(PROGRAMS), st.sampled_from(PREFIXES))
def test_a_prefix_never_hides_an_attack(command: str, prefix: str) -> None:
    assert _asks(prefix + command), prefix + command


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(ATTACKS), st.integers(min_value=0, max_value=13))
def test_a_script_wrapper_never_hides_an_attack(command: str, which: int) -> None:
    wrapped = _script_wrappers(command)[which]
    assert _asks(wrapped), wrapped


def test_the_wrapper_pools_are_large() -> None:
    assert len(ATTACKS) >= 250 and len(PROGRAMS) >= 150, (len(ATTACKS), len(PROGRAMS))


_WORDS = [
    "sudo",
    "bash",
    "-c",
    "-lc",
    "rm",
    "-rf",
    "~",
    "git",
    "-c",
    "alias.x=!",
    "curl",
    "awk",
    "sed",
    "-i",
    "python3",
    "-",
    "<<EOF",
    "EOF",
    "$(",
    "`",
    "find",
    "-exec",
    "{}",
    "\\;",
    "xargs",
    "env",
    "-S",
    "tar",
    "--to-command=",
    "ln",
    "-s",
    "cd",
    "/tmp",
    "$HOME",
    "dig",
    "kill",
    "-1",
    "docker",
    "run",
    "-v",
    "/:/h",
    "eval",
    "trap",
    "watch",
    "perl",
    "-e",
    "system",
    "mv",
    "/dev/null",
    ">>",
    ">&",
    "<(",
    ")",
    "'",
    '"',
    ";",
    "|",
    "&&",
    "{",
    "}",
    "$((",
    "))",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=14))
def test_the_gate_is_total_on_attack_shaped_noise(words: list[str]) -> None:
    decision = evaluate("bash", {"command": " ".join(words)}, POLICY)
    assert decision.outcome in ("allow", "log", "ask", "deny")
