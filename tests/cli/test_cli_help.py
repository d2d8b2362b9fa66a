"""Every ``exo`` command's ``--help`` ends with an example, and every example parses."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
from exo_testkit import ROOT

from exo_core.cli.examples import EXAMPLES, command_paths
from exo_core.cli.main import build_parser


def test_every_command_has_an_example() -> None:
    missing = [path or "exo" for path in command_paths(build_parser()) if not EXAMPLES.get(path)]
    assert missing == [], f"add an example to exo_core/cli/examples.py for: {', '.join(missing)}"


def test_no_example_names_a_command_that_does_not_exist() -> None:
    stale = sorted(set(EXAMPLES) - set(command_paths(build_parser())))
    assert stale == [], f"examples for commands that do not exist: {stale}"


@pytest.mark.parametrize("path", sorted(EXAMPLES))
def test_each_example_parses(path: str) -> None:
    parser = build_parser()
    for example in EXAMPLES[path]:
        for part in example.split("&&"):
            words = [w for w in shlex.split(part) if "=" not in w or w.startswith("-")]
            assert words[0] == "exo", example
            args, extra = parser.parse_known_args(words[1:])
            passthrough = getattr(args, "passthrough", None)
            assert not extra or passthrough, f"{example!r}: unrecognized {extra}"


def test_help_shows_the_example() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "exo_core.cli", "ledger", "verify", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    assert out.rstrip().endswith("exo ledger verify") and "example:" in out


def test_a_named_command_gets_its_parser_without_the_later_commands() -> None:
    """``exo serve`` builds its own parser, not every command's (idle exod holds what it imported)."""
    serve = build_parser(command="serve")
    assert "serve" in command_paths(serve) and "chat" not in command_paths(serve)
    args = serve.parse_args(["serve", "--home", "h", "--model", "none"])
    assert args.command == "serve" and args.model == "none"
    # the edge's command comes after every core one; a name no module adds gets the full parser
    assert "models fetch" in command_paths(build_parser(command="models"))
    assert set(command_paths(build_parser(command="nope"))) == set(command_paths(build_parser()))
