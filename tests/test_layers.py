"""The layers: ``exo_core`` imports nothing from ``exo_edge`` (docs/architecture.md, "Layers").

Every module of ``exo_core`` is parsed, and every import in it is read, including those inside
functions and ``TYPE_CHECKING`` blocks, and every ``import_module``/``__import__`` of a literal name.
The edge reaches the core only as an :class:`~exo_core.seams.edge.EdgeKit` from the composition root.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from exo_testkit import ROOT

from exo_core.edge import EdgeKit, installed_edge
from exo_core.engine.models import resolve_model
from exo_core.errors import ConfigError
from exo_core.retrieval.pipeline import open_dense
from exo_core.seams.home import ExoHome

EDGE = "exo_edge"


def _is_edge(name: str) -> bool:
    return name == EDGE or name.startswith(EDGE + ".")


def edge_imports(source: str) -> list[tuple[int, str]]:
    """``(line, module)`` of each import of the edge package in ``source``, wherever it sits."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0].value
            if called not in ("import_module", "__import__") or not isinstance(first, str):
                continue
            names = [first]
        else:
            continue
        found.extend((node.lineno, name) for name in names if _is_edge(name))
    return sorted(found)


def test_the_check_finds_imports_wherever_they_are() -> None:
    source = (
        "import exo_edgeless\n"
        "from exo_core.edge import EdgeKit\n"
        "def f():\n"
        "    from exo_edge.local import local_factory\n"
        "    import exo_edge.hosted as hosted\n"
        "    importlib.import_module('exo_edge.kit')\n"
        "if TYPE_CHECKING:\n"
        "    from exo_edge import vectors\n"
    )
    assert edge_imports(source) == [(4, "exo_edge.local"), (5, "exo_edge.hosted"), (6, "exo_edge.kit"), (8, EDGE)]


def test_exo_core_imports_nothing_from_exo_edge() -> None:
    files = sorted((ROOT / "exo_core").rglob("*.py"))
    assert len(files) > 100  # the whole package was read
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in files
        for line, name in edge_imports(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "exo_core must not import exo_edge; inject it through exo_core/edge.py:\n" + "\n".join(
        offenders
    )


def test_the_installed_edge_fills_every_seam() -> None:
    kit = installed_edge()
    empty = [name for name in EdgeKit.__slots__ if getattr(kit, name) in (None, ())]
    assert empty == []


def test_a_core_without_an_edge_says_what_is_missing(tmp_path: Path) -> None:
    home = ExoHome(tmp_path / "home")
    with pytest.raises(ConfigError, match="local model runtime is not installed"):
        resolve_model(home, "local", edge=EdgeKit())
    assert open_dense(tmp_path / "indexes", home, edge=EdgeKit()) is None


def test_the_bare_core_runs_without_loading_the_edge(tmp_path: Path) -> None:
    """``EXO_EDGE=none``: the command line builds and no module of the edge package is loaded."""
    code = (
        "import sys, exo_core.cli.main as m; parser = m.build_parser(); "
        "print(sorted(n for n in sys.modules if n.split('.')[0] == 'exo_edge')); "
        "print(sorted(parser._subparsers._group_actions[0].choices))"
    )
    env = {**os.environ, "EXO_EDGE": "none", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    loaded, commands = done.stdout.splitlines()
    assert loaded == "[]"
    assert "'serve'" in commands and "'models'" not in commands


def test_every_hosted_provider_kind_has_one_transport() -> None:
    """The catalog's kinds are the one list; the edge has a transport for each hosted one and no other."""
    from exo_core.models.catalog import HOSTED_KINDS, PROVIDER_KINDS
    from exo_edge.hosted import TRANSPORTS

    assert sorted(TRANSPORTS) == sorted(HOSTED_KINDS)
    assert set(HOSTED_KINDS) < set(PROVIDER_KINDS)


def exo_core_imports(source: str) -> list[str]:
    """Every ``exo_core`` module ``source`` imports, wherever the import sits (functions, ``TYPE_CHECKING``)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return [name for name in found if name == "exo_core" or name.startswith("exo_core.")]


# What a transport may use: the engine's public surface, the hub, the protocol and the low parts under them.
# The web page's routes are served by the TCP listener, so they sit beside the transports.
TRANSPORT_MAY_IMPORT = (
    "exo_core.server",
    "exo_core.engine.dispatch",
    "exo_core.engine.shaping",
    "exo_core.events",
    "exo_core.protocol",
    "exo_core.errors",
    "exo_core.seams.home",
    "exo_core.store.atomic",
    "exo_core.web",
)


def _allowed(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def test_the_transports_know_only_the_engine_surface() -> None:
    """``exo_core/server`` serves an engine and its hub; building the core is the composition's (exo_core/daemon.py)."""
    files = sorted((ROOT / "exo_core" / "server").rglob("*.py"))
    assert len(files) > 5
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in files
        for name in exo_core_imports(path.read_text(encoding="utf-8"))
        if not _allowed(name, TRANSPORT_MAY_IMPORT)
    ]
    assert offenders == [], "a transport assembles nothing; wire it in exo_core/daemon.py:\n" + "\n".join(offenders)


def test_only_the_composition_and_the_web_page_import_the_transports() -> None:
    """Nothing below the transports (engine, agent, hub, ...) imports ``exo_core.server``."""
    above = ("exo_core/server/", "exo_core/cli/", "exo_core/daemon.py", "exo_core/web/")
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "exo_core").rglob("*.py"))
        if not path.relative_to(ROOT).as_posix().startswith(above)
        for name in exo_core_imports(path.read_text(encoding="utf-8"))
        if _allowed(name, ("exo_core.server",))
    ]
    assert offenders == [], "only the composition root and the web page use exo_core.server:\n" + "\n".join(offenders)


def test_the_layer_check_reads_every_kind_of_import() -> None:
    source = (
        "from exo_core.engine.core import Core\n"
        "import exo_core.server.http as http\n"
        "def f():\n"
        "    from exo_core.learning import service\n"
        "if TYPE_CHECKING:\n"
        "    from exo_core.store.onboard import Onboarding\n"
        "import aiohttp\n"
    )
    found = exo_core_imports(source)
    assert sorted(found) == sorted(
        ["exo_core.engine.core", "exo_core.server.http", "exo_core.learning", "exo_core.store.onboard"]
    )
    assert [name for name in found if not _allowed(name, TRANSPORT_MAY_IMPORT)] == [
        "exo_core.engine.core",
        "exo_core.learning",
        "exo_core.store.onboard",
    ]
