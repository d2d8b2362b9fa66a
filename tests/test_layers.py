"""The layers (docs/architecture.md, "Layers").

Which package may import which is declared as import-linter contracts in ``pyproject.toml`` and checked
by ``lint-imports`` (scripts/test.sh runs it beside ruff and mypy; the first test here runs it too). What
import-linter cannot say is tested here: no product module imports a heavy model runtime at module level,
and the edge's parts reach the core as an :class:`~exo_core.seams.edge.EdgeKit`.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from exo_testkit import ROOT

from exo_core.edge import installed_edge
from exo_core.engine.models import resolve_model
from exo_core.errors import ConfigError
from exo_core.retrieval.pipeline import open_dense
from exo_core.seams.edge import EdgeKit
from exo_core.seams.home import ExoHome

# The runtimes that load models (hundreds of MB): imported only inside the function that needs one.
HEAVY = ("llama_cpp", "onnxruntime", "tokenizers", "faster_whisper")
PRODUCT = ("exo_core", "exo_edge", "device")


def test_the_layer_contracts_hold() -> None:
    """``lint-imports`` reads every import of the product (functions and ``TYPE_CHECKING`` included)."""
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def module_level_imports(source: str) -> list[tuple[int, str]]:
    """``(line, module)`` of each import run when the module is imported: outside every function and class."""
    found: list[tuple[int, str]] = []
    todo: list[ast.AST] = [ast.parse(source)]
    while todo:
        node = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                continue
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                todo.extend(child.orelse)
                continue
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.lineno, child.module))
            todo.append(child)
    return sorted(found)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _heavy(name: str) -> bool:
    return name.split(".")[0] in HEAVY


def test_the_check_sees_module_level_imports_only() -> None:
    source = (
        "import llama_cpp\n"
        "try:\n"
        "    import onnxruntime as ort\n"
        "except ImportError:\n"
        "    ort = None\n"
        "if TYPE_CHECKING:\n"
        "    from tokenizers import Tokenizer\n"
        "def load():\n"
        "    import faster_whisper\n"
        "class Model:\n"
        "    from llama_cpp import Llama\n"
    )
    assert [name for _, name in module_level_imports(source) if _heavy(name)] == ["llama_cpp", "onnxruntime"]


def test_no_product_module_imports_a_model_runtime_at_module_level() -> None:
    files = sorted(path for package in PRODUCT for path in (ROOT / package).rglob("*.py"))
    assert len(files) > 200  # the whole product was read
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in files
        for line, name in module_level_imports(path.read_text(encoding="utf-8"))
        if _heavy(name)
    ]
    assert offenders == [], "import a model runtime inside the function that loads the model:\n" + "\n".join(offenders)


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
