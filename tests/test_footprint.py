"""Small board first: the core's size budget and what the CLI imports at start."""

from __future__ import annotations

import ast
import io
import subprocess
import tokenize
import sys
from pathlib import Path

from exo_testkit import ROOT

LINE_BUDGET = 15_000


def _file_code_lines(path: Path) -> int:
    """Lines holding code, counted as cloc does: blank lines, comments and docstrings are not code."""
    source = path.read_text(encoding="utf-8")
    docstring_lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstring_lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    code: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip:
            code.update(n for n in range(tok.start[0], tok.end[0] + 1) if n not in docstring_lines)
    return len(code)


def code_lines(folder: Path) -> int:
    """Lines of code over every .py file under ``folder``."""
    return sum(_file_code_lines(path) for path in folder.rglob("*.py"))


def test_the_counter_skips_comments_blanks_and_docstrings(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text('"""Doc.\n\nMore."""\n\n# note\nx = 1  # trailing\n\ndef f():\n    """Doc."""\n    return """not\na docstring"""\n')
    assert code_lines(tmp_path) == 4


def test_exo_core_stays_under_its_line_budget() -> None:
    count = code_lines(ROOT / "exo_core")
    assert count < LINE_BUDGET, f"exo_core has {count} lines of code; the budget is {LINE_BUDGET}"


def test_the_cli_imports_nothing_heavy_at_start() -> None:
    code = (
        "import sys, exo_core.cli.main as m; m.build_parser(); "
        "heavy = [n for n in ('aiohttp', 'numpy', 'nacl', 'llama_cpp', 'onnxruntime', 'sqlite3') if n in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "", f"importing the CLI pulled in: {out.stdout.strip()}"
