"""``exo decide signal|toolset|panel TEXT``: run one decision through the configured order, so anyone can audit a case.

``--json`` prints ``{"probabilities": {...}, "chosen": OPTION or null,
"abstained": ..., "provider": NAME, ...}``. The providers come from
``[decisions]`` in config.toml unless ``--providers`` lists them
(``local,hosted,rules-only``); calibration comes from the store's ledger.
``--record`` also appends the decision to the store's ledger.
"""

from __future__ import annotations

import argparse

from exo_core.cli.args import add_command, emit, home_of

USES = ("signal", "toolset", "panel")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``exo decide``."""
    parser = add_command(
        sub, "decide", _decide, "run one decision (signal, toolset, panel) and show its probabilities", home=True
    )
    parser.add_argument("use", choices=USES, help="which decision")
    parser.add_argument("text", help="the state: the person's message")
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    parser.add_argument(
        "--providers",
        default=None,
        metavar="LIST",
        help="comma-separated provider order (local, hosted, rules-only); default: config.toml",
    )
    parser.add_argument("--store", default=None, help="the store folder (default: the home's store)")
    parser.add_argument("--record", action="store_true", help="append the decision to the store's ledger")


# A decision reads one message (docs/decisions.md §1); a longer text is not a message but a document.
MAX_STATE = 4000


def state_problem(text: str) -> str | None:
    """Why ``text`` cannot be decided on (and what to pass instead), or ``None`` when it can."""
    if not text.strip():
        return "give the text to decide about, e.g. exo decide signal 'No, I said Tuesday.'"
    if len(text) > MAX_STATE:
        return (
            f"a decision reads one message of at most {MAX_STATE} characters; this text has {len(text)}: "
            "pass the person's message itself"
        )
    unreadable = sum(1 for ch in text if _unreadable(ch))
    if unreadable * 4 > len(text):  # more than a quarter: binary data, not a message
        return (
            f"the text is not readable ({unreadable} of {len(text)} characters are control characters or "
            "bytes that are not UTF-8); pass the person's message as text"
        )
    return None


def _unreadable(ch: str) -> bool:
    if "\udc80" <= ch <= "\udcff":  # a byte that was not UTF-8 (Python's surrogateescape)
        return True
    return ch < " " and ch not in "\t\n\r" or ch == "\x7f" or ch == "\ufffd"


def _decide(args: argparse.Namespace) -> int:
    import asyncio

    from exo_core.decisions import uses
    from exo_core.decisions.setup import build_decider
    from exo_core.errors import NotFoundError, UsageError
    from exo_core.ledger import HomeWitness, LedgerRecorder, load_signing_key
    from exo_core.seams.decision import ClosingProvider, WarmingProvider

    home = home_of(args)
    store = home.store_path(args.store)
    problem = state_problem(args.text)
    if problem is not None:
        raise UsageError(problem)
    providers = [p.strip() for p in args.providers.split(",") if p.strip()] if args.providers else None
    recorder = None
    if args.record:
        if not (store / "STORE.toml").is_file():
            raise NotFoundError(f"no store at {store}; run `exo init` or pass --store DIR (or drop --record)")
        recorder = LedgerRecorder.for_store(store, load_signing_key(home.keys_dir), witness=HomeWitness(home.root))
    decider = build_decider(home, store=store, recorder=recorder, providers=providers)

    async def run() -> dict[str, object]:
        for provider in decider.providers:
            if isinstance(provider, WarmingProvider):  # loading the model and reading the head are once a process
                await provider.warm(uses.USES[args.use])
        decision = await getattr(uses, args.use)(decider, args.text)
        for provider in decider.providers:
            if isinstance(provider, ClosingProvider):
                await provider.aclose()
        return decision.to_json()

    try:
        result = asyncio.run(run())
    finally:
        if recorder is not None:
            recorder.close()
    chosen, probabilities = result["chosen"], result["probabilities"]
    assert isinstance(probabilities, dict)
    top = f"{chosen} ({probabilities[chosen]:.2f})" if isinstance(chosen, str) else "abstained"
    return emit(args, result, f"{args.use}: {top} via {result['provider']}; applied: {result['applied']}")
