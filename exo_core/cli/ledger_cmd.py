"""``exo ledger verify|log|show|rebuild``: inspect and check the signed ledger.

The store folder is ``--store DIR`` or the Exo home's configured store
(``ExoHome.store_path()``). Only argparse is imported at module level; the
ledger package is imported inside the handlers.

Exit status: 0 when the command succeeded (``verify``: the ledger is sound);
1 when ``verify`` found a problem (the first bad entry and why are printed);
2 for usage and storage errors (printed by ``exo`` itself).
"""

from __future__ import annotations

import argparse
from datetime import UTC
from typing import Any

from exo_core.cli.args import add_command, add_group

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``ledger`` command and its subcommands to ``exo``."""
    sub = add_group(subparsers, "ledger", "verify and inspect the signed ledger", metavar="SUBCOMMAND")

    verify = add_command(sub, "verify", _verify, "check every id, link, chain hash and signature")
    verify.add_argument(
        "--pin",
        action="append",
        metavar="KEY_ID",
        default=None,
        help="trust only these author key ids (repeatable; default: the owner key this machine pinned, "
        "its own key and the keys the owner enrolled)",
    )
    verify.add_argument(
        "--no-pins", action="store_true", help="accept any valid signature (do not pin authors to the owner keys)"
    )
    verify.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="do not check the checkpoints and heads this machine kept for the ledger",
    )
    verify.add_argument("--deep", action="store_true", help="also run SQLite's integrity_check")
    verify.add_argument("--json", action="store_true", help="print the report as JSON")

    log = add_command(sub, "log", _log, "list entries (oldest first; --tail N, --reverse)")
    log.add_argument("--kind", help="only entries of this kind")
    log.add_argument("--scope", help="only entries of this scope (person, agent:NAME, group:NAME)")
    log.add_argument("--since", metavar="TIME", help="only entries at or after TIME (ISO 8601, UTC if no offset)")
    log.add_argument("--until", metavar="TIME", help="only entries before TIME")
    log.add_argument("--limit", type=int, metavar="N", help="at most N entries (the oldest ones)")
    log.add_argument("--tail", type=int, metavar="N", help="only the newest N entries (still oldest first)")
    log.add_argument("--reverse", action="store_true", help="newest first")
    log.add_argument("--json", action="store_true", help="one JSON object per line")

    show = add_command(sub, "show", _show, "print one entry")
    show.add_argument("id", metavar="ID", help="entry id or a unique prefix (6+ hex digits)")

    rebuild = add_command(sub, "rebuild", _rebuild, "recompute every ledger view from an empty state")
    rebuild.add_argument(
        "--view", action="append", metavar="NAME", default=None, help="rebuild only this view (repeatable)"
    )
    for parser in (verify, log, show, rebuild):
        parser.add_argument("--store", metavar="DIR", help="store folder (default: the Exo home's store)")


def _open(args: argparse.Namespace) -> Any:
    from exo_core.errors import NotFoundError
    from exo_core.ledger.ledger import LEDGER_FILE_NAME, Ledger
    from exo_core.seams.home import ExoHome

    store = ExoHome.from_env().store_path(args.store)
    path = store / LEDGER_FILE_NAME
    if not path.exists():
        raise NotFoundError(f"no ledger at {path}; is {store} a store folder? (use --store DIR)")
    return Ledger.open(path)


def _owner_pins(ledger: Any, trust: Any) -> list[str] | None:
    """The authors to trust: from the anchor this machine holds (outside the store), else STORE.toml's.

    Without an anchor the keys come from STORE.toml, which anyone who can write
    the store can change; a note on stderr says so (docs/security.md, "The ledger's trust anchor").
    """
    import sys

    from exo_core.errors import ExoError
    from exo_core.ledger import trusted_keys
    from exo_core.store.store_toml import CONFIG_NAME, read_config

    anchor = trust.anchor(ledger.ledger_id)
    if anchor is not None:
        return sorted(trusted_keys(anchor, (ledger,)))
    store = ledger.path.parent
    if not (store / CONFIG_NAME).exists():
        return None
    try:
        owners = list(read_config(store).owner_keys)
    except ExoError as exc:
        # The ledger can still be checked; say plainly that authors were not pinned.
        print(f"exo: note: {CONFIG_NAME} unreadable ({exc.message}); authors not pinned", file=sys.stderr)
        return None
    if owners:
        print(
            f"exo: note: this machine pins no owner for ledger {ledger.ledger_id}; authors pinned to "
            f"{CONFIG_NAME}'s keys, which anyone who can write the store can change ('exo init' or "
            "'exo store import' pins the owner outside the store)",
            file=sys.stderr,
        )
    return owners or None


def _verify(args: argparse.Namespace) -> int:
    import json

    from exo_core.errors import UsageError
    from exo_core.ledger import MachineTrust
    from exo_core.ledger.keys import is_key_id
    from exo_core.seams.home import ExoHome

    for key in args.pin or ():
        if not is_key_id(key):
            raise UsageError(f"--pin {key!r} is not a key id ('ed25519:' + 64 hex digits)", field="pin")
    if args.pin and args.no_pins:
        raise UsageError("--pin and --no-pins contradict each other", field="pin")
    trust = MachineTrust(ExoHome.from_env().root)
    with _open(args) as ledger:
        pins = None if args.no_pins else (args.pin or _owner_pins(ledger, trust))
        checkpoints = []
        seen_heads = []
        if not args.no_checkpoints:
            # This copy's checkpoints: another copy of the store may have grown apart, which is no rollback.
            checkpoints = trust.checkpoints(ledger.ledger_id, copy=ledger.path)
            seen = trust.seen_head(ledger.path)
            if seen is not None:
                # The head this machine itself last wrote here: a shorter or older file is a rollback.
                seen_heads.append(seen.checkpoint)
        report = ledger.verify(pins=pins, checkpoints=checkpoints, seen_heads=seen_heads, deep=args.deep)
    pinned = f"{len(pins)} pinned key(s)" if pins else "authors not pinned"
    if args.json:
        print(
            json.dumps(
                {
                    "ok": report.ok,
                    "ledger": report.ledger_id,
                    "entries": report.entries,
                    "segments": report.segments,
                    "checkpoints": len(checkpoints),
                    "seen_heads": len(seen_heads),
                    "pins": pins or [],
                    "problems": [
                        {"n": p.n, "seg": p.seg, "pos": p.pos, "id": p.id, "reason": p.reason} for p in report.problems
                    ],
                },
                ensure_ascii=False,
            )
        )
    elif report.ok:
        print(
            f"ok: ledger {report.ledger_id}: {report.entries} entries in {report.segments} "
            f"segment(s), {len(checkpoints)} checkpoint(s) checked, "
            f"{'the head this machine wrote checked' if seen_heads else 'no head recorded here'}, {pinned}"
        )
    else:
        first = report.problems[0]
        print(f"BAD: ledger {report.ledger_id}: first bad {first.describe()}")
        if len(report.problems) > 1:
            print(f"({len(report.problems) - 1} more problem(s); use --json to list them)")
    return 0 if report.ok else 1


def _parse_time(value: str | None, flag: str) -> int | None:
    from datetime import datetime

    from exo_core.errors import UsageError

    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise UsageError(f"{flag} {value!r} is not an ISO 8601 date or time", field=flag) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _log(args: argparse.Namespace) -> int:
    import collections
    import json
    from datetime import datetime

    from exo_core.errors import BadBodyError, UsageError
    from exo_core.ledger.kinds import validate_kind, validate_scope

    try:
        if args.kind is not None:
            validate_kind(args.kind)
        if args.scope is not None:
            validate_scope(args.scope)
    except BadBodyError as exc:
        raise UsageError(exc.message, field=exc.field) from exc
    if args.limit is not None and args.limit < 0:
        raise UsageError("--limit must be zero or more", field="limit")
    if args.tail is not None and args.tail < 0:
        raise UsageError("--tail must be zero or more", field="tail")
    since, until = _parse_time(args.since, "--since"), _parse_time(args.until, "--until")
    with _open(args) as ledger:
        chosen = ledger.entries(kind=args.kind, scope=args.scope, since_ms=since, until_ms=until, limit=args.limit)
        if args.tail is not None:
            # A bounded window over the stream: the newest N without holding the whole ledger.
            chosen = collections.deque(chosen, maxlen=args.tail)
        if args.reverse:
            chosen = reversed(list(chosen))
        for entry in chosen:
            if args.json:
                print(json.dumps(entry.to_json(), ensure_ascii=False, sort_keys=True))
                continue
            when = datetime.fromtimestamp(entry.ts / 1000, tz=UTC).isoformat(timespec="milliseconds")
            body = json.dumps(entry.body, ensure_ascii=False, sort_keys=True)
            print(
                f"{entry.n:>6} {entry.id[:12]} {when.replace('+00:00', 'Z')} s{entry.seg}:{entry.pos} "
                f"{entry.kind:<10} {entry.scope:<12} {body if len(body) <= 80 else body[:77] + '...'}"
            )
    return 0


def _show(args: argparse.Namespace) -> int:
    import json

    with _open(args) as ledger:
        entry = ledger.get(args.id)
    print(json.dumps(entry.to_json(), ensure_ascii=False, sort_keys=True, indent=2))
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    from exo_core.errors import CorruptDataError
    from exo_core.learning.pack import register_views
    from exo_core.ledger.views import DEFAULT_VIEWS, rebuild_views, views_dir

    register_views(DEFAULT_VIEWS)  # the learning loop's taste weights and pack section
    with _open(args) as ledger:
        report = ledger.verify()
        if not report.ok:
            # Views computed from a ledger that fails its own checks would
            # launder the damage into files that look trustworthy.
            raise CorruptDataError(f"not rebuilding: ledger fails verify: {report.problems[0].describe()}")
        paths = rebuild_views(ledger, views_dir(ledger.path.parent), registry=DEFAULT_VIEWS, only=args.view)
    for name, path in paths.items():
        print(f"rebuilt {name}: {path}")
    return 0
