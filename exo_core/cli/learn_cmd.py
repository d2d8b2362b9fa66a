"""``exo learn review|queue|drain|metrics|climb|reject|rebuild``: the learning loop by hand.

The store is ``--store DIR`` or the Exo home's; the ledger is written with
this machine's key. ``[learning]`` in config.toml names the larger model's
route (``route = "laptop:qwen2.5-7b"``), the monthly ceiling and the batch
size; the queue lives in ``$EXO_HOME/learning/queue.sqlite``. Heavy imports
happen inside the handlers.
"""

from __future__ import annotations

import argparse
from typing import Any

from exo_core.cli.args import add_command, add_group, emit, home_of

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``exo learn`` and its subcommands."""
    sub = add_group(
        subparsers, "learn", "the learning loop: review, queue, drain, metrics, climb", metavar="SUBCOMMAND"
    )
    for name, help_text in (
        ("review", "review new ledger entries now (the person asked)"),
        ("queue", "jobs waiting for a larger model, and this month's spend"),
        ("drain", "send queued jobs to the larger model's route"),
        ("metrics", "corrections per accepted output, verdict mix, questions, over time"),
        ("climb", "run the exam and the conservative climb over learned taste"),
        ("reject", '"that\'s wrong": reject a lesson; it leaves the pack'),
        ("rebuild", "rewrite the learned pack section and taste nodes from the ledger"),
    ):
        p = add_command(sub, name, globals()[f"_{name}"], help_text, home=True)
        p.add_argument("--store", default=None, metavar="DIR", help="store folder (default: the home's store)")
        p.add_argument("--json", action="store_true", help="print JSON")
        if name == "drain":
            p.add_argument("--route", default=None, help="provider:model (default: [learning] route)")
            p.add_argument("--batch", type=int, default=None, help="jobs per batch (default: [learning] batch)")
            p.add_argument("--ceiling", type=float, default=None, help="monthly spend ceiling in dollars")
        elif name == "metrics":
            p.add_argument("--days", type=int, default=7, help="window width in days")
        elif name == "reject":
            p.add_argument("target", help="lesson target, node id or proposal id")
            p.add_argument("--reason", default="that's wrong", help="why (kept in the ledger)")


class _Ctx:
    def __init__(self, args: argparse.Namespace) -> None:
        from exo_core.edge import open_proposal_queue
        from exo_core.learning import Learner
        from exo_core.learning.service import LearningSettings
        from exo_core.ledger import HomeWitness, Ledger, load_signing_key
        from exo_core.store import Store

        self.home = home_of(args)
        self.settings = LearningSettings.from_config(self.home.config())
        self.store = Store.open(self.home.store_path(args.store))
        self.ledger = Ledger.open_store(
            self.store.root, signer=load_signing_key(self.home.keys_dir), witness=HomeWitness(self.home.root)
        )
        self.queue = open_proposal_queue(self.home.root / "learning" / "queue.sqlite")
        self.learner = Learner(self.store, self.ledger, queue=self.queue if self.settings.route else None)

    def __enter__(self) -> _Ctx:
        return self

    def __exit__(self, *exc: object) -> None:
        self.queue.close()
        self.ledger.close()


def _review(args: argparse.Namespace) -> int:
    from exo_core.learning.weights import label

    with _Ctx(args) as ctx:
        r = ctx.learner.review(asked=True)
        lessons = _lessons(ctx.learner.book)
    data = {
        "proposals": r.proposals,
        "promoted": list(r.promoted),
        "questions": list(r.questions),
        "queued": r.queued,
        "lessons": lessons,
    }
    lines = [
        f"{r.proposals} proposals, promoted: {', '.join(r.promoted) or 'none'}, "
        f"{len(r.questions)} questions, {r.queued} queued for a larger model"
    ]
    # exod's reviewer reads a chat as it happens, so by the time the person asks, the proposals a session made
    # are usually already reviewed (0 new): list every open lesson, or "review" would show nothing learned.
    for lesson in lessons:
        state = f"promoted by {lesson['promoted_by']}" if lesson["promoted_by"] else "proposed"
        proposal = lesson["proposals"][0][:12] if lesson["proposals"] else "-"
        lines.append(
            f"  {lesson['target']}  {state}, weight {lesson['weight']:.2f} ({label(lesson['weight'])}), "
            f"proposal {proposal}: {lesson['claim']}"
        )
    return emit(args, data, "\n".join(lines))


def _lessons(book: Any) -> list[dict[str, Any]]:
    """The book's lessons not rejected, as the CLI shows them (strongest first)."""
    rows = [lesson.to_json(book.last_ts) for lesson in book.lessons.values()]
    kept = [row for row in rows if not row["rejected"]]
    return sorted(kept, key=lambda row: (-row["weight"], row["target"]))


def _queue(args: argparse.Namespace) -> int:
    with _Ctx(args) as ctx:
        data = {
            "jobs": ctx.queue.counts(),
            "spent_this_month": ctx.queue.spent(),
            "ceiling": ctx.settings.ceiling,
            "route": ctx.settings.route,
        }
    return emit(args, data, f"jobs {data['jobs']}, spent {data['spent_this_month']:.4f} of {ctx.settings.ceiling}")


def _drain(args: argparse.Namespace) -> int:
    import asyncio

    from exo_core.edge import installed_edge
    from exo_core.errors import ConfigError
    from exo_core.models import build_router
    from exo_core.models.catalog import ROLES

    drain = installed_edge().drain
    with _Ctx(args) as ctx:
        route = args.route or ctx.settings.route
        if not route:
            raise ConfigError("no route to a larger model: set [learning] route in config.toml or pass --route")
        if drain is None:
            raise ConfigError("draining the proposal queue needs exo_edge, which is not installed in this core")
        router = build_router(ctx.home)
        for role in ROLES:  # this process only: every role is the learning route and nothing after it
            router.set_role(role, [route])

        async def run() -> Any:
            try:
                return await drain(
                    ctx.queue,
                    router,
                    ctx.ledger,
                    batch=args.batch or ctx.settings.batch,
                    ceiling=ctx.settings.ceiling if args.ceiling is None else args.ceiling,
                    route=route,  # a queued decision is recorded as "<route>:chat" (docs/decisions.md §7a)
                )
            finally:
                await router.aclose()

        report = asyncio.run(run())
    data = {
        "done": report.done,
        "already_done": report.already,
        "set_aside": report.set_aside,
        "stopped": report.stopped,
        "cost": report.cost,
    }
    said = f"drained {report.done} (already done {report.already}); stopped: {report.stopped}"
    if report.set_aside:
        said += f"; {report.set_aside} set aside: their stored inputs make no request (see the log)"
    return emit(args, data, said)


def _metrics(args: argparse.Namespace) -> int:
    from exo_core.learning.metrics import metrics

    with _Ctx(args) as ctx:
        m = metrics(ctx.ledger, days=args.days, spent=ctx.queue.spent())
    rows = [
        f"{_window_label(w.start, args.days)}: corrections/accept {w.corrections_per_accept:.2f} "
        f"verdicts {w.verdicts} questions {w.questions}"
        for w in m.windows
    ]
    if not rows:
        rows = [f"no verdicts or questions in the ledger yet (windows of {args.days} days)"]
    return emit(args, m.to_json(), "\n".join(rows + [f"stale eval: {m.stale}"]))


def _window_label(start_ms: int, days: int) -> str:
    """A window as dates a person reads (``2026-11-24 .. 2026-11-30``), not an epoch in milliseconds."""
    import datetime

    start = datetime.datetime.fromtimestamp(start_ms / 1000, tz=datetime.UTC).date()
    end = start + datetime.timedelta(days=days - 1)
    if end == start:
        return start.isoformat()
    return f"{start.isoformat()} .. {end.isoformat()}"


def _climb(args: argparse.Namespace) -> int:
    from exo_core.learning.climb import Candidate, climb
    from exo_core.learning.evalset import items_from, rule_of, rules_score, split
    from exo_core.learning.pack import enforced, hints

    with _Ctx(args) as ctx:
        ctx.learner.refresh()
        book = ctx.learner.book
        # Lessons a text check grades: catalog ones by their feature, ones the larger model named by their
        # marker (docs/learning.md §6).
        graded = [lesson for lesson in enforced(book, book.last_ts) if lesson.feature or lesson.marker]
        incumbent = frozenset(rule_of(lesson) for lesson in graded)
        candidates = [
            Candidate(incumbent | {rule_of(lesson)}, lesson.target)
            for lesson in hints(book, book.last_ts)
            if (lesson.feature or lesson.marker) and rule_of(lesson) not in incumbent
        ]
        said = frozenset(lesson.target for lesson in book.lessons.values() if lesson.person_said)
        final, decisions = climb(
            incumbent,
            candidates,
            split(items_from(book)),
            rules_score,
            ledger=ctx.ledger,
            person_ruled=said,
            spent=ctx.queue.spent,
            ceiling=ctx.settings.ceiling,
        )
        for d in decisions:
            if d.kept and d.change in book.lessons and not book.lessons[d.change].promoted_by:
                ctx.learner.promote_by_eval(d.change, d.entry)
    data = {
        "incumbent": sorted(final),
        "decisions": [
            {"change": d.change, "kept": d.kept, "reason": d.reason, "dev": d.dev, "held_out": d.held_out}
            for d in decisions
        ],
    }
    return emit(
        args,
        data,
        "\n".join(f"{'kept' if d.kept else 'dropped'} {d.change}: {d.reason}" for d in decisions) or "no candidates",
    )


def _reject(args: argparse.Namespace) -> int:
    with _Ctx(args) as ctx:
        entry = ctx.learner.reject(args.target, args.reason)
    return emit(args, {"rejection": entry.id}, f"rejected {args.target} ({entry.id[:12]})")


def _rebuild(args: argparse.Namespace) -> int:
    from exo_core.learning.pack import render_learned, sync_nodes, write_pack

    with _Ctx(args) as ctx:
        ctx.learner.refresh()
        changed = sync_nodes(ctx.store, ctx.learner.book)
        write_pack(ctx.store, render_learned(ctx.learner.book))
    return emit(args, {"nodes": changed}, f"pack rewritten; {len(changed)} nodes written")
