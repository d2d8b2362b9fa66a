"""``exo store``: lint, export, import, verify, sync, resolve, enrol, trust, ingest and rebuild-items.

Trust comes from the Exo home, never from the store folder: every command
here passes the home's :class:`~exo_core.ledger.MachineTrust` (the pinned
owner key, the checkpoint book, the heads this machine wrote) to the store
code (docs/security.md, "The ledger's trust anchor").
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Literal, overload

from exo_core.cli.args import HOME_HELP, add_command, home_of

if TYPE_CHECKING:  # annotations only: the CLI imports nothing heavy at start
    from pathlib import Path

    from exo_core.ledger import MachineTrust, Signer


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo store`` and its subcommands."""
    parser = sub.add_parser("store", help="check, copy, verify and sync the store folder")
    parser.add_argument("--home", default=None, help=HOME_HELP)
    parser.add_argument("--store", default=None, help="store folder (default: the home's store)")
    actions = parser.add_subparsers(dest="store_command", metavar="ACTION")
    actions.required = True

    lint = add_command(actions, "lint", _lint, "report problems in a store: file, line and rule")
    lint.add_argument("dir", nargs="?", default=None, help="store folder (default: the home's store)")
    lint.add_argument("--strict", action="store_true", help="fail on warnings too")

    export = add_command(actions, "export", _export, "consistent copy of the store to DEST (safe while exod runs)")
    export.add_argument("dest")
    export.add_argument("--force", action="store_true", help="replace DEST even if it changed since its export")

    imp = add_command(actions, "import", _import, "make the verified, signed export SRC this home's store")
    imp.add_argument("src")
    imp.add_argument(
        "--owner",
        metavar="KEY_ID",
        default=None,
        help="require the export to belong to this owner key (see 'exo store trust' on the old machine)",
    )

    enrol = add_command(
        actions, "enrol", _enrol, "owner's machine only: trust another machine's key for this store (signed entry)"
    )
    enrol.add_argument("key", metavar="KEY_ID", help="the other machine's key id, as its 'exo store trust' prints")

    trust = add_command(
        actions, "trust", _trust_show, "show the owner key this machine pins for the store, and its own key"
    )
    trust.add_argument(
        "--forget-head",
        action="store_true",
        help="accept a deliberate restore of an older copy: forget the head this machine wrote to the store",
    )

    verify = add_command(actions, "verify", _verify, "manifest, databases, ledger chain and signatures, lint")
    verify.add_argument("dir", nargs="?", default=None)

    sync = add_command(actions, "sync", _sync, "combine two used copies A and B; report any fork")
    sync.add_argument("a")
    sync.add_argument("b")

    resolve = add_command(
        actions, "resolve", _resolve, "settle a conflict a sync left open: keep this copy's, the other's, or both"
    )
    resolve.add_argument("path", nargs="?", default=None, help="the file, as the sync report names it (omit to list)")
    resolve.add_argument("--keep", choices=("mine", "theirs", "both"), default=None)
    resolve.add_argument(
        "--current",
        choices=("mine", "theirs"),
        default="mine",
        help="with --keep both: which version stays current (the other is kept as a superseded belief)",
    )

    ingest = add_command(actions, "ingest", _ingest, "import bookmarks, a notes folder or a chat export")
    ingest.add_argument("kind", choices=("bookmarks", "notes", "chat"))
    ingest.add_argument("path")

    add_command(actions, "rebuild-items", _rebuild, "recreate items.sqlite from the ledger")


def _store_dir(args: argparse.Namespace, explicit: str | None = None) -> Path:
    from pathlib import Path

    if explicit:
        return Path(explicit).expanduser().resolve()
    return home_of(args).store_path(args.store)


@overload
def _signer(args: argparse.Namespace, *, required: Literal[True]) -> Signer: ...
@overload
def _signer(args: argparse.Namespace, *, required: bool) -> Signer | None: ...
def _signer(args: argparse.Namespace, *, required: bool) -> Signer | None:
    """This machine's ledger key; ``required`` raises when there is none, else ``None``."""
    from exo_core.errors import NotFoundError
    from exo_core.ledger import load_signing_key

    home = home_of(args)
    try:
        return load_signing_key(home.keys_dir)
    except NotFoundError as exc:
        if required:
            raise NotFoundError(f"{exc.message}; run 'exo init' on this machine to create its ledger key") from exc
        return None


def _trust(args: argparse.Namespace, signer: Signer | None) -> MachineTrust:
    from exo_core.ledger import MachineTrust

    return MachineTrust(home_of(args).root, machine_key=signer.key_id if signer is not None else None)


def _lint(args: argparse.Namespace) -> int:
    from exo_core.store.lint import lint_store

    report = lint_store(_store_dir(args, args.dir))
    for finding in report.findings:
        print(finding)
    print(f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)")
    return 1 if report.errors or (args.strict and report.warnings) else 0


def _export(args: argparse.Namespace) -> int:
    from exo_core.ledger import CheckpointBook
    from exo_core.store.ledger_bridge import checkpoint_hook
    from exo_core.store.store_toml import read_config
    from exo_core.store.transfer import export_store

    signer = _signer(args, required=False)
    home = home_of(args)
    trust = _trust(args, signer)
    source = _store_dir(args)
    anchor = trust.anchor(read_config(source).store_id) if signer is not None else None
    book = CheckpointBook.for_home(home.root) if signer is not None and home.root.is_dir() else None
    hook = checkpoint_hook(signer, book, witness=trust.witness() if signer is not None else None)
    try:
        result = export_store(
            source,
            args.dest,
            force=args.force,
            ledger_hook=hook,
            signer=signer,
            owner=anchor.owner if anchor is not None else None,
        )
    finally:
        if book is not None:
            book.close()
    print(f"exported {result.files} files to {result.dest} (export {result.export_id})")
    if signer is None:
        print(
            "note: no ledger key on this machine, so neither the manifest nor a checkpoint is signed; "
            "'exo store import' will refuse this copy"
        )
    return 0


def _import(args: argparse.Namespace) -> int:
    from exo_core.errors import UsageError
    from exo_core.ledger import ensure_signing_key, is_key_id
    from exo_core.private_files import private_dir
    from exo_core.store.store_toml import read_config
    from exo_core.store.transfer import import_store

    if args.owner is not None and not is_key_id(args.owner):
        raise UsageError(f"--owner {args.owner!r} is not a key id ('ed25519:' + 64 hex digits)", field="owner")
    home = home_of(args)
    private_dir(home.root)
    # A machine that receives a store writes to it: it needs its own key (made here if missing).
    signer = ensure_signing_key(home.keys_dir)
    trust = _trust(args, signer)
    dest = import_store(args.src, _store_dir(args), owner_key_id=signer.key_id, trust=trust, expect_owner=args.owner)
    anchor = trust.anchor(read_config(dest).store_id)
    print(f"imported {args.src} as the store {dest}")
    if anchor is not None:
        print(f"pinned owner key {anchor.owner} (compare it with 'exo store trust' on the old machine)")
        if anchor.owner != signer.key_id:
            print(
                f"this machine's key {signer.key_id} is not enrolled yet: on the owner's machine run "
                f"'exo store enrol {signer.key_id}', then 'exo store sync' the two copies"
            )
    return 0


def _verify(args: argparse.Namespace) -> int:
    from exo_core.store.verify import verify_store

    folder = _store_dir(args, args.dir)
    live = folder == _store_dir(args)  # only this home's own store may lack a manifest
    report = verify_store(folder, trust=_trust(args, _signer(args, required=False)), live=live)
    print(report.render())
    return 0 if report.ok else 1


def _sync(args: argparse.Namespace) -> int:
    import contextlib

    from exo_core.ledger import CheckpointBook
    from exo_core.private_files import private_dir
    from exo_core.store.sync import sync_stores

    signer = _signer(args, required=True)
    home = home_of(args)
    private_dir(home.root)
    with contextlib.closing(CheckpointBook.for_home(home.root)) as book:
        report = sync_stores(
            args.a, args.b, signer=signer, book=book, trust=_trust(args, signer), live=(_store_dir(args),)
        )
    print(report.render())
    return 0


def _resolve(args: argparse.Namespace) -> int:
    from exo_core.errors import UsageError
    from exo_core.store.conflicts import open_conflicts, resolve_conflict
    from exo_core.store.ledger_bridge import open_ledger
    from exo_core.store.store import Store

    store = Store.open(_store_dir(args))
    if args.path is None:
        opened = open_conflicts(store.root)
        for conflict in opened:
            theirs = "deleted" if conflict.saved is None else conflict.saved
            print(f"{conflict.path}: open since sync {conflict.sync_id}; the other copy's version: {theirs}")
        print(f"{len(opened)} open conflict(s)" + (": settle each with --keep mine|theirs|both" if opened else ""))
        return 0
    if args.keep is None:
        raise UsageError("say which version to keep: --keep mine, --keep theirs or --keep both", field="keep")
    signer = _signer(args, required=True)
    with open_ledger(store.root, signer=signer, witness=_trust(args, signer).witness()) as ledger:
        done = resolve_conflict(store.root, args.path, args.keep, ledger, current=args.current)
    print(done.render())
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from pathlib import Path

    from exo_core.store.importers import import_bookmarks, import_chat_export, import_notes
    from exo_core.store.items import ItemStore
    from exo_core.store.ledger_bridge import open_ledger
    from exo_core.store.store import Store

    store = Store.open(_store_dir(args))
    signer = _signer(args, required=True)
    with open_ledger(store.root, signer=signer, witness=_trust(args, signer).witness()) as ledger:
        if args.kind == "chat":
            report = import_chat_export(Path(args.path), ledger)
        else:
            with ItemStore(store.items_path, ledger) as items:
                run = import_bookmarks if args.kind == "bookmarks" else import_notes
                report = run(Path(args.path), items)
    for warning in report.warnings:
        print(f"warning: {warning}")
    print(report.summary())
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    from exo_core.store.items import rebuild_items
    from exo_core.store.ledger_bridge import open_ledger
    from exo_core.store.store import Store

    store = Store.open(_store_dir(args))
    with open_ledger(store.root) as ledger:
        count = rebuild_items(store.items_path, ledger)
    print(f"items.sqlite rebuilt from the ledger: {count} items")
    return 0


def _enrol(args: argparse.Namespace) -> int:
    from exo_core.errors import AccessDeniedError, NotFoundError, UsageError
    from exo_core.ledger import is_key_id
    from exo_core.store.ledger_bridge import open_ledger
    from exo_core.store.store import Store

    if not is_key_id(args.key):
        raise UsageError(f"{args.key!r} is not a key id ('ed25519:' + 64 hex digits)", field="key")
    signer = _signer(args, required=True)
    if signer is None:  # required=True raises first; this narrows the type
        raise NotFoundError("no ledger key on this machine; run 'exo init'")
    store = Store.open(_store_dir(args))
    trust = _trust(args, signer)
    anchor = trust.anchor(store.config.store_id)
    if anchor is None:
        raise NotFoundError(
            f"this machine pins no owner for store {store.config.store_id}; enrol from the machine that made it"
        )
    if anchor.owner != signer.key_id:
        # Only the owner's signature makes a key trusted elsewhere (docs/security.md, "The ledger's trust anchor").
        raise AccessDeniedError(
            f"only the owner's key {anchor.owner[:24]}… can enrol a machine, and this machine's key is "
            f"{signer.key_id[:24]}…; run 'exo store enrol' on the machine that made the store"
        )
    with open_ledger(store.root, signer=signer, witness=trust.witness()) as ledger:
        entry = ledger.append("enrol", {"key": args.key}, idem=f"enrol:{args.key}")
    print(f"enrolled {args.key} (ledger entry {entry.id[:16]}); sync or export the store so the other machine has it")
    return 0


def _trust_show(args: argparse.Namespace) -> int:
    from exo_core.store.store import Store

    signer = _signer(args, required=False)
    store = Store.open(_store_dir(args))
    trust = _trust(args, signer)
    if args.forget_head:
        # The person says the older copy is the one to keep; verify then checks from its head on.
        trust.forget_head(store.ledger_path)
        print(f"forgot the head this machine wrote to {store.ledger_path}; the next write records a new one")
    anchor = trust.anchor(store.config.store_id)
    print(f"store {store.config.store_id}")
    if anchor is None:
        print("  owner: not pinned on this machine ('exo init' or 'exo store import' pins it)")
    else:
        print(f"  owner: {anchor.owner} (pinned by {anchor.how})")
    print(f"  this machine: {signer.key_id if signer is not None else 'no key (exo init makes one)'}")
    return 0
