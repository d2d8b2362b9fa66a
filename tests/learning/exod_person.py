"""The simulated person through a real exod (issue 22 "must show"): corrections are chat messages, not verdict calls.

Three real processes and servers take part:

* **exod** (``exo serve``) with the store's ledger, the reviewer, the chat signals (the rules-only signal
  decision reads each person message) and the proposal-queue drainer (``[learning] route``);
* **the assistant**: an OpenAI-compatible aiohttp server that exod's ``main`` role calls. It drafts each
  task with the style features of :mod:`simperson` switched on at random, plus lines the catalog does not
  know (:data:`NONCATALOG`), except what the pack in exod's system prompt says was learned;
* **the larger model**: :mod:`larger_model`'s server, the ``laptop`` route the drainer sends reflections to.

The person asks for a draft ("Write the travel note."), reads it, and either says it is fine or corrects
the one thing they noticed, in words ("No, that's wrong: drop the TL;DR line."). They miss a violation one
time in ten. They never answer the guarded question. :func:`measure` reads the ledger afterwards:
precision and recall of high-weight lessons, catalog and non-catalog rules separately, and whether any
guarded lesson was promoted.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from simperson import HIDDEN, TASKS, render

from exo_core.client import ExoClient
from exo_core.learning.features import feature
from exo_core.learning.weights import HIGH

__all__ = [
    "NONCATALOG",
    "GUARDED",
    "CORRECTIONS",
    "Assistant",
    "Person",
    "measure",
    "write_config",
    "lines_from_cases",
]

# Lines the catalog cannot explain, each a hidden rule of the person, and how the person says so.
NONCATALOG = {
    "tldr": ("TL;DR: the details follow below.", "No, that's wrong: drop the TL;DR line."),
    "disclaimer": ("As an AI assistant, I cannot check this myself.", "No, that's wrong: no AI assistant disclaimers."),
    "recap": (
        "Recap of our earlier chat: we agreed on the plan.",
        "No, that's wrong: skip the recap of our earlier chat.",
    ),
    "synergy": ("This brings real synergy to the work.", "No, that's wrong: avoid corporate words like synergy."),
}
# A guarded rule outside the catalog: offering to post publicly. Learned, asked about, never promoted unasked.
GUARDED = {
    "post": (
        "Shall I post this summary to the team channel?",
        "No, that's wrong: do not offer to post summaries to the team channel.",
    )
}
CORRECTIONS = {
    "preamble": "No, that's wrong: drop the preamble, give the result first.",
    "em_dash": "No, that's wrong: no em dashes.",
    "bullets_for_comparison": "No, that's wrong: use a table when comparing, not bullets.",
    "exclamation": "No, that's wrong: no exclamation marks, keep it calm.",
    "emoji": "No, that's wrong: no emoji.",
    "imperial_units": "No, that's wrong: use metric units, not miles.",
    "us_dates": "No, that's wrong: use ISO dates.",
    "sign_off": "No, that's wrong: no sign-off at the end.",
}
_EXTRA = {**NONCATALOG, **GUARDED}
_QUOTED = re.compile(r"'([^']{2,80})'")


def lines_from_cases(path: Path, split: str) -> dict[str, tuple[str, str]]:
    """Hidden rules from the reflection cases of ``split`` (``benchmarks/data/reflection_cases.json``): each
    rejection with an expected lesson gives its line and the person's words, said as a correction."""
    out = {}
    for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
        line = case["expect"]["line"]
        if case["split"] != split or case["verdict"] != "reject" or not line:
            continue
        out[case["id"]] = (case["draft"][line - 1], f"No, that's wrong: {case['reason']}")
    return out


def _learned_section(system: str) -> str:
    # the prompt shows the pack without its comments, so the section's markers are gone: it runs
    # from its heading to the next heading (docs/store.md, "Layers")
    found = re.search(r"^## Learned taste\n(.*?)(?=^## |\Z)", system, re.S | re.M)
    return found.group(1) if found else ""


def _knows(section: str, key: str, extra: Mapping[str, tuple[str, str]]) -> bool:
    """Whether the pack's learned section (enforced or hint) covers the rule ``key``."""
    if key in extra:
        line = extra[key][0].lower()
        return any(m.lower() in line for m in _QUOTED.findall(section))
    feat = feature(key)
    if feat is None:
        return False
    core = feat.claim.removeprefix("Wants ").rstrip(".")
    return f"[[{feat.target}]]" in section or core in section


class Assistant:
    """The drafting model exod calls: an OpenAI-compatible server that follows the pack it is shown.

    Each draft's dice come from its own generator, seeded by the draft's number, so what one draft
    contains depends on what had been learned when it was asked, never on how many dice earlier
    drafts happened to roll (a promotion a moment earlier or later, on a busy machine, would
    otherwise change every draft after it).
    """

    def __init__(self, seed: int, extra: Mapping[str, tuple[str, str]] = _EXTRA) -> None:
        self.seed = seed
        self.extra = extra
        self.drafts = 0
        self.saw_pack = 0
        self.requests = 0

    def _skips(self, section: str, key: str, dice: random.Random) -> bool:
        """An enforced lesson switches its rule off; a hint, half the time (as in :mod:`simperson`)."""
        enforced, _, hinted = section.partition("Hints:")
        heeds_hint = dice.random() < 0.5
        if _knows(enforced, key, self.extra):
            return True
        return _knows(hinted, key, self.extra) and heeds_hint

    def draft(self, task: str, section: str) -> str:
        self.drafts += 1
        keys = []
        for key in (*TASKS[task], *self.extra):
            dice = random.Random(f"{self.seed}:{self.drafts}:{key}")
            shown_now = dice.random() < 0.35
            if shown_now and not self._skips(section, key, dice):
                keys.append(key)
        on = frozenset(keys)
        body = render(task, on - {"sign_off"} - set(self.extra))
        extras = [self.extra[k][0] for k in self.extra if k in on]
        closing = ["Hope this helps."] if "sign_off" in on else []
        return "\n\n".join([body, *extras, *closing])

    def answer(self, messages: list[dict[str, Any]]) -> str:
        system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        section = _learned_section(system)
        self.requests += 1
        self.saw_pack += int(bool(section))
        last = str(messages[-1].get("content", ""))
        asked = re.match(r"Write the (\w+) note", last)
        if asked and asked.group(1) in TASKS:
            return self.draft(asked.group(1), section)
        return "Noted."

    def app(self) -> web.Application:
        async def completions(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            text = self.answer(body["messages"])
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            for piece in re.findall(r".{1,40}", text, re.S):
                chunk = {"model": body["model"], "choices": [{"index": 0, "delta": {"content": piece}}]}
                await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
            done = {"model": body["model"], "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            await resp.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
            await resp.write_eof()
            return resp

        application = web.Application()
        application.router.add_post("/v1/chat/completions", completions)
        return application


def write_config(home: Path, assistant_port: int, laptop_port: int, *, route_model: str = "big") -> None:
    """``main`` is the assistant server; ``[learning] route`` is the larger model's server (``route_model``)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[models.providers.sim]\n"
        'kind = "openai"\n'
        f'base_url = "http://127.0.0.1:{assistant_port}/v1"\n'
        "key_env = []\n\n"
        "[models.providers.laptop]\n"
        'kind = "openai"\n'
        f'base_url = "http://127.0.0.1:{laptop_port}/v1"\n'
        "key_env = []\n\n"
        "[models.roles]\n"
        'main = ["sim:assistant"]\n\n'
        "[learning]\n"
        f'route = "laptop:{route_model}"\n'
        "drain_every = 0.2\n"
        "batch = 50\n",
        encoding="utf-8",
    )


@dataclass
class Person:
    """The person: hidden rules over catalog features and lines outside it; talks to exod."""

    rng: random.Random
    seed: int = 0
    extra: Mapping[str, tuple[str, str]] = field(default_factory=lambda: dict(_EXTRA))
    corrections: list[int] = field(default_factory=list)
    fine: list[int] = field(default_factory=list)
    drafts: int = 0

    def judge(self, text: str) -> str | None:
        """The correction to send for ``text`` (None: it is fine)."""
        lines = {line.strip() for line in text.splitlines()}
        seen = [k for k in HIDDEN if feature(k) is not None and feature(k).present(text)]  # type: ignore[union-attr]
        seen += [k for k, (line, _) in self.extra.items() if line in lines]
        # this draft's own dice, as the assistant's (see Assistant): one missed rule does not shift the rest
        dice = random.Random(f"{self.seed}:person:{self.drafts}")
        noticed = [k for k in sorted(seen) if dice.random() > 0.1]
        if not noticed:
            return None
        pick = dice.choice(noticed)
        return self.extra[pick][1] if pick in self.extra else CORRECTIONS[pick]

    async def session(self, client: ExoClient, n: int, drafts: int, settle: Callable[[], Awaitable[None]]) -> None:
        """One conversation: ``drafts`` drafts asked for and judged.

        ``settle`` returns once exod's queued jobs are drained: what the assistant has learned before the
        next draft is then the same on a busy machine as on a quiet one (the drafts and the person's picks
        share a seeded random stream, so an earlier or later promotion would change everything after it).
        """
        session = (await client.request("session.create", {"title": f"sim {n}"}))["session"]["id"]
        self.corrections.append(0)
        self.fine.append(0)
        for _ in range(drafts):
            task = self.rng.choice(sorted(TASKS))
            text = await _turn(client, session, f"Write the {task} note.")
            self.drafts += 1
            said = self.judge(text)
            if said is None:
                self.fine[-1] += 1
                await _turn(client, session, "Thanks, that works.")
            else:
                self.corrections[-1] += 1
                await _turn(client, session, said)
            await settle()


async def _turn(client: ExoClient, session: str, text: str) -> str:
    """Send ``text``; the assistant's answer once the turn completes."""
    since = (await client.request("events.subscribe", {"since": 0, "limit": 1}))["head"]
    turn = (await client.request("turn.send", {"session": session, "text": text}))["turn_id"]
    answer: list[str] = []

    async def follow() -> None:
        async for event in client.events(since=since):
            if event.type == "message.delta" and event.body.get("turn_id", turn) == turn:
                answer.append(str(event.body.get("text", "")))
            if event.type == "turn.completed" and event.body.get("turn_id") == turn:
                return

    await asyncio.wait_for(follow(), 60)
    return "".join(answer)


def measure(book: Any, now_ms: int, extra: Mapping[str, tuple[str, str]] = _EXTRA) -> dict[str, Any]:
    """Precision and recall of high-weight lessons, catalog and non-catalog separately; guarded promotions."""
    high = [lesson for lesson in book.lessons.values() if lesson.home != "question" and lesson.weight(now_ms) >= HIGH]
    cat_hidden = set(HIDDEN)
    cat_high = {lesson.feature for lesson in high if lesson.feature and not feature(lesson.feature).action}  # type: ignore[union-attr]
    non_high: set[str] = set()
    strays: list[str] = []
    for lesson in (lesson for lesson in high if not lesson.feature):
        rule = next(
            (k for k, (line, _) in extra.items() if lesson.marker and lesson.marker.lower() in line.lower()), ""
        )
        if rule:
            non_high.add(rule)
        else:
            strays.append(lesson.target)
    non_hidden = set(extra)
    guarded_promoted = [
        lesson.target for lesson in book.lessons.values() if lesson.guarded and lesson.promoted_by not in ("", "person")
    ]
    guarded_high = [lesson.target for lesson in high if lesson.guarded]

    def pr(found: set[str], hidden: set[str], extra: int = 0) -> tuple[float, float]:
        hits = len(found & hidden)
        return hits / max(1, len(found) + extra), hits / len(hidden)

    cat_p, cat_r = pr(cat_high, cat_hidden)
    non_p, non_r = pr(non_high, non_hidden, len(strays))
    return {
        "catalog": {"precision": cat_p, "recall": cat_r, "high": sorted(cat_high), "hidden": sorted(cat_hidden)},
        "noncatalog": {
            "precision": non_p,
            "recall": non_r,
            "high": sorted(non_high),
            "hidden": sorted(non_hidden),
            "strays": strays,
        },
        "guarded_high": guarded_high,
        "guarded_promoted_unasked": guarded_promoted,
        "promoted": sorted(lesson.target for lesson in book.lessons.values() if lesson.promoted_by),
    }


def wait_until(check: Any, timeout: float) -> bool:
    """Poll ``check()`` until true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


async def _serve(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]  # aiohttp exposes no public port
    return runner, int(port)


async def run(
    root: Path,
    *,
    sessions: int,
    drafts: int,
    seed: int = 7,
    route: tuple[int, str] | None = None,
    settle_s: float = 60,
    extra: Mapping[str, tuple[str, str]] = _EXTRA,
) -> dict[str, Any]:
    """The whole simulation under ``root``; :func:`measure`'s numbers plus the run's counts.

    ``route`` (port, model) points ``[learning] route`` at a real engine on this machine instead of the
    stand-in server (``bench_learning.py --route-engine``); ``settle_s`` is how long the person waits for
    exod's queue to drain before the next draft (a real model answers far slower than the stand-in).
    ``extra`` are the hidden rules outside the catalog (key: the line, the person's words about it).
    """
    import larger_model
    from exo_testkit import Exod, write_script

    from exo_core.learning import Learner
    from exo_core.ledger import Ledger, create_signing_key, load_signing_key
    from exo_core.store import Store, init_store
    from exo_edge.proposal_queue import ProposalQueue

    home, ws = root / "home", root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    signer = create_signing_key(home / "keys")
    init_store(home / "store", owner_key_ids=[signer.key_id])
    rng = random.Random(seed)
    assistant = Assistant(seed + 1, extra)
    person = Person(rng, seed, extra=extra)
    runners = []
    try:
        runner, assistant_port = await _serve(assistant.app())
        runners.append(runner)
        if route is None:
            runner, laptop_port = await _serve(larger_model.app(str(root / "larger.log"), 0.0))
            runners.append(runner)
            write_config(home, assistant_port, laptop_port)
        else:
            write_config(home, assistant_port, route[0], route_model=route[1])
            with (home / "config.toml").open("a", encoding="utf-8") as config:
                # a 1.5B on one shared core may think for minutes before its first token
                config.write("\n[models.timeouts]\nfirst_byte = 900\nidle = 900\n")
        script = write_script(root / "unused.json", [{"text": "unused"}])
        exod = Exod(home, script, ws, extra=["--model", "local"])
        started = time.monotonic()
        await asyncio.to_thread(exod.start, 60)
        try:
            queue = ProposalQueue(home / "learning" / "queue.sqlite")

            async def settle() -> None:
                await asyncio.to_thread(wait_until, lambda: not queue.pending(1), settle_s)

            async with ExoClient(exod.url, client_name="simulated-person") as client:
                await client.hello()
                for n in range(sessions):
                    await person.session(client, n, drafts, settle)
            drained = await asyncio.to_thread(wait_until, lambda: not queue.pending(1), max(120, 2 * settle_s))
            jobs = queue.counts()
            queue.close()
        finally:
            stopped = await asyncio.to_thread(exod.stop)
        elapsed = time.monotonic() - started
    finally:
        for runner in runners:
            await runner.cleanup()
    store = Store.open(home / "store")
    with Ledger.open_store(store.root, signer=load_signing_key(home / "keys")) as ledger:
        learner = Learner(store, ledger)
        learner.review(asked=True)  # a last pass, as exod's next turn would, over what the last drain appended
        book = learner.book
        result = measure(book, book.last_ts, extra)
        result["lessons"] = {
            t: [round(lesson.weight(book.last_ts), 2), len(lesson.evidence), len(lesson.sessions())]
            for t, lesson in sorted(book.lessons.items())
            if lesson.home != "question"
        }
        verdicts = len(list(ledger.entries(kind="verdict")))
        explained = [
            e for e in ledger.entries(kind="proposal") if e.body.get("by") == "reflection" and "marker" in e.body
        ]
        dropped = sorted(
            str(e.body.get("reason", ""))
            for e in ledger.entries(kind="decision")
            if e.body.get("decider") == "reflection"
        )
        verified = ledger.verify().ok
    if route is None:
        asked = (root / "larger.log").read_text().count("\n") if (root / "larger.log").exists() else 0
    else:
        asked = int(jobs.get("done", 0))  # one call per drained job (a retried one is not counted twice)
    half = max(1, sessions // 3)
    first = sum(person.corrections[:half]) / max(1, sum(person.corrections[:half]) + sum(person.fine[:half]))
    last = sum(person.corrections[-half:]) / max(1, sum(person.corrections[-half:]) + sum(person.fine[-half:]))
    result.update(
        {
            "sessions": sessions,
            "drafts": person.drafts,
            "verdicts": verdicts,
            "reflections_proposed": len(explained),
            "reflection_markers": sorted(str(e.body.get("marker", "")) for e in explained),
            "reflections_dropped": dropped,
            "larger_model_calls": asked,
            "queue": jobs,
            "queue_drained": drained,
            "assistant_saw_a_learned_section": assistant.saw_pack,
            "corrected_share_first_third": first,
            "corrected_share_last_third": last,
            "exod_exit": stopped,
            "ledger_verified": verified,
            "seconds": elapsed,
            "seed": seed,
        }
    )
    return result
