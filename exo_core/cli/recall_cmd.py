"""``exo recall QUERY``: the retrieval pack for a query, with ids, kinds, scores and the token count."""

from __future__ import annotations

import argparse

from exo_core.cli.args import add_command, home_of


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo recall``."""
    parser = add_command(
        sub, "recall", _recall, "what the store retrieves for a query (the retrieval pipeline)", home=True
    )
    parser.add_argument("query", nargs="+")
    parser.add_argument("--store", default=None, help="store folder (default from config.toml)")
    parser.add_argument("--budget", type=int, default=None, help="token budget (default 1200)")
    parser.add_argument("--scope", default="person", help="person, agent:NAME or group:NAME")
    parser.add_argument("--no-embed", action="store_true", help="BM25 only, even when the embedder is present")
    parser.add_argument("--json", action="store_true")


def _recall(args: argparse.Namespace) -> int:
    import json

    from exo_core.errors import UsageError
    from exo_core.retrieval import RetrievalSettings, Retriever
    from exo_core.retrieval.pipeline import records
    from exo_core.store import Store

    if args.budget is not None and args.budget < 1:
        raise UsageError("--budget must be a positive number of tokens")
    home = home_of(args)
    store = Store.open(home.store_path(args.store))
    settings = RetrievalSettings(embed_batch=None)  # one-shot: embed whatever is new now
    retriever = Retriever.open(store, home=home, embeddings=not args.no_embed, settings=settings)
    try:
        recalled = retriever.retrieve(" ".join(args.query), scope=args.scope, budget=args.budget, record=False)
    finally:
        retriever.close()
    packed = recalled.packed
    if args.json:
        print(
            json.dumps(
                {
                    "query": recalled.query,
                    "tokens": packed.tokens,
                    "budget": packed.budget,
                    "embeddings": retriever.dense is not None,
                    "pinned": list(recalled.pinned),
                    "blocks": [dict(r, text=b.text) for r, b in zip(records(recalled), packed.blocks, strict=True)],
                },
                ensure_ascii=False,
            )
        )
        return 0
    for block in packed.blocks:
        flag = " pinned" if block.pinned else ""
        print(f"--- {block.kind} {block.id} ({block.form}{flag}, score {block.score:.4f}, {block.tokens} tokens)")
        print(block.text)
    mode = "bm25+embeddings" if retriever.dense is not None else "bm25 only"
    print(f"=== {len(packed.blocks)} blocks, {packed.tokens} of {packed.budget} tokens ({mode})")
    return 0
