"""``exo store``: lint, export, import, verify, sync, ingest and rebuild-items."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from exo_core.cli.args import HOME_HELP, add_command, home_of

if TYPE_CHECKING:  # annotations only: the CLI imports nothing heavy at start
    from pathlib import Path

    from exo_core.ledger import Signer


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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

    add_command(actions, "import", _import, "make the verified export SRC this home's store").add_argument("src")

    verify = add_command(actions, "verify", _verify, "manifest, databases, ledger chain and signatures, lint")
    verify.add_argument("dir", nargs="?", default=None)

    sync = add_command(actions, "sync", _sync, "combine two used copies A and B; report any fork")
    sync.add_argument("a")
    sync.add_argument("b")

    ingest = add_command(actions, "ingest", _ingest, "import bookmarks, a notes folder or a chat export")
    ingest.add_argument("kind", choices=("bookmarks", "notes", "chat"))
    ingest.add_argument("path")

    add_command(actions, "rebuild-items", _rebuild, "recreate items.sqlite from the ledger")


def _store_dir(args: argparse.Namespace, explicit: str | None = None) -> "Path":
    from pathlib import Path

    if explicit:
        return Path(explicit).expanduser().resolve()
    return home_of(args).store_path(args.store)


def _signer(args: argparse.Namespace, *, required: bool) -> "Signer | None":
    from exo_core.errors import NotFoundError
    from exo_core.ledger import load_signing_key

    home = home_of(args)
    try:
        return load_signing_key(home.keys_dir)
    except NotFoundError as exc:
        if required:
            raise NotFoundError(f"{exc.message}; run 'exo init' on this machine to create its ledger key") from exc
        return None


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
    from exo_core.store.transfer import export_store

    signer = _signer(args, required=False)
    home = home_of(args)
    book = CheckpointBook.for_home(home.root) if signer is not None and home.root.is_dir() else None
    try:
        result = export_store(_store_dir(args), args.dest, force=args.force, ledger_hook=checkpoint_hook(signer, book))
    finally:
        if book is not None:
            book.close()
    print(f"exported {result.files} files to {result.dest} (export {result.export_id})")
    if "checkpoint" not in result.ledger:
        print("note: no ledger key on this machine, so no signed checkpoint was written")
    return 0


def _import(args: argparse.Namespace) -> int:
    from exo_core.store.transfer import import_store

    signer = _signer(args, required=False)
    dest = import_store(args.src, _store_dir(args), owner_key_id=signer.key_id if signer is not None else None)
    print(f"imported {args.src} as the store {dest}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from exo_core.store.verify import verify_store

    report = verify_store(_store_dir(args, args.dir))
    print(report.render())
    return 0 if report.ok else 1


def _sync(args: argparse.Namespace) -> int:
    import contextlib

    from exo_core.ledger import CheckpointBook
    from exo_core.store.sync import sync_stores

    signer = _signer(args, required=True)
    home = home_of(args)
    home.root.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(CheckpointBook.for_home(home.root)) as book:
        report = sync_stores(args.a, args.b, signer=signer, book=book)
    print(report.render())
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from pathlib import Path

    from exo_core.store.importers import import_bookmarks, import_chat_export, import_notes
    from exo_core.store.items import ItemStore
    from exo_core.store.ledger_bridge import open_ledger
    from exo_core.store.store import Store

    store = Store.open(_store_dir(args))
    with open_ledger(store.root, signer=_signer(args, required=True)) as ledger:
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
