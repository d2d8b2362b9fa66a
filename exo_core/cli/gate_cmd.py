"""``exo gate check``: the gate's axes and outcome for one action, as JSON, so anyone can audit a case.

``exo gate check -- git push origin main`` judges a shell command (the words
after ``--`` are joined with spaces; quote a whole line to keep its
operators: ``exo gate check -- 'make && git push'``).
``exo gate check --tool send_email --args '{"to": "a@b.c"}'`` judges a tool call.
The policy is the one exod uses, ``$EXO_HOME/gate.toml`` (``--home`` names
another home; the built-in default when the file is absent), unless
``--policy FILE`` names a TOML policy. The output says which policy decided.
File paths are judged against the Exo home and its store, as exod judges them.

``exo gate set FILE`` changes the policy exod runs under: the person's act,
never a tool's (no tool process can see the Exo home). It checks the new
policy, shows the change, asks (``--yes`` answers for a script), writes
``$EXO_HOME/gate.toml`` and records a ``policy`` entry in the store's ledger.
"""

from __future__ import annotations

import argparse

from exo_core.cli.args import add_command, add_group, home_of


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo gate check`` and ``exo gate set``."""
    group = add_group(sub, "gate", "audit the consequence gate, or change its policy")
    change = add_command(
        group, "set", _set, "change the policy exod runs under (asks first; recorded in the ledger)", home=True
    )
    change.add_argument("file", metavar="FILE", help="the new policy, a TOML file as docs/gate.md describes")
    change.add_argument("--yes", action="store_true", help="answer yes to the confirmation (for a script)")
    change.add_argument("--store", default=None, help="the store whose ledger records the change")
    check = add_command(
        group,
        "check",
        _check,
        "print the axes and outcome of a command or tool call as JSON",
        home=True,
    )
    check.add_argument("--tool", default=None, help="judge a tool call to NAME instead of a shell command")
    check.add_argument("--args", default=None, metavar="JSON", help="the tool call's arguments (a JSON object)")
    check.add_argument("--risk", default="low", choices=("low", "medium", "high"), help="the tool's risk hint")
    check.add_argument("--workspace", default=None, help="the workspace folder (default: the current folder)")
    check.add_argument(
        "--policy", default=None, metavar="FILE", help="a TOML gate policy (default: the home's gate.toml, as exod)"
    )
    check.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND...")


def _check(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from exo_core.errors import ConfigError, UsageError
    from exo_core.gate import Policy, evaluate

    words = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.tool and words:
        raise UsageError("give either --tool NAME --args JSON or -- COMMAND..., not both")
    if args.tool:
        try:
            arguments = json.loads(args.args or "{}")
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"--args is not valid JSON ({exc.msg} at character {exc.pos}); "
                'pass an object such as \'{"path": "a.txt"}\''
            ) from exc
        if not isinstance(arguments, dict):
            raise UsageError('--args must be a JSON object, such as \'{"path": "a.txt"}\'')
        tool = args.tool
    else:
        if not words:
            raise UsageError("nothing to check: use `exo gate check -- COMMAND...` or `--tool NAME --args JSON`")
        tool, arguments = "bash", {"command": " ".join(words)}
    workspace = Path(args.workspace or ".").resolve()
    if args.policy and not Path(args.policy).exists():
        raise UsageError(f"no policy file at {args.policy}; give the path of a TOML gate policy")
    # Without --policy, the same file exod loads (exo_core/engine/core.py): <home>/gate.toml, default if absent.
    home = home_of(args)
    policy_path = Path(args.policy) if args.policy else home.root / "gate.toml"
    policy = Policy.load(policy_path, workspace=workspace)
    try:
        store = home.store_path()
    except ConfigError:
        store = home.root / "store"  # config.toml unreadable: judge against the default store place
    policy = policy.with_exo(home.root, (store,))
    decision = evaluate(tool, arguments, policy, risk=args.risk)
    out = decision.as_dict()
    out["policy"] = str(policy_path) if policy_path.exists() else "built in (no gate.toml)"
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


def _set(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from exo_core.errors import NotFoundError, UsageError
    from exo_core.gate.policy_file import POLICY_FILE, policy_diff, set_policy
    from exo_core.ledger import HomeWitness, LedgerRecorder, load_signing_key

    home = home_of(args)
    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the new policy {args.file}: {exc}") from exc
    store = home.store_path(args.store)
    if not (store / "STORE.toml").is_file():
        raise NotFoundError(f"no store at {store} to record the change in; run `exo init` or pass --store DIR")
    current = home.root / POLICY_FILE
    old = current.read_text(encoding="utf-8") if current.exists() else ""
    change = policy_diff(old, text)
    if not change:
        print(f"{current} already holds this policy; nothing to change")
        return 0
    print(change, end="" if change.endswith("\n") else "\n")
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("changing the gate's policy needs a yes: answer on a terminal, or pass --yes")
        if input(f"Change the gate's policy in {current}? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing was changed")
            return 1
    recorder = LedgerRecorder.for_store(store, load_signing_key(home.keys_dir), witness=HomeWitness(home.root))
    try:
        entry = set_policy(home.root, text, recorder.ledger, by="exo gate set")
    finally:
        recorder.close()
    print(f"wrote {current}; recorded as ledger entry {entry}; exod applies it when it next starts")
    return 0
