"""Benchmark: what a board profile's context window costs in memory, per model.

Usage::

    python -m benchmarks.bench_board_ctx [MODEL] [--ctx 2048 4096 8192] [--json] [--out PATH]

For each window, a fresh process loads the model's GGUF with llama-cpp-python
(1 thread, the profile defaults of ``exo_edge.llama_transport.LlamaSettings``
for batch sizes), evaluates a short prompt and reports its RSS after load and
after the prompt (``VmRSS``, ``VmHWM``). The difference between windows is the
KV cache, which llama.cpp allocates when the model loads; docs/models.md
(Board profiles) uses it to size ``n_ctx``. MODEL is a shipped manifest name
(default: the standard profile's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._common import bench_parser, write_results
from exo_edge.manifest import find_manifest
from exo_edge.paths import locate_model_file

REPO = Path(__file__).resolve().parent.parent


CHILD = """
import json, sys
import llama_cpp
def rss():
    out = {}
    for line in open('/proc/self/status'):
        if line.startswith(('VmRSS', 'VmHWM')):
            out[line.split()[0].rstrip(':')] = int(line.split()[1]) // 1024
    return out
m = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=int(sys.argv[2]), n_threads=1, n_batch=256, n_ubatch=256,
                    verbose=False)
loaded = rss()
m.eval(m.tokenize(b"Hello there, how are you today?"))
print(json.dumps({"after_load_mib": loaded["VmRSS"], "after_prompt_mib": rss()["VmRSS"], "peak_mib": rss()["VmHWM"]}))
"""


def main() -> int:
    parser = bench_parser(
        "board-ctx", __doc__.splitlines()[0], quick_help="the smallest window only; writes nothing unless --out"
    )
    parser.add_argument("model", nargs="?", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--ctx", type=int, nargs="+", default=[2048, 4096, 8192])
    args = parser.parse_args()
    windows = args.ctx
    if args.quick:
        windows = [min(args.ctx)]
    path = locate_model_file(find_manifest(args.model).primary_file.name)
    if path is None:
        print(f"{args.model} is not fetched: exo models fetch {args.model}", file=sys.stderr)
        return 1
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    rows = []
    for n_ctx in windows:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), str(n_ctx)], capture_output=True, text=True, env=env, check=True
        )
        row = {"n_ctx": n_ctx, **json.loads(proc.stdout.strip().splitlines()[-1])}
        rows.append(row)
        print(
            f"{args.model} n_ctx {n_ctx:6}: {row['after_load_mib']} MiB loaded, {row['after_prompt_mib']} MiB after a prompt"
        )
    data = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "model": args.model, "windows": rows}
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    write_results("board_ctx", data, out=args.out, quick=args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
