"""The shell gate's cost per command line, against reading the same line, in the same run.

Every line of the attack table (``tests/gate/attack_table.py``: benign forms and attacks) is judged by
the gate (``evaluate``: parse, classify with realpath and secret checks, decide) and, as the baseline,
only read (``parse_shell``). Reported: the median time per line of each over several rounds, and the
ratio gate / read. No pass or fail (docs/benchmarks.md): a tool call costs a model turn, which is thousands
of times longer, so this number says whether the gate is ever noticeable.

    python -m benchmarks.bench_gate            # 7 rounds, writes $EXO_HOME/bench/gate.json
    python -m benchmarks.bench_gate --quick    # 2 rounds, writes nothing
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from attack_table import ROWS

from benchmarks._common import bench_parser, machine_info, median, print_table, ratio, write_results
from exo_core.gate import Policy, evaluate, parse_shell


def _round(lines: list[str], policy: Policy) -> tuple[float, float]:
    start = time.perf_counter()
    for line in lines:
        parse_shell(line)
    read = time.perf_counter() - start
    start = time.perf_counter()
    for line in lines:
        evaluate("bash", {"command": line}, policy)
    judged = time.perf_counter() - start
    return read / len(lines), judged / len(lines)


def main() -> int:
    parser = bench_parser("gate", __doc__.splitlines()[0], quick_help="2 rounds; writes nothing unless --out")
    args = parser.parse_args()
    policy = Policy().with_workspace(Path("/srv/ws"))
    lines = [row[1] for row in ROWS]
    rounds = [_round(lines, policy) for _ in range(2 if args.quick else 7)]
    read_us = median([r[0] for r in rounds]) * 1e6
    judged_us = median([r[1] for r in rounds]) * 1e6
    data = {"machine": machine_info(), "lines": len(lines), "read_us": read_us, "gate_us": judged_us}
    write_results("gate", data, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    print_table(
        f"gate cost per command line ({len(lines)} lines, {len(rounds)} rounds, median)",
        ["step", "µs per line", "× reading"],
        [["read the line (baseline)", read_us, 1.0], ["judge it (gate)", judged_us, ratio(judged_us, read_us)]],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
