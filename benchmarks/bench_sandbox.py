"""The sandbox: what it costs to start a command in it, against without, and what it holds, in the same run.

Cost: ``bash -c true`` started the way the ``bash`` tool starts it, in the sandbox (bubblewrap with
every wall: namespaces, the home hidden, limits) and, as the baseline, without it; rounds interleave
the two so the machine's load falls on both. Reported: the median start-to-exit time of each and the
ratio sandboxed / bare. A tool call costs a model turn, which is far longer, so this says whether the
sandbox is ever noticeable.

Walls: every generated secret-reading form (``tests/sandbox_attacks.py``) run against a home with a
real token, key, policy files, trust anchor and ledger, once unconfined (the forms are real: most read
a secret there) and once through the ``bash`` tool (the sandbox: none may), per category. The table in
docs/security.md ("The sandbox") comes from this file.

    python -m benchmarks.bench_sandbox            # 40 rounds, every form; writes $EXO_HOME/bench/sandbox.json
    python -m benchmarks.bench_sandbox --quick    # 5 rounds, every tenth form, writes nothing
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from sandbox_attacks import CATEGORIES, Form, Home, forms, leaked, make_home

from benchmarks._common import bench_parser, machine_info, median, print_table, progress_output, ratio, write_results
from exo_core.sandbox import ExodFiles, Sandbox
from exo_core.tools import BashTool, ToolContext


def _start_times(sandbox: Sandbox, workspace: Path, rounds: int) -> tuple[list[float], list[float]]:
    env = sandbox.environment(workspace)
    confined = sandbox.argv("true", workspace, network=False)
    bare, boxed = [], []
    for _ in range(rounds):
        for argv, into in ((["bash", "-c", "true"], bare), (confined, boxed)):
            start = time.perf_counter()
            subprocess.run(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL, check=True)
            into.append(time.perf_counter() - start)
    return bare, boxed


def _unconfined(home: Home, workspace: Path, form: Form) -> bool:
    env = {**os.environ, "EXO_HOME": str(home.root), "EXO_TOKEN": home.env_token}
    try:
        done = subprocess.run(
            ["bash", "-c", form.command], cwd=workspace, env=env, capture_output=True, timeout=30, check=False
        )
    except subprocess.TimeoutExpired:
        return False
    return bool(leaked(home, done.stdout + done.stderr, workspace))


async def _sandboxed(home: Home, workspace: Path, sample: list[Form]) -> list[bool]:
    tool = BashTool()
    limit = asyncio.Semaphore(4)

    async def one(form: Form) -> bool:
        streamed: list[str] = []

        async def emit(text: str, stream: str) -> None:
            streamed.append(text)

        context = ToolContext(workspace=workspace, call_id="bench", emit_output=emit)
        async with limit:
            result = await tool.run({"command": form.command, "timeout": 30}, context)
        return bool(leaked(home, result.content + "".join(streamed)))

    return list(await asyncio.gather(*(one(form) for form in sample)))


def _clear(workspace: Path) -> None:
    for path in workspace.iterdir():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def _walls(root: Path, quick: bool) -> dict[str, object]:
    home = make_home(root)
    all_forms = forms(home)
    sample = all_forms[::10] if quick else all_forms
    rows: dict[str, Counter[str]] = {category: Counter() for category in CATEGORIES}
    in_files: dict[str, int] = {}
    # The tool inherits what exod.service gives exod: the home's path and a token in the environment.
    os.environ["EXO_HOME"], os.environ["EXO_TOKEN"] = str(home.root), home.env_token
    for layout, workspace in (("beside", root / "ws"), ("inside", home.root / "workspace")):
        workspace.mkdir()
        read = asyncio.run(_sandboxed(home, workspace, sample))
        in_files[layout] = len(leaked(home, b"", workspace))
        for form, got in zip(sample, read, strict=True):
            rows[form.category][f"sandbox_{layout}"] += int(got)
        _clear(workspace)
    outside = root / "outside"
    outside.mkdir()
    for form in sample:
        rows[form.category]["forms"] += 1
        rows[form.category]["unconfined"] += int(_unconfined(home, outside, form))
        _clear(outside)
    table = [{"category": category, **counts} for category, counts in rows.items() if counts["forms"]]
    totals = Counter[str]()
    for counts in rows.values():
        totals.update(counts)
    return {"categories": table, "totals": dict(totals), "secrets_in_workspace_files": in_files}


def main() -> int:
    parser = bench_parser("sandbox", __doc__.splitlines()[0], quick_help="5 rounds, every tenth form; writes nothing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="exo-bench-sandbox-") as tmp, progress_output(args.json):
        root = Path(tmp)
        home = root / "costhome"
        home.mkdir()
        workspace = root / "costws"
        workspace.mkdir()
        sandbox = Sandbox(ExodFiles.of(home, workspaces=(workspace,)))
        problem = sandbox.problem()
        if problem:
            print(f"no sandbox here: {problem}", file=sys.stderr)
            return 2
        bare, boxed = _start_times(sandbox, workspace, 5 if args.quick else 40)
        walls = _walls(root / "walls", args.quick)
    bare_ms, boxed_ms = median(bare) * 1e3, median(boxed) * 1e3
    data = {
        "machine": machine_info(),
        "rounds": len(bare),
        "bare_ms": bare_ms,
        "sandbox_ms": boxed_ms,
        "ratio": ratio(boxed_ms, bare_ms),
        "walls": walls,
    }
    write_results("sandbox", data, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    print_table(
        f"start a command ({len(bare)} rounds, median)",
        ["how", "ms", "× bare"],
        [["bash -c true (baseline)", bare_ms, 1.0], ["in the sandbox", boxed_ms, ratio(boxed_ms, bare_ms)]],
    )
    print_table(
        "secret-reading forms",
        ["category", "forms", "read unconfined", "read in sandbox (beside)", "read in sandbox (inside)"],
        [
            [row["category"], row["forms"], row["unconfined"], row["sandbox_beside"], row["sandbox_inside"]]
            for row in walls["categories"]  # type: ignore[attr-defined]  # a list of dicts made above
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
