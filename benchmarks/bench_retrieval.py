"""Retrieval: quality on LoCoMo and LongMemEval, latency and memory at scale, embedding throughput.

1. **Quality** (``exo_edge.retrieval_eval``): ``bm25``, ``embed`` and ``fused``
   in one run, on the ``tune`` half (where the settings were chosen) and the
   ``holdout`` half (reported) of each development file; ``rrf`` is the fused
   list under §20's plain reciprocal rank fusion (k = 60, weights 1 : 1),
   the previous default, for comparison. ``bm25`` and ``embed`` are the plain
   lists; on LoCoMo, ``bm25+context`` and ``embed+context`` are each list
   alone through the pipeline's neighbouring-turn stage (``rank.context``), the
   parts with the stage the fused list has.
2. **Scale**: 1,000 / 10,000 / 100,000 stored texts (LongMemEval turns, user
   then assistant). Query latency p50/p95 of our BM25 (``DocIndex.search``,
   column weights, FTS5), our int8 flat scan (``vectors.top_k``) and the fused
   candidate step (both lists read 40 deep, as the pipeline does, fused, and the
   neighbouring-turn stage with its session lookup), against a plain FTS5 query (one
   column, default ``rank``) and a plain numpy fp32 scan of the same data;
   the query's embedding is timed apart. Memory: matrix bytes (int8 against
   fp32) and database pages (our document + FTS5 index against the plain
   FTS5 table); the resident-set growth is recorded too but is coarse. Vectors are the cached real
   vectors of the user turns; past their number rows repeat cyclically
   (a flat scan's cost does not depend on the values).
3. **Embedding throughput** during import: int8 against fp32 (texts/s).

Nothing here passes or fails; ratios are against baselines of the same run.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import bench_parser, machine_info, print_table, proc_memory_kb, write_results

REPO = Path(__file__).resolve().parent.parent


DATA = REPO.parent / "shared" / "data"
LOCOMO = DATA / "locomo" / "locomo-dev.json"
LONGMEMEVAL = DATA / "longmemeval" / "longmemeval-s-dev.json.xz"


def quality(ranker: Any, locomo: Path, longmemeval: Path, halves: list[str]) -> dict[str, Any]:
    from exo_core.retrieval import RetrievalSettings
    from exo_core.retrieval.rank import RRF_K
    from exo_edge.retrieval_eval import Ranker, load_locomo, load_longmemeval, score_locomo, score_longmemeval

    plain = Ranker(ranker.vectors, RetrievalSettings(weights=(1.0, 1.0), rrf_k=RRF_K))
    alone = {
        "bm25+context": Ranker(ranker.vectors, RetrievalSettings(weights=(1.0, 0.0))),
        "embed+context": Ranker(ranker.vectors, RetrievalSettings(weights=(0.0, 1.0))),
    }

    def both(score: Any, stacks: Any, cases: Any) -> dict[str, Any]:
        metrics = score(stacks, cases, ranker)
        if ranker.vectors is not None:
            metrics["rrf"] = score(stacks, cases, plain)["fused"]
            if score is score_locomo:  # one list at weight 0 adds no score: the other list, then the stage
                metrics |= {name: score(stacks, cases, r)["fused"] for name, r in alone.items()}
        return metrics

    out: dict[str, Any] = {}
    for half in halves:
        stacks, cases = load_locomo(locomo, half)
        loc = {
            "groups": sorted(stacks),
            "questions": {
                "cat1-4": sum(c.label == "cat1-4" for c in cases),
                "cat5": sum(c.label == "cat5" for c in cases),
            },
            "metrics": both(score_locomo, stacks, cases),
        }
        stacks, cases = load_longmemeval(longmemeval, half)
        lme = {"questions": len(cases), "metrics": both(score_longmemeval, stacks, cases)}
        out[half] = {"locomo": loc, "longmemeval": lme}
    return out


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def _lat(fn: Any, queries: list[Any]) -> dict[str, float]:
    times = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - start) * 1000)
    return {"p50_ms": round(statistics.median(times), 3), "p95_ms": round(_pct(times, 0.95), 3)}


def _db_kb(conn: sqlite3.Connection) -> int:
    """Size of a (memory) database: its pages."""
    return int(conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]) // 1024


def _rss_kb() -> int:
    gc.collect()
    return proc_memory_kb()["VmRSS"]


def scale(sizes: list[int], embedder: Any, cache: Any, n_queries: int) -> list[dict[str, Any]]:
    import numpy as np

    from exo_core.retrieval import Doc, DocIndex, RetrievalSettings
    from exo_core.retrieval.pipeline import OVERFETCH
    from exo_core.retrieval.rank import context, fuse
    from exo_edge.retrieval_eval import _hash, load_longmemeval
    from exo_edge.vectors import top_k

    data = json.loads(__import__("lzma").open(LONGMEMEVAL).read())
    said = [
        (sid, t["content"])
        for role in ("user", "assistant")
        for sid, s in data["sessions"].items()
        for t in s
        if t["role"] == role and t["content"].strip()
    ]
    texts = [text for _, text in said]
    _, cases = load_longmemeval(LONGMEMEVAL, "holdout")
    questions = [c.question for c in cases[:n_queries]]
    qvecs = [embedder.embed([q])[0] for q in questions]
    embed_ms = _lat(lambda q: embedder.embed([q]), questions)
    base = cache.vectors([_hash(t) for t in texts[: max(sizes)]])  # texts never embedded are skipped
    settings = RetrievalSettings()
    pool = settings.depth * OVERFETCH

    def fused(index: Any, bm25: list[tuple[str, float]], dense: list[tuple[str, float]]) -> dict[str, float]:
        scores = fuse(
            [bm25, dense], weights=settings.weights, depth=settings.depth, ended=[len(bm25) < pool, len(dense) < pool]
        )
        return context(scores, index.session_turns(sorted(scores)), settings.context)  # the pipeline's next stage

    rows = []
    for n in sizes:
        sample = texts[:n]
        before = _rss_kb()
        index = DocIndex(":memory:")
        ids = [f"turn:{sid}:{i}" for i, (sid, _) in enumerate(said[:n])]  # as the pipeline names past turns
        index.sync(Doc(id=i, kind="turn", body=t, session=sid) for i, (sid, t) in zip(ids, said[:n]))
        fts_kb = _rss_kb() - before
        plain = sqlite3.connect(":memory:")
        plain.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
        plain.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", ((i, t) for i, t in enumerate(sample)))
        before = _rss_kb()
        mat = np.resize(base, (n, base.shape[1])).astype(np.int8)
        norms = np.linalg.norm(mat.astype(np.float32), axis=1)
        int8_kb = _rss_kb() - before
        before = _rss_kb()
        f32 = mat.astype(np.float32) / norms[:, None]
        f32_kb = _rss_kb() - before
        from exo_core.retrieval.lexical import match_expression

        pairs = list(zip(questions, qvecs))
        row = {
            "texts": n,
            "bm25": _lat(lambda p: index.search(p[0], 10), pairs),
            "plain_fts5": _lat(
                lambda p: plain.execute(
                    "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT 10", (match_expression(p[0]),)
                ).fetchall(),
                pairs,
            ),
            "int8_scan": _lat(lambda p: top_k(ids, mat, norms, p[1], 10), pairs),
            "numpy_fp32_scan": _lat(lambda p: np.argsort(-(f32 @ p[1]))[:10], pairs),
            "fused": _lat(lambda p: fused(index, index.search(p[0], pool), top_k(ids, mat, norms, p[1], pool)), pairs),
            "query_embed": embed_ms,
            "memory": {
                "fts_index_kb": fts_kb,
                "fts_db_kb": _db_kb(index.conn),
                "plain_fts_db_kb": _db_kb(plain),
                "int8_matrix_kb": int8_kb,
                "fp32_matrix_kb": f32_kb,
                "int8_bytes": int(mat.nbytes),
                "fp32_bytes": int(f32.nbytes),
            },
            "distinct_vectors": int(min(n, base.shape[0])),
        }
        rows.append(row)
        index.close()
        plain.close()
        del mat, f32, norms
    return rows


def throughput(home: Any, n: int) -> dict[str, Any]:
    import lzma

    from exo_edge.embedder import OnnxEmbedder

    data = json.loads(lzma.open(LONGMEMEVAL).read())
    texts = [t["content"] for s in data["sessions"].values() for t in s if t["role"] == "user"]
    random.Random(7).shuffle(texts)
    texts = texts[:n]
    out: dict[str, Any] = {"texts": n}
    for precision in ("int8", "fp32"):
        emb = OnnxEmbedder.from_home(home, precision=precision)
        if emb is None:
            continue
        emb.embed(["warm up"])
        start = time.perf_counter()
        emb.embed(texts)
        out[precision] = {
            "texts_per_s": round(n / (time.perf_counter() - start), 1),
            "model_mb": round(emb.model_path.stat().st_size / 1e6, 1),
        }
    if "int8" in out and "fp32" in out:
        out["int8_over_fp32"] = round(out["int8"]["texts_per_s"] / out["fp32"]["texts_per_s"], 2)
    return out


def render(results: dict[str, Any]) -> None:
    for half, sets in results["quality"].items():
        loc = sets["locomo"]
        rows = [
            [system, group] + [m[k] for k in ("hit@5", "hit@10", "recall@5", "recall@10")]
            for system, by in loc["metrics"].items()
            for group, m in by.items()
        ]
        print_table(
            f"LoCoMo, {half} half ({', '.join(loc['groups'])}; questions {loc['questions']})",
            ["system", "category", "hit@5", "hit@10", "recall@5", "recall@10"],
            rows,
        )
        lme = sets["longmemeval"]
        rows = [
            [system] + [m[k] for k in ("any@1", "any@5", "any@10", "all@5", "all@10")]
            for system, m in lme["metrics"].items()
        ]
        print_table(
            f"LongMemEval_S, {half} half ({lme['questions']} non-abstention questions; user turns)",
            ["system", "any@1", "any@5", "any@10", "all@5", "all@10"],
            rows,
        )
    if results.get("scale"):
        rows = []
        for r in results["scale"]:
            rows.append(
                [r["texts"]]
                + [
                    f"{r[k]['p50_ms']:.2f} / {r[k]['p95_ms']:.2f}"
                    for k in ("bm25", "plain_fts5", "int8_scan", "numpy_fp32_scan", "fused")
                ]
                + [
                    round(r["bm25"]["p50_ms"] / r["plain_fts5"]["p50_ms"], 2),
                    round(r["int8_scan"]["p50_ms"] / r["numpy_fp32_scan"]["p50_ms"], 2),
                    r["memory"]["int8_bytes"] // 1024,
                    r["memory"]["fp32_bytes"] // 1024,
                    r["memory"]["fts_db_kb"],
                    r["memory"]["plain_fts_db_kb"],
                ]
            )
        print_table(
            "Query latency p50 / p95 (ms) and memory; query embedding apart",
            [
                "texts",
                "bm25",
                "plain FTS5",
                "int8 scan",
                "numpy fp32 scan",
                "fused (no q-embed)",
                "bm25/plain",
                "int8/fp32",
                "int8 KiB",
                "fp32 KiB",
                "index KiB",
                "plain FTS KiB",
            ],
            rows,
        )
        q = results["scale"][0]["query_embed"]
        print(f"query embedding (int8, one text): p50 {q['p50_ms']} ms, p95 {q['p95_ms']} ms")
    t = results.get("throughput")
    if t:
        print_table(
            "Embedding throughput during import (LongMemEval user turns)",
            ["model", "texts/s", "file MB"],
            [[p, t[p]["texts_per_s"], t[p]["model_mb"]] for p in ("int8", "fp32") if p in t],
        )
        if "int8_over_fp32" in t:
            print(f"int8 / fp32 throughput: {t['int8_over_fp32']}x")


def main() -> int:
    parser = bench_parser(
        "retrieval-scale",
        __doc__,
        quick_help="tune half only, small scale; writes nothing unless --out",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--locomo", type=Path, default=LOCOMO)
    parser.add_argument("--longmemeval", type=Path, default=LONGMEMEVAL)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--throughput-texts", type=int, default=400)
    parser.add_argument(
        "--quality-only",
        action="store_true",
        help="re-run quality only; scale and throughput are kept from the --out file (dated)",
    )
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--render", type=Path, default=None, help="print tables of a results file and exit")
    args = parser.parse_args()
    _common.MARKDOWN = args.markdown
    if args.render:
        render(json.loads(args.render.read_text()))
        return 0
    from exo_core.seams.home import ExoHome
    from exo_edge.retrieval_eval import bench_ranker

    home = ExoHome.from_env()
    ranker = bench_ranker(home)
    if ranker.vectors is None:
        print("the int8 embedder is not fetched (exo models fetch): BM25 only", file=sys.stderr)
    halves = ["tune"] if args.quick else ["tune", "holdout"]
    results: dict[str, Any] = {
        "machine": machine_info(),
        "settings": {
            "depth": ranker.settings.depth,
            "weights": list(ranker.settings.weights),
            "rrf_k": ranker.settings.rrf_k,
            "fusion": "score-aware: each list divided by its top score, weighted sum, each weight times the list's "
            "confidence 1 - floor (floor: last score read over the top, 0 for a list read to its end); "
            "rrf: k 60, weights 1:1; then each fused turn lends shares "
            f"{list(ranker.settings.context)} of its score to the turns 1, 2 places away in its session",
            "split": "ids sorted; even positions tune, odd holdout",
            "longmemeval_roles": ["user"],
        },
    }
    results["quality"] = quality(ranker, args.locomo, args.longmemeval, halves)
    if args.quality_only:
        previous = json.loads((args.out or REPO / "benchmarks" / "results" / "retrieval.json").read_text())
        results |= {k: previous[k] for k in ("scale", "throughput") if k in previous}
        results["scale_recorded"] = previous.get("scale_recorded", previous["machine"].get("date"))
    elif ranker.vectors is not None:
        sizes = [int(s) for s in args.sizes.split(",")] if not args.quick else [1000]
        results["scale"] = scale(sizes, ranker.vectors.embedder, ranker.vectors, args.queries if not args.quick else 20)
        results["throughput"] = throughput(home, args.throughput_texts if not args.quick else 40)
    results["machine"]["loadavg_after"] = [round(x, 2) for x in __import__("os").getloadavg()]
    write_results("retrieval", results, out=args.out, quick=args.quick)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        render(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
